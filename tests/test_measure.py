"""The protocol on real JAX (CPU, in this process, x32): each pitfall's naive number
differs from the right one in the direction the JAX docs describe."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from support import QUICK

from jaxcompare import Result, Spec, TimingConfig
from jaxcompare.catalog import get_case
from jaxcompare.engine.worker.inputs import build_inputs
from jaxcompare.engine.worker.jax_phases import measure_compile
from jaxcompare.engine.worker.measure import measure
from jaxcompare.engine.worker.run_state import PROGRESS_WEIGHTS, Progress, phase_weights
from jaxcompare.engine.worker.runtimes import runtime_block_order
from jaxcompare.model import phases


@pytest.fixture
def big_result(fair_result):
    return fair_result


def test_cold_compile_is_slower_than_a_cache_hit():
    import jax

    case = get_case("centered_gram")
    spec = Spec("centered_gram", (200, 200), timing=QUICK)
    args = jax.device_put(build_inputs(case, spec))
    cold = measure_compile(case.jax_fn, args, QUICK, cold=True)
    warm = measure_compile(case.jax_fn, args, QUICK, cold=False)
    cold_total = sum(s.median_s for s in cold)
    warm_total = sum(s.median_s for s in warm)
    assert cold_total > 10 * warm_total, (cold_total, warm_total)


def test_blocked_runtime_exceeds_dispatch_only_for_a_large_workload(big_result, tiny_result):
    assert big_result.jax.runtime.median_s > 3 * big_result.jax.dispatch.median_s
    # Copying back a result that is ready is quick; one that was not ready waits for the work, as
    # unblocked calls do once XLA's queue is full (then runtime and dispatch both read the work).
    assert big_result.jax.runtime.median_s > 3 * big_result.jax.fetch.median_s
    # At 10x10 the work is about as cheap as enqueueing it: the gap is far smaller there.
    big_gap = big_result.jax.runtime.median_s / big_result.jax.dispatch.median_s
    assert big_gap > 3 * tiny_result.jax.runtime.median_s / tiny_result.jax.dispatch.median_s


def test_a_dispatch_is_timed_per_call_like_the_blocked_call_it_is_part_of(tiny_result):
    # A blocked call dispatches too, so per call the dispatch is not above it beyond its range. Timed one
    # call a sample, with a block and the sampler's own work between calls, 10x10's dispatch read 32-37 µs
    # beside 15-25 µs a blocked call, and the checklist set the run aside as figures that disagree.
    from jaxcompare.analysis.checks import dispatch_above_blocked

    r = tiny_result
    assert r.jax.dispatch.median_s <= r.jax.runtime.ci_high_s, (r.jax.dispatch, r.jax.runtime)
    assert not dispatch_above_blocked(r)
    assert r.jax.dispatch.loops > 1, r.jax.dispatch  # a loop of calls a sample, as the blocked runtime's


def test_back_to_back_per_call_is_at_most_blocked_and_at_least_a_dispatch(tiny_result):
    # At 10x10 a blocked call is mostly the host's round trip; queued back to back, the calls overlap
    # it (0.25x of blocked on this box when quiet, 0.90x on CI's, where waking the worker is cheap; up to
    # 1.2x in some stretches), and a loop pays no less than enqueueing one call costs. The result keeps
    # both, and the CLI's line names the speedup at that rate apart.
    from jaxcompare.analysis.text import back_to_back_line
    from jaxcompare.model.result import Result

    r = tiny_result
    pipelined = r.jax.back_to_back
    assert pipelined is not None
    # Timing the whole loop as one call would read some 100x above blocked; dividing by more calls than ran
    # would read below the cheapest single call. Not "at most blocked": on XLA's CPU client a queued 10x10
    # call can cost more than a blocked one (fastest loop 11.0 µs a call beside 9.0 µs blocked, quiet).
    # The cheapest call is the dispatch's or the blocked call's (each pays one enqueue): quick timing's
    # dispatch spans about a millisecond, which one of this VM's slow stretches can fill (a clean clone's
    # serial part: 20.3 µs at best, beside 6.6 µs back to back; 5-14 µs in eight quiet runs).
    cheapest = min(r.jax.dispatch.min_s, r.jax.runtime.min_s)
    assert 0.5 * cheapest < pipelined.median_s, (r.jax.dispatch, r.jax.runtime, pipelined)
    assert pipelined.min_s <= 2 * r.jax.runtime.ci_high_s, (pipelined, r.jax.runtime)
    assert r.speedup_back_to_back == pytest.approx(r.numpy_runtime.median_s / pipelined.median_s)
    again = Result.from_dict(r.to_dict())
    assert again.jax.back_to_back == pipelined
    assert "back to back" in back_to_back_line(r) and "round trip" in back_to_back_line(r)


class QueuedDevice:
    """A device on a fake clock: each queued call costs ``call_s`` of the host's time, and the block
    on its output ``end_s`` more (the round trip), the real JAX array blocked inside."""

    def __init__(self, clock, call_s: float, end_s: float) -> None:
        self.clock, self.call_s, self.end_s = clock, call_s, end_s

    def queue(self, jitted):
        device = self

        class Queued:
            def __init__(self, out) -> None:
                self.out = out

            def block_until_ready(self):
                device.clock.advance(device.end_s)
                return self.out.block_until_ready()

        def call(*args):
            device.clock.advance(device.call_s)
            return Queued(jitted(*args))
        return call


@pytest.mark.parametrize(("call_s", "end_s"), [
    (120e-6, 470e-6),  # the TPU v5e's docs' example: 0.12 ms queued, 0.59 ms blocked
    (9e-6, 24e-6),  # a 10x10 matmul on this box's CPU
    (5e-3, 50e-6),  # work far longer than the round trip
])
def test_back_to_back_loops_make_the_round_trip_a_small_share(fake_clock, call_s, end_s):
    # Sized from the blocked time alone (5 ms of it), the TPU's loop held 8 calls and spread one
    # 0.47 ms round trip over them: 1.49x a queued call. The probe's slope sizes it to the round trip.
    import jax

    from jaxcompare.engine.worker.run_state import _Run
    from jaxcompare.engine.worker.runtimes import BACK_TO_BACK_END_SHARE, back_to_back

    device = QueuedDevice(fake_clock, call_s, end_s)
    run = _Run(get_case("matmul"), QUICK, fake_clock, Progress(lambda *_: None, QUICK))
    x = jax.numpy.ones((4, 4))
    pipelined = back_to_back(run, device.queue(jax.jit(lambda a: a @ a)), (x,), blocked_s=call_s + end_s)
    assert 1 <= pipelined.median_s / call_s <= 1 + BACK_TO_BACK_END_SHARE + 1e-3, pipelined


def test_back_to_back_loops_stay_long_when_the_probe_is_noisy():
    # The probe reads a loop's end as the difference of two short loops; with calls that vary (here each
    # +-15%, a TPU host's spread) that difference often reads small, and a TPU loop held 81-142 calls where
    # its 0.47 ms end asks for about 200. A blocked call is what the end pays at least: the floor.
    from jaxcompare.engine.worker.runtimes import BACK_TO_BACK_END_SHARE, back_to_back_calls

    call_s, end_s = 120e-6, 470e-6
    shares = []
    for seed in range(40):
        rng = np.random.default_rng(seed)

        def loop_of(n: int, rng=rng) -> float:
            return float((call_s * (1 + rng.uniform(-0.15, 0.15, n))).sum() + end_s * (1 + rng.uniform(-0.15, 0.15)))

        shares.append(end_s / (back_to_back_calls(loop_of, blocked_s=call_s + end_s) * call_s))
    assert max(shares) <= 1.25 * BACK_TO_BACK_END_SHARE, sorted(shares)[-5:]


@pytest.mark.parametrize("hiccup_in", ["short", "long"])
def test_back_to_back_loops_stay_long_when_one_probe_loop_hits_a_hiccup(hiccup_in):
    # A probe's first loop that pays something once (here 0.4 s, a TPU executable built again) outlasted
    # the probe's budget: the probe ended on it, read no call's cost, and a TPU loop held 9 calls.
    from jaxcompare.engine.worker.runtimes import BACK_TO_BACK_END_SHARE, back_to_back_calls

    call_s, end_s = 120e-6, 410e-6
    sizes: list[int] = []

    def loop_of(n: int) -> float:
        sizes.append(n)
        first = sizes.count(n) == 1 and (n == min(sizes)) == (hiccup_in == "short")
        return n * call_s + end_s + (0.4 if first else 0.0)

    calls = back_to_back_calls(loop_of, blocked_s=call_s + end_s)
    assert end_s / (calls * call_s) <= 1.25 * BACK_TO_BACK_END_SHARE, (calls, sizes)


def test_back_to_back_reads_as_a_loop_of_200_calls_typed_by_hand():
    # The hand protocol's figure (benchmarks/hand_protocol.py): loops of 200 calls, then one block,
    # timed before and after the tool's. On the CPU a round trip is small beside a call, so sizing
    # from the blocked time passed this too; the queued device above is what it failed.
    import time

    import jax

    from jaxcompare.engine.worker.run_state import _Run
    from jaxcompare.engine.worker.runtimes import back_to_back

    f, x = jax.jit(lambda a: a @ a), jax.numpy.ones((10, 10))
    jax.block_until_ready(f(x))

    def by_hand() -> float:
        times = []
        for _ in range(7):
            start = time.perf_counter()
            for _ in range(10):
                out = None
                for _ in range(200):
                    out = f(x)
                jax.block_until_ready(out)
            times.append((time.perf_counter() - start) / 2000)
        return min(times)

    timing = TimingConfig()
    run = _Run(get_case("matmul"), timing, time.perf_counter_ns, Progress(lambda *_: None, timing))
    blocked = []
    for _ in range(50):
        start = time.perf_counter()
        f(x).block_until_ready()
        blocked.append(time.perf_counter() - start)
    # This VM runs at one of two speeds for stretches of seconds (about 5-6 and 8-16 µs a call here), so each
    # side's best over a run of turns let one side alone meet the fast speed (hand 5.8 µs beside the tool's 7.2
    # at best, in a clean clone's serial part). Each tool turn is read against the hand's turn beside it, in
    # ABBA order, and the pairs' median ratio is compared: a pair mostly shares its stretch.
    ratios = []
    for turn in range(12):
        pair = {}
        for side in ("hand", "tool") if turn % 2 == 0 else ("tool", "hand"):
            pair[side] = by_hand() if side == "hand" else back_to_back(run, f, (x,), float(np.median(blocked))).min_s
        ratios.append(pair["tool"] / pair["hand"])
    assert 0.85 <= float(np.median(ratios)) <= 1.15, sorted(ratios)


def test_first_call_includes_compilation(big_result):
    r = big_result
    assert r.jax.first_call.median_s > r.jax.runtime.median_s + 0.5 * r.jax.compile.median_s


def test_result_is_complete_and_agrees(big_result):
    r = big_result
    assert r.backend == "cpu"
    assert r.jax.agreement["ok"], r.jax.agreement
    assert r.jax.agreement["jax_dtype"] == r.jax.agreement["numpy_dtype"] == "float32"
    for name in ("numpy", "transfer", "trace", "lower", "compile", "first_call", "runtime",
                 "dispatch", "fetch"):
        stats = r.phase(name)
        assert stats.n >= 1 and stats.median_s > 0 and len(stats.samples_s) == stats.n, name
        assert stats.min_s <= stats.median_s
    assert r.speedup == pytest.approx(r.numpy_runtime.median_s / r.jax.runtime.median_s)
    assert r.flops == pytest.approx(2 * 1000**3 + 2 * 1000**2)
    assert r.env["jax"]["x64_enabled"] is False


@pytest.fixture(scope="module")
def highest_with_third_side():
    """centered_gram 10x10 at matmul precision "highest", with JAX on the CPU as a third side, and what
    its progress callback was told: read by the precision test and the third side's progress test."""
    log = ProgressLog()
    result = measure(Spec("centered_gram", (10, 10), device="cpu", timing=QUICK, matmul_precision="highest"),
                     progress=log, cpu_side=True)
    return result, log


