"""An immutable measurement record that explains itself: spec, numbers, environment."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from ..i18n import N_
from . import phases
from .clocks import GpuClocks
from .errors import BadInput
from .platforms import interpreted_here
from .profile import Profile
from .reruns import rerun_ratio_range
from .roofline import Roofline, device_time
from .sides import JaxSide, Peak, fraction
from .spec import Spec
from .stats import Stats

SCHEMA = "jaxcompare.result/4"
SCHEMA_V3 = "jaxcompare.result/3"
SCHEMA_V2 = "jaxcompare.result/2"
SCHEMA_V1 = "jaxcompare.result/1"
# What changed between the result schemas, oldest first: every document carries it as "history"
# (docs/json.md), so a reader holding one document knows what an older reader expects.
SCHEMA_HISTORY = (
    {"schema": SCHEMA_V1, "change": "the first versioned layout"},
    {"schema": SCHEMA_V2, "change": "the JAX side is one object: device, device_kind, protocol and agreement moved "
                                    "from the top level into jax, so jax and jax_cpu share one layout; jax_cpu's "
                                    "speedup and gflops moved to the top-level cpu_speedup and gflops.jax_cpu"},
    {"schema": SCHEMA_V3, "change": "on a GPU or TPU, JAX's fraction of peak (peak.jax_fraction) and its roofline "
                                 "point (roofline.jax: flops_per_s, fraction, limit) are read from its time on "
                                 "the device (roofline.jax.device_s: the profile's busy time, else calls back to "
                                 "back), the blocked figures beside them (peak.jax_blocked_fraction, "
                                 "roofline.jax.blocked_*); the sides on the CPU are placed by the CPU program's "
                                 "counts (roofline.cpu_counts)"},
    {"schema": SCHEMA, "change": "a case may have several JAX ports: spec.port names the one measured (null: the "
                                 "case's default port, as every earlier result measured); case_info gains port "
                                 "(the port measured), port_pallas, ports and ports_why; the top-level port says "
                                 "its name and whether it is a Pallas kernel run interpreted (no speed figure)"},
)
# Every layout from_dict reads, the newest first.
SCHEMAS = (SCHEMA, SCHEMA_V3, SCHEMA_V2, SCHEMA_V1)
# The load phases the speedup is made of: the NumPy and JAX runtime blocks.
RUNTIME_PHASES = (phases.NUMPY.name, phases.RUNTIME.name)


def memory_speedup(plain: Stats, kept: Stats | None) -> float | None:
    """How many times faster NumPy ran with freed memory kept than as a plain process, where that is
    beyond both figures' ranges; None where they agree, or where the two are one (``kept`` None)."""
    if kept is None or not kept.below(plain) or kept.median_s <= 0:
        return None
    return plain.median_s / kept.median_s


def _notes(value: Any) -> tuple[str, ...]:
    """A result's notes: a list of strings (a string alone was read as a list of its characters)."""
    if value is None:
        return ()
    if isinstance(value, str) or not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"notes must be a list of strings, got {type(value).__name__}")
    return tuple(value)


