"""The credibility checklist fails or warns for deliberately unfair results, passes a fair one."""

from __future__ import annotations

import dataclasses
import re

import pytest
from _results import by_id, make_result, stats, with_jax

from jaxcompare import i18n
from jaxcompare.analysis.checks import FAIL, NA, PASS, WARN, overall
from jaxcompare.analysis.text import checklist_lines
from jaxcompare.analysis.trust import trust
from jaxcompare.model.formatting import format_time
from jaxcompare.model.stats import Stats

FAIRNESS = ("precision", "blocked", "compile", "transfer", "agreement")


def test_a_fair_result_passes(fair_result):
    checks = by_id(fair_result)
    for cid in FAIRNESS + ("workload",):
        assert checks[cid].status == PASS, checks[cid]
    assert overall(list(checks.values())) != FAIL
    for check in checks.values():
        assert check.reason and check.title


def test_unblocked_timing_fails(fair_result):
    unfair = with_jax(fair_result, runtime=fair_result.jax.dispatch,
                      protocol=fair_result.jax.protocol | {"blocked": False})
    checks = by_id(unfair)
    assert checks["blocked"].status == FAIL
    assert checks["blocked"].pitfall == "async"
    assert overall(list(checks.values())) == FAIL


def test_a_result_without_a_recorded_protocol_is_not_passed(fair_result):
    """Results saved before measure() recorded what it did: the checks say so, not pass."""
    old = with_jax(fair_result, protocol={})
    checks = by_id(old)
    for cid in ("blocked", "compile", "transfer"):
        assert checks[cid].status == WARN and "not recorded" in checks[cid].reason, checks[cid]


def test_mixed_precision_fails(fair_result):
    agreement = fair_result.jax.agreement | {"numpy_dtype": "float64", "jax_dtype": "float32"}
    check = by_id(with_jax(fair_result, agreement=agreement))["precision"]
    assert check.status == FAIL and "float64" in check.reason


def test_tiny_workload_warns_or_fails(tiny_result):
    check = by_id(tiny_result)["workload"]
    assert check.status in (WARN, FAIL), check
    assert check.pitfall == "size"
    assert re.search(r"\(\d+\.\dx\): ", check.reason), check  # how many times the fixed cost, as a pass says


def test_a_dispatch_that_waited_for_a_core_does_not_make_the_work_small(fair_result):
    """Beside busy programs the dispatcher waits for a core its compute threads hold: beside two
    busy loops 1000x1000's samples split into 111-170 µs and 2-8 ms, most of them the latter. The
    work is still 60x the dispatch itself, and the check must not call it overhead."""
    work = fair_result.jax.runtime.median_s
    waited = [work / 60, work / 57, work / 55] + [work * f for f in (0.15, 0.2, 0.3, 0.4, 0.45, 0.5)]
    dispatch = Stats.from_samples(waited, loops=1)
    assert dispatch.median_s > work / 10  # the median alone would warn
    waited_only = dataclasses.replace(fair_result, roofline=None)  # as saved before the empty call was recorded
    check = by_id(with_jax(waited_only, dispatch=dispatch))["workload"]
    assert check.status == PASS and format_time(work / 60) in check.reason, check
    check = by_id(with_jax(fair_result, dispatch=dispatch))["workload"]
    assert check.status == PASS, check


def test_a_call_the_cpu_ran_inside_its_dispatch_is_not_overhead(fair_result):
    """Measured on this CPU: a 1000x1000 triangular solve (a LAPACK custom call) dispatched in 9.16 ms
    and ran blocked in 8.53 ms, erf over 10^6 float64 7.65 against 7.46 ms: the CPU ran them inside the
    dispatch. Against the fastest dispatch they read "mostly dispatch overhead"; the fixed cost is the
    blocked empty jitted call the roofline recorded (about 5 µs)."""
    work = fair_result.jax.runtime
    empty = fair_result.roofline.side("jax").empty_call_s
    assert empty is not None and 0 < empty < work.min_s / 10
    inline = Stats.from_samples([s * 1.07 for s in work.samples_s], loops=work.loops)  # as long as the call
    check = by_id(with_jax(fair_result, dispatch=inline))["workload"]
    assert check.status == PASS and format_time(empty) in check.reason and "empty jitted call" in check.reason
    # Before the empty call was recorded, the dispatch is all there is to go by.
    assert by_id(with_jax(dataclasses.replace(fair_result, roofline=None), dispatch=inline))["workload"].status == FAIL


