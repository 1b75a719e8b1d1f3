"""Whether a Result's speedup may lead a page: the one rule every headline uses (best speedup,
crossover, the sweep's and Compare's verdicts), decided from the checklist.

A result is trusted when nothing in its checklist fails (but "Workload large enough"), the
machine was quiet enough (or the pair was timed again on the free cores), the speedup held from
one pair of runtime blocks to the next where there were pairs, and its 95% range is known and
at most a factor of TRUSTED_SPREAD wide.
"Samples stable" alone does not doubt a result: on a shared machine the medians wander by ±20% or
so busy or not, and the range already carries that noise (benchmarks/RESULTS.md, "A busy neighbour").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ..i18n import N_, _
from ..model.result import Result
from .checks import FAIL, WARN, Check, checklist

# The widest 95% range (high / low) a headline speedup may have. With the median near the middle of
# a range at most 1.5x wide, two runs whose ranges both cover the true speedup agree within 1.5x.
# Measured: a settled quick run on this two-core machine gives 1.25-1.35 (benchmarks/RESULTS.md).
TRUSTED_SPREAD = 1.5

# Checks whose failure is what was measured, not a doubt about the measuring.
MEASURED_NOT_DOUBTED = frozenset({"workload"})

# Why a result is set aside, most serious first; each is worded for "set aside: ...".
WHY = {
    "fail": N_("a check failed"),
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
    by_id = {c.id: c for c in (checks if checks is not None else checklist(result))}
    # "Workload large enough" fails where dispatch dominates: a true finding about a small size (NumPy
    # wins there), not a doubt about the measurement, so a sweep keeps it.
    if any(c.status == FAIL for c in by_id.values() if c.id not in MEASURED_NOT_DOUBTED):
        return Trust(False, "fail")
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
