"""Whether a Result's speedup may lead a page: the one rule every headline uses (best speedup,
crossover, the sweep's and Compare's verdicts), decided from the checklist.

A result is trusted when nothing in its checklist fails (but "Workload large enough"), its JAX
figures do not contradict each other (a dispatch alone above the blocked call), the machine was
quiet enough (or the pair was timed again on the free cores), the speedup held from one pair of
runtime blocks to the next where there were pairs, and its 95% range is known and at most a
factor of TRUSTED_SPREAD wide.
"Samples stable" alone does not doubt a result: on a shared machine the medians wander by ±20% or
so busy or not, and the range already carries that noise (benchmarks/RESULTS.md, "A busy neighbour").

A result set aside may still say which side is faster (``direction``): its size is doubtful, but
a 95% range wholly on one side of 1x is not, unless the reason it was set aside could have put it
there (a failed check or figures that contradict each other; contention that slowed the side the
range says is slower).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ..i18n import N_, _
from ..model.formatting import format_factor
from ..model.result import Result
from .checks import FAIL, WARN, Check, checklist, dispatch_above_blocked

# The widest 95% range (high / low) a headline speedup may have: the range is where a rerun's speedup
# falls (model/reruns.py), so a run within it is one whose rerun agrees within that factor. Measured:
# settled careful runs on this two-core machine class read 1.41-1.47 (benchmarks/RESULTS.md, "Ranges
# that hold"); 1.5 set three of ten cumsum runs aside for their range alone.
TRUSTED_SPREAD = 1.6

# Checks whose failure is what was measured, not a doubt about the measuring.
MEASURED_NOT_DOUBTED = frozenset({"workload"})

# Why a result is set aside, most serious first; each is worded for "set aside: ...".
WHY = {
    # Not a measurement to doubt but no speed at all: Pallas's interpreter runs the kernel op by op in Python.
    "interpreted": N_("a Pallas kernel interpreted on the CPU (Pallas compiles only for a GPU or TPU): its time is "
                      "not a speed figure"),
    "fail": N_("a check failed"),
    "disagree": N_("JAX's dispatch alone took longer than its blocked call"),
    "busy": N_("the machine was busy"),
    "steady": N_("the speedup moved between pairs of blocks"),
    "range": N_("the speedup's range is too wide"),
    "no_range": N_("too few samples for a range"),
}


@dataclass(frozen=True)
class Trust:
    trusted: bool
    why: str | None = None  # a WHY key when not trusted


def trust(result: Result, checks: Sequence[Check] | None = None) -> Trust:
    """Whether ``result`` may be headlined, and if not the main reason (a WHY key)."""
    if result.interpreted:
        return Trust(False, "interpreted")
    by_id = {c.id: c for c in (checks if checks is not None else checklist(result))}
    # "Workload large enough" fails where dispatch dominates: a true finding about a small size (NumPy
    # wins there), not a doubt about the measurement, so a sweep keeps it.
    if any(c.status == FAIL for c in by_id.values() if c.id not in MEASURED_NOT_DOUBTED):
        return Trust(False, "fail")
    # Figures that cannot both be true: the runtime the speedup divides is in doubt, so no verdict.
    if by_id["blocked"].status == WARN and dispatch_above_blocked(result):
        return Trust(False, "disagree")
    if by_id["busy"].status == WARN:
        return Trust(False, "busy")
    if by_id["steady"].status == WARN:
        return Trust(False, "steady")
    low, high = result.speedup_range
    if not (math.isfinite(low) and math.isfinite(high) and low > 0):
        return Trust(False, "no_range")
    if high / low > TRUSTED_SPREAD:
        return Trust(False, "range")
    return Trust(True)


def trusted(result: Result) -> bool:
    """The one test every headline uses: may this result's speedup lead?"""
    return trust(result).trusted


def set_aside_why(result: Result) -> str | None:
    """Why this result's speedup is set aside, as a WHY key (English in JSON, worded where shown), or None
    where it may lead."""
    verdict = trust(result)
    return None if verdict.trusted else verdict.why or "fail"