def test_a_busy_machines_slow_blocked_calls_do_not_make_a_tiny_call_large(tiny_result):
    """A busy suite run read a 10x10's *fastest* blocked call at 134 µs against a 6.49 µs fastest dispatch
    (every blocked call waited for a core) and passed it: the work is read back to back, where a loop of
    calls waits once, not from the blocked calls."""
    fixed = min(tiny_result.jax.dispatch.min_s, tiny_result.roofline.side("jax").empty_call_s)
    waited = Stats.from_samples([f * 20 * fixed for f in (1.0, 1.1, 1.2, 1.3, 1.4)], loops=1)
    assert waited.min_s > 10 * fixed  # read blocked, it would pass
    check = by_id(with_jax(tiny_result, runtime=waited))["workload"]
    assert check.status in (WARN, FAIL), check
    assert format_time(tiny_result.jax.back_to_back.min_s) in check.reason, check


def test_a_result_saved_without_calls_back_to_back_reads_its_fastest_blocked_call(tiny_result):
    old = with_jax(tiny_result, back_to_back=None)
    check = by_id(old)["workload"]
    assert format_time(tiny_result.jax.runtime.min_s) in check.reason and "fastest blocked call" in check.reason


def test_disagreeing_outputs_fail(fair_result):
    agreement = fair_result.jax.agreement | {"ok": False, "max_rel_err": 0.3}
    assert by_id(with_jax(fair_result, agreement=agreement))["agreement"].status == FAIL


def test_compile_in_runtime_and_host_inputs_fail(fair_result):
    unfair = with_jax(fair_result, protocol={"blocked": True, "compile_excluded": False, "inputs_on_device": False})
    checks = by_id(unfair)
    assert checks["compile"].status == FAIL and checks["transfer"].status == FAIL


@pytest.mark.parametrize("shaky_side", ["numpy", "jax"])
def test_unstable_or_few_samples_warn(fair_result, shaky_side):
    def runtime(stats, shaky: bool):
        if shaky:
            return dataclasses.replace(stats, stable=False, unstable_reason="median still varies by ±30%", n=2)
        return dataclasses.replace(stats, stable=True, unstable_reason=None)

    r = with_jax(fair_result, runtime=runtime(fair_result.jax.runtime, shaky_side == "jax"))
    checks = by_id(dataclasses.replace(r, numpy_runtime=runtime(r.numpy_runtime, shaky_side == "numpy")))
    assert checks["stable"].status == WARN and "30%" in checks["stable"].reason
    assert checks["samples"].status == FAIL


def test_tf32_warns_only_for_float32_on_gpu(fair_result):
    # On a GPU the worker records whether the program had a product that may run in TF32.
    on_gpu = with_jax(dataclasses.replace(fair_result, backend="gpu"),
                      agreement=fair_result.jax.agreement | {"tf32": True})
    assert by_id(fair_result)["tf32"].status == NA  # on a CPU TF32 does not apply: n/a, not pass
    assert by_id(on_gpu)["tf32"].status == WARN
    no_product = with_jax(on_gpu, agreement=on_gpu.jax.agreement | {"tf32": False})
    assert by_id(no_product)["tf32"].status == NA
    saved_before = with_jax(on_gpu, agreement={k: v for k, v in on_gpu.jax.agreement.items()
                                               if k not in ("tf32", "products")})
    assert by_id(saved_before)["tf32"].status == WARN  # not known then: it may have
    highest = with_jax(on_gpu, protocol=on_gpu.jax.protocol | {"matmul_precision": "highest"})
    assert by_id(highest)["tf32"].status == PASS
    # "float32" keeps full float32 too: the worker records no TF32 then, and that is no "no product" n/a.
    full = with_jax(on_gpu, protocol=on_gpu.jax.protocol | {"matmul_precision": "float32"},
                    agreement=on_gpu.jax.agreement | {"tf32": False})
    assert by_id(full)["tf32"].status == PASS and "'float32'" in by_id(full)["tf32"].reason
    float64 = with_jax(dataclasses.replace(on_gpu, dtype="float64"),
                       agreement=on_gpu.jax.agreement | {"numpy_dtype": "float64", "jax_dtype": "float64"})
    assert by_id(float64)["tf32"].status == NA