def test_the_spec_s_matmul_precision_is_what_jax_ran_at_and_is_recorded(tiny_result, highest_with_third_side):
    import jax

    assert tiny_result.spec.matmul_precision == "default"
    assert tiny_result.jax.protocol["matmul_precision"] == "default"
    r, _ = highest_with_third_side
    assert r.jax.protocol["matmul_precision"] == "highest" and r.peak.matmul_precision == "highest"
    assert r.jax_cpu is not None and r.jax.agreement["ok"]
    assert type(r).from_dict(r.to_dict()).spec.matmul_precision == "highest"
    assert jax.config.jax_default_matmul_precision is None  # this thread's setting is left as it was


def test_the_matmul_precision_reaches_the_program_jax_compiles():
    import jax
    import jax.numpy as jnp

    from jaxcompare.engine.worker.ceilings import matmul_precision, use_matmul_precision

    x = jnp.ones((4, 4), dtype=jnp.float32)
    with use_matmul_precision("high"):
        assert matmul_precision() == "high"
        text = jax.jit(jnp.matmul).lower(x, x).as_text()
    assert "HIGH" in text and "HIGHEST" not in text
    assert "HIGH" not in jax.jit(jnp.matmul).lower(x, x).as_text()  # outside it, JAX's default again


def test_break_even_follows_its_definition(big_result):
    r = big_result
    saving = r.numpy_runtime.median_s - r.jax.runtime.median_s
    if saving <= 0:
        assert r.break_even_calls is None
    else:
        one_off = r.jax.transfer.median_s + r.jax.trace.median_s + r.jax.lower.median_s + r.jax.compile.median_s
        assert r.break_even_calls == pytest.approx(one_off / saving)