# The most contention may be taken to slow a side that did not lose cores to pinning: beside neighbours it
# slowed XLA's work at most 3.0x (reduction 2000x2000) and a serial NumPy 2.59x (matmul 10x10; RESULTS.md,
# "Which side a busy machine slows"). NumPy's BLAS, spinning at its barriers, has no such bound (false 5-70x).
BUSY_SLOWDOWN = 4.0

# The side a firm direction names: the whole 95% range above 1x, or below it.
JAX_FASTER, NUMPY_FASTER = "jax_faster", "numpy_faster"

# Why a direction stands (or not), worded for "25x25 (...)"; {side}: "below 1x" or "above 1x".
DIRECTION_WHY = {
    "trusted": N_("trusted"),
    "range": N_("its range is too wide, but lies wholly {side}"),
    "steady": N_("the speedup moved between pairs of blocks, but every pair and the whole range lie {side}"),
    "busy_far": N_("the machine was busy, but only a slowdown of {slowed} beyond {limit}, more than contention "
                   "caused anywhere it was measured, could have put the whole range {side}"),
}
# Why a range wholly on one side of 1x still names no side, worded for "20x20 (...)"; {side} as above.
NOT_SURE = {
    "fail": N_("wholly {side}, but a check failed"),
    "disagree": N_("wholly {side}, but JAX's dispatch alone took longer than its blocked call"),
    "steady": N_("wholly {side}, but its pairs of blocks disagree on the side"),
    "steady_kept": N_("wholly {side}, but the speedup moved between pairs of blocks, which were timed against "
                      "NumPy with freed memory kept, not the NumPy figure this range is of"),
    "busy": N_("wholly {side}, but the machine was busy and {slowed} ran on more than one core, the side "
               "contention slows: it may have put the range there"),
    "busy_either": N_("wholly {side}, but the machine was busy and either side may have lost cores to it"),
    "busy_near": N_("wholly {side}, but the machine was busy and within {limit} of 1x: contention has slowed "
                    "a side by up to 3x where it was measured"),
    "pinned": N_("wholly {side}, but the machine was busy and the recheck pinned {slowed} to fewer cores than "
                 "it wanted, which slows it by more than contention does"),
}
# What the runtime blocks call each side, and its name for readers.
SIDE_NAMES = {"numpy": "NumPy", "runtime": "JAX"}


@dataclass(frozen=True)
class Direction:
    """Which side is faster for sure (JAX_FASTER, NUMPY_FASTER; None: this run cannot say) and
    why that stands, a DIRECTION_WHY key (or, for None, a WHY key or "straddles"); ``claimed``:
    the side the range alone names, whether or not it stands (None where it holds 1x or is unknown)."""

    side: str | None
    why: str
    claimed: str | None = None

    def _where(self) -> str:
        return _("below 1x") if (self.side or self.claimed) == NUMPY_FASTER else _("above 1x")

    def reason(self) -> str:
        """Why the direction stands, in the reader's language ('' for no direction)."""
        if self.side is None or self.why not in DIRECTION_WHY:
            return ""
        looks_slower = SIDE_NAMES["runtime" if self.side == NUMPY_FASTER else "numpy"]
        return _(DIRECTION_WHY[self.why]).format(side=self._where(), slowed=looks_slower,
                                                  limit=format_factor(BUSY_SLOWDOWN))

    def doubt(self) -> str:
        """Why a range wholly on one side names no side here ('' where it does, or holds 1x)."""
        if self.side is not None or self.claimed is None or self.why not in NOT_SURE:
            return ""
        looks_slower = SIDE_NAMES["runtime" if self.claimed == NUMPY_FASTER else "numpy"]
        return _(NOT_SURE[self.why]).format(side=self._where(), slowed=looks_slower,
                                            limit=format_factor(BUSY_SLOWDOWN))


def contended_sides(result: Result) -> set[str]:
    """The sides ("numpy", "runtime") a busy machine may have slowed beyond BUSY_SLOWDOWN, or pinning
    slowed: those that ran on more than one core in the first runtime blocks (load.recheck's
    "parallel"): NumPy's BLAS on a matmul (DESIGN.md), XLA's threads elsewhere (reduction 2000x2000
    fell from 2.19x to 0.73x beside a neighbour: benchmarks/RESULTS.md). Not recorded, or neither:
    either side may have been. A serial side is slowed too, within BUSY_SLOWDOWN."""
    parallel = set((result.load.get("recheck") or {}).get("parallel") or ()) & set(SIDE_NAMES)
    return parallel or set(SIDE_NAMES)