def test_reduced_precision_products_warn_on_a_tpu_too(fair_result):
    """A TPU runs float32 products as one bfloat16 pass by default: the same item warns and names it;
    three passes ('high') keep float32's accuracy there."""
    on_tpu = with_jax(dataclasses.replace(fair_result, backend="tpu"),
                      agreement=fair_result.jax.agreement | {"products": "bfloat16"})
    check = by_id(on_tpu)["tf32"]
    assert check.status == WARN and "one bfloat16 pass" in check.reason and check.title == "Reduced-precision products"
    high = with_jax(on_tpu, protocol=on_tpu.jax.protocol | {"matmul_precision": "high"})
    assert by_id(high)["tf32"].status == PASS
    no_product = with_jax(on_tpu, agreement=on_tpu.jax.agreement | {"products": None})
    assert by_id(no_product)["tf32"].status == NA


def test_numpy_linalg_float32_is_flagged_as_double_work(fair_result):
    info = fair_result.case_info | {"numpy_computes_in": "float64"}
    check = by_id(dataclasses.replace(fair_result, case_info=info))["precision"]
    assert check.status == WARN and "float64" in check.reason


def _in_pairs(result, numpy_blocks, jax_blocks, timing=None):
    """``result`` as if its runtimes had been timed in pairs of blocks with these medians
    (each block a few samples within ±0.2%), combined as measure() combines them."""
    from jaxcompare import TimingConfig
    from jaxcompare.engine.worker.timing import combine_blocks
    from jaxcompare.model.stats import Stats

    timing = timing or TimingConfig.preset("thorough")

    def side(medians, what):
        blocks = [Stats.from_samples([m * (1 + d) for d in (-0.002, -0.001, 0, 0.001, 0.002)]) for m in medians]
        return combine_blocks(blocks, timing.for_runtime().rel_ci, timing.drift_tolerance, what)

    spec = dataclasses.replace(result.spec, timing=timing)
    return dataclasses.replace(with_jax(result, runtime=side(jax_blocks, "the JAX median")), spec=spec,
                               numpy_runtime=side(numpy_blocks, "the NumPy median"), numpy_kept=None)


def test_a_speedup_that_held_through_a_drift_passes_while_the_drift_warns(fair_result):
    # The machine slowed by 30% during the run; each pair of blocks slowed alike.
    held = _in_pairs(fair_result, [10e-3, 11e-3, 12e-3, 13e-3], [5e-3, 5.5e-3, 6e-3, 6.5e-3])
    assert held.speedup_pairs == pytest.approx((2.0, 2.0, 2.0, 2.0))
    checks = by_id(held)
    assert checks["stable"].status == WARN and "moved by 30%" in checks["stable"].reason
    assert checks["steady"].status == PASS and "4 pairs" in checks["steady"].reason


def test_a_speedup_that_moved_between_pairs_warns(fair_result):
    moved = _in_pairs(fair_result, [10e-3, 10e-3, 10e-3, 10e-3], [5e-3, 5e-3, 5e-3, 6.5e-3])
    assert not moved.speedup_steady
    check = by_id(moved)["steady"]
    assert check.status == WARN and "moved by 30%" in check.reason and "1.54x" in check.reason


def test_the_pairs_may_spread_as_far_as_the_blocks_precision_allows(fair_result):
    from jaxcompare import TimingConfig

    # Thorough: four pairs of blocks at ±2% each may spread 5.2% by chance.
    assert TimingConfig.preset("thorough").pair_tolerance == pytest.approx(0.0524, abs=1e-4)
    four = [10e-3] * 4
    assert _in_pairs(fair_result, four, [5e-3, 5e-3, 5e-3, 5.25e-3]).speedup_steady  # 5%
    assert not _in_pairs(fair_result, four, [5e-3, 5e-3, 5e-3, 5.3e-3]).speedup_steady  # 6%
    # Looser blocks allow more: careful's ±3% in two pairs (±4.2% a block) allows 8.5%.
    loose = dataclasses.replace(TimingConfig.preset("careful"), runtime_blocks=2)
    assert _in_pairs(fair_result, [10e-3] * 2, [5e-3, 5.3e-3], timing=loose).speedup_steady


