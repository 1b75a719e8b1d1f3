"""The roofline of one comparison: how much work a call does (FLOPs, transcendentals, bytes),
the ceilings each side runs under (compute, memory bandwidth, and on the CPU a transcendental
rate), and which one holds it back (or whether the call is mostly fixed cost). The counts come
from XLA's cost analysis of the compiled JAX program; NumPy does the same maths, so its side
uses the same counts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from ..i18n import N_

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

    def to_dict(self) -> dict[str, Any]:
        return {"runtime_s": self.runtime_s, "peak_flops_per_s": self.peak_flops_per_s,
                "peak_source": self.peak_source, "bandwidth_bytes_per_s": self.bandwidth_bytes_per_s,
                "bandwidth_source": self.bandwidth_source, "empty_call_s": self.empty_call_s,
                "transcendentals_per_s": self.transcendentals_per_s,
                "transcendentals_source": self.transcendentals_source, "host_gap_share": self.host_gap_share}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RooflineSide:
        return cls(runtime_s=float(data["runtime_s"]), peak_flops_per_s=_number(data.get("peak_flops_per_s")),
                   peak_source=data.get("peak_source"),
                   bandwidth_bytes_per_s=_number(data.get("bandwidth_bytes_per_s")),
                   bandwidth_source=data.get("bandwidth_source"), empty_call_s=_number(data.get("empty_call_s")),
                   transcendentals_per_s=_number(data.get("transcendentals_per_s")),
                   transcendentals_source=data.get("transcendentals_source"),
                   host_gap_share=_number(data.get("host_gap_share")))


@dataclass(frozen=True)
class Roofline:
    """The counts of one call and each side's ceilings; the derived figures (intensity, attained
    rates, bound, fraction, limit) are computed from them, never stored apart from them.

    Transcendentals are work: a side with a measured transcendental rate has a third roof, the
    time its sin/exp/tanh take at that rate; without one, each counts as one FLOP (a lower bound
    of what it costs). Either way they are in ``work``, the attained rate's numerator."""

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

    @property
    def work(self) -> float | None:
        """FLOPs plus transcendentals (unknown transcendentals count as none), or None."""
        if self.flops is None:
            return None
        return self.flops + (self.transcendentals or 0.0)

    @property
    def intensity(self) -> float | None:
        """Work per byte accessed (FLOP/byte); None when either is unknown or no byte moves."""
        work = self.work
        if work is None or not self.bytes or self.bytes <= 0:
            return None
        return work / self.bytes

    def side(self, name: str) -> RooflineSide | None:
        if name not in ROOFLINE_SIDES:
            raise KeyError(name)
        return getattr(self, name)

    def flops_per_s(self, name: str) -> float | None:
        """The side's attained work rate (FLOP/s, transcendentals included)."""
        side, work = self.side(name), self.work
        return work / side.runtime_s if side is not None and work is not None and side.runtime_s > 0 else None

    def bytes_per_s(self, name: str) -> float | None:
        side = self.side(name)
        return self.bytes / side.runtime_s if side is not None and self.bytes is not None and side.runtime_s > 0 \
            else None

    def roof_times(self, name: str) -> dict[str, float]:
        """The least time a call could take under each known roof: "compute" (its FLOPs at the
        peak, transcendentals too where the side has no rate of its own for them),
        "transcendental" (at the side's measured rate) and "memory" (its bytes at the bandwidth)."""
        side = self.side(name)
        if side is None or self.flops is None or not self.bytes or self.bytes <= 0:
            return {}
        trans = self.transcendentals or 0.0
        own_rate = side.transcendentals_per_s if side.transcendentals_per_s and trans else None
        times: dict[str, float] = {}
        if side.peak_flops_per_s:
            times["compute"] = (self.flops + (0.0 if own_rate else trans)) / side.peak_flops_per_s
        if own_rate:
            times["transcendental"] = trans / own_rate
        if side.bandwidth_bytes_per_s:
            times["memory"] = self.bytes / side.bandwidth_bytes_per_s
        return times

    def bound_flops_per_s(self, name: str) -> float | None:
        """The work rate the roofs allow: the work over the longest of the roof times (with no
        transcendental rate, min(compute peak, intensity x bandwidth)); None without the counts
        or any ceiling."""
        times, work = self.roof_times(name), self.work
        longest = max(times.values(), default=0.0)
        return work / longest if work and longest > 0 else None

    def compute_roof_flops_per_s(self, name: str) -> float | None:
        """The flat roof at this call's mix of FLOPs and transcendentals (the compute peak when it
        has none): what the chart draws as the compute ceiling."""
        times, work = self.roof_times(name), self.work
        if work and "compute" in times and not self.transcendentals:
            return self.side(name).peak_flops_per_s  # the peak itself: work / (work / peak) rounds
        longest = max((times[k] for k in ("compute", "transcendental") if k in times), default=0.0)
        return work / longest if work and longest > 0 else None

    def fraction(self, name: str) -> float | None:
        """The attained rate as a share of the bound."""
        rate, bound = self.flops_per_s(name), self.bound_flops_per_s(name)
        return rate / bound if rate is not None and bound else None

    def limit(self, name: str) -> str | None:
        """"overhead" (the profile's host gap over OVERHEAD_GAP_SHARE where a profile was taken,
        else OVERHEAD_CALLS), else "memory" or "compute" (transcendentals included) by which roof
        takes longer; None when that cannot be told (a count or a ceiling unknown)."""
        side = self.side(name)
        if side is None:
            return None
        bound, work = self.bound_flops_per_s(name), self.work
        if side.host_gap_share is not None:
            if side.host_gap_share > OVERHEAD_GAP_SHARE:
                return "overhead"
        elif side.empty_call_s and side.empty_call_s > 0:
            if side.runtime_s < OVERHEAD_CALLS * side.empty_call_s:
                return "overhead"
            if bound and work is not None and work / bound < side.empty_call_s:
                return "overhead"
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
                               "work": self.work, "intensity": self.intensity}
        for name in ROOFLINE_SIDES:
            side = self.side(name)
            doc[name] = None if side is None else side.to_dict() | {
                "intensity": self.intensity, "flops_per_s": self.flops_per_s(name),
                "bytes_per_s": self.bytes_per_s(name), "bound_flops_per_s": self.bound_flops_per_s(name),
                "compute_roof_flops_per_s": self.compute_roof_flops_per_s(name),
                "fraction": self.fraction(name), "limit": self.limit(name)}
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
                   **{name: RooflineSide.from_dict(data[name]) if data.get(name) else None
                      for name in ROOFLINE_SIDES})


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
