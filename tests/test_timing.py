"""Statistics and calibration, with an injected fake clock (deterministic)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from jaxcompare.engine.worker.timing import (
    DISPATCH_MAX_CALLS,
    BoundCall,
    QueuedCall,
    Turn,
    blocking_call,
    bound_call,
    calibrate_loops,
    combine_blocks,
    sample,
    sample_round_robin,
    sample_turns,
)
from jaxcompare.model.spec import TimingConfig
from jaxcompare.model.stats import Stats, median_ci

CFG = TimingConfig(target_sample_s=0.01, min_samples=5, max_samples=50, phase_budget_s=1.0,
                   rel_ci=0.02, warmup_s=0.001)


def test_stats_from_known_samples():
    s = Stats.from_samples([1.0, 2.0, 3.0, 4.0, 100.0], loops=7)
    assert s.median_s == 3.0
    assert s.min_s == 1.0
    assert s.mean_s == pytest.approx(22.0)
    assert s.std_s == pytest.approx(np.std([1, 2, 3, 4, 100], ddof=1))
    assert s.iqr_s == pytest.approx(4.0 - 2.0)
    assert (s.n, s.loops) == (5, 7)
    assert s.samples_s == (1.0, 2.0, 3.0, 4.0, 100.0)


def test_stats_json_round_trip():
    s = Stats.from_samples([0.5, 0.7, 0.6], loops=3, stable=False, unstable_reason="noisy")
    assert Stats.from_dict(s.to_dict()) == s


def test_median_ci_contains_median_and_narrows_with_n(rng):
    small = rng.normal(1.0, 0.1, 11)
    large = rng.normal(1.0, 0.1, 401)
    lo_s, hi_s = median_ci(small)
    lo_l, hi_l = median_ci(large)
    assert lo_s <= np.median(small) <= hi_s
    assert lo_l <= np.median(large) <= hi_l
    assert hi_l - lo_l < hi_s - lo_s


@pytest.mark.parametrize("per_call_s, expected", [(1e-6, 10_000), (1e-3, 10), (0.05, 1)])
def test_calibration_hits_target_sample_time(fake_clock, per_call_s, expected):
    loops = calibrate_loops(lambda: fake_clock.advance(per_call_s), 0.01, fake_clock)
    assert loops == expected


def test_calibration_is_not_fooled_by_one_disturbed_probe(fake_clock):
    """The first call lands in a 25 ms stall of the machine; the call itself takes 20 µs."""
    durations = iter([0.025] + [2e-5] * 10_000)
    loops = calibrate_loops(lambda: fake_clock.advance(next(durations)), 0.01, fake_clock)
    assert loops == 500  # 500 x 20 µs = the 10 ms target, not the 1 loop the stalled probe suggests


def test_samples_keep_their_target_when_both_calibration_probes_were_slowed(fake_clock):
    """A stretch of load covers the warm-up and both calibration probes (each call 50x its pace), then ends:
    the first sample, far under its target, sizes the loops again and is not kept."""
    slow = 1 + 1 + 10 + 100 + 100  # warm-up's call, then the probes of 1, 10, 100 loops and the second of 100
    calls = iter([1e-4] * slow + [2e-6] * 100_000)
    cfg = TimingConfig(target_sample_s=0.01, min_samples=5, max_samples=50, phase_budget_s=1.0,
                       rel_ci=0.02, warmup_s=1e-9)  # one warm-up call
    stats = sample(lambda: fake_clock.advance(next(calls)), cfg, clock=fake_clock)
    assert stats.median_s == pytest.approx(2e-6)
    assert stats.loops == 5000  # 5,000 x 2 µs = the 10 ms target, not the 100 the slowed probes gave
    assert stats.n == cfg.min_samples and all(x == pytest.approx(2e-6) for x in stats.samples_s)


def test_a_watch_that_ends_the_block_at_once_still_leaves_a_sample_when_the_first_was_resized(fake_clock):
    """A later block's SampleWatch may say "done" before the block's first sample (the blocks before it had
    more clean samples than their share); the first sample, resized after slowed probes, is not kept, so
    the block must not end with none: the accuracy benchmark's x32 run died on "no samples" in CI."""
    class DoneWatch:
        def begin(self):
            pass

        def end(self):
            pass

        def block_done(self):
            return True

    slow = 1 + 1 + 10 + 100 + 100
    calls = iter([1e-4] * slow + [2e-6] * 100_000)
    cfg = TimingConfig(target_sample_s=0.01, min_samples=5, max_samples=50, phase_budget_s=1.0, rel_ci=0.02,
                       warmup_s=1e-9)
    stats = sample(lambda: fake_clock.advance(next(calls)), cfg, clock=fake_clock, watch=DoneWatch())
    assert stats.n == 1 and stats.loops == 5000
    assert stats.median_s == pytest.approx(2e-6)