def test_break_even_of_a_known_result():
    """Both branches, on numbers worked out by hand: (transfer + trace + lower + compile) /
    (NumPy - JAX runtime), and None when JAX is not faster per call."""
    from dataclasses import replace

    from _results import make_result, stats

    r = make_result(numpy_s=1e-3, jax_s=2e-4, compile_s=0.02, transfer_s=1e-4)
    assert r.break_even_calls == pytest.approx((1e-4 + 0.02) / (1e-3 - 2e-4))  # 25.125 calls
    assert replace(r, numpy_runtime=stats(r.jax.runtime.median_s)).break_even_calls is None


def test_inputs_are_seeded_and_typed():
    case = get_case("matmul")
    spec = Spec("matmul", (8, 8), timing=QUICK)
    a = build_inputs(case, spec)
    b = build_inputs(case, spec)
    assert all(x.dtype == np.float32 for x in a)
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))


class ProgressLog:
    """A progress callback that keeps each new phase name and every fraction."""

    def __init__(self) -> None:
        self.phases: list[str] = []
        self.fractions: list[float] = []

    def __call__(self, phase: str, fraction: float) -> None:
        if not self.phases or self.phases[-1] != phase:
            self.phases.append(phase)
        self.fractions.append(fraction)

    def only_grows(self) -> bool:
        return self.fractions == sorted(self.fractions) and self.fractions[-1] == 1.0


