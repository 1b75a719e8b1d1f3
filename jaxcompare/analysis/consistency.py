"""Figures of one run that cannot all be true: the one place that looks across a whole result, a
sweep, a pitfalls run or a versions run, and names each contradiction as a checklist line that
quotes both figures.

A single figure is judged by checks.py; here two figures that measure the same thing, or that
bound each other (a first call pays at least its compile), are held against each other with
their 95% ranges, so the noise of a shared machine alone never fires a finding.
"""

from __future__ import annotations

import math

from ..model.stats import Stats


def disjoint(a: Stats, b: Stats) -> bool:
    """Whether two measurements of the same thing have 95% ranges that do not overlap (their
    samples' spans where a range is unknown): beyond the noise, one of them measured something else."""
    a_low, a_high = _span(a)
    b_low, b_high = _span(b)
    return a_high < b_low or b_high < a_low


def _span(s: Stats) -> tuple[float, float]:
    low = s.ci_low_s if math.isfinite(s.ci_low_s) else s.min_s
    high = s.ci_high_s if math.isfinite(s.ci_high_s) else max(s.samples_s, default=s.median_s)
    return low, high