def test_the_call_after_the_work_between_samples_is_not_timed(fake_clock):
    """The first call after a progress message (or the watch's reads) runs 30% slower, as an 8.6 ms NumPy
    call ran 2.5 ms slower after them on the TPU host: with two calls a sample it would add 15% to each."""
    disturbed = [False]

    def call():
        fake_clock.advance(0.01 * (1.3 if disturbed[0] else 1.0))
        disturbed[0] = False

    def between(n):
        disturbed[0] = True

    cfg = TimingConfig(target_sample_s=0.02, min_samples=5, max_samples=50, phase_budget_s=5.0, rel_ci=0.02,
                       warmup_s=1e-9)
    stats = sample(call, cfg, clock=fake_clock, on_sample=between)
    assert stats.loops == 2
    assert stats.median_s == pytest.approx(0.01)


def test_a_long_call_is_not_called_twice_a_sample(fake_clock):
    """Past UNTIMED_CALL_MAX_S the work between samples is a small share of a call: an untimed call before
    each sample would double the phase (a thorough 2 s call, 26 s -> 46 s) for nothing."""
    calls = [0]

    def call():
        calls[0] += 1
        fake_clock.advance(0.5)

    cfg = TimingConfig(target_sample_s=0.02, min_samples=5, max_samples=50, phase_budget_s=1.0, rel_ci=0.02,
                       warmup_s=1e-9)
    stats = sample(call, cfg, clock=fake_clock)
    assert stats.loops == 1 and stats.n >= 5
    assert calls[0] <= stats.n + 5, (calls[0], stats.n)  # the warm-up, the calibration, the first sample's


def test_constant_calls_stop_at_min_samples_and_are_exact(fake_clock):
    stats = sample(lambda: fake_clock.advance(2e-4), CFG, clock=fake_clock)
    assert stats.stable and stats.unstable_reason is None
    assert stats.n == CFG.min_samples
    assert stats.loops == 50  # 50 x 0.2 ms = the 10 ms target
    assert stats.median_s == pytest.approx(2e-4)


def test_noisy_calls_run_until_budget_and_say_why(fake_clock, rng):
    durations = iter(rng.choice([1e-3, 3e-3], size=100_000))
    stats = sample(lambda: fake_clock.advance(next(durations)), CFG, clock=fake_clock,
                   budget_s=0.2)
    assert not stats.stable
    assert "time budget" in stats.unstable_reason
    assert fake_clock.now * 1e-9 >= 0.2


def test_noisy_calls_stop_at_max_samples(fake_clock, rng):
    cfg = TimingConfig(target_sample_s=1e-3, min_samples=3, max_samples=12, phase_budget_s=1e6,
                       rel_ci=1e-6, warmup_s=1e-4)
    stats = sample(lambda: fake_clock.advance(rng.uniform(1e-3, 2e-3)), cfg, clock=fake_clock)
    assert stats.n == 12
    assert not stats.stable and "maximum" in stats.unstable_reason


def test_setup_and_teardown_are_not_timed(fake_clock):
    torn = []
    stats = sample(
        lambda: fake_clock.advance(1e-3) or "out",
        CFG,
        clock=fake_clock,
        setup=lambda: fake_clock.advance(0.5),
        teardown=lambda out: torn.append(out) or fake_clock.advance(0.5),
        budget_s=100,
    )
    assert stats.loops == 1
    assert stats.median_s == pytest.approx(1e-3)
    assert torn and set(torn) == {"out"}


def test_calls_longer_than_budget_still_report(fake_clock):
    stats = sample(lambda: fake_clock.advance(10.0), CFG, clock=fake_clock, warmup=False)
    assert 1 <= stats.n < CFG.min_samples
    assert not stats.stable and "long" in stats.unstable_reason
    assert stats.median_s == pytest.approx(10.0)
    assert math.isfinite(stats.rel_ci)


def test_bound_call_times_its_own_loop_on_the_given_clock(fake_clock):
    seen = []
    call = bound_call(lambda a, b: seen.append((a, b)) or fake_clock.advance(1e-3), (1, 2))
    assert call.time_loops(7, fake_clock) == 7_000_000
    assert seen == [(1, 2)] * 7
    stats = sample(call, CFG, clock=fake_clock)
    assert stats.stable and stats.loops == 10 and stats.median_s == pytest.approx(1e-3)