def test_progress_reports_every_phase_in_order():
    log = ProgressLog()
    r = measure(Spec("matmul", (16, 16), timing=QUICK), progress=log)
    # The two runtimes the speedup is made of come last, side by side (timed again on a busy machine).
    # matmul has a FLOP count, so the ceilings for the fraction of peak come after agreement.
    recheck = ["recheck"] if "recheck" in r.load else []
    assert log.phases == ["inputs", "transfer", "compile", "first_call", "dispatch", "fetch", "numpy",
                          "runtime", *recheck, "agreement", "peak", "done"]
    assert log.only_grows()
    # Each figure a Result keeps (model/phases.FIGURES) was timed in a step the worker reported, and is on it.
    assert {figure.step.name for figure in phases.FIGURES} <= set(log.phases)
    assert all(r.phase(figure.name).n >= 1 for figure in phases.FIGURES)


def test_progress_with_the_third_side_puts_jax_on_the_cpu_after_the_runtimes(highest_with_third_side):
    r, log = highest_with_third_side
    recheck = ["recheck"] if "recheck" in r.load else []
    assert log.phases == ["inputs", "transfer", "compile", "first_call", "dispatch", "fetch", "numpy",
                          "runtime", *recheck, "jax_cpu", "agreement", "peak", "done"]
    assert log.only_grows()


