"""The sampling loop: calibrated loops, noise-based stopping, blocks pooled into one Stats.
Runs in the worker (and the benchmarks); the clock is injectable (nanoseconds) so tests
drive calibration and stopping with a fake one.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, Protocol

import numpy as np

from ...i18n import N_
from ...model.formatting import format_time
from ...model.spec import UNTIMED_CALL_MAX_S, TimingConfig
from ...model.stats import Stats, median_ci

Clock = Callable[[], int]


class Watch(Protocol):
    """Judges each sample from ``begin()`` to ``end()`` (its untimed first call with it), and says when a
    block has enough samples (load.SampleWatch)."""

    def begin(self) -> None: ...

    def end(self) -> None: ...

    def block_done(self) -> bool: ...


NS = 1e-9
# After NumPy's multithreaded work OpenBLAS's idle threads spin before they sleep and slow JAX's
# calls, so a JAX timing that follows NumPy warms up this long. Measured: a JAX call ran 1.8x slower
# for 100-150 ms after NumPy (benchmarks/RESULTS.md).
BLAS_SETTLE_S = 0.15
# At most this many unblocked calls queued in one dispatch sample. One call a sample paid each sample's
# cold start: centered_gram 10x10 on the CPU read 37 µs a dispatch that way, 6.4 µs at 16 calls a sample
# and 5.8 µs at 32, beside 26 µs a blocked call (benchmarks/RESULTS.md); 16 keeps a device's queue short.
DISPATCH_MAX_CALLS = 16


def time_loops(call: Callable[[], Any], loops: int, clock: Clock) -> int:
    """Nanoseconds for ``loops`` back-to-back calls (a BoundCall times them in its own loop)."""
    own_loop = getattr(call, "time_loops", None)
    if own_loop is not None:
        return own_loop(loops, clock)
    start = clock()
    for _ in range(loops):
        call()
    return clock() - start


class BoundCall:
    """``fn(*args)``, optionally blocked until ready, with a timing loop compiled the way
    timeit compiles its statement: the harness adds no Python call per iteration, which
    would be a visible share of a microseconds-long JAX call."""

    def __init__(self, fn: Callable[..., Any], args: Sequence[Any] = (), *, block: str | None = None):
        if block not in (None, "method", "tree"):
            raise ValueError(f"block must be None, 'method' or 'tree', got {block!r}")
        self.fn, self.args, self.block = fn, tuple(args), block
        names = "".join(f"a{i}, " for i in range(len(self.args)))
        stmt = f"fn({names})"
        stmt = {None: stmt, "method": f"{stmt}.block_until_ready()", "tree": f"block({stmt})"}[block]
        # Each output is dropped at once, as timeit drops it, but the last (whether it was ready is
        # checked on it): an output kept until the next call returns changes what the allocator
        # reuses, and NumPy's chain over 1000x1000 ran 1.9 ms so against 2.2 ms under timeit.
        source = (
            f"def loop(loops, clock, fn, block, {names}):\n"
            f"    start = clock()\n"
            f"    for _ in repeat(None, loops - 1):\n"
            f"        {stmt}\n"
            f"    out = {stmt}\n"
            f"    end = clock()\n"
            f"    return end - start, out\n"
        )
        namespace: dict[str, Any] = {"repeat": itertools.repeat}
        exec(compile(source, f"<jaxcompare.timing {getattr(fn, '__name__', 'call')}>", "exec"), namespace)
        self._loop = namespace["loop"]
        self._block = _tree_blocker() if block == "tree" else None
        self.timed_loops = 0
        self.unready_loops = 0

    def __call__(self) -> Any:
        out = self.fn(*self.args)
        if self.block == "method":
            return out.block_until_ready()
        if self.block == "tree":
            return self._block(out)
        return out

    def time_loops(self, loops: int, clock: Clock) -> int:
        elapsed, out = self._loop(loops, clock, self.fn, self._block, *self.args)
        if self.block is not None:
            # Checked after the clock stopped, so it costs the sample nothing.
            self.timed_loops += 1
            self.unready_loops += not _ready(out)
        return elapsed

    @property
    def finished_when_timed(self) -> bool:
        """Whether every timed loop's last output was ready the moment its clock stopped: what
        blocking promises, checked on the arrays rather than assumed."""
        return self.timed_loops > 0 and self.unready_loops == 0


class QueuedCall:
    """``fn(*args)`` left unblocked, as a caller that does not wait for its result makes it: a timed loop
    of calls (BoundCall's, each output but the last dropped) stops when the last call returns, and its
    block comes after the clock stopped. A device runs one program's calls in order, so that block drains
    the loop's queue before the next sample (on XLA's CPU client too: no earlier output of 8 was unready
    once the last was, 10x10 to 1000x1000). calibrate() bounds what a loop queues."""

    def __init__(self, fn: Callable[..., Any], args: Sequence[Any] = (), *,
                 max_loops: int = DISPATCH_MAX_CALLS) -> None:
        self.fn, self.args, self.max_loops = fn, tuple(args), max(1, max_loops)
        self._unblocked = BoundCall(fn, args)
        self._drain = _tree_blocker()

    def __call__(self) -> Any:
        return self._drain(self.fn(*self.args))

    def time_loops(self, loops: int, clock: Clock) -> int:
        elapsed, out = self._unblocked._loop(loops, clock, self.fn, None, *self.args)
        self._drain(out)  # untimed: the queue empties before the next sample
        return elapsed

    def calibrate(self, target_s: float, clock: Clock) -> int:
        """Calls per sample: as many as ``target_s`` holds at the pace of drained loops, at most ``max_loops``.
        Sized by the unblocked calls alone, a loop would queue far more work than that. The probe loops
        double until one lasts ``target_s`` or holds ``max_loops``, and the last is taken twice (the
        faster): a probe pays the wait for XLA's worker to wake once however many calls it holds (beside
        some 18 runnable processes on two cores, 10x10's one drained call 213 µs, sixteen 237 µs, and
        one probe in 40 preempted past a 5 ms sample)."""
        loops = 1
        while True:
            elapsed_s = _drained_ns(self, loops, clock) * NS
            if elapsed_s >= target_s or loops >= self.max_loops:
                break
            loops = min(2 * loops, self.max_loops)
        elapsed_s = min(elapsed_s, _drained_ns(self, loops, clock) * NS)
        if elapsed_s <= 0:
            return loops
        return max(1, min(self.max_loops, int(loops * target_s / elapsed_s)))


def _drained_ns(call: QueuedCall, loops: int, clock: Clock) -> int:
    """Nanoseconds for ``loops`` queued calls and their drain."""
    start = clock()
    call.time_loops(loops, clock)
    return clock() - start


def _ready(out: Any) -> bool:
    """True when every array in ``out`` holds its value (``is_ready`` does not wait)."""
    import jax

    return all(leaf.is_ready() for leaf in jax.tree_util.tree_leaves(out) if hasattr(leaf, "is_ready"))


def _tree_blocker() -> Callable[[Any], Any]:
    import jax

    return jax.block_until_ready


def unblocked_call(fn: Callable[..., Any], args: Sequence[Any] = ()) -> QueuedCall:
    """``fn(*args)`` for sample() without blocking: the dispatch, a short loop of calls a sample."""
    return QueuedCall(fn, args)


def bound_call(fn: Callable[..., Any], args: Sequence[Any] = ()) -> BoundCall:
    """``fn(*args)`` for sample(): a host (NumPy) call without per-call harness cost."""
    return BoundCall(fn, args)


def blocking_call(fn: Callable[..., Any], args: Sequence[Any] = ()) -> BoundCall:
    """``fn(*args)`` blocked until its result is ready, the cheapest way its output allows:
    ``out.block_until_ready()`` for one array, ``jax.block_until_ready(out)`` for a tuple or
    pytree. Calls ``fn`` once (blocked) to see which; call it after warming up ``fn``."""
    probe = BoundCall(fn, args, block="tree")
    out = probe()
    return BoundCall(fn, args, block="method" if hasattr(out, "block_until_ready") else "tree")


def calibrate_loops(call: Callable[[], Any], target_s: float, clock: Clock) -> int:
    """Loops per sample so one sample lasts about ``target_s`` (timeit's autorange, then
    extrapolated, so fast calls are not measured one timer tick at a time)."""
    loops = 1
    while True:
        elapsed_s = time_loops(call, loops, clock) * NS
        if elapsed_s >= target_s / 5 or loops >= 10**8:
            break
        loops *= 10
    # One probe slowed by another process would make every sample too short: take the
    # faster of two at the final loop count.
    elapsed_s = min(elapsed_s, time_loops(call, loops, clock) * NS)
    if elapsed_s <= 0:
        return loops
    return max(1, min(10**8, round(loops * target_s / elapsed_s)))


def sample(
    call: Callable[[], Any],
    config: TimingConfig,
    *,
    clock: Clock = time.perf_counter_ns,
    setup: Callable[[], Any] | None = None,
    teardown: Callable[[Any], Any] | None = None,
    budget_s: float | None = None,
    min_samples: int | None = None,
    warmup: bool = True,
    settle_s: float = 0.0,
    on_sample: Callable[[int], None] | None = None,
    watch: Watch | None = None,
) -> Stats:
    """Sample ``call`` until the median is stable or the budget is spent.

    With ``setup`` or ``teardown`` each sample is one call (untimed setup before it,
    untimed ``teardown(result)`` after it): needed when every call must start from fresh
    state (cold compile, fetch of a fresh result). An unblocked dispatch is a QueuedCall: a
    short loop a sample, blocked after the clock stops. ``settle_s``: warm up
    at least this long (BLAS_SETTLE_S when the call follows NumPy work). ``watch``: judges each
    sample (load.SampleWatch keeps one verdict a sample), and may end the block early.
    """
    turn = Turn(call, setup=setup, teardown=teardown, min_samples=min_samples, budget_s=budget_s, warms=True)
    return _sample([turn], config, clock=clock, settle_s=settle_s, warmup=warmup, on_sample=on_sample,
                   watch=watch)[0]


def _stop(samples: Sequence[float], config: TimingConfig, min_n: int, elapsed_ns: float,
          budget_ns: float) -> tuple[bool, str | None]:
    """Whether sampling is done, and if so why the median is not stable (None: it is)."""
    n = len(samples)
    if n >= min_n:
        lo, hi = median_ci(samples)
        med = float(np.median(samples))
        rel = (hi - lo) / 2 / med if med > 0 else 0.0
        if rel <= config.rel_ci:
            return True, None
        if n >= config.max_samples:
            return True, N_("median still varies by ±{rel:.0%} after the maximum of {n} samples").format(rel=rel, n=n)
        if elapsed_ns >= budget_ns:
            return True, N_("median still varies by ±{rel:.0%} when the time budget ran out ({n} samples)").format(
                rel=rel, n=n)
    elif n and elapsed_ns >= 20 * budget_ns:
        # Each call is far longer than the budget: report what we have.
        return True, N_("only {n} sample(s): each call is long compared with the time budget").format(n=n)
    return False, None


def sample_round_robin(calls: Sequence[Callable[[], Any]], config: TimingConfig, *,
                       clock: Clock = time.perf_counter_ns, settle_s: float = 0.0) -> list[Stats]:
    """Sample several calls of one library in turns, one sample of each per round, until
    every median is stable or the budget (``config.phase_budget_s`` per call) is spent.

    Two calls timed in turns see the same machine: a slow stretch, however short, lands on
    both alike, so their ratio holds where two calls sampled one after the other do not.
    Each turn starts with one untimed call, because the first call after the other one
    pays for the switch (caches, the allocator's state). Calls of one library only: after
    the other library's work a call runs slow for longer than a turn (time NumPy and JAX in
    blocks, with a settle)."""
    return _sample([Turn(call) for call in calls], config, clock=clock, settle_s=settle_s)


def combine_blocks(blocks: Sequence[Stats], rel_ci: float, tolerance: float,
                   what: str = N_("the median")) -> Stats:
    """One phase sampled in several blocks (in measure(), in pairs of NumPy and JAX blocks
    side by side), their samples pooled. Stable when the pooled median is known to
    ``rel_ci`` (each block aimed at a looser target) and the blocks' medians differ by at
    most ``tolerance`` (relative); otherwise the machine's speed drifted between them, and
    no single number is right. ``what``: the noun phrase the reason names ("the NumPy median"),
    marked with N_() so the reason is translated with it where it is shown."""
    if not blocks:
        raise ValueError("no blocks")
    if len(blocks) == 1:
        return blocks[0]
    samples = [x for b in blocks for x in b.samples_s]
    pooled = Stats.from_samples(samples, loops=blocks[0].loops)
    medians = [b.median_s for b in blocks]
    low, high = min(medians), max(medians)
    reason = None
    if high > 0 and (low <= 0 or high / low - 1 > tolerance):
        steps = " → ".join(format_time(m) for m in medians)
        if low <= 0:
            reason = N_("{what} moved from nothing between blocks ({steps}): the machine's speed drifted "
                        "during the run").format(what=what, steps=steps)
        else:
            reason = N_("{what} moved by {change:.0%} between blocks ({steps}): the machine's speed drifted "
                        "during the run").format(what=what, change=high / low - 1, steps=steps)
    elif pooled.rel_ci > rel_ci:
        reason = N_("median still varies by ±{rel:.0%} over {n} samples in {blocks} blocks "
                    "when the time budget ran out").format(rel=pooled.rel_ci, n=pooled.n, blocks=len(blocks))
    return replace(pooled, stable=reason is None, unstable_reason=reason, block_medians_s=tuple(medians))


class Turn:
    """One call for the sampling loop: timed in a calibrated loop, or, with ``setup`` or
    ``teardown``, one call a sample (as in sample()); ``min_samples`` and ``budget_s``
    override the config's for this call alone (a cold first call takes compile_samples).
    ``warms``: whether the warm-up calls it (None: unless it has a setup, whose warm-up, after
    a cache clear, would only compile again)."""

    def __init__(self, call: Callable[[], Any], *, setup: Callable[[], Any] | None = None,
                 teardown: Callable[[Any], Any] | None = None, min_samples: int | None = None,
                 budget_s: float | None = None, warms: bool | None = None) -> None:
        self.call, self.setup, self.teardown = call, setup, teardown
        self.min_samples, self.budget_s = min_samples, budget_s
        self.warms = setup is None if warms is None else warms

    @property
    def single(self) -> bool:
        return self.setup is not None or self.teardown is not None

    def once(self, clock: Clock) -> float:
        """One call as one sample, in seconds: untimed setup, the timed call, untimed teardown."""
        if self.setup is not None:
            self.setup()
        start = clock()
        result = self.call()
        elapsed = clock() - start
        if self.teardown is not None:
            self.teardown(result)
        return elapsed * NS

    def warm_up(self, clock: Clock) -> None:
        if self.single:
            self.once(clock)
        else:
            time_loops(self.call, 1, clock)


def sample_turns(turns: Sequence[Turn], config: TimingConfig, *, clock: Clock = time.perf_counter_ns,
                 settle_s: float = 0.0) -> list[Stats]:
    """sample_round_robin() for calls that need fresh state each sample too (a cold first
    call) or their queue drained after it (an unblocked dispatch, QueuedCall): a naive call and
    its correct counterpart timed in turns, so a slow stretch lands on both and their ratio
    holds. One library's calls only (see sample_round_robin). A loop turn starts with one
    untimed call (the switch from the other turn's state: after a cache clear, its
    recompile); a setup turn has no warm-up. Every other round runs in reverse (B A, A B,
    ...): whatever going first or second costs lands on every call alike, so a position
    cannot pass for a difference between calls."""
    return _sample(turns, config, clock=clock, settle_s=settle_s, alternate=True)


def _sample(turns: Sequence[Turn], config: TimingConfig, *, clock: Clock, settle_s: float = 0.0,
            warmup: bool = True, alternate: bool = False, on_sample: Callable[[int], None] | None = None,
            watch: Watch | None = None) -> list[Stats]:
    """The sampling loop every phase goes through: warm up, calibrate each loop turn's loops per
    sample, then one sample of each turn a round (``alternate``: every other round in reverse) until
    every turn's median is stable or the budget (the turns' budgets together) is spent, or ``watch``
    ends the block. A loop turn's sample starts with one untimed call, which pays for whatever ran
    between samples (but for a call of UNTIMED_CALL_MAX_S or more alone: a turn among others always).
    ``on_sample(n)``: n samples of the first turn so far."""
    if not turns:
        return []
    if warmup:
        # First calls pay for caches, page faults and lazy initialisation.
        warm_until = clock() + max(config.warmup_s, settle_s) / NS
        while True:
            for turn in turns:
                if turn.warms:
                    turn.warm_up(clock)
            if clock() >= warm_until:
                break
    started = clock()  # the budget is for sampling, calibration included; the warm-up comes on top
    loops = [_loops_per_sample(t, config.target_sample_s, clock) for t in turns]
    samples: list[list[float]] = [[] for _ in turns]
    budget_ns = sum(config.phase_budget_s if t.budget_s is None else t.budget_s for t in turns) / NS
    switching = len(turns) > 1
    order = list(range(len(turns)))
    while True:
        if alternate:
            order.reverse()
        for i in order:
            turn, n_loops, xs = turns[i], loops[i], samples[i]
            if turn.single:
                xs.append(turn.once(clock))
                continue
            if watch is not None:
                watch.begin()
            # Untimed: the call after the work between samples (the watch's reads of every thread's
            # schedstat, a progress message; the other turn's call) pays for it: 2.5 ms more on an 8.6 ms
            # NumPy call after the watch on the TPU host (benchmarks/RESULTS.md, "The kept figure").
            if switching or not xs or xs[-1] < UNTIMED_CALL_MAX_S:
                time_loops(turn.call, 1, clock)
            elapsed = time_loops(turn.call, n_loops, clock)
            more = _more_loops(turn, n_loops, elapsed * NS, config.target_sample_s) if not xs else None
            if more is not None:  # neither the sample nor the watch's verdict on it is kept
                loops[i] = more
                continue
            if watch is not None:
                watch.end()
            xs.append(elapsed * NS / n_loops)
        if on_sample is not None:
            on_sample(len(samples[0]))
        verdicts = [_stop(xs, config, config.min_samples if t.min_samples is None else t.min_samples,
                          clock() - started, budget_ns) for t, xs in zip(turns, samples, strict=True)]
        # The watch may end a block only once each turn has a sample (a resized first one is not kept).
        if all(done for done, _ in verdicts) or (watch is not None and all(samples) and watch.block_done()):
            break
    return [Stats.from_samples(xs, loops=n, stable=why is None, unstable_reason=why)
            for xs, n, (_, why) in zip(samples, loops, verdicts, strict=True)]


def _more_loops(turn: Turn, loops: int, elapsed_s: float, target_s: float) -> int | None:
    """Loops for a turn whose first sample lasted under a quarter of ``target_s``: its calibration probes
    were slowed by a stretch of load (both of them: the faster was taken), so every sample would be short
    (a thorough 50 ms target sampled 1 ms at a time, once in a clean clone's serial tests). The first
    sample's own pace sizes them instead; None where it was long enough, or the turn calibrates itself."""
    if turn.single or getattr(turn.call, "calibrate", None) is not None or elapsed_s <= 0:
        return None
    if elapsed_s >= target_s / 4 or loops >= 10**8:
        return None
    return max(loops + 1, min(10**8, round(loops * target_s / elapsed_s)))


def _loops_per_sample(turn: Turn, target_s: float, clock: Clock) -> int:
    """One for a one-call turn; the call's own calibration where it has one (QueuedCall); else timeit's."""
    if turn.single:
        return 1
    own = getattr(turn.call, "calibrate", None)
    return own(target_s, clock) if own is not None else calibrate_loops(turn.call, target_s, clock)


def lowest_block(blocks: Sequence[Stats]) -> Stats:
    """A phase timed again in several blocks on a busy machine: the block with the lowest median.
    Contention only ever adds time, and it comes in stretches longer than a block, so the least
    disturbed block is the honest estimate; its median (not the plain minimum) keeps one lucky
    sample out. Stable as that block is on its own; its range is its own CI. The blocks are not
    pairs (each side keeps its own best), so no block medians go with it
    (benchmarks/RESULTS.md, "A busy neighbour")."""
    if not blocks:
        raise ValueError("no blocks")
    return min(blocks, key=lambda b: b.median_s)
