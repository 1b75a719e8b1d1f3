"""Comparison verdicts at the level of runs: identical, shifted, within a rerun's drift, tiny effects, too few
samples (analysis/compare.py; the between-run spread is model/reruns.py's)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from _results import make_result, with_jax

from jaxcompare.analysis.compare import FASTER, SAME, SLOWER, TOO_FEW, compare_results, verdict
from jaxcompare.app.history_view import verdict_explanation
from jaxcompare.model.result import Result
from jaxcompare.model.stats import Stats


def noisy(median: float, n: int = 30, noise: float = 0.05, seed: int = 0) -> Stats:
    rng = np.random.default_rng(seed)
    return Stats.from_samples(median * (1 + noise * rng.standard_normal(n)))


def test_identical_sample_sets_are_no_significant_difference():
    a = noisy(1e-3)
    v = verdict(a, a)
    assert v.direction == SAME
    assert v.ratio == 1.0 and v.p_value == pytest.approx(1.0)
    assert v.ci_low <= 1 <= v.ci_high
    assert v.n_a == v.n_b == 1  # one run a side


def test_same_distribution_other_draws_is_no_significant_difference():
    v = verdict(noisy(1e-3, seed=1), noisy(1e-3, seed=2))
    assert v.direction == SAME, verdict_explanation(v)


@pytest.mark.parametrize("noise", [0.02, 0.1])
def test_a_30_percent_shift_is_faster_or_slower_in_the_right_direction(noise):
    a = noisy(1e-3, noise=noise, seed=1)
    b = noisy(0.7e-3, noise=noise, seed=2)  # B takes 30% less time: B is faster
    v = verdict(a, b)
    assert v.direction == FASTER, verdict_explanation(v)
    assert v.ratio == pytest.approx(0.7, rel=0.05)
    assert v.ci_high < 1 and v.p_value < 0.001
    assert verdict_explanation(v).startswith("B is 1.4") and "faster than A" in verdict_explanation(v)
    back = verdict(b, a)
    assert back.direction == SLOWER and back.ratio > 1 and back.ci_low > 1
    assert "slower than A" in verdict_explanation(back)


def test_two_runs_apart_by_less_than_reruns_drift_are_no_difference():
    # A JAX release against itself once read "52% slower ... (p = 0.029)" from a rank test over two runs'
    # samples, which share their process: each run's tight samples say nothing of the next run.
    a = noisy(1e-3, n=200, noise=0.002, seed=1)
    b = noisy(1.1e-3, n=200, noise=0.002, seed=2)  # 10% apart, each median known to 0.03%
    v = verdict(a, b)
    assert v.direction == SAME and not v.significant and v.ci_low < 1 < v.ci_high, verdict_explanation(v)
    assert "within what a rerun moves them" in verdict_explanation(v)


def test_rounds_that_agree_narrow_the_verdict_and_rounds_that_disagree_widen_it():
    a, b = noisy(1e-3, n=200, noise=0.002, seed=1), noisy(1.1e-3, n=200, noise=0.002, seed=2)
    steady = verdict(a, b, runs_a=[1e-3] * 8, runs_b=[1.1e-3] * 8)  # eight fresh processes a side, alike
    assert steady.direction == SLOWER and steady.n_a == 8, verdict_explanation(steady)
    scattered = verdict(a, b, runs_a=[0.7e-3, 1e-3, 1.4e-3] * 3, runs_b=[0.8e-3, 1.1e-3, 1.5e-3] * 3)
    assert scattered.direction == SAME and scattered.ci_high / scattered.ci_low > steady.ci_high / steady.ci_low


def test_a_small_but_significant_shift_is_not_called_a_difference():
    a = noisy(1e-3, n=500, noise=0.001, seed=1)
    b = noisy(1.04e-3, n=500, noise=0.001, seed=2)  # 4% slower, over sixty runs a side
    runs = {"runs_a": [1e-3] * 60, "runs_b": [1.04e-3] * 60}
    v = verdict(a, b, min_effect=0.05, **runs)
    assert v.p_value < 0.01 and v.significant
    assert v.direction == SAME and "under the 5%" in verdict_explanation(v)
    assert verdict(a, b, **runs).direction == SLOWER


def test_too_few_samples():
    v = verdict(Stats.from_samples([1e-3, 1.1e-3]), noisy(1e-3))
    assert v.direction == TOO_FEW and v.p_value is None
    assert "Too few samples" in verdict_explanation(v)


def test_three_samples_a_side_have_no_range_and_say_so():
    v = verdict(Stats.from_samples([1.0, 1.1, 1.2]), Stats.from_samples([2.0, 2.1, 2.2]))
    assert v.direction == TOO_FEW and "no 95% range" in verdict_explanation(v)


def test_verdict_is_deterministic():
    a, b = noisy(1e-3, seed=3), noisy(1.02e-3, seed=4)
    assert verdict(a, b) == verdict(a, b)


# --- whole results ----------------------------------------------------------------------------
def noisy_result(numpy_median: float, jax_median: float, *, shape=(64, 64), seed: int = 0, id: str = "a",
                 **spec) -> Result:
    """A synthetic result whose two runtimes are 30 noisy samples around these medians, from a
    host named after ``seed`` (``spec``: the case and precision)."""
    base = make_result(shape=shape, **spec)
    return dataclasses.replace(with_jax(base, runtime=noisy(jax_median, seed=seed + 100)), id=id,
                               numpy_runtime=noisy(numpy_median, seed=seed),
                               env={**base.env, "hostname": f"host{seed}", "versions": {"jax": "0.10.2"}})


def test_compare_results_gives_both_verdicts_and_speedups():
    a = noisy_result(2e-3, 1e-3, seed=1, id="a")
    b = noisy_result(2e-3, 0.5e-3, seed=2, id="b")  # same NumPy, JAX twice as fast
    out = compare_results(a, b)
    assert out.comparable and out.warnings == []
    assert out.jax_runtime.direction == FASTER
    assert out.numpy_runtime.direction == SAME
    assert out.speedup["a"] == pytest.approx(2, rel=0.1)
    assert out.speedup["b"] == pytest.approx(4, rel=0.1)
    assert {"field": "host", "a": "host1", "b": "host2"} in out.differences


def test_compare_results_warns_when_runs_are_not_comparable():
    out = compare_results(noisy_result(1e-3, 1e-3), noisy_result(1e-3, 1e-3, precision="x64", shape=(32, 32)))
    assert not out.comparable
    text = " ".join(out.warnings)
    assert "precisions" in text and "shapes" in text
    assert {"field": "precision", "a": "x32", "b": "x64"} in out.differences


def test_compare_results_warns_when_a_runs_speedup_moved_between_its_pairs():
    from jaxcompare import TimingConfig

    a = noisy_result(2e-3, 1e-3, seed=1, id="a")
    paired = with_jax(a, runtime=dataclasses.replace(a.jax.runtime, block_medians_s=(1e-3, 1.25e-3)))
    paired = dataclasses.replace(paired, spec=dataclasses.replace(a.spec, timing=TimingConfig.preset("thorough")),
                                 numpy_runtime=dataclasses.replace(a.numpy_runtime, block_medians_s=(2e-3, 2e-3)))
    text = " ".join(compare_results(paired, a).warnings)
    assert "A's speedup moved between its pairs of blocks (1.60x to 2.00x)" in text
    held = with_jax(paired, runtime=dataclasses.replace(a.jax.runtime, block_medians_s=(1e-3, 1e-3)))
    assert compare_results(held, a).warnings == []


def test_a_run_its_checklist_set_aside_is_named_in_the_comparison():
    """Compare says "no verdict: the machine was busy" of a run; History's A/B verdict on it must
    say so too, not stand on its own."""
    a = noisy_result(2e-3, 1e-3, seed=1, id="a")
    b = noisy_result(2e-3, 1.5e-3, seed=2, id="b")  # beyond what a rerun moves a median
    assert compare_results(a, b).warnings == []
    crowded = {"phases": {p: {"wall_s": 1.0, "others_cpu_s": 1.0, "own_cpu_s": 1.0} for p in ("numpy", "runtime")}}
    busy_b = dataclasses.replace(b, load=crowded)
    out = compare_results(a, busy_b)
    assert out.warnings == ["B was set aside by its checklist (the machine was busy): a difference from it may come "
                            "from how it was measured, not from the code"]
    assert out.jax_runtime.direction == SLOWER  # the verdict stays, read with its warning