def test_progress_starts_each_phase_where_the_ones_before_it_end():
    reports: list[tuple[str, float]] = []
    progress = Progress(lambda phase, fraction: reports.append((phase, fraction)),
                        TimingConfig(min_samples=4, runtime_blocks=2))
    weights = phase_weights(2)
    assert sum(weights.values()) == pytest.approx(1.0) and weights["recheck"] > 0
    for phase in (phases.INPUTS, phases.TRANSFER, phases.COMPILE, phases.FIRST_CALL, phases.DISPATCH, phases.FETCH):
        on_sample = progress.start(phase)
        on_sample(2)  # half of min_samples
        on_sample(50)  # sampling past min_samples stays short of the next phase
    for index, library in enumerate(runtime_block_order(2)):
        progress.runtime_block(index, library)(50)
    progress.start(phases.AGREEMENT)
    progress.complete()
    fractions = [f for _, f in reports]
    assert fractions == sorted(fractions) and reports[-1] == ("done", 1.0)
    names = [name for name, _ in PROGRESS_WEIGHTS]
    starts = {}
    for phase, fraction in reports:
        starts.setdefault(phase, fraction)
    for phase in starts.keys() - {"done"}:
        before = sum(weights[n] for n in names[:names.index(phase)])
        assert starts[phase] == pytest.approx(before), phase
    assert ("transfer", pytest.approx(weights["inputs"] + weights["transfer"] / 2 * 0.95)) in reports


def test_runtime_blocks_alternate_which_library_goes_first():
    assert runtime_block_order(1) == ["numpy", "runtime"]
    assert runtime_block_order(2) == ["numpy", "runtime", "runtime", "numpy"]
    assert runtime_block_order(4) == ["numpy", "runtime", "runtime", "numpy"] * 2


def test_runtime_settings_govern_only_the_speedup_phases():
    # An easy stopping rule for the NumPy and JAX runtimes, an unreachable one elsewhere: the
    # two speedup phases stop at min_samples, a looped phase that is not one of them runs on
    # to its budget.
    cfg = TimingConfig(target_sample_s=0.002, min_samples=4, max_samples=40, phase_budget_s=0.05,
                       rel_ci=1e-9, compile_samples=2, warmup_s=0.001, runtime_rel_ci=10.0)
    r = measure(Spec("elementwise", (1000,), timing=cfg), recheck=False)  # the first pass's rules
    assert r.numpy_runtime.n == r.jax.runtime.n == 6  # min_samples, raised to the 6 a 95% range needs
    assert r.numpy_runtime.stable and r.jax.runtime.stable
    assert r.jax.transfer.n > 4 and not r.jax.transfer.stable


def test_speedup_range_holds_a_rerun_beyond_the_two_cis_and_only_with_enough_samples():
    from _results import make_result, stats, with_jax

    r = make_result(numpy_s=1e-3, jax_s=2e-4)  # 7 samples a side
    low, high = r.speedup_range
    # Wider than the two medians' CIs alone (a rerun also drifts between runs), centred on the speedup.
    assert low < r.numpy_runtime.ci_low_s / r.jax.runtime.ci_high_s
    assert high > r.numpy_runtime.ci_high_s / r.jax.runtime.ci_low_s
    assert low * high == pytest.approx(r.speedup ** 2)
    few = with_jax(r, runtime=stats(2e-4, n=5))
    assert all(math.isnan(x) for x in few.speedup_range)  # [min, max] of 5 covers only 94%