def test_bound_call_blocks_as_asked():
    class Out:
        blocked = 0

        def block_until_ready(self):
            Out.blocked += 1
            return self

    call = BoundCall(lambda: Out(), block="method")
    assert isinstance(call(), Out) and Out.blocked == 1
    call.time_loops(3, lambda: 0)
    assert Out.blocked == 4
    with pytest.raises(ValueError):
        BoundCall(print, block="maybe")


def test_blocking_call_picks_the_cheapest_block_for_the_output():
    import jax
    import jax.numpy as jnp

    x = jnp.ones(3)
    one = blocking_call(jax.jit(lambda x: x + 1), (x,))
    two = blocking_call(jax.jit(lambda x: (x, x * 2)), (x,))
    assert one.block == "method" and two.block == "tree"
    assert float(one()[0]) == 2.0 and float(two()[1][0]) == 2.0
    assert one.time_loops(3, lambda: 0) == 0



@pytest.mark.parametrize("drained_s, expected", [(1e-3, 10), (1e-6, DISPATCH_MAX_CALLS), (0.05, 1)])
def test_a_queued_call_fits_its_loop_to_a_drained_calls_pace_and_caps_its_queue(fake_clock, drained_s, expected):
    # Sized by the drained call (the work it queues), never by the quick return alone, and never past the cap.
    call = QueuedCall(lambda: fake_clock.advance(drained_s), ())
    assert call.calibrate(0.01, fake_clock) == expected


def test_a_queued_loop_is_timed_until_its_calls_return_and_drained_after_the_clock_stops():
    """Real JAX on the CPU: the clock stops when the eight calls have returned, with their work still
    queued (eight 800x800 products take milliseconds, their dispatch microseconds), and every call has
    finished when time_loops returns, so the next sample starts on an idle device."""
    import jax
    import jax.numpy as jnp

    f = jax.jit(lambda x: x @ x)
    x = jax.device_put(jnp.ones((800, 800)))
    outs = []
    call = QueuedCall(lambda x: outs.append(f(x)) or outs[-1], (x,), max_loops=8)
    call()
    outs.clear()
    last_ready_at_stop = []

    def clock():
        if len(outs) == 8:  # the clock's second reading: it stops here
            last_ready_at_stop.append(outs[-1].is_ready())
        return len(outs)

    assert call.time_loops(8, clock) == 8
    assert last_ready_at_stop == [False]  # not blocked inside the timed loop
    assert all(o.is_ready() for o in outs)  # drained after it


def test_settle_extends_the_warm_up_and_not_the_budget(fake_clock):
    calls = []

    def call():
        calls.append(fake_clock())
        fake_clock.advance(1e-3)

    plain = sample(call, CFG, clock=fake_clock)
    plain_calls = len(calls)
    calls.clear()
    settled = sample(call, CFG, clock=fake_clock, settle_s=0.15)
    # 150 calls of 1 ms of warm-up on top, then the same sampling as without a settle.
    assert len(calls) - plain_calls == pytest.approx(150, abs=2)
    assert (settled.n, settled.loops, settled.stable) == (plain.n, plain.loops, plain.stable)


def test_blocks_that_agree_pool_their_samples():
    a = Stats.from_samples([1.00, 1.01, 0.99, 1.00], loops=3)
    b = Stats.from_samples([1.01, 1.00, 1.02], loops=4)
    both = combine_blocks([a, b], rel_ci=0.03, tolerance=0.03)
    assert both.stable and both.n == 7 and both.loops == 3
    assert sorted(both.samples_s) == sorted(a.samples_s + b.samples_s)
    assert both.block_medians_s == (a.median_s, b.median_s)  # in the order timed
    assert Stats.from_dict(json.loads(json.dumps(both.to_dict()))) == both
    # Saved before block medians were kept (no key), or by a tool that wrote null: none.
    for old in ({k: v for k, v in both.to_dict().items() if k != "block_medians_s"},
                both.to_dict() | {"block_medians_s": None}):
        assert Stats.from_dict(old).block_medians_s == ()
    assert combine_blocks([a], rel_ci=0.03, tolerance=0.03) is a