@dataclass(frozen=True)
class Result:
    """One comparison's numbers: NumPy's runtime beside JAX's side (JaxSide: every phase, how it
    was timed, its agreement with NumPy). Times are seconds per call (see Stats)."""

    id: str
    created: str
    spec: Spec
    case_info: dict[str, Any]
    dtype: str
    backend: str
    numpy_runtime: Stats
    jax: JaxSide
    env: dict[str, Any]
    flops: float | None = None
    notes: tuple[str, ...] = field(default=())
    # JAX on the CPU beside JAX on a GPU/TPU (None on a CPU-only host, or when not measured).
    jax_cpu: JaxSide | None = None
    # The ceilings for the fraction of peak (None without a FLOP count).
    peak: Peak | None = None
    # Where the time goes inside the JAX call (a profiler trace's summary); None when not asked.
    profile: Profile | None = None
    # How busy the machine was while each phase was timed (engine/common/load.py): {"cores": n, "others_source",
    # "phases": {phase: {"wall_s", "others_cpu_s"}}, ...}; {} when saved before it was recorded.
    load: dict[str, Any] = field(default_factory=dict)
    # Each side's counts, ceilings and limit (model/roofline.py); None when saved before it was recorded.
    roofline: Roofline | None = None
    # The GPU's clocks and heat before and after the runtime blocks (model/clocks.py); None off GPUs
    # and in results saved before they were read.
    gpu_clocks: GpuClocks | None = None
    # NumPy in the worker, with freed memory kept (engine/worker/memory.py), when ``numpy_runtime`` is NumPy
    # as a plain process runs it (engine/worker/plain_numpy.py); None where the two are one figure.
    numpy_kept: Stats | None = None

    # --- derived figures -------------------------------------------------------------
    @property
    def speedup_back_to_back(self) -> float | None:
        """NumPy median over JAX's per-call time back to back (one block after a loop of calls): the
        speedup a loop of calls sees; None where it was not measured. The headline stays the blocked one."""
        pipelined = self.jax.back_to_back
        if pipelined is None or pipelined.median_s <= 0:
            return None
        return self.numpy_runtime.median_s / pipelined.median_s

    @property
    def numpy_memory_speedup(self) -> float | None:
        """How many times faster NumPy ran with freed memory kept than as a plain process, where
        that is beyond both figures' ranges; None where they agree, or where the two are one."""
        return memory_speedup(self.numpy_runtime, self.numpy_kept)

    @property
    def speedup(self) -> float:
        """NumPy median over JAX blocked median: above 1 means JAX is faster."""
        if self.jax.runtime.median_s <= 0:
            return math.inf
        return self.numpy_runtime.median_s / self.jax.runtime.median_s

    @property
    def speedup_range(self) -> tuple[float, float]:
        """Where a rerun's speedup falls 95% of the time (model/reruns.py): NumPy's runtime over JAX's, with
        the spread of this run's pairs of blocks where it timed several of this NumPy figure (pairs timed
        against NumPy with freed memory kept say nothing of the plain figure's drift)."""
        pairs = self.speedup_pairs if self.numpy_kept is None else ()
        return rerun_ratio_range(self.numpy_runtime, self.jax.runtime, pairs)

    @property
    def speedup_pairs(self) -> tuple[float, ...]:
        """The speedup of each pair of runtime blocks timed side by side (NumPy block k over
        JAX block k; TimingConfig.runtime_blocks > 1), in the order timed; () otherwise."""
        # The pairs were timed in the worker, beside JAX: NumPy's there is the kept-memory figure.
        n, j = (self.numpy_kept or self.numpy_runtime).block_medians_s, self.jax.runtime.block_medians_s
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
        blocks by default): their CPU seconds over the phases' wall time. None: not recorded, or
        not measured here (``load.others_source`` None: the system reports no CPU time)."""
        spans = [s for s in ((self.load.get("phases") or {}).get(p) for p in phases) if s]
        wall = sum(float(s.get("wall_s") or 0.0) for s in spans)
        if not spans or wall <= 0 or any("others_cpu_s" not in s for s in spans):
            return None
        return sum(float(s.get("others_cpu_s") or 0.0) for s in spans) / wall

    @property
    def break_even_calls(self) -> float | None:
        """Calls before JAX's one-off costs (transfer + compile) are paid back; None: never."""
        saving = self.numpy_runtime.median_s - self.jax.runtime.median_s
        if saving <= 0:
            return None
        return (self.jax.transfer.median_s + self.jax.compile_total_s) / saving

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
        return self.numpy_runtime if side == "numpy" else self.jax.runtime

    @property
    def cpu_speedup(self) -> float | None:
        """NumPy median over JAX-on-the-CPU median; None without the third side."""
        if self.jax_cpu is None:
            return None
        cpu = self.jax_cpu.runtime.median_s
        return self.numpy_runtime.median_s / cpu if cpu > 0 else math.inf

    @property
    def device_time(self) -> tuple[str, float] | None:
        """JAX's time per call on a GPU or TPU without the host's round trip, and where it was read:
        ("profile", its busy time) or ("back_to_back", the time per call); None on the CPU or without either."""
        return device_time(self.backend, self.profile, self.jax.back_to_back)

    def peak_fraction(self, side: str) -> float | None:
        """``side``'s FLOP rate as a share of its ceiling: NumPy's and JAX-on-the-CPU's is the
        CPU's measured matmul rate, JAX's the device's (Peak). JAX's rate on a GPU or TPU is read
        from its time on the device (device_time) where there is one: the blocked runtime holds the
        host's round trip (peak_fraction_blocked)."""
        if self.peak is None:
            return None
        stats = self.side_runtime(side)
        if stats is None:
            return None
        found = self.device_time if side == "jax" else None
        return fraction(self.flops, found[1] if found else stats.median_s, self._ceiling(side))

    def peak_fraction_blocked(self, side: str = "jax") -> float | None:
        """JAX's blocked rate as a share of its ceiling, beside a fraction read from device time; None
        where the fraction is the blocked one (the CPU, or no device time measured)."""
        if self.peak is None or side != "jax" or self.device_time is None:
            return None
        return fraction(self.flops, self.jax.runtime.median_s, self._ceiling(side))

    def _ceiling(self, side: str) -> float | None:
        peak = self.peak
        return None if peak is None else {"numpy": peak.numpy_flops_per_s, "jax": peak.flops_per_s,
                                          "jax_cpu": peak.cpu_flops_per_s}.get(side)

    @property
    def case(self) -> str:
        return self.spec.case

    @property
    def port(self) -> str | None:
        """The JAX port measured: the Spec's, else the case's default as the worker recorded it; None in a
        result saved before cases had ports (it measured the case's one JAX function, today's default port)."""
        return self.spec.port or self.case_info.get("port") or None

    @property
    def interpreted(self) -> bool:
        """The port is a Pallas kernel run where Pallas only interprets it (interpret=True: the CPU, the
        platform table's pallas_compiles): its times say how slow the interpreter is, not how fast the kernel is."""
        return interpreted_here(bool(self.case_info.get("port_pallas")), self.backend)

    @property
    def shape(self) -> tuple[int, ...]:
        return self.spec.shape

    @property
    def precision(self) -> str:
        return self.spec.precision

    def phase(self, name: str) -> Stats:
        """A phase of PHASES by name: "numpy" is NumPy's runtime, the others the JAX side's."""
        return self.numpy_runtime if name == "numpy" else self.jax.phase(name)

    # --- JSON round trip ---------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The schema-4 document (docs/json.md): the measurements, and derived figures beside them
        for readers (the speedups, GFLOP/s, fractions of peak), which from_dict recomputes."""
        return {
            "schema": SCHEMA,
            "history": [dict(change) for change in SCHEMA_HISTORY],
            "id": self.id,
            "created": self.created,
            "case": self.spec.case,
            "port": {"name": self.port, "pallas": bool(self.case_info.get("port_pallas")),
                     "interpreted": self.interpreted},
            "case_info": self.case_info,
            "shape": list(self.spec.shape),
            "precision": self.spec.precision,
            "dtype": self.dtype,
            "backend": self.backend,
            "numpy": {"runtime": self.numpy_runtime.to_dict(),
                      **({"kept_memory": self.numpy_kept.to_dict()} if self.numpy_kept is not None else {})},
            "jax": self.jax.to_dict(),
            "jax_cpu": None if self.jax_cpu is None else self.jax_cpu.to_dict(),
            "speedup": finite_or_none(self.speedup),
            "speedup_range": [finite_or_none(x) for x in self.speedup_range],
            "speedup_pairs": list(self.speedup_pairs),
            "speedup_steady": self.speedup_steady,
            "break_even_calls": self.break_even_calls,
            "cpu_speedup": finite_or_none(self.cpu_speedup),
            "flops": self.flops,
            "gflops": {side: self.gflops(side) for side in ("numpy", "jax", "jax_cpu")},
            "peak": self._peak_dict(),
            "roofline": None if self.roofline is None else self.roofline.to_dict(),
            "notes": list(self.notes),
            "profile": None if self.profile is None else self.profile.to_dict(),
            "load": dict(self.load),
            "gpu_clocks": None if self.gpu_clocks is None else self.gpu_clocks.to_dict(),
            "spec": self.spec.to_dict(),
            "env": self.env,
        }

    def _peak_dict(self) -> dict[str, Any] | None:
        if self.peak is None:
            return None
        found = self.device_time
        return self.peak.to_dict() | {f"{side}_fraction": self.peak_fraction(side)
                                      for side in ("numpy", "jax", "jax_cpu")} | {
            "jax_blocked_fraction": self.peak_fraction_blocked("jax"),
            "jax_time_source": found[0] if found else "blocked"}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Result:
        """Rebuild a Result from ``to_dict`` output, schema 4, 3, 2 or 1; BadInput names what is wrong."""
        if not isinstance(data, dict):
            raise BadInput(N_("a result must be a JSON object"))
        if data.get("schema") not in SCHEMAS:
            raise BadInput(N_("not a jaxcompare result (schema {found!r}, expected {expected!r})").format(
                found=data.get("schema"), expected=SCHEMA))
        try:
            if data["schema"] == SCHEMA_V1:
                data = _from_v1(data)
            if data["schema"] == SCHEMA_V2:
                data = _from_v2(data)
            if data["schema"] == SCHEMA_V3:
                data = _from_v3(data)
            return cls(
                id=str(data["id"]),
                created=str(data["created"]),
                spec=Spec.from_dict(data["spec"]),
                case_info=dict(data.get("case_info") or {}),
                dtype=str(data["dtype"]),
                backend=str(data["backend"]),
                numpy_runtime=Stats.from_dict(data["numpy"]["runtime"]),
                jax=JaxSide.from_dict(data["jax"]),
                numpy_kept=Stats.from_dict(data["numpy"]["kept_memory"]) if data["numpy"].get("kept_memory") else None,
                env=dict(data["env"]),
                flops=data.get("flops"),
                notes=_notes(data.get("notes")),
                # Results saved before the third side and the peaks have neither key.
                jax_cpu=JaxSide.from_dict(data["jax_cpu"]) if data.get("jax_cpu") else None,
                peak=Peak.from_dict(data["peak"]) if data.get("peak") else None,
                profile=Profile.from_dict(data.get("profile")),
                load=dict(data.get("load") or {}),
                roofline=Roofline.from_dict(data.get("roofline")),
                gpu_clocks=GpuClocks.from_dict(data.get("gpu_clocks")),
            )
        except BadInput:
            raise
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise BadInput(N_("malformed result: {kind}: {error}").format(kind=type(exc).__name__, error=exc)) from None


def _from_v1(data: dict[str, Any]) -> dict[str, Any]:
    """A schema-1 document in schema 2's layout: the main JAX side's device, device_kind,
    protocol and agreement move from the top level into "jax" (SCHEMA_HISTORY). jax_cpu already
    had that layout; its speedup and gflops were derived figures, which from_dict never reads."""
    jax = dict(data["jax"]) | {
        "device": data["device"], "device_kind": data.get("device_kind", ""),
        "protocol": data.get("protocol") or {}, "agreement": data["agreement"],
    }
    return data | {"schema": SCHEMA_V2, "jax": jax}


def _from_v2(data: dict[str, Any]) -> dict[str, Any]:
    """A schema-2 document in schema 3's layout: JAX's roofline side on a GPU or TPU gains its time on
    the device, read from what the document already holds (the profile, calls back to back) and the
    dispatch beside it. Its CPU program was not counted then: the CPU sides keep JAX's program's counts."""
    roofline = data.get("roofline")
    side = roofline.get("jax") if isinstance(roofline, dict) else None
    if not isinstance(side, dict):
        return data | {"schema": SCHEMA_V3}
    jax = data["jax"]
    found = device_time(str(data["backend"]), Profile.from_dict(data.get("profile")),
                        Stats.from_dict(jax["back_to_back"]) if jax.get("back_to_back") else None)
    if found is not None:
        side = side | {"device_source": found[0], "device_s": found[1],
                       "dispatch_s": Stats.from_dict(jax["dispatch"]).median_s}
    return data | {"schema": SCHEMA_V3, "roofline": roofline | {"jax": side}}


def _from_v3(data: dict[str, Any]) -> dict[str, Any]:
    """A schema-3 document in schema 4's layout: it measured its case's one JAX function, the default
    port (spec.port null). Its case_info names no port; Result.port reads it as the default's name."""
    return data | {"schema": SCHEMA, "spec": dict(data["spec"]) | {"port": None}}


def finite_or_none(value: Any) -> float | None:
    """A number JSON and tables can hold: infinities, NaN and non-numbers become None."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return value