def test_steady_is_not_checked_without_block_pairs(fair_result):
    from jaxcompare import TimingConfig

    single = dataclasses.replace(fair_result, numpy_runtime=dataclasses.replace(fair_result.numpy_runtime,
                                                                              block_medians_s=()), load={})
    one_block = by_id(single)["steady"]
    assert one_block.status == NA and "not checked: one block a side" in one_block.reason
    assert overall([one_block]) == PASS  # n/a holds nothing against a result
    # A thorough result saved before block medians were kept: it had pairs, none recorded.
    old = dataclasses.replace(single, spec=dataclasses.replace(fair_result.spec,
                                                                    timing=TimingConfig.preset("thorough")))
    assert "no block medians recorded" in by_id(old)["steady"].reason
    # A zero median cannot make a ratio: no pairs rather than a division by zero.
    zero = _in_pairs(fair_result, [0.0, 10e-3], [5e-3, 5e-3])
    assert zero.speedup_pairs == () and zero.speedup_steady is None


def test_every_unstable_side_is_named(fair_result):
    def shaky(stats, why):
        return dataclasses.replace(stats, stable=False, unstable_reason=why)

    both = dataclasses.replace(with_jax(fair_result, runtime=shaky(fair_result.jax.runtime, "jax wobbled")),
                               numpy_runtime=shaky(fair_result.numpy_runtime, "numpy wobbled"))
    check = by_id(both)["stable"]
    assert check.status == WARN and "NumPy: numpy wobbled" in check.reason and "JAX: jax wobbled" in check.reason
    with i18n.using("zh"):  # Chinese joins the two with its own semicolon, not an ASCII "; "
        reason = by_id(both)["stable"].reason
    assert "；" in reason and "; " not in reason, reason


def test_the_busy_item_names_what_other_programs_used(fair_result):
    def loaded(others_cpu_s, recheck=None):
        load = {"cores": 2, "phases": {"numpy": {"wall_s": 1.0, "others_cpu_s": others_cpu_s},
                                       "runtime": {"wall_s": 1.0, "others_cpu_s": others_cpu_s}}}
        return dataclasses.replace(fair_result, load=load | ({"recheck": recheck} if recheck else {}))

    busy = by_id(loaded(1.3))["busy"]
    assert busy.status == WARN and "1.30 cores during the runtime blocks" in busy.reason
    assert by_id(loaded(0.1))["busy"].status == PASS
    rechecked = by_id(loaded(1.3, {"kept": "recheck", "pinned": True, "cores": 1}))["busy"]
    assert rechecked.status == PASS and "1 free core" in rechecked.reason
    # Serial NumPy against parallel XLA: pinning both to one core slows only JAX, so no equal recheck.
    unequal = by_id(loaded(1.3, {"kept": "recheck", "pinned": True, "cores": 1, "equal": False,
                                 "own_cores": {"numpy": 1.0, "runtime": 1.4}}))["busy"]
    assert unequal.status == WARN and "only JAX had run on more than one core" in unequal.reason
    # Both parallel: they lose cores unequally (BLAS scales further than XLA), so no equal recheck either.
    both = by_id(loaded(1.3, {"kept": "recheck", "pinned": True, "cores": 1, "equal": False,
                              "parallel": ["numpy", "runtime"]}))["busy"]
    assert both.status == WARN and "both run on more than one core" in both.reason
    # Saved when such a pair was not timed again at all: the item says so, naming the parallel side(s).
    skipped = by_id(loaded(1.3, {"why": "busy", "kept": "first", "equal": False, "parallel": ["runtime"]}))["busy"]
    assert skipped.status == WARN and "only JAX ran on more than one core" in skipped.reason
    assert "not timed again" in skipped.reason
    skipped_both = by_id(loaded(1.3, {"why": "busy", "kept": "first", "equal": False,
                                      "parallel": ["numpy", "runtime"]}))["busy"]
    assert skipped_both.status == WARN and "both ran on more than one core" in skipped_both.reason
    # A parallel side, timed again on every core: trusted only from enough samples that had their
    # cores, and the item gives the counts either way.
    clean = by_id(loaded(1.3, {"why": "busy", "kept": "clean", "equal": False, "parallel": ["runtime"],
                               "clean_samples": {"numpy": [40, 48], "runtime": [9, 120]}}))
    assert clean["busy"].status == PASS and "NumPy 40 of 48, JAX 9 of 120" in clean["busy"].reason
    assert clean["steady"].status == NA and "had their cores" in clean["steady"].reason
    few = by_id(loaded(1.3, {"why": "busy", "kept": "first", "equal": False, "parallel": ["runtime"],
                             "clean_samples": {"numpy": [40, 48], "runtime": [2, 120]}}))["busy"]
    assert few.status == WARN and "too few" in few.reason and "JAX 2 of 120" in few.reason
    # Saved before the load was recorded: not checked, and said so (n/a, not pass).
    assert by_id(dataclasses.replace(fair_result, load={}))["busy"].status == NA