def test_blocks_that_disagree_flag_drift_with_both_medians():
    fast = Stats.from_samples([6.6e-3, 6.7e-3, 6.5e-3], loops=1)
    slow = Stats.from_samples([12.1e-3, 12.0e-3, 12.2e-3], loops=1)  # a tight CI, in a slow stretch
    both = combine_blocks([fast, slow], rel_ci=0.03, tolerance=0.03, what="the NumPy median")
    assert not both.stable
    assert "the NumPy median moved by 83%" in both.unstable_reason  # 12.1 / 6.6 - 1
    assert "6.6 ms → 12.1 ms" in both.unstable_reason and "drifted" in both.unstable_reason


def test_blocks_are_judged_on_their_pooled_median():
    # Neither block alone reached its target, but pooled the median is known well enough...
    a = Stats.from_samples([1.0, 1.01, 0.99, 1.0, 1.02, 0.98], stable=False, unstable_reason="budget ran out")
    b = Stats.from_samples([1.0, 1.01, 0.99, 1.0, 1.02, 0.98], stable=False, unstable_reason="budget ran out")
    assert combine_blocks([a, b], rel_ci=0.02, tolerance=0.03).stable
    # ... and two blocks that each look fine can still leave the pooled median too loose.
    wide = combine_blocks([a, b], rel_ci=0.001, tolerance=0.03)
    assert not wide.stable and "over 12 samples in 2 blocks" in wide.unstable_reason


def test_a_zero_median_against_a_real_one_is_drift():
    zero = Stats.from_samples([0.0, 0.0, 0.0])
    real = Stats.from_samples([1e-3, 1e-3, 1e-3])
    both = combine_blocks([zero, real], rel_ci=0.03, tolerance=0.03)
    assert not both.stable and "moved from nothing" in both.unstable_reason


def test_median_ci_ranks_match_scipys_binomial_quantile():
    from scipy.stats import binom

    from jaxcompare.model.stats import _ci_rank

    for confidence in (0.9, 0.95, 0.99):
        for n in range(1, 1001):
            assert _ci_rank(n, confidence) == int(binom.ppf((1 - confidence) / 2, n, 0.5)), (n, confidence)
    assert abs(_ci_rank(20_000, 0.95) - int(binom.ppf(0.025, 20_000, 0.5))) <= 1


