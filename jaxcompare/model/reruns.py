"""Ranges that hold when you run it again. A median's confidence interval knows the noise within one
run; the next run differs by more (where the scheduler puts the threads, the clock's drift over
minutes, the heap), so a range the product calls 95% is a prediction interval for a rerun's median:
the run's own spread and a between-run spread measured on reruns (benchmarks/calibration.py),
both of this run and the next, since either may have drifted.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from .spec import MIN_SAMPLES_FOR_RANGE
from .stats import Stats

Z95 = 1.959964
# How far the log of a speedup moves from one run to the next beyond what its own samples show, as a
# standard deviation: four cases x ten fresh reruns on the 2-core test machine class gave 0.014-0.031,
# and cumsum jumped between two modes 15% apart; 0.06 kept every case's first range at 89-100% of its
# reruns in two such calibrations, 0.05 left cumsum's at 78% (benchmarks/RESULTS.md, "Ranges that hold").
SPEEDUP_RERUN_SD = 0.06
# The same for one side's median (NumPy's or JAX's runtime): the machine's speed moves both sides of a
# pair alike, so a side alone moves more, 0.030-0.066 over the same reruns; 0.07 held cumsum's JAX too.
RUNTIME_RERUN_SD = 0.07


def _log_sd(median: float, low: float, high: float) -> float:
    """The standard deviation of log(median) a 95% interval [low, high] implies (its wider half)."""
    return max(math.log(high / median), math.log(median / low)) / Z95


def _spread(values: Sequence[float]) -> float:
    """The standard deviation of the logs of ``values`` (0 for fewer than two)."""
    logs = [math.log(v) for v in values if v > 0 and math.isfinite(v)]
    return statistics.stdev(logs) if len(logs) > 1 else 0.0


def rerun_ratio_range(over: Stats, under: Stats, pairs: Sequence[float] = ()) -> tuple[float, float]:
    """Where a rerun's ``over`` median / ``under`` median falls 95% of the time: this run's ratio, with
    its two medians' intervals and the between-run spread (SPEEDUP_RERUN_SD, or the spread of the
    run's own ``pairs`` of blocks where wider) for this run and the next. nan where an interval is
    unknown, or a side has fewer than MIN_SAMPLES_FOR_RANGE samples (its order-statistics interval
    is then the whole sample range, which covers the median less than 95% of the time)."""
    bounds = (over.ci_low_s, over.ci_high_s, under.ci_low_s, under.ci_high_s)
    if (min(over.n, under.n) < MIN_SAMPLES_FOR_RANGE or not all(math.isfinite(b) and b > 0 for b in bounds)
            or not over.median_s > 0 or not under.median_s > 0):
        return math.nan, math.nan
    ratio = over.median_s / under.median_s
    within = math.hypot(_log_sd(over.median_s, over.ci_low_s, over.ci_high_s),
                        _log_sd(under.median_s, under.ci_low_s, under.ci_high_s))
    between = max(SPEEDUP_RERUN_SD, _spread(pairs))
    half = Z95 * math.sqrt(2 * (within ** 2 + between ** 2))
    return ratio * math.exp(-half), ratio * math.exp(half)


def run_log_sd(stats: Stats, runs: Sequence[float] = ()) -> float:
    """How far the log of ``stats``' median may move if it were measured again: its own interval, and
    the between-run spread (RUNTIME_RERUN_SD, or that of ``runs``, the medians of the independent runs
    it pools, where wider) shrunk by their number. inf where it has no interval."""
    if not (math.isfinite(stats.ci_low_s) and math.isfinite(stats.ci_high_s) and stats.ci_low_s > 0
            and stats.median_s > 0) or stats.n < MIN_SAMPLES_FOR_RANGE:
        return math.inf
    between = max(RUNTIME_RERUN_SD, _spread(runs)) / math.sqrt(max(len(runs), 1))
    return math.hypot(_log_sd(stats.median_s, stats.ci_low_s, stats.ci_high_s), between)


def rerun_range(stats: Stats) -> tuple[float, float]:
    """Where a rerun's median of one side falls 95% of the time (nan where it has no interval)."""
    sd = run_log_sd(stats)
    if not math.isfinite(sd):
        return math.nan, math.nan
    half = Z95 * math.sqrt(2) * sd
    return stats.median_s * math.exp(-half), stats.median_s * math.exp(half)


def rerun_bounds(stats: Stats) -> tuple[float, float]:
    """rerun_range, or the median alone where it has none (a whisker that claims nothing)."""
    low, high = rerun_range(stats)
    return (low, high) if math.isfinite(low) and math.isfinite(high) else (stats.median_s, stats.median_s)


def pooled_range(stats: Stats, runs: Sequence[float]) -> tuple[float, float]:
    """The 95% range of a median pooled from the independent runs whose medians are ``runs`` (a versions
    run's rounds), the between-run spread in it (nan where it has no interval)."""
    sd = run_log_sd(stats, runs)
    if not math.isfinite(sd):
        return math.nan, math.nan
    return stats.median_s * math.exp(-Z95 * sd), stats.median_s * math.exp(Z95 * sd)
