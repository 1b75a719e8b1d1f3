"""Is run B faster than run A? A verdict from the raw samples, not from two medians.

Two tests must agree before a difference is called: a Mann–Whitney U rank test on the
samples (two-sided, as asv does) and a bootstrap confidence interval of the ratio of
medians that excludes 1. And the difference must matter: a shift smaller than
``min_effect`` (2% by default) is reported as no significant difference, because with
hundreds of samples a rank test finds even a 0.5% shift "significant".

Convention: ``ratio = median(B) / median(A)`` of *times*, so B is **faster** when its
times are lower (ratio < 1) and **slower** when they are higher (ratio > 1).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..i18n import _, translate_text
from ..model.cases import format_shape
from ..model.formatting import format_factor
from ..model.result import Result, finite_or_none
from ..model.stats import Stats
from .summary import doubt_text

# What a verdict finds about B relative to A; the words for each live with the views.
FASTER = "faster"
SLOWER = "slower"
SAME = "same"
TOO_FEW = "too few"
MIN_SAMPLES = 3
BOOTSTRAP_RESAMPLES = 2000


@dataclass(frozen=True)
class Verdict:
    """Is B faster than A: what the two tests found, as numbers a page or a CLI can phrase."""

    direction: str  # FASTER / SLOWER / SAME / TOO_FEW, about B relative to A
    ratio: float | None  # median B / median A of times: below 1, B is faster
    p_value: float | None  # Mann-Whitney U, two-sided; None with too few samples
    ci_low: float | None  # the 1 - alpha bootstrap CI of the ratio
    ci_high: float | None
    n_a: int
    n_b: int
    median_a_s: float
    median_b_s: float
    alpha: float
    min_effect: float
    significant: bool = False  # both tests agree, however small the shift

    @property
    def shift(self) -> str:
        """Which way the medians moved, significant or not (FASTER or SLOWER)."""
        return FASTER if self.ratio is not None and self.ratio < 1 else SLOWER

    @property
    def factor(self) -> float | None:
        """How many times faster or slower B is (at least 1)."""
        if not self.ratio:
            return None
        return 1 / self.ratio if self.ratio < 1 else self.ratio

    @property
    def rank_test_differs(self) -> bool:
        return self.p_value is not None and self.p_value < self.alpha

    @property
    def ci_excludes_one(self) -> bool:
        return self.ci_low is not None and self.ci_high is not None and (self.ci_high < 1 or self.ci_low > 1)

    @property
    def rank_test_can_decide(self) -> bool:
        """False when these sample counts cannot reach p < alpha even if every B beats every A."""
        return _min_two_sided_p(self.n_a, self.n_b) < self.alpha


def verdict(
    a: Stats,
    b: Stats,
    alpha: float = 0.05,
    min_effect: float = 0.02,
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = 0,
) -> Verdict:
    """Compare B's per-call times with A's (see the module docstring for the rules)."""
    xa = _clean(a.samples_s)
    xb = _clean(b.samples_s)
    med_a = float(np.median(xa)) if xa.size else a.median_s
    med_b = float(np.median(xb)) if xb.size else b.median_s
    ratio = med_b / med_a if med_a > 0 else math.nan
    found = Verdict(direction=TOO_FEW, ratio=finite_or_none(ratio), p_value=None, ci_low=None, ci_high=None,
                    n_a=int(xa.size), n_b=int(xb.size), median_a_s=med_a, median_b_s=med_b, alpha=alpha,
                    min_effect=min_effect)
    if xa.size < MIN_SAMPLES or xb.size < MIN_SAMPLES or not med_a > 0 or not med_b > 0:
        return found

    from scipy.stats import mannwhitneyu

    p = float(mannwhitneyu(xb, xa, alternative="two-sided").pvalue)
    lo, hi = _bootstrap_ratio_ci(xa, xb, 1 - alpha, resamples, seed)
    found = replace(found, p_value=p, ci_low=lo, ci_high=hi)
    significant = found.rank_test_differs and found.ci_excludes_one
    big_enough = (found.factor or 1.0) - 1 >= min_effect
    return replace(found, significant=significant,
                   direction=found.shift if significant and big_enough else SAME)


@dataclass(frozen=True)
class Comparison:
    """Run B against run A: a verdict for each runtime, each run's speedup and NumPy's kept figure,
    and whether the two measured the same thing at all."""

    a: str  # the runs' ids
    b: str
    comparable: bool  # same case, shape and precision
    warnings: list[str]
    differences: list[dict[str, Any]]
    jax_runtime: Verdict
    numpy_runtime: Verdict
    speedup: dict[str, float | None]  # {"a": ..., "b": ...}
    # NumPy with freed memory kept, each run's median where it has one: numpy_runtime (the verdict's)
    # is NumPy as a plain process runs it; None where a run timed NumPy once.
    numpy_kept: dict[str, float | None]


def compare_results(a: Result, b: Result, alpha: float = 0.05, min_effect: float = 0.02) -> Comparison:
    """Run B against run A: verdicts for the JAX and NumPy runtimes, each run's speedup,
    and whether the two are comparable at all (same case, shape and precision). The warnings
    are sentences in the language in force when it is called."""
    warnings: list[str] = []
    if a.case != b.case:
        warnings.append(_("different cases ({a} vs {b}): the times measure different work").format(a=a.case, b=b.case))
    if tuple(a.shape) != tuple(b.shape):
        warnings.append(_("different shapes ({a} vs {b}): the times measure different amounts of work").format(
            a=format_shape(a.shape), b=format_shape(b.shape)))
    if a.precision != b.precision:
        warnings.append(_("different precisions ({a} vs {b}): part of any difference is float32 against "
                          "float64").format(a=a.precision, b=b.precision))
    for label, r in (("A", a), ("B", b)):
        why = doubt_text(r)
        if why is not None:  # the checklist kept this run from every headline: so does a comparison
            # Translators: {run} is A or B; {why} why its checklist doubts it ("the machine was busy").
            warnings.append(_("{run} was set aside by its checklist ({why}): a difference from it may come from "
                              "how it was measured, not from the code").format(run=label, why=why))
        for phase in ("runtime", "numpy"):
            stats = r.phase(phase)
            if not stats.stable:
                # Translators: {run} is A or B; {reason} why the samples are unstable.
                template = (_("{run}'s JAX runtime was unstable: {reason}") if phase == "runtime"
                            else _("{run}'s NumPy runtime was unstable: {reason}"))
                warnings.append(template.format(run=label, reason=translate_text(stats.unstable_reason)))
        if r.speedup_steady is False:
            pairs = r.speedup_pairs
            warnings.append(_("{run}'s speedup moved between its pairs of blocks ({least} to {most})").format(
                run=label, least=format_factor(min(pairs)), most=format_factor(max(pairs))))
    comparable = a.case == b.case and tuple(a.shape) == tuple(b.shape) and a.precision == b.precision
    if comparable and (a.numpy_kept is None) != (b.numpy_kept is None):
        # Same arrays, so one run timed NumPy once in its worker (saved before the plain process, or
        # the machine was busy): glibc's heap history there, not the code, may set NumPy's speed.
        once, both = ("A", "B") if a.numpy_kept is None else ("B", "A")
        # Translators: {once} and {both} are A and B.
        warnings.append(_("{once} timed NumPy once, in its worker, and {both} as a plain process runs it: a "
                          "NumPy difference between them may come from glibc's allocator, not the code").format(
            once=once, both=both))
    return Comparison(
        a=a.id, b=b.id,
        comparable=comparable,
        warnings=warnings,
        differences=differences(a, b),
        jax_runtime=verdict(a.jax.runtime, b.jax.runtime, alpha, min_effect),
        numpy_runtime=verdict(a.numpy_runtime, b.numpy_runtime, alpha, min_effect),
        speedup={"a": finite_or_none(a.speedup), "b": finite_or_none(b.speedup)},
        numpy_kept={key: None if r.numpy_kept is None else r.numpy_kept.median_s for key, r in (("a", a), ("b", b))},
    )


def differences(a: Result, b: Result) -> list[dict[str, Any]]:
    """What differs between two runs' setups (precision, device, host, versions...)."""
    def facts(r: Result) -> dict[str, Any]:
        versions = r.env.get("versions") or {}
        return {
            "case": r.case, "shape": format_shape(r.shape), "precision": r.precision, "dtype": r.dtype,
            "backend": r.backend, "device_kind": r.jax.device_kind, "host": r.env.get("hostname"),
            "cpu_model": r.env.get("cpu_model"), "jax": versions.get("jax"),
            "jaxlib": versions.get("jaxlib"), "numpy": versions.get("numpy"),
            "scipy": versions.get("scipy"),
        }

    fa, fb = facts(a), facts(b)
    return [{"field": k, "a": fa[k], "b": fb[k]} for k in fa if fa[k] != fb[k]]


# --- helpers -------------------------------------------------------------------------------
def _clean(samples: Sequence[float]) -> np.ndarray:
    xs = np.asarray(samples, dtype=float)
    return xs[np.isfinite(xs) & (xs > 0)]


def _bootstrap_ratio_ci(xa: np.ndarray, xb: np.ndarray, level: float, resamples: int,
                        seed: int) -> tuple[float, float]:
    """Percentile bootstrap CI of median(B)/median(A), resampling each run independently."""
    rng = np.random.default_rng(seed)
    med_a = np.median(xa[rng.integers(0, xa.size, (resamples, xa.size))], axis=1)
    med_b = np.median(xb[rng.integers(0, xb.size, (resamples, xb.size))], axis=1)
    ratios = med_b / med_a
    tail = (1 - level) / 2 * 100
    lo, hi = np.percentile(ratios, [tail, 100 - tail])
    return float(lo), float(hi)


def _min_two_sided_p(na: int, nb: int) -> float:
    """The smallest two-sided p an exact rank test can give with these sample counts."""
    return min(1.0, 2 / math.comb(na + nb, na))