def test_a_first_call_shorter_than_its_compile_is_a_contradiction(fair_result):
    # The measured result's own first call beside its compile depends on the machine's load while it was
    # measured (once in a clean clone's parallel part it read below it): set here, twice its compile.
    paid = dataclasses.replace(fair_result.jax.first_call, median_s=fair_result.jax.compile_total_s * 2)
    assert by_id(with_jax(fair_result, first_call=paid))["first_call"].status == PASS
    fast = dataclasses.replace(fair_result.jax.first_call, median_s=fair_result.jax.compile_total_s / 10)
    check = by_id(with_jax(fair_result, first_call=fast))["first_call"]
    assert check.status == WARN and "less than its own compile" in check.reason


def test_a_first_call_below_its_compile_beyond_both_ranges_warns():
    """Not under half the fastest compile (the cache-hit rule), yet below its compile beyond both
    ranges: it cannot have paid that compile, so it is not what a first %time shows."""
    r = make_result(compile_s=0.9)  # compile 0.9 s, its phases' ranges adding up to about 0.89-0.91 s
    below = by_id(with_jax(r, first_call=stats(0.6)))["first_call"]
    assert below.status == WARN and "beyond both ranges" in below.reason, below
    assert "600 ms (" in below.reason and "900 ms (" in below.reason
    # Below the compile's median but within its range: the compile wandered, nothing contradicts.
    wide = Stats.from_samples([0.6, 0.7, 0.85, 0.88, 0.9, 1.0, 1.1])
    within = by_id(with_jax(r, first_call=wide))["first_call"]
    assert within.status == PASS and "within its range" in within.reason, within
    # Measured on this CPU: svd 500x500's first call 1.11 s against its compile's 80.1 ms.
    svd = make_result("svd", (500, 500), compile_s=0.0801, jax_s=1.03)
    check = by_id(svd)["first_call"]
    assert check.status == PASS and "includes its compile" in check.reason, check


def test_the_quoting_line_says_why_a_failed_workload_check_still_leaves_the_speedup_quotable():
    """A dispatch-bound size fails "Workload large enough" yet stays trusted: the line under the
    checklist's FAIL must say why, where a plain "yes" read as a contradiction of it."""
    clean = make_result()
    assert checklist_lines(clean)[1].strip() == "trusted: yes, the speedup may be quoted"
    small = with_jax(clean, dispatch=stats(clean.jax.runtime.median_s))  # dispatch as long as the work
    assert by_id(small)["workload"].status == FAIL
    head = checklist_lines(small)[:2]
    assert head[0].strip() == "credibility checklist: FAIL"
    assert head[1].strip().startswith("trusted: yes, the speedup may be quoted: the failed check describes")
    mixed = with_jax(small, agreement=small.jax.agreement | {"numpy_dtype": "float64", "jax_dtype": "float32"})
    assert checklist_lines(mixed)[1].strip().startswith("trusted: NO (")


def test_a_range_too_wide_says_what_would_settle_it():
    """"trusted: NO (the speedup's range is too wide)" under a checklist whose every row passed (a new user's
    walk-through): no row is about the range, so the line itself says what would settle it."""
    wide = with_jax(make_result(), runtime=stats(2e-4, spread=0.5))
    assert trust(wide).why == "range" and all(c.status != FAIL for c in by_id(wide).values())
    lines = [line.strip() for line in checklist_lines(wide)]
    assert lines[1:3] == ["trusted: NO (the speedup's range is too wide), though no check failed: do not quote "
                          "this speedup",
                          "A longer timing preset (Careful, Thorough) narrows the range."]
