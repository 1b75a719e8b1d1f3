"""The sides of a Result: JAX's phases on one device (the main side, and on a GPU or TPU run the
"third side", JAX on the CPU), and the compute ceilings that turn a FLOP rate into a fraction of
peak.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..i18n import N_, _
from .errors import BadInput
from .peaks import is_derived
from .phases import COMPILE_PHASES, JAX_PHASES
from .platforms import platform
from .stats import Stats

# The JAX phases of one device with a key of their own in the JSON's "jax" layout: all but the compile's
# parts, which sit under "compile" (model/phases.py's FIGURES).
SIDE_PHASES = tuple(name for name in JAX_PHASES if name not in COMPILE_PHASES)


@dataclass(frozen=True)
class JaxSide:
    """JAX's phases on one device (transfer, cold compile, first call, dispatch, fetch, blocked
    runtime), how its runtime was timed, and its output against NumPy's. ``Result.jax`` is the
    main side, ``Result.jax_cpu`` the third. Times are seconds per call."""

    device: str
    device_kind: str
    transfer: Stats
    trace: Stats
    lower: Stats
    compile: Stats
    first_call: Stats
    runtime: Stats
    dispatch: Stats
    fetch: Stats
    transfer_zero_copy: bool = False
    fetch_zero_copy: bool = False
    transfer_bytes: int | None = None
    # How its runtime was really timed, as measure() observed it on the arrays: blocked,
    # compile_excluded, inputs_on_device (bools; the main side adds matmul_precision). Empty when
    # not recorded; the checklist reads it.
    protocol: dict[str, Any] = field(default_factory=dict)
    # Its output against NumPy's: ok, max_abs_err, max_rel_err, rtol, method; the main side's
    # also atol, numpy_dtype, jax_dtype and vs_float64 (both against a float64 reference).
    agreement: dict[str, Any] = field(default_factory=dict)
    # The runtime per call when calls are queued back to back and only the last is blocked: what a
    # loop of calls pays each, the host's round trip overlapping the device's work (None: not measured).
    back_to_back: Stats | None = None
    # Where ``first_call`` came from fresh processes (the user's %time), the first call in the worker
    # after jax.clear_caches(): a recompile, cheaper than a first call in a new process. None otherwise.
    first_call_recompile: Stats | None = None

    @property
    def compile_total_s(self) -> float:
        return self.trace.median_s + self.lower.median_s + self.compile.median_s

    @property
    def transfer_bytes_per_s(self) -> float | None:
        """Host->device bytes per second of the transfer phase; None when nothing was copied
        (CPU zero-copy) or the size is unknown."""
        if self.transfer_zero_copy or not self.transfer_bytes or not self.transfer.median_s > 0:
            return None
        return self.transfer_bytes / self.transfer.median_s

    def phase(self, name: str) -> Stats:
        """One of its phases by name ("transfer", "trace", ..., "fetch"; model/phases.py)."""
        if name not in JAX_PHASES:
            raise KeyError(name)
        return getattr(self, name)

    def to_dict(self) -> dict[str, Any]:
        return {
            "device": self.device,
            "device_kind": self.device_kind,
            "transfer": self.transfer.to_dict(),
            "transfer_zero_copy": self.transfer_zero_copy,
            "transfer_bytes": self.transfer_bytes,
            "compile": {p: getattr(self, p).to_dict() for p in COMPILE_PHASES} | {"total_s": self.compile_total_s},
            **{p: getattr(self, p).to_dict() for p in SIDE_PHASES if p != "transfer"},
            "fetch_zero_copy": self.fetch_zero_copy,
            "protocol": dict(self.protocol),
            "agreement": dict(self.agreement),
            **({"back_to_back": self.back_to_back.to_dict()} if self.back_to_back is not None else {}),
            **({"first_call_recompile": self.first_call_recompile.to_dict()}
               if self.first_call_recompile is not None else {}),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> JaxSide:
        """Rebuild a side from ``to_dict`` output; a malformed one raises KeyError, TypeError or
        ValueError (Result.from_dict turns them into a BadInput)."""
        if not isinstance(data, dict):
            raise TypeError(f"a JAX side must be an object, not {type(data).__name__}")
        stats = {p: Stats.from_dict(data["compile"][p]) for p in COMPILE_PHASES}
        stats |= {p: Stats.from_dict(data[p]) for p in SIDE_PHASES}
        return cls(device=str(data["device"]), device_kind=str(data.get("device_kind", "")),
                   transfer_zero_copy=bool(data.get("transfer_zero_copy", False)),
                   fetch_zero_copy=bool(data.get("fetch_zero_copy", False)),
                   transfer_bytes=_int_or_none(data.get("transfer_bytes")),
                   protocol=dict(data.get("protocol") or {}), agreement=dict(data["agreement"]),
                   back_to_back=Stats.from_dict(data["back_to_back"]) if data.get("back_to_back") else None,
                   first_call_recompile=(Stats.from_dict(data["first_call_recompile"])
                                         if data.get("first_call_recompile") else None),
                   **stats)


PEAK_SOURCES = ("table", "measured")
# A ceiling in words (Peak.describe): shown in the reader's language, recorded in English.
MEASURED_CEILING = N_("this CPU's measured {label} rate")
PUBLISHED_CEILING = N_("the {device}'s {label} peak")
# BF16/3, BF16/6 (model/peaks.py): a TPU's bf16 peak over the passes a float32 product took.
DERIVED_CEILING = N_("the {device}'s derived {label} rate (its published BF16 peak over the bfloat16 passes; "
                     "no vendor publishes this figure)")


@dataclass(frozen=True)
class Peak:
    """The ceilings a FLOP rate is measured against. JAX's: the device's published peak at the
    precision the worker used ("table"), or on the CPU backend this CPU's measured matmul rate
    ("measured"). NumPy runs on the CPU, so its ceiling is always the measured CPU rate."""

    flops_per_s: float | None
    source: str | None
    device: str
    # What the ceiling is: "TF32" (a table column) or "float32 matmul" (the measured CPU rate).
    label: str
    numpy_flops_per_s: float | None = None
    numpy_label: str = ""
    cpu: str = ""  # the CPU model, whose measured rate is NumPy's (and JAX on the CPU's) ceiling
    # The CPU's measured rate at the run's dtype, for the third side (JAX on the CPU).
    cpu_flops_per_s: float | None = None
    matmul_precision: str = "default"

    def __post_init__(self) -> None:
        if self.source is not None and self.source not in PEAK_SOURCES:
            raise BadInput(N_("peak source must be one of {sources}, not {source!r}").format(
                sources=PEAK_SOURCES, source=self.source))

    def describe(self) -> str:
        """JAX's ceiling in words, in the current language: "the NVIDIA H200's TF32 peak",
        "this CPU's measured float32 matmul rate"."""
        return _(self._ceiling()).format(device=self.device, label=self.label)

    def describe_numpy(self) -> str:
        return _(MEASURED_CEILING).format(label=self.numpy_label)

    def _ceiling(self) -> str:
        if self.source == "measured":
            return MEASURED_CEILING
        return DERIVED_CEILING if is_derived(self.label) else PUBLISHED_CEILING

    def to_dict(self) -> dict[str, Any]:
        # "describes" is recorded: in English, whatever the language in force.
        describes = self._ceiling().format(device=self.device, label=self.label) if self.flops_per_s else None
        return {"flops_per_s": self.flops_per_s, "source": self.source, "device": self.device,
                "label": self.label, "describes": describes,
                "matmul_precision": self.matmul_precision,
                "numpy_flops_per_s": self.numpy_flops_per_s, "numpy_label": self.numpy_label,
                "cpu": self.cpu, "cpu_flops_per_s": self.cpu_flops_per_s}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Peak:
        return cls(flops_per_s=_float_or_none(data.get("flops_per_s")), source=data.get("source"),
                   device=str(data.get("device") or ""), label=str(data.get("label") or ""),
                   numpy_flops_per_s=_float_or_none(data.get("numpy_flops_per_s")),
                   numpy_label=str(data.get("numpy_label") or ""), cpu=str(data.get("cpu") or ""),
                   cpu_flops_per_s=_float_or_none(data.get("cpu_flops_per_s")),
                   matmul_precision=str(data.get("matmul_precision") or "default"))


def fraction(flops: float | None, seconds: float, ceiling: float | None) -> float | None:
    """The achieved rate ``flops / seconds`` as a share of ``ceiling``; None when unknown."""
    if flops is None or ceiling is None or not ceiling > 0 or not seconds > 0:
        return None
    return flops / seconds / ceiling


def link_name(backend: str, device_kind: str) -> str | None:
    """What a host->device copy crosses: PCIe to a discrete GPU or a TPU, the faster link the platform
    table names for a device kind (NVLink-C2C on a Grace Hopper/Blackwell superchip); None on the host's
    own backend (host memory to host memory)."""
    found = platform(backend)
    if found is not None and found.host:
        return None
    kind = device_kind.upper()
    return next((link for token, link in (found.links if found is not None else ()) if token in kind), "PCIe")


def _float_or_none(value: Any) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    return float(value)


def _int_or_none(value: Any) -> int | None:
    return None if value is None or isinstance(value, bool) else int(value)