def direction(result: Result, checks: Sequence[Check] | None = None) -> Direction:
    """Which side is faster whatever the doubt about by how much: the whole 95% range on one side
    of 1x, from a result that is trusted, or set aside only for a reason that cannot have put the
    range there. A failed check (outputs that disagree, a wrong dtype, an unblocked call) gives none;
    a busy machine only a range beyond BUSY_SLOWDOWN from 1x, never "JAX is faster" where NumPy's
    side may have run in parallel, and none where the recheck pinned a side to fewer cores than it
    wanted; a speedup that moved between pairs of blocks only when every pair lies on the range's side."""
    low, high = result.speedup_range
    if not (math.isfinite(low) and math.isfinite(high) and low > 0):
        return Direction(None, "no_range")
    if low <= 1 <= high:
        return Direction(None, "straddles")
    side = JAX_FASTER if low > 1 else NUMPY_FASTER
    checks = list(checks) if checks is not None else checklist(result)
    verdict = trust(result, checks)
    if verdict.trusted:
        return Direction(side, "trusted")
    if verdict.why not in ("range", "steady", "busy"):  # "interpreted", "fail", "disagree", "no_range"
        return Direction(None, verdict.why or "fail", side)
    # The pairs of blocks are of NumPy's kept-memory figure where it has one, the range of its plain
    # figure: pairs that disagree on the side doubt the range only where the two are one figure.
    if result.numpy_kept is None and any((p > 1) != (side == JAX_FASTER) for p in result.speedup_pairs):
        return Direction(None, "steady", side)
    if verdict.why == "steady" and result.numpy_kept is not None:
        return Direction(None, "steady_kept", side)  # the pairs that moved say nothing of this range
    if verdict.why == "busy":
        return _busy_direction(result, side, low, high)
    return Direction(side, verdict.why)


def _busy_direction(result: Result, side: str, low: float, high: float) -> Direction:
    """A busy result's direction: contention only adds time, but to either side (a serial NumPy
    2.59x slower beside neighbours), so the range must lie beyond BUSY_SLOWDOWN from 1x; the side
    that looks slower must not be a NumPy that may have run in parallel (no bound there); and a
    recheck pinned to fewer cores than the side that looks slower wanted slowed it by more than
    contention does (pinning the other side only narrowed the gap)."""
    looks_slower = "runtime" if side == NUMPY_FASTER else "numpy"
    slowed = contended_sides(result)
    recheck = result.load.get("recheck") or {}
    if recheck.get("pinned") and not recheck.get("equal") and looks_slower in slowed:
        return Direction(None, "pinned", side)
    if looks_slower == "numpy" and "numpy" in slowed:
        return Direction(None, "busy" if len(slowed) == 1 else "busy_either", side)
    if (low if side == JAX_FASTER else 1 / high) > BUSY_SLOWDOWN:
        return Direction(side, "busy_far")
    return Direction(None, "busy_near", side)


def split(results: Sequence[Result]) -> tuple[list[Result], list[Result]]:
    """(trusted, set aside), each in the given order."""
    verdicts = [(r, trusted(r)) for r in results]
    return [r for r, ok in verdicts if ok], [r for r, ok in verdicts if not ok]


def set_aside_text(results: Sequence[Result], unit: str = "sizes") -> str | None:
    """'2 of 7 sizes set aside: the machine was busy.' (reasons by how many they cover), a
    sentence; None when every result is trusted. ``unit``: "sizes" (a sweep) or "results"."""
    doubtful = [trust(r) for r in results]
    reasons = [t.why for t in doubtful if not t.trusted and t.why]
    if not reasons:
        return None
    counts = {key: reasons.count(key) for key in WHY if key in reasons}
    why = _(", ").join(_(WHY[key]) for key in sorted(counts, key=lambda k: -counts[k]))  # Chinese lists take 、
    template = (_("{n} of {total} sizes set aside: {why}.") if unit == "sizes"
                else _("{n} of {total} results set aside: {why}."))
    return template.format(n=len(reasons), total=len(results), why=why)