def test_runtime_blocks_are_timed_in_pairs_side_by_side(monkeypatch):
    import jaxcompare.engine.worker.runtimes as runtimes_module
    from jaxcompare.engine.common.load import HELPER_SHARE
    from jaxcompare.engine.worker.timing import BLAS_SETTLE_S, BoundCall
    from jaxcompare.model.platforms import PLATFORMS

    real_sample = runtimes_module.sample
    runtime_blocks = []

    def recording_sample(call, config, **kwargs):  # the real sampler, with a note of each runtime block
        if isinstance(call, BoundCall):  # the roofline's empty calls are sampled in engine/worker/measure.py, not here
            runtime_blocks.append(("numpy" if call.block is None else "jax", kwargs.get("settle_s", 0.0)))
        return real_sample(call, config, **kwargs)

    monkeypatch.setattr(runtimes_module, "sample", recording_sample)
    log = ProgressLog()
    cfg = TimingConfig(target_sample_s=0.002, min_samples=12, max_samples=40, phase_budget_s=0.05,
                       rel_ci=10.0, compile_samples=2, warmup_s=0.001, runtime_blocks=4)
    r = measure(Spec("elementwise", (1000,), timing=cfg), progress=log, recheck=False)
    assert log.phases[-8:] == ["fetch", "numpy", "runtime", "recheck", "first_call_fresh", "agreement", "peak", "done"]
    assert log.only_grows()  # the bar never goes back between blocks
    # Pairs side by side, alternating which goes first; a NumPy block after a JAX one settles first
    # (the first follows fetch). Elementwise NumPy runs on one thread, so nothing of it spins after
    # its blocks and the JAX blocks after them start at once.
    n = PLATFORMS["cpu"].numpy_settle_s
    assert r.load["phases"]["numpy"]["helper_cpu_s"] < HELPER_SHARE * r.load["phases"]["numpy"]["wall_s"]
    assert runtime_blocks == [("numpy", n), ("jax", 0.0), ("jax", 0.0), ("numpy", n),
                              ("numpy", 0.0), ("jax", 0.0), ("jax", 0.0), ("numpy", n)]
    # Four blocks of at least 3 samples each (min_samples shared between them), pooled.
    assert r.numpy_runtime.n == r.jax.runtime.n == 12
    assert len(r.numpy_runtime.block_medians_s) == len(r.jax.runtime.block_medians_s) == 4
    assert len(r.speedup_pairs) == 4 and r.speedup_steady is not None

    # A 200x200 matmul runs OpenBLAS's worker threads, which spin after the work: each JAX block
    # after a NumPy one settles BLAS_SETTLE_S first (with one BLAS thread there is nothing to spin).
    from threadpoolctl import threadpool_info

    if max((p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"), default=1) < 2:
        return
    runtime_blocks.clear()
    matmul = measure(Spec("matmul", (200, 200), timing=cfg), recheck=False)
    assert matmul.load["phases"]["numpy"]["helper_cpu_s"] >= HELPER_SHARE * matmul.load["phases"]["numpy"]["wall_s"]
    jax_settles = [settle for library, settle in runtime_blocks if library == "jax"]
    assert jax_settles == [BLAS_SETTLE_S, 0.0, BLAS_SETTLE_S, 0.0]


def test_the_first_call_is_timed_in_a_fresh_process_that_compiled_nothing_before():
    # careful timing: the first call comes from a new process, persistent cache off, its first compile;
    # the worker's own (after jax.clear_caches(), a recompile in a warm process) stands beside it.
    from jaxcompare.analysis.text import first_call_line

    r = measure(Spec("centered_gram", (16, 16)))
    where = r.jax.protocol["first_call"]
    assert where == {"process": "fresh", "processes": 1, "cache_hits": 0, "compiled_before": 0}
    recompile = r.jax.first_call_recompile
    assert recompile is not None and recompile.n >= 2 and r.jax.first_call.n == 1
    # A process's first jit pays what a warm process's recompile does not (2x measured here).
    assert r.jax.first_call.median_s > recompile.median_s
    assert "in a fresh process" in first_call_line(r)
    again = Result.from_dict(json.loads(json.dumps(r.to_dict())))
    assert again.jax.first_call_recompile == recompile and again.jax.protocol["first_call"] == where


def test_quick_timing_keeps_the_workers_first_call_and_says_so(tiny_result):
    from jaxcompare.analysis.text import first_call_line

    assert tiny_result.jax.protocol["first_call"] == {"process": "worker"}
    assert tiny_result.jax.first_call_recompile is None
    assert "a fresh process pays more" in first_call_line(tiny_result)
