"""An immutable measurement record that explains itself: spec, numbers, environment."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from ..i18n import N_
from .errors import BadInput
from .phases import COMPILE_PHASES
from .profile import Profile
from .sides import JaxSide, Peak, fraction
from .spec import MIN_SAMPLES_FOR_RANGE, Spec
from .stats import Stats

SCHEMA = "jaxcompare.result/1"
# The load phases the speedup is made of: the NumPy and JAX runtime blocks.
RUNTIME_PHASES = ("numpy", "runtime")



@dataclass(frozen=True)
class Result:
    """One comparison's numbers. Times are seconds per call (see Stats)."""

    id: str
    created: str
    spec: Spec
    case_info: dict[str, Any]
    dtype: str
    backend: str
    device: str
    device_kind: str
    numpy_runtime: Stats
    transfer: Stats
    trace: Stats
    lower: Stats
    compile: Stats
    first_call: Stats
    runtime: Stats
    dispatch: Stats
    fetch: Stats
    agreement: dict[str, Any]
    env: dict[str, Any]
    flops: float | None = None
    transfer_zero_copy: bool = False
    fetch_zero_copy: bool = False
    notes: tuple[str, ...] = field(default=())
    # How the JAX runtime was really timed, as measure() observed it on the arrays: blocked,
    # compile_excluded, inputs_on_device (bools). Empty when not recorded; the checklist reads it.
    protocol: dict[str, Any] = field(default_factory=dict)
    # Bytes of the inputs the transfer phase copied (None: saved before it was recorded).
    transfer_bytes: int | None = None
    # JAX on the CPU beside JAX on a GPU/TPU (None on a CPU-only host, or when not measured).
    jax_cpu: JaxSide | None = None
    # The ceilings for the fraction of peak (None without a FLOP count).
    peak: Peak | None = None
    # Where the time goes inside the JAX call (a profiler trace's summary); None when not asked.
    profile: Profile | None = None
    # How busy the machine was while each phase was timed (engine/load.py): {"cores": n,
    # "phases": {phase: {"wall_s", "others_cpu_s"}}, ...}; {} when saved before it was recorded.
    load: dict[str, Any] = field(default_factory=dict)

    # --- derived figures -------------------------------------------------------------
    @property
    def compile_total_s(self) -> float:
        return self.trace.median_s + self.lower.median_s + self.compile.median_s

    @property
    def speedup(self) -> float:
        """NumPy median over JAX blocked median: above 1 means JAX is faster."""
        if self.runtime.median_s <= 0:
            return math.inf
        return self.numpy_runtime.median_s / self.runtime.median_s

    @property
    def speedup_range(self) -> tuple[float, float]:
        """A conservative 95% range of the speedup from the two medians' confidence intervals
        (NumPy's low end over JAX's high end, and the reverse). nan where a CI is unknown, or
        where a side has fewer than 6 samples: their order-statistics interval is then the
        whole sample range, which covers the median less than 95% of the time (n=5: 94%)."""
        n, j = self.numpy_runtime, self.runtime
        bounds = (n.ci_low_s, n.ci_high_s, j.ci_low_s, j.ci_high_s)
        if min(n.n, j.n) < MIN_SAMPLES_FOR_RANGE or not all(math.isfinite(b) and b > 0 for b in bounds):
            return math.nan, math.nan
        return n.ci_low_s / j.ci_high_s, n.ci_high_s / j.ci_low_s

    @property
    def speedup_pairs(self) -> tuple[float, ...]:
        """The speedup of each pair of runtime blocks timed side by side (NumPy block k over
        JAX block k; TimingConfig.runtime_blocks > 1), in the order timed; () otherwise."""
        n, j = self.numpy_runtime.block_medians_s, self.runtime.block_medians_s
        if len(n) < 2 or len(n) != len(j) or not all(math.isfinite(x) and x > 0 for x in n + j):
            return ()
        return tuple(a / b for a, b in zip(n, j, strict=True))

    @property
    def speedup_moved(self) -> float | None:
        """How far the block pairs' speedups spread (max / min - 1); None without pairs."""
        pairs = self.speedup_pairs
        return max(pairs) / min(pairs) - 1 if pairs else None

    @property
    def speedup_steady(self) -> bool | None:
        """Whether the block pairs' speedups agree within what the blocks' own precision
        allows (TimingConfig.pair_tolerance): then the speedup held even if the machine's
        speed (and both medians) drifted during the run. None without block pairs."""
        moved = self.speedup_moved
        return None if moved is None else moved <= self.spec.timing.pair_tolerance

    def others_cores(self, phases: tuple[str, ...] = RUNTIME_PHASES) -> float | None:
        """Cores' worth of CPU other processes used while ``phases`` were timed (the runtime
        blocks by default): their CPU seconds over the phases' wall time. None: not recorded."""
        spans = [s for s in ((self.load.get("phases") or {}).get(p) for p in phases) if s]
        wall = sum(float(s.get("wall_s") or 0.0) for s in spans)
        if not spans or wall <= 0:
            return None
        return sum(float(s.get("others_cpu_s") or 0.0) for s in spans) / wall

    @property
    def break_even_calls(self) -> float | None:
        """Calls before JAX's one-off costs (transfer + compile) are paid back; None: never."""
        saving = self.numpy_runtime.median_s - self.runtime.median_s
        if saving <= 0:
            return None
        return (self.transfer.median_s + self.compile_total_s) / saving

    def gflops(self, side: str) -> float | None:
        """Throughput of ``side`` ("numpy", "jax" or "jax_cpu") in GFLOP/s; None without one."""
        stats = self.side_runtime(side)
        if self.flops is None or stats is None or stats.median_s <= 0:
            return None
        return self.flops / stats.median_s / 1e9

    def side_runtime(self, side: str) -> Stats | None:
        """The runtime statistics of "numpy", "jax" or "jax_cpu" (None when not measured)."""
        if side == "jax_cpu":
            return self.jax_cpu.runtime if self.jax_cpu is not None else None
        return self.numpy_runtime if side == "numpy" else self.runtime

    @property
    def cpu_speedup(self) -> float | None:
        """NumPy median over JAX-on-the-CPU median; None without the third side."""
        if self.jax_cpu is None:
            return None
        cpu = self.jax_cpu.runtime.median_s
        return self.numpy_runtime.median_s / cpu if cpu > 0 else math.inf

    def peak_fraction(self, side: str) -> float | None:
        """``side``'s FLOP rate as a share of its ceiling: NumPy's and JAX-on-the-CPU's is the
        CPU's measured matmul rate, JAX's the device's (Peak)."""
        if self.peak is None:
            return None
        stats = self.side_runtime(side)
        ceiling = {"numpy": self.peak.numpy_flops_per_s, "jax": self.peak.flops_per_s,
                   "jax_cpu": self.peak.cpu_flops_per_s}.get(side)
        return fraction(self.flops, stats.median_s, ceiling) if stats is not None else None

    @property
    def transfer_bytes_per_s(self) -> float | None:
        """Host->device bytes per second of the transfer phase; None when nothing was copied
        (CPU zero-copy) or the size is unknown."""
        if self.transfer_zero_copy or not self.transfer_bytes or not self.transfer.median_s > 0:
            return None
        return self.transfer_bytes / self.transfer.median_s

    @property
    def case(self) -> str:
        return self.spec.case

    @property
    def shape(self) -> tuple[int, ...]:
        return self.spec.shape

    @property
    def precision(self) -> str:
        return self.spec.precision

    def phase(self, name: str) -> Stats:
        return self.numpy_runtime if name == "numpy" else getattr(self, name)

    # --- JSON round trip ---------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        be = self.break_even_calls
        return {
            "schema": SCHEMA,
            "id": self.id,
            "created": self.created,
            "case": self.spec.case,
            "case_info": self.case_info,
            "shape": list(self.spec.shape),
            "precision": self.spec.precision,
            "dtype": self.dtype,
            "backend": self.backend,
            "device": self.device,
            "device_kind": self.device_kind,
            "numpy": {"runtime": self.numpy_runtime.to_dict()},
            "jax": {
                "transfer": self.transfer.to_dict(),
                "transfer_zero_copy": self.transfer_zero_copy,
                "compile": {p: getattr(self, p).to_dict() for p in COMPILE_PHASES}
                | {"total_s": self.compile_total_s},
                "first_call": self.first_call.to_dict(),
                "runtime": self.runtime.to_dict(),
                "dispatch": self.dispatch.to_dict(),
                "fetch": self.fetch.to_dict(),
                "fetch_zero_copy": self.fetch_zero_copy,
                "transfer_bytes": self.transfer_bytes,
            },
            "jax_cpu": self._jax_cpu_dict(),
            "speedup": finite_or_none(self.speedup),
            "speedup_range": [finite_or_none(x) for x in self.speedup_range],
            "speedup_pairs": list(self.speedup_pairs),
            "speedup_steady": self.speedup_steady,
            "break_even_calls": be,
            "flops": self.flops,
            "gflops": {"numpy": self.gflops("numpy"), "jax": self.gflops("jax")},
            "peak": self._peak_dict(),
            "agreement": self.agreement,
            "notes": list(self.notes),
            "protocol": dict(self.protocol),
            "profile": None if self.profile is None else self.profile.to_dict(),
            "load": dict(self.load),
            "spec": self.spec.to_dict(),
            "env": self.env,
        }

    def _jax_cpu_dict(self) -> dict[str, Any] | None:
        if self.jax_cpu is None:
            return None
        return self.jax_cpu.to_dict() | {"speedup": finite_or_none(self.cpu_speedup),
                                         "gflops": self.gflops("jax_cpu")}

    def _peak_dict(self) -> dict[str, Any] | None:
        if self.peak is None:
            return None
        return self.peak.to_dict() | {f"{side}_fraction": self.peak_fraction(side)
                                      for side in ("numpy", "jax", "jax_cpu")}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Result:
        """Rebuild a Result from ``to_dict`` output; BadInput names what is wrong."""
        if not isinstance(data, dict):
            raise BadInput(N_("a result must be a JSON object"))
        if data.get("schema") != SCHEMA:
            raise BadInput(N_("not a jaxcompare result (schema {found!r}, expected {expected!r})").format(
                found=data.get("schema"), expected=SCHEMA))
        try:
            jax = data["jax"]
            stats = {p: Stats.from_dict(jax["compile"][p]) for p in COMPILE_PHASES}
            for p in ("transfer", "first_call", "runtime", "dispatch", "fetch"):
                stats[p] = Stats.from_dict(jax[p])
            return cls(
                id=str(data["id"]),
                created=str(data["created"]),
                spec=Spec.from_dict(data["spec"]),
                case_info=dict(data.get("case_info") or {}),
                dtype=str(data["dtype"]),
                backend=str(data["backend"]),
                device=str(data["device"]),
                device_kind=str(data.get("device_kind", "")),
                numpy_runtime=Stats.from_dict(data["numpy"]["runtime"]),
                agreement=dict(data["agreement"]),
                env=dict(data["env"]),
                flops=data.get("flops"),
                transfer_zero_copy=bool(jax.get("transfer_zero_copy", False)),
                fetch_zero_copy=bool(jax.get("fetch_zero_copy", False)),
                notes=tuple(data.get("notes") or ()),
                protocol=dict(data.get("protocol") or {}),
                transfer_bytes=_int_or_none(jax.get("transfer_bytes")),
                # Results saved before the third side and the peaks have neither key.
                jax_cpu=JaxSide.from_dict(data["jax_cpu"]) if data.get("jax_cpu") else None,
                peak=Peak.from_dict(data["peak"]) if data.get("peak") else None,
                profile=Profile.from_dict(data.get("profile")),
                load=dict(data.get("load") or {}),
                **stats,
            )
        except BadInput:
            raise
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise BadInput(N_("malformed result: {kind}: {error}").format(kind=type(exc).__name__, error=exc)) from None


def _int_or_none(value: Any) -> int | None:
    return None if value is None or isinstance(value, bool) else int(value)


def finite_or_none(value: Any) -> float | None:
    """A number JSON and tables can hold: infinities, NaN and non-numbers become None."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return value