def test_median_ci_does_not_import_scipy_stats():
    # Importing scipy.stats takes ~0.6 s; inside a fresh worker's first phase it used to eat
    # that phase's whole time budget (NumPy runtime: 5 samples, "budget ran out").
    import subprocess
    import sys

    code = ("import sys; from jaxcompare.engine.worker.timing import sample; "
            "from jaxcompare.model.stats import median_ci; "
            "from jaxcompare.model.spec import TimingConfig; "
            "median_ci([3.0, 1.0, 2.0, 5.0, 4.0, 6.0]); sample(lambda: None, TimingConfig.quick()); "
            "print('scipy.stats' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def drifting_calls(fake_clock, costs_s):
    """Calls costing ``costs_s`` each on a machine that slows down steadily: 1x at the start,
    3x one second in (a slow stretch, as on a shared host)."""
    start = fake_clock()

    def make(cost_s):
        return lambda: fake_clock.advance(cost_s * (1 + 2 * min((fake_clock() - start) / 1e9, 1.0)))

    return [make(c) for c in costs_s]


def test_round_robin_keeps_the_ratio_through_a_drift_that_sequential_sampling_does_not(fake_clock):
    cfg = TimingConfig(target_sample_s=0.01, min_samples=20, max_samples=20, phase_budget_s=1.0,
                       rel_ci=1e-9, warmup_s=0.001)
    fast, slow = drifting_calls(fake_clock, [1e-3, 2e-3])
    in_turns = sample_round_robin([fast, slow], cfg, clock=fake_clock)
    assert [s.n for s in in_turns] == [20, 20]
    assert in_turns[1].median_s / in_turns[0].median_s == pytest.approx(2.0, rel=0.05)

    fake_clock.now = 0
    fast, slow = drifting_calls(fake_clock, [1e-3, 2e-3])
    one_then_other = [sample(fast, cfg, clock=fake_clock), sample(slow, cfg, clock=fake_clock)]
    assert one_then_other[1].median_s / one_then_other[0].median_s > 2.5


def test_round_robin_stops_when_every_median_is_stable(fake_clock):
    quiet, noisy = 1e-3, iter(np.random.default_rng(0).uniform(1e-3, 3e-3, 100_000))
    calls = [lambda: fake_clock.advance(quiet), lambda: fake_clock.advance(next(noisy))]
    cfg = TimingConfig(target_sample_s=0.01, min_samples=5, max_samples=10_000, phase_budget_s=100.0,
                       rel_ci=0.05, warmup_s=0.001)
    quiet_stats, noisy_stats = sample_round_robin(calls, cfg, clock=fake_clock)
    assert quiet_stats.stable and noisy_stats.stable
    # The quiet one waited for the noisy one, which stopped once stable, long before the caps.
    assert cfg.min_samples < quiet_stats.n == noisy_stats.n < 200
    assert fake_clock() / 1e9 < 0.1 * cfg.phase_budget_s
    assert quiet_stats.median_s == pytest.approx(quiet)
    assert quiet_stats.loops == 10  # each call calibrated on its own


def test_round_robin_of_one_call_samples_like_sample(fake_clock):
    # Nothing switches between turns: no untimed calls, the same samples as sample() takes.
    durations = np.random.default_rng(2).uniform(1e-3, 2e-3, 10_000)
    it = iter(durations)
    alone = sample(lambda: fake_clock.advance(next(it)), CFG, clock=fake_clock)
    fake_clock.now, it = 0, iter(durations)
    [in_turns] = sample_round_robin([lambda: fake_clock.advance(next(it))], CFG, clock=fake_clock)
    assert (in_turns.n, in_turns.loops, in_turns.samples_s) == (alone.n, alone.loops, alone.samples_s)


def test_round_robin_reports_a_median_still_noisy_when_the_budget_runs_out(fake_clock):
    noisy = iter(np.random.default_rng(1).uniform(1e-3, 9e-3, 100_000))
    cfg = TimingConfig(target_sample_s=0.01, min_samples=5, max_samples=10_000, phase_budget_s=0.5,
                       rel_ci=1e-6, warmup_s=0.001)
    started = fake_clock()
    quiet_stats, noisy_stats = sample_round_robin(
        [lambda: fake_clock.advance(1e-3), lambda: fake_clock.advance(next(noisy))], cfg, clock=fake_clock)
    assert quiet_stats.stable and not noisy_stats.stable
    assert "time budget ran out" in noisy_stats.unstable_reason
    # The budget is per call: two calls, about a second of sampling (plus warm-up and calibration).
    assert 1.0 <= (fake_clock() - started) / 1e9 < 1.2
    assert sample_round_robin([], cfg, clock=fake_clock) == []


def test_round_robin_reports_each_call_at_its_own_pace_not_the_switch(fake_clock):
    # The first call after the other one pays for the switch (cold caches): 5 ms on top.
    last = [None]

    def make(name, cost_s):
        def call():
            fake_clock.advance(cost_s + (5e-3 if last[0] != name else 0.0))
            last[0] = name
        return call

    a, b = sample_round_robin([make("a", 1e-3), make("b", 2e-3)], CFG, clock=fake_clock)
    assert a.median_s == pytest.approx(1e-3) and b.median_s == pytest.approx(2e-3)


def test_turns_keep_a_cold_call_and_a_loop_call_in_step_through_a_drift(fake_clock):
    # A cold first call (setup each sample) beside its steady loop, as pitfall 1 times them: a
    # machine slowing threefold over the run leaves their ratio, sampled in turns, at 10x.
    cfg = TimingConfig(target_sample_s=0.01, min_samples=12, max_samples=12, phase_budget_s=1.0,
                       rel_ci=1e-9, warmup_s=0.001)
    first, steady = drifting_calls(fake_clock, [10e-3, 1e-3])
    setups = []
    cold, warm = sample_turns([Turn(first, setup=lambda: setups.append(1), min_samples=12), Turn(steady)], cfg,
                              clock=fake_clock)
    assert cold.loops == 1 and warm.loops > 1 and len(setups) == cold.n == 12  # no warm-up of the cold one
    assert cold.median_s / warm.median_s == pytest.approx(10, rel=0.1)


def test_turns_alternate_their_order_so_going_second_favours_neither(fake_clock):
    # Whichever call runs second in a round gets a 20% discount (a warm cache): two identical
    # calls must still come out alike.
    cfg = TimingConfig(target_sample_s=0.001, min_samples=10, max_samples=10, phase_budget_s=1.0,
                       rel_ci=1e-9, warmup_s=0.001)
    position = [0]

    def call():
        fake_clock.advance(1e-3 * (0.8 if position[0] % 2 else 1.0))

    def make():
        def turn():
            call()
        return Turn(turn, teardown=lambda _: position.__setitem__(0, position[0] + 1))

    a, b = sample_turns([make(), make()], cfg, clock=fake_clock)
    assert a.median_s == pytest.approx(b.median_s, rel=0.15)
