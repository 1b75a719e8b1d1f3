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
from typing import Any

import numpy as np

from ..model.cases import format_shape
from ..model.formatting import format_factor, format_time
from ..model.result import Result, finite_or_none
from ..model.stats import Stats

FASTER = "faster"
SLOWER = "slower"
SAME = "no significant difference"
TOO_FEW = "too few samples to judge"
MIN_SAMPLES = 3
BOOTSTRAP_RESAMPLES = 2000


def verdict(
    a: Stats,
    b: Stats,
    alpha: float = 0.05,
    min_effect: float = 0.02,
    *,
    names: tuple[str, str] = ("A", "B"),
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = 0,
) -> dict[str, Any]:
    """Compare B's per-call times with A's.

    Returns verdict (FASTER / SLOWER / SAME / TOO_FEW, about B relative to A), ratio
    (median B / median A), p_value, ci_low/ci_high (the 1-alpha bootstrap CI of the ratio),
    n_a, n_b, significant (both tests agree), and a one-sentence explanation.
    """
    na_, nb_ = names
    xa = _clean(a.samples_s)
    xb = _clean(b.samples_s)
    med_a = float(np.median(xa)) if xa.size else a.median_s
    med_b = float(np.median(xb)) if xb.size else b.median_s
    ratio = med_b / med_a if med_a > 0 else math.nan
    out: dict[str, Any] = {
        "verdict": TOO_FEW, "ratio": finite_or_none(ratio), "p_value": None, "ci_low": None,
        "ci_high": None, "n_a": int(xa.size), "n_b": int(xb.size), "median_a_s": med_a,
        "median_b_s": med_b, "significant": False, "alpha": alpha, "min_effect": min_effect,
    }
    if xa.size < MIN_SAMPLES or xb.size < MIN_SAMPLES or not med_a > 0 or not med_b > 0:
        out["explanation"] = (
            f"Too few samples to judge: {na_} has {xa.size} and {nb_} has {xb.size}; "
            f"at least {MIN_SAMPLES} positive samples each are needed (medians {_t(med_a)} "
            f"vs {_t(med_b)})."
        )
        return out

    from scipy.stats import mannwhitneyu

    p = float(mannwhitneyu(xb, xa, alternative="two-sided").pvalue)
    lo, hi = _bootstrap_ratio_ci(xa, xb, 1 - alpha, resamples, seed)
    out.update(p_value=p, ci_low=lo, ci_high=hi)

    ci_excludes_one = hi < 1 or lo > 1
    significant = p < alpha and ci_excludes_one
    factor = 1 / ratio if ratio < 1 else ratio  # how many times faster or slower, >= 1
    word = FASTER if ratio < 1 else SLOWER
    big_enough = factor - 1 >= min_effect
    out["significant"] = significant
    level = f"{1 - alpha:.0%}"
    if word == FASTER:
        ci_text = f"{level} CI of the speedup {format_factor(1 / hi)}–{format_factor(1 / lo)}"
    else:
        ci_text = f"{level} CI of the slowdown {format_factor(lo)}–{format_factor(hi)}"
    medians = f"median {_t(med_b)} vs {_t(med_a)}"
    stats_text = f"{medians}; {_p(p)}; {ci_text}"

    if significant and big_enough:
        out["verdict"] = word
        out["explanation"] = f"{nb_} is {format_factor(factor)} {word} than {na_} ({stats_text})."
        return out
    out["verdict"] = SAME
    if significant:
        why = (f"{nb_} is {format_factor(factor)} {word} than {na_}, statistically significant but under "
               f"the {min_effect:.0%} that counts as a real difference")
    elif p < alpha:
        why = (f"the rank test differs ({_p(p)}) but the {level} CI of the ratio of medians "
               f"({lo:.3g}–{hi:.3g}) includes 1")
    elif ci_excludes_one:
        why = f"the medians differ by {abs(ratio - 1):.1%} but the rank test does not confirm it"
    else:
        why = f"the {abs(ratio - 1):.1%} difference in medians is within the noise"
    floor = _min_two_sided_p(xa.size, xb.size)
    if floor >= alpha:
        why += (f"; with {xa.size} and {xb.size} samples a rank test cannot reach "
                f"p<{alpha:g} at all — take more samples")
    out["explanation"] = f"No significant difference: {why} ({stats_text})."
    return out


def compare_results(a: Result, b: Result, alpha: float = 0.05, min_effect: float = 0.02) -> dict[str, Any]:
    """Run B against run A: verdicts for the JAX and NumPy runtimes, each run's speedup,
    and whether the two are comparable at all (same case, shape and precision)."""
    warnings: list[str] = []
    if a.case != b.case:
        warnings.append(f"different cases ({a.case} vs {b.case}): the times measure different work")
    if tuple(a.shape) != tuple(b.shape):
        warnings.append(f"different shapes ({format_shape(a.shape)} vs {format_shape(b.shape)}): the times measure "
                        f"different amounts of work")
    if a.precision != b.precision:
        warnings.append(f"different precisions ({a.precision} vs {b.precision}): part of any "
                        f"difference is float32 against float64")
    for label, r in (("A", a), ("B", b)):
        for phase in ("runtime", "numpy"):
            stats = r.phase(phase)
            if not stats.stable:
                warnings.append(f"{label}'s {'JAX' if phase == 'runtime' else 'NumPy'} runtime was "
                                f"unstable: {stats.unstable_reason}")
        if r.speedup_steady is False:
            pairs = r.speedup_pairs
            warnings.append(f"{label}'s speedup moved between its pairs of blocks ({format_factor(min(pairs))} "
                            f"to {format_factor(max(pairs))})")
    return {
        "a": a.id,
        "b": b.id,
        "comparable": a.case == b.case and tuple(a.shape) == tuple(b.shape) and a.precision == b.precision,
        "warnings": warnings,
        "differences": differences(a, b),
        "jax_runtime": verdict(a.runtime, b.runtime, alpha, min_effect,
                               names=("A's JAX runtime", "B's JAX runtime")),
        "numpy_runtime": verdict(a.numpy_runtime, b.numpy_runtime, alpha, min_effect,
                                 names=("A's NumPy runtime", "B's NumPy runtime")),
        "speedup": {"a": finite_or_none(a.speedup), "b": finite_or_none(b.speedup)},
    }


def differences(a: Result, b: Result) -> list[dict[str, Any]]:
    """What differs between two runs' setups (precision, device, host, versions...)."""
    def facts(r: Result) -> dict[str, Any]:
        versions = r.env.get("versions") or {}
        return {
            "case": r.case, "shape": format_shape(r.shape), "precision": r.precision, "dtype": r.dtype,
            "backend": r.backend, "device_kind": r.device_kind, "host": r.env.get("hostname"),
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


def _p(p: float) -> str:
    return "p<0.001" if p < 0.001 else f"p={p:.3f}"


def _t(seconds: float) -> str:
    # Rounded first so 0.9997 ms reads "1 ms", not "1e+03 µs".
    return format_time(float(f"{seconds:.3g}") if math.isfinite(seconds) else seconds)
