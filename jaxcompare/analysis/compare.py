"""Is run B faster than run A? A verdict from what a rerun would show, not from two sets of samples.

The unit of replication is a run, not a sample: the samples of one run share its process, its
thread placement and its stretch of the machine's time, so a rank test over them called a JAX
release "52% slower" than itself, outside the noise (p = 0.029), where a rerun read p = 0.51. Each
median's log moves from run to run by its own interval and a between-run spread measured on reruns
(model/reruns.run_log_sd; where a figure pools several runs, by their spread, shrunk by their
number). The difference of the two logs, over the spread of that difference, is a normal z; the
verdict's 95% range of the ratio follows from it. And the difference must matter: a shift smaller
than ``min_effect`` (2% by default) is no difference worth a verdict.

Convention: ``ratio = median(B) / median(A)`` of *times*, so B is **faster** when its
times are lower (ratio < 1) and **slower** when they are higher (ratio > 1).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from statistics import NormalDist
from typing import Any

from ..i18n import _, translate_text
from ..model.cases import format_shape
from ..model.formatting import format_factor
from ..model.reruns import run_log_sd
from ..model.result import Result, finite_or_none
from ..model.stats import Stats
from .summary import doubt_text

# What a verdict finds about B relative to A; the words for each live with the views.
FASTER = "faster"
SLOWER = "slower"
SAME = "same"
TOO_FEW = "too few"


@dataclass(frozen=True)
class Verdict:
    """Is B faster than A: what the two tests found, as numbers a page or a CLI can phrase."""

    direction: str  # FASTER / SLOWER / SAME / TOO_FEW, about B relative to A
    ratio: float | None  # median B / median A of times: below 1, B is faster
    p_value: float | None  # two-sided, from the run-level model; None without a range on either side
    ci_low: float | None  # the 1 - alpha range of the ratio a rerun of both would show
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
    def ci_excludes_one(self) -> bool:
        return self.ci_low is not None and self.ci_high is not None and (self.ci_high < 1 or self.ci_low > 1)


def verdict(
    a: Stats,
    b: Stats,
    alpha: float = 0.05,
    min_effect: float = 0.02,
    *,
    runs_a: Sequence[float] = (),
    runs_b: Sequence[float] = (),
) -> Verdict:
    """Compare B's median with A's (see the module docstring for the rules); ``runs_a``, ``runs_b``: the
    medians of the independent runs (fresh processes) each figure pools, where it pools several."""
    med_a, med_b = a.median_s, b.median_s
    ratio = med_b / med_a if med_a > 0 else math.nan
    found = Verdict(direction=TOO_FEW, ratio=finite_or_none(ratio), p_value=None, ci_low=None, ci_high=None,
                    n_a=max(len(runs_a), 1), n_b=max(len(runs_b), 1), median_a_s=med_a, median_b_s=med_b,
                    alpha=alpha, min_effect=min_effect)
    spread = math.hypot(run_log_sd(a, runs_a), run_log_sd(b, runs_b))
    if not (math.isfinite(spread) and med_a > 0 and med_b > 0):
        return found
    z = math.log(ratio) / spread
    half = NormalDist().inv_cdf(1 - alpha / 2) * spread
    found = replace(found, p_value=math.erfc(abs(z) / math.sqrt(2)), ci_low=ratio * math.exp(-half),
                    ci_high=ratio * math.exp(half))
    significant = found.ci_excludes_one
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
    if a.case == b.case:  # two ports of one case are two configurations; no port is the default's
        fa, fb = ({"case": f.pop("case"), "port": _port(r, o), **f} for f, r, o in ((fa, a, b), (fb, b, a)))
    return [{"field": k, "a": fa[k], "b": fb[k]} for k in fa if fa[k] != fb[k]]


def _port(r: Result, other: Result) -> str | None:
    """The port ``r`` measured; for a result saved before cases had ports (none recorded), the default
    port ``other`` names for the same case (the first of its case_info's ports), which it measured."""
    if r.port is not None:
        return r.port
    listed = other.case_info.get("ports") or ()
    first = listed[0] if listed and isinstance(listed[0], dict) else {}
    return first.get("name") or None
