"""The roofline of one comparison: how much work a call does (FLOPs, transcendentals, bytes),
the ceilings each side runs under (compute, memory bandwidth, and on the CPU a transcendental
rate), and which one holds it back (or whether the call is mostly fixed cost). The counts come
from XLA's cost analysis of the compiled JAX program; on a GPU or TPU JAX on the CPU reads the same
function compiled for the CPU. NumPy runs none of JAX's programs: its point is placed by counts no JAX port
changes (Roofline.counts). JAX on a GPU or TPU is read from its own time on the device, the blocked call
beside it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from ..i18n import N_
from .platforms import is_host
from .profile import Profile
from .stats import Stats

# Where a count came from; None means "not known" (never a guess).
XLA_COST = "xla cost analysis"
CATALOG_COUNT = "catalog count"
ARRAYS_IN_OUT = "arrays in and out"  # bytes where XLA could not count them: the least any implementation moves
COUNTS = ("flops", "bytes", "transcendentals")
LIMITS = ("compute", "memory", "overhead")
ROOFLINE_SIDES = ("numpy", "jax", "jax_cpu")
LIMIT_WORDS = {"compute": N_("compute-bound"), "memory": N_("memory-bound"), "overhead": N_("overhead-bound")}
# XLA's count misses work inside custom calls (LAPACK, some FFTs; DESIGN.md, "Throughput"):
# below this share of the catalog's hand count, the hand count is the one used.
CUSTOM_CALL_SHARE = 0.5
# Overhead: a call is mostly fixed cost when it takes under OVERHEAD_CALLS empty calls of its
# side (then a third or more of it is what any call costs), or when its work at the roofline
# bound would take less than one empty call (no implementation could make it work-bound).
OVERHEAD_CALLS = 3.0
# Where a profile was taken, it says so itself: the device idle for more than this share of
# each call's wall time (the host gap) is a call mostly made of fixed cost.
OVERHEAD_GAP_SHARE = 0.5
# JAX's time per call on a GPU or TPU without the host's round trip (device_time): the device's busy
# time in the profile, else the time per call back to back (the round trip overlaps the work there).
DEVICE_SOURCES = ("profile", "back_to_back")
# A rate this far above its bound is still at it: the CPU's ceilings are a few best calls measured on
# the same shared machine at another moment (NumPy's 1000x1000 matmul once ran 332 GFLOP/s against a
# measured 331), and the tests allow the bandwidth this much. Beyond it the bound is not one.
AT_BOUND_NOISE = 0.15
# Calls back to back at under this many dispatches each were paced by the host, not the device: on a
# TPU v5e host one dispatch took 122 µs and matmul 2048x2048 ran 154 µs a call back to back, while
# its profile showed the device busy 89 µs of each.
HOST_PACED_DISPATCHES = 1.5


def device_time(backend: str, profile: Profile | None, back_to_back: Stats | None) -> tuple[str, float] | None:
    """JAX's time per call on a GPU or TPU with the host's round trip left out, and where it was read
    (DEVICE_SOURCES): the profile's busy time per call, else the time per call back to back; None on the
    CPU (a blocked call there pays no round trip, and NumPy's figure is a blocked call too) or where
    neither was measured."""
    if is_host(backend):
        return None
    if profile is not None and profile.ok and profile.calls > 0 and profile.device_busy_s:
        return "profile", float(profile.device_busy_s)
    if back_to_back is not None and back_to_back.median_s > 0:
        return "back_to_back", back_to_back.median_s
    return None


@dataclass(frozen=True)
class RooflineSide:
    """What one side's point on the roofline is made of: its steady-state runtime (the median),
    the ceilings it runs under with where they came from ("measured": this CPU; "table": the
    device's published figure; None: unknown), and an empty call's runtime on that side."""

    runtime_s: float
    peak_flops_per_s: float | None
    peak_source: str | None
    bandwidth_bytes_per_s: float | None
    bandwidth_source: str | None
    empty_call_s: float | None = None
    # sin/exp/tanh per second (measured on the CPU; None elsewhere: then each counts as a FLOP).
    transcendentals_per_s: float | None = None
    transcendentals_source: str | None = None
    # JAX's side with a profile: the share of each call's wall time the device sat idle.
    host_gap_share: float | None = None
    # JAX's side on a GPU or TPU: its time per call without the host's round trip, where it was read
    # (DEVICE_SOURCES), and one unblocked call's dispatch (what paces calls back to back from the host).
    device_s: float | None = None
    device_source: str | None = None
    dispatch_s: float | None = None

    @property
    def time_s(self) -> float:
        """The time a call's rates are read from: the device's own where there is one, else the runtime."""
        return self.device_s if self.device_s and self.device_s > 0 else self.runtime_s

    @property
    def host_paced(self) -> bool:
        """Calls back to back that the host's dispatch may have paced: then the device's own time per
        call is shorter than the figure, by how much unknown (HOST_PACED_DISPATCHES)."""
        return (self.device_source == "back_to_back" and self.device_s is not None and bool(self.dispatch_s)
                and self.device_s < HOST_PACED_DISPATCHES * self.dispatch_s)  # type: ignore[operator]

    def to_dict(self) -> dict[str, Any]:
        return {"runtime_s": self.runtime_s, "peak_flops_per_s": self.peak_flops_per_s,
                "peak_source": self.peak_source, "bandwidth_bytes_per_s": self.bandwidth_bytes_per_s,
                "bandwidth_source": self.bandwidth_source, "empty_call_s": self.empty_call_s,
                "transcendentals_per_s": self.transcendentals_per_s,
                "transcendentals_source": self.transcendentals_source, "host_gap_share": self.host_gap_share,
                "device_s": self.device_s, "device_source": self.device_source, "dispatch_s": self.dispatch_s}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RooflineSide:
        source = data.get("device_source")
        return cls(runtime_s=float(data["runtime_s"]), peak_flops_per_s=_number(data.get("peak_flops_per_s")),
                   peak_source=data.get("peak_source"),
                   bandwidth_bytes_per_s=_number(data.get("bandwidth_bytes_per_s")),
                   bandwidth_source=data.get("bandwidth_source"), empty_call_s=_number(data.get("empty_call_s")),
                   transcendentals_per_s=_number(data.get("transcendentals_per_s")),
                   transcendentals_source=data.get("transcendentals_source"),
                   host_gap_share=_number(data.get("host_gap_share")),
                   device_s=_number(data.get("device_s")), device_source=source if source in DEVICE_SOURCES else None,
                   dispatch_s=_number(data.get("dispatch_s")))


@dataclass(frozen=True)
class Counts:
    """One compiled program's work per call: FLOPs, bytes accessed and transcendentals, with where
    each came from (XLA_COST, CATALOG_COUNT, ARRAYS_IN_OUT or None: not known) and XLA's counts as it
    gave them. The CPU sides have the CPU program's: a TPU emulates float64 with float32 operations,
    and its program for centered Gram 1000x1000 x64 counted 6.4 GFLOP against the 2.0 the CPU's does."""

    flops: float | None
    bytes: float | None
    transcendentals: float | None
    source: dict[str, str | None] = field(default_factory=dict)
    xla: dict[str, float | None] | None = None
    # The arrays in and out, each moved once: the least any implementation moves (Roofline.side_bytes).
    least_bytes: float | None = None

    @property
    def work(self) -> float | None:
        """FLOPs plus transcendentals (unknown transcendentals count as none), or None."""
        return None if self.flops is None else self.flops + (self.transcendentals or 0.0)

    @property
    def intensity(self) -> float | None:
        """Work per byte accessed (FLOP/byte); None when either is unknown or no byte moves."""
        work = self.work
        return None if work is None or not self.bytes or self.bytes <= 0 else work / self.bytes

    def to_dict(self) -> dict[str, Any]:
        return {"flops": self.flops, "bytes": self.bytes, "transcendentals": self.transcendentals,
                "source": {k: self.source.get(k) for k in COUNTS},
                "xla": None if self.xla is None else dict(self.xla), "least_bytes": self.least_bytes,
                "work": self.work, "intensity": self.intensity}

    @classmethod
    def from_dict(cls, data: Any) -> Counts | None:
        if not isinstance(data, dict):
            return None
        source, xla = data.get("source") or {}, data.get("xla")
        return cls(flops=_count(data.get("flops")), bytes=_count(data.get("bytes")),
                   transcendentals=_count(data.get("transcendentals")),
                   source={k: source.get(k) if _count(data.get(k)) is not None else None for k in COUNTS},
                   xla={k: _count(v) for k, v in xla.items()} if isinstance(xla, dict) else None,
                   least_bytes=_count(data.get("least_bytes")))


@dataclass(frozen=True)
class Roofline:
    """The counts of one call and each side's ceilings; the derived figures (intensity, attained
    rates, bound, fraction, limit) are computed from them, never stored apart from them.

    Transcendentals are work: a side with a measured transcendental rate has a third roof, the
    time its sin/exp/tanh take at that rate; without one, each counts as one FLOP (a lower bound
    of what it costs). Either way they are in ``work``, the attained rate's numerator.

    The top-level counts are JAX's program's; JAX on the CPU reads ``cpu_counts`` where JAX's program
    runs elsewhere, NumPy counts no port changes (counts). JAX's side on a GPU or TPU is read from its
    own time on the device (RooflineSide.device_s), with the blocked figures beside it."""

    flops: float | None
    bytes: float | None
    transcendentals: float | None
    # Each count's origin: XLA_COST, CATALOG_COUNT or None (not known).
    source: dict[str, str | None] = field(default_factory=dict)
    # The catalog's hand FLOP count (the cross-check), and XLA's own counts as it gave them.
    catalog_flops: float | None = None
    xla: dict[str, float | None] | None = None
    numpy: RooflineSide | None = None
    jax: RooflineSide | None = None
    jax_cpu: RooflineSide | None = None
    # The same function compiled for the CPU, for the sides there; None on a CPU-only host (one program)
    # and in results saved before it was counted (those sides then read JAX's program's counts).
    cpu_counts: Counts | None = None
    # The arrays in and out, each moved once (None in results saved before it was recorded).
    least_bytes: float | None = None
    # The case's first port compiled for the CPU, where another port was measured: what NumPy's point reads
    # besides the catalog's count (None: the first port was measured, or saved before it was counted).
    numpy_counts: Counts | None = None

    @property
    def work(self) -> float | None:
        """JAX's program's FLOPs plus transcendentals (unknown transcendentals count as none), or None."""
        return self.counts("jax").work

    @property
    def intensity(self) -> float | None:
        """JAX's program's work per byte accessed (FLOP/byte); None when either is unknown or no byte moves."""
        return self.counts("jax").intensity

    def side(self, name: str) -> RooflineSide | None:
        if name not in ROOFLINE_SIDES:
            raise KeyError(name)
        return getattr(self, name)

    def counts(self, name: str) -> Counts:
        """The counts ``name``'s point is placed by: JAX's program's for JAX's sides (the CPU program's for
        JAX on the CPU where there are some). NumPy runs none of JAX's programs, and each port's counts what
        that port does (a Pallas kernel's none XLA can see): its point reads the catalog's FLOPs and the arrays
        in and out where known, else the case's first port's CPU program (_numpy_side)."""
        if name not in ROOFLINE_SIDES:
            raise KeyError(name)
        if name != "jax" and self.cpu_counts is not None:
            program = self.cpu_counts
        else:
            program = Counts(self.flops, self.bytes, self.transcendentals, dict(self.source), self.xla,
                             self.least_bytes)
        if name == "numpy":
            return _numpy_side(self.numpy_counts or program, self.catalog_flops)
        return program

    def side_work(self, name: str) -> float | None:
        return self.counts(name).work

    def side_bytes(self, name: str) -> float | None:
        """The bytes ``name``'s memory roof is read from: XLA's count of bytes accessed, unless the side's
        call took less time than those bytes at its bandwidth: XLA counted traffic that stayed on the chip
        or in cache (on a TPU v5e, matmul 2048x2048's 117 MB would take 143 µs at 819 GB/s, and the chip
        was busy 89 µs a call), so the roof is the arrays in and out, the least any implementation moves."""
        side, counts = self.side(name), self.counts(name)
        least, bandwidth = counts.least_bytes, None if side is None else side.bandwidth_bytes_per_s
        if (counts.bytes and least and least < counts.bytes and bandwidth
                and counts.bytes / bandwidth > side.time_s):  # type: ignore[union-attr]
            return least
        return counts.bytes

    def bytes_source(self, name: str) -> str | None:
        """Where side_bytes came from: the counts' own source, or ARRAYS_IN_OUT where they were beaten."""
        counts = self.counts(name)
        return ARRAYS_IN_OUT if self.side_bytes(name) != counts.bytes else counts.source.get("bytes")

    def side_intensity(self, name: str) -> float | None:
        """The side's work per byte of its memory roof (side_bytes), FLOP/byte."""
        work, moved = self.side_work(name), self.side_bytes(name)
        return None if work is None or not moved or moved <= 0 else work / moved

    def flops_per_s(self, name: str) -> float | None:
        """The side's attained work rate (FLOP/s, transcendentals included), over its time on the device
        where there is one (JAX on a GPU or TPU), else over its runtime."""
        side = self.side(name)
        return None if side is None else _rate(self.side_work(name), side.time_s)

    def bytes_per_s(self, name: str) -> float | None:
        side = self.side(name)
        return None if side is None else _rate(self.side_bytes(name), side.time_s)

    def blocked_flops_per_s(self, name: str) -> float | None:
        """A side read from its device time: its work rate over the blocked runtime, the host's round trip
        included; None for a side read from its runtime (then flops_per_s is that figure)."""
        side = self.side(name)
        return None if side is None or not side.device_s else _rate(self.side_work(name), side.runtime_s)

    def roof_times(self, name: str) -> dict[str, float]:
        """The least time a call could take under each known roof: "compute" (its FLOPs at the
        peak, transcendentals too where the side has no rate of its own for them),
        "transcendental" (at the side's measured rate) and "memory" (its bytes at the bandwidth)."""
        side, counts, moved = self.side(name), self.counts(name), self.side_bytes(name)
        if side is None or counts.flops is None or not moved or moved <= 0:
            return {}
        trans = counts.transcendentals or 0.0
        own_rate = side.transcendentals_per_s if side.transcendentals_per_s and trans else None
        times: dict[str, float] = {}
        if side.peak_flops_per_s:
            times["compute"] = (counts.flops + (0.0 if own_rate else trans)) / side.peak_flops_per_s
        if own_rate:
            times["transcendental"] = trans / own_rate
        if side.bandwidth_bytes_per_s:
            times["memory"] = moved / side.bandwidth_bytes_per_s
        return times

    def bound_flops_per_s(self, name: str) -> float | None:
        """The work rate the roofs allow: the work over the longest of the roof times (with no
        transcendental rate, min(compute peak, intensity x bandwidth)); None without the counts
        or any ceiling."""
        times, work = self.roof_times(name), self.side_work(name)
        longest = max(times.values(), default=0.0)
        return work / longest if work and longest > 0 else None

    def compute_roof_flops_per_s(self, name: str) -> float | None:
        """The flat roof at this call's mix of FLOPs and transcendentals (the compute peak when it
        has none): what the chart draws as the compute ceiling."""
        times, work = self.roof_times(name), self.side_work(name)
        if work and "compute" in times and not self.counts(name).transcendentals:
            return self.side(name).peak_flops_per_s  # the peak itself: work / (work / peak) rounds
        longest = max((times[k] for k in ("compute", "transcendental") if k in times), default=0.0)
        return work / longest if work and longest > 0 else None

    def fraction(self, name: str) -> float | None:
        """The attained rate as a share of the bound (above 1: the bound was not one, above_bound)."""
        rate, bound = self.flops_per_s(name), self.bound_flops_per_s(name)
        return rate / bound if rate is not None and bound else None

    def blocked_fraction(self, name: str) -> float | None:
        """The blocked runtime's rate as a share of the bound, beside a fraction read from device time."""
        rate, bound = self.blocked_flops_per_s(name), self.bound_flops_per_s(name)
        return rate / bound if rate is not None and bound else None

    def round_trip_share(self, name: str) -> float | None:
        """The share of a blocked call that the device's own time leaves out: the host's round trip
        (dispatch, launch, synchronisation); None for a side read from its runtime."""
        side = self.side(name)
        if side is None or not side.device_s or not side.runtime_s > 0:
            return None
        return min(max(1.0 - side.device_s / side.runtime_s, 0.0), 1.0)

    def above_bound(self, name: str) -> bool:
        """Whether the side ran faster than its bound allows, beyond the ceilings' noise (AT_BOUND_NOISE):
        then a ceiling (or a count) is wrong for this call, and what holds it back is not known."""
        share = self.fraction(name)
        return share is not None and share > 1.0 + AT_BOUND_NOISE

    def at_bound(self, name: str) -> bool:
        """Whether the side ran at its bound: above it, but within the ceilings' noise (a share over 100%
        is never quoted; the words say "at its bound")."""
        share = self.fraction(name)
        return share is not None and 1.0 < share <= 1.0 + AT_BOUND_NOISE

    def limit(self, name: str) -> str | None:
        """What holds the side back: "overhead", "memory" or "compute"; None when that cannot be told
        (a count or a ceiling unknown, or the roofs of a side above its bound). A side read from its
        device time is judged by the roofs alone (its round trip is the blocked figure's: blocked_limit),
        unless the host's dispatch may have paced its calls back to back ("overhead")."""
        side = self.side(name)
        if side is None:
            return None
        if side.device_s:
            if side.host_paced:
                return "overhead"
            return None if self.above_bound(name) else self._roof_limit(name)
        return self._blocked_limit(name, above=self.above_bound(name))

    def blocked_limit(self, name: str) -> str | None:
        """What holds a blocked call back, the host's round trip included: "overhead" (the profile's host
        gap over OVERHEAD_GAP_SHARE where a profile was taken, else OVERHEAD_CALLS), else the roofs'."""
        side = self.side(name)
        if side is None or not side.device_s:
            return self.limit(name)
        blocked, bound = self.blocked_flops_per_s(name), self.bound_flops_per_s(name)
        return self._blocked_limit(name, above=blocked is not None and bool(bound)
                                   and blocked > (1.0 + AT_BOUND_NOISE) * bound)  # type: ignore[operator]

    def _blocked_limit(self, name: str, *, above: bool) -> str | None:
        """The runtime's limit: overhead from the profile's gap or the empty calls (neither rests on the
        roofs, so they stand above a bound too), else the roofs', unless the rate was ``above`` them."""
        side = self.side(name)
        bound, work = self.bound_flops_per_s(name), self.side_work(name)
        if side.host_gap_share is not None:
            if side.host_gap_share > OVERHEAD_GAP_SHARE:
                return "overhead"
        elif side.empty_call_s and side.empty_call_s > 0:
            if side.runtime_s < OVERHEAD_CALLS * side.empty_call_s:
                return "overhead"
            if not above and bound and work is not None and work / bound < side.empty_call_s:
                return "overhead"
        return None if above else self._roof_limit(name)

    def _roof_limit(self, name: str) -> str | None:
        """"memory" or "compute" (transcendentals included) by which roof takes longer; None without both."""
        times = self.roof_times(name)
        if "memory" not in times or "compute" not in times:
            return None
        compute = max(times["compute"], times.get("transcendental", 0.0))
        return "memory" if times["memory"] > compute else "compute"

    def to_dict(self) -> dict[str, Any]:
        """The counts and, per side, its ceilings and the derived figures (docs/json.md)."""
        doc: dict[str, Any] = {"flops": self.flops, "bytes": self.bytes, "transcendentals": self.transcendentals,
                               "source": {k: self.source.get(k) for k in COUNTS},
                               "catalog_flops": self.catalog_flops, "xla": None if self.xla is None else dict(self.xla),
                               "work": self.work, "intensity": self.intensity, "least_bytes": self.least_bytes,
                               "cpu_counts": None if self.cpu_counts is None else self.cpu_counts.to_dict(),
                               "numpy_counts": None if self.numpy_counts is None else self.numpy_counts.to_dict()}
        for name in ROOFLINE_SIDES:
            side = self.side(name)
            counts = self.counts(name)
            doc[name] = None if side is None else side.to_dict() | {
                "flops": counts.flops, "flops_source": counts.source.get("flops"),
                "transcendentals": counts.transcendentals, "work": counts.work,
                "bytes": self.side_bytes(name), "bytes_source": self.bytes_source(name),
                "intensity": self.side_intensity(name), "flops_per_s": self.flops_per_s(name),
                "bytes_per_s": self.bytes_per_s(name), "bound_flops_per_s": self.bound_flops_per_s(name),
                "compute_roof_flops_per_s": self.compute_roof_flops_per_s(name),
                "fraction": self.fraction(name), "above_bound": self.above_bound(name), "limit": self.limit(name),
                "blocked_flops_per_s": self.blocked_flops_per_s(name), "blocked_fraction": self.blocked_fraction(name),
                "blocked_limit": self.blocked_limit(name) if side.device_s else None,
                "round_trip_share": self.round_trip_share(name)}
        return doc

    @classmethod
    def from_dict(cls, data: Any) -> Roofline | None:
        """The measured part of ``to_dict`` output; None for a result saved without a roofline."""
        if not isinstance(data, dict):
            return None
        source = data.get("source") or {}
        xla = data.get("xla")
        return cls(flops=_count(data.get("flops")), bytes=_count(data.get("bytes")),
                   transcendentals=_count(data.get("transcendentals")),
                   source={k: source.get(k) if _count(data.get(k)) is not None else None for k in COUNTS},
                   catalog_flops=_count(data.get("catalog_flops")),
                   xla={k: _count(v) for k, v in xla.items()} if isinstance(xla, dict) else None,
                   cpu_counts=Counts.from_dict(data.get("cpu_counts")), least_bytes=_count(data.get("least_bytes")),
                   numpy_counts=Counts.from_dict(data.get("numpy_counts")),
                   **{name: RooflineSide.from_dict(data[name]) if data.get(name) else None
                      for name in ROOFLINE_SIDES})


def _numpy_side(program: Counts, catalog_flops: float | None) -> Counts:
    """NumPy's counts: the catalog's hand count of FLOPs (the throughput line's) and the arrays in and out,
    each where known, else ``program``'s (the case's first port's, compiled for the CPU). A port's program
    counts what that port does: cumsum over 10,000 elements put NumPy's 27 µs at 13%, 49% and 3.1% of three
    bounds beside its three ports."""
    flops, flops_source = program.flops, program.source.get("flops")
    if catalog_flops is not None:
        flops, flops_source = float(catalog_flops), CATALOG_COUNT
    moved, bytes_source = program.bytes, program.source.get("bytes")
    if program.least_bytes:
        moved, bytes_source = program.least_bytes, ARRAYS_IN_OUT
    return Counts(flops, moved, program.transcendentals,
                  {"flops": flops_source, "bytes": bytes_source,
                   "transcendentals": program.source.get("transcendentals")},
                  program.xla, program.least_bytes)


def xla_counts(cost: Any) -> dict[str, float | None] | None:
    """FLOPs, bytes accessed and transcendentals from ``compiled.cost_analysis()`` (a dict; a
    list of one dict before JAX 0.4.38). XLA leaves a zero count out (a matmul's dict has no
    "transcendentals"), so a missing key is 0 when the dict holds any count; None without one."""
    if isinstance(cost, list | tuple):
        cost = cost[0] if len(cost) == 1 else None
    if not isinstance(cost, dict):
        return None
    keys = {"flops": "flops", "bytes": "bytes accessed", "transcendentals": "transcendentals"}
    found = {name: _count(cost.get(key)) for name, key in keys.items()}
    if all(v is None for v in found.values()):
        return None
    # Left out is zero; present but negative (XLA's "cannot count") stays unknown.
    return {name: (0.0 if v is None and keys[name] not in cost else v) for name, v in found.items()}


def choose_counts(xla: dict[str, float | None] | None, catalog_flops: float | None,
                  least_bytes: float | None = None) -> dict[str, Any]:
    """The counts the roofline uses and where each came from: XLA's, except FLOPs where the
    catalog's hand count is far above XLA's (work inside a custom call XLA cannot see), and bytes
    where XLA could not count them: then ``least_bytes``, the arrays in and out, each moved once."""
    xla = xla or {}
    flops, flops_source = xla.get("flops"), XLA_COST if xla.get("flops") is not None else None
    if catalog_flops is not None and (flops is None or flops < CUSTOM_CALL_SHARE * catalog_flops):
        flops, flops_source = float(catalog_flops), CATALOG_COUNT
    counts: dict[str, Any] = {"flops": flops, "bytes": xla.get("bytes"), "transcendentals": xla.get("transcendentals")}
    source = {"flops": flops_source} | {k: XLA_COST if counts[k] is not None else None
                                         for k in ("bytes", "transcendentals")}
    if counts["bytes"] is None and least_bytes:
        counts["bytes"], source["bytes"] = float(least_bytes), ARRAYS_IN_OUT
    return counts | {"source": source}


def _product(a: float | None, b: float | None) -> float | None:
    return a * b if a is not None and b is not None else None


def _rate(amount: float | None, seconds: float) -> float | None:
    return amount / seconds if amount is not None and seconds > 0 else None


def _count(value: Any) -> float | None:
    """A count, or None where it is unknown: XLA's cost analysis says -1 for what it cannot cost
    (on an H200 a cuBLAS matmul's FLOPs and bytes were both -1), and a saved record may hold that."""
    number = _number(value)
    return number if number is not None and number >= 0 else None


def _number(value: Any) -> float | None:
    if value is None or isinstance(value, bool) or not isinstance(value, int | float):
        return None
    value = float(value)
    return value if math.isfinite(value) else None
