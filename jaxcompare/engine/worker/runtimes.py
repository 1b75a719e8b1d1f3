"""The speedup's two numbers: NumPy's and JAX's runtimes timed side by side in pairs of blocks, the
recheck of a pair timed on a busy machine or with one side unstable, and how JAX's runtime was timed.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from ...i18n import N_
from ...model import phases
from ...model.spec import MIN_SAMPLES_FOR_RANGE, TimingConfig
from ...model.stats import Stats
from ..common.load import LoadMeter, SampleWatch, Span, free_cores, is_busy, share_cores
from .run_state import _Run
from .timing import (
    BLAS_SETTLE_S,
    NS,
    blocking_call,
    bound_call,
    combine_blocks,
    lowest_block,
    sample,
    time_loops,
)

# The two sides of the runtime blocks, by the phases that time them: their load spans, progress and blocks.
NUMPY_SIDE, JAX_SIDE = phases.NUMPY.name, phases.RUNTIME.name

# A busy pair with a parallel side is timed again in samples this short (one call where a call is
# longer): a neighbour leaves a core to us in stretches of a few ms, and only samples inside one count.
CLEAN_SAMPLE_S = 0.001
# ... within this long a side at least: beside a one-core neighbour 2-15% of XLA's samples had their
# cores, and quick timing's 0.15 s left most pairs with fewer than six (0.6 s: benchmarks/RESULTS.md,
# "Samples that had their cores").
CLEAN_BUDGET_S = 0.6
# ... in this many pairs of blocks, a block ending once its side has a quarter of CLEAN_ENOUGH samples
# that count, the recheck where a side has had fewer than one a block (it would not reach six). 12 in
# two blocks let one stretch of XLA's slower speed decide (centered Gram 400x400: 0.50x, 0.83-0.95x quiet).
CLEAN_PAIRS = 4
CLEAN_ENOUGH = 24
# ... and up to this many more pairs for a side still short of six that counts one a block: XLA's
# elementwise at 1e6 counted 3-5 of about 70 in four pairs (benchmarks/RESULTS.md).
CLEAN_MORE_PAIRS = 2


def runtime_block_order(blocks: int) -> list[str]:
    """The order of the NumPy ("numpy") and JAX ("runtime") runtime blocks: side by side, in
    pairs that alternate which goes first (N J, J N, N J, ...), so a steady drift of the
    machine's speed weighs on both alike."""
    pairs = [(NUMPY_SIDE, JAX_SIDE) if k % 2 == 0 else (JAX_SIDE, NUMPY_SIDE) for k in range(blocks)]
    return [phase for pair in pairs for phase in pair]


def _runtimes(run: _Run, jitted: Any, host_inputs: tuple[np.ndarray, ...], dev_inputs: Any,
              device: Any) -> tuple[Stats, Stats, dict[str, Any]]:
    """The speedup's two numbers: NumPy on host arrays and JAX steady state (device-resident
    inputs, each call blocked), timed side by side in pairs of blocks (runtime_block_order).
    A shared machine drifts between speed regimes for seconds at a time and the drift hits
    both alike, so adjacent blocks keep it out of the ratio (benchmarks/RESULTS.md, "Notes
    behind the engine's constants"). Each switch of library settles first (BLAS_SETTLE_S, or the
    platform's numpy_settle_s before NumPy)."""
    cfg = run.timing
    calls = {NUMPY_SIDE: bound_call(run.case.numpy_fn, host_inputs), JAX_SIDE: blocking_call(jitted, dev_inputs)}
    compiled_before = _compiled_count(jitted)
    if run.clocks is not None:
        run.clocks.before()  # after fetch, whose calls have the GPU busy: its clocks under load
    blocks = _runtime_blocks(run, calls, cfg.for_runtime_block(), run.load)
    rel_ci = cfg.for_runtime().rel_ci
    numpy_stats = combine_blocks(blocks[NUMPY_SIDE], rel_ci, cfg.drift_tolerance, N_("the NumPy median"))
    jax_stats = combine_blocks(blocks[JAX_SIDE], rel_ci, cfg.drift_tolerance, N_("the JAX median"))
    numpy_stats, jax_stats = _recheck(run, calls, numpy_stats, jax_stats)
    protocol = _protocol(calls[JAX_SIDE], jitted, compiled_before, dev_inputs, device)
    return numpy_stats, jax_stats, protocol


def _runtime_blocks(run: _Run, calls: dict[str, Any], block_cfg: TimingConfig, load: LoadMeter,
                    progress: bool = True, order: list[str] | None = None,
                    watches: dict[str, SampleWatch] | None = None,
                    previous: str = JAX_SIDE) -> dict[str, list[Stats]]:
    """The NumPy and JAX runtime blocks in ``order`` (runtime_block_order of the preset's
    blocks), each timed with ``block_cfg``, each library switch settled; ``watches``: each
    side's SampleWatch, judging its samples; ``previous``: the library that ran last (fetch: JAX)."""
    blocks: dict[str, list[Stats]] = {NUMPY_SIDE: [], JAX_SIDE: []}
    for index, library in enumerate(order or runtime_block_order(run.timing.runtime_blocks)):
        on_sample = run.progress.runtime_block(index, library) if progress else None
        if library == previous:
            settle_s = 0.0
        elif library == JAX_SIDE:
            settle_s = BLAS_SETTLE_S if run.numpy_spun else 0.0
        else:
            settle_s = run.numpy_settle_s
        with load.phase(library) as span:
            before = (span.helper_s, span.wall_s)  # the span adds up its library's blocks
            blocks[library].append(sample(calls[library], block_cfg, clock=run.clock, on_sample=on_sample,
                                          settle_s=settle_s, watch=(watches or {}).get(library)))
        if library == NUMPY_SIDE:
            run.numpy_spun = _block_helpers_ran(span, *before)
        if library == JAX_SIDE and run.clocks is not None:
            run.clocks.after()  # at once, before a NumPy block leaves the GPU idle and its clocks fall
        previous = library
    return blocks


def _block_helpers_ran(span: Span, helper_before: float | None, wall_before: float) -> bool:
    """Span.helpers_ran for the block just added to ``span`` alone."""
    if span.helper_s is None:
        return True
    return Span(wall_s=span.wall_s - wall_before, helper_s=span.helper_s - (helper_before or 0.0)).helpers_ran


def _recheck(run: _Run, calls: dict[str, Any], numpy_stats: Stats, jax_stats: Stats) -> tuple[Stats, Stats]:
    """When the machine was busy during the runtime blocks, or exactly one side's samples are
    unstable, time the pair again: two more pairs of blocks, alternating, within one more runtime
    budget a side. Busy: both sides get only the free cores, equally (load.share_cores), because
    OpenBLAS spinning at its barriers beside another program makes a false speedup; only when both
    ran serially in the first pass. Each side keeps its fastest block (contention only adds time;
    protocol.md, "A busy machine")."""
    load = run.load
    cores = len(load.cores)
    others = _others(load, (NUMPY_SIDE, JAX_SIDE))
    busy = is_busy(others)
    if not run.recheck or not (busy or numpy_stats.stable != jax_stats.stable) or not load.available:
        return numpy_stats, jax_stats
    # Pinned to the free cores, a parallel side loses cores and a serial one does not, and two
    # parallel sides lose them unequally (NumPy's BLAS scales further than XLA here: a 200x200 matmul
    # went from 0.23x to 0.45x), so the pinned recheck is only for two serial sides. The first pass
    # already says which sides ran in parallel: where one did, the pair is timed again on every core.
    sides = _sides_used(load)
    if busy and cores > 1 and sides["parallel"]:
        return _clean_recheck(run, calls, numpy_stats, jax_stats, sides)
    pinned = free_cores(load.cores, others or 0.0) if busy and cores > 1 else None
    # Two blocks a side, each half a runtime budget and enough samples for its own range.
    whole = run.timing.for_runtime()
    block = replace(whole, phase_budget_s=whole.phase_budget_s / 2)
    meter = load.prefixed("recheck.", pinned)
    run.progress.start(phases.RECHECK)  # the page says more blocks are being timed
    with share_cores(pinned) as shared:
        blocks = _runtime_blocks(run, calls, block, meter, progress=False, order=runtime_block_order(2))
    record: dict[str, Any] = {"why": "busy" if busy else "unstable", "cores": len(pinned or load.cores),
                              "blas_threads": shared.get("blas_threads"), "pinned": bool(shared),
                              "first_speedup": numpy_stats.median_s / jax_stats.median_s
                              if jax_stats.median_s > 0 else None}
    kept = (lowest_block(blocks[NUMPY_SIDE]), lowest_block(blocks[JAX_SIDE]))
    # A busy first pass is the false number itself; otherwise keep the pair whose speedup is known better.
    use_recheck = busy or _spread(*kept) <= _spread(numpy_stats, jax_stats)
    record["kept"] = "recheck" if use_recheck else "first"
    record |= sides
    record["block_medians_s"] = {side: [b.median_s for b in blocks[side]] for side in (NUMPY_SIDE, JAX_SIDE)}
    load.notes["recheck"] = record
    return kept if use_recheck else (numpy_stats, jax_stats)


def _clean_recheck(run: _Run, calls: dict[str, Any], numpy_stats: Stats, jax_stats: Stats,
                   sides: dict[str, Any]) -> tuple[Stats, Stats]:
    """A busy pair with a side that ran in parallel: pinned, it would lose cores the other does not,
    so the pair is timed again on every core instead, in short samples (CLEAN_SAMPLE_S), in pairs of
    blocks that alternate (N J, J N, ...) within one more runtime budget a side (CLEAN_BUDGET_S at
    least). A block ends early once its side has its quarter of CLEAN_ENOUGH samples that count;
    the recheck ends where a side has had fewer than one a block, and takes up to CLEAN_MORE_PAIRS
    more pairs for a side short of six.
    Only the samples in which our threads had the cores they wanted count (load.SampleWatch: a
    neighbour leaves some samples alone, and those ran as on a quiet machine). With
    MIN_SAMPLES_FOR_RANGE such samples a side they are the figures; with fewer the first pass stays,
    flagged."""
    load = run.load
    record: dict[str, Any] = {"why": "busy", "kept": "first", "pinned": False, **sides, "first_speedup":
                              numpy_stats.median_s / jax_stats.median_s if jax_stats.median_s > 0 else None}
    load.notes["recheck"] = record  # filled in below as the recheck goes
    # A block ends early once its side has its share of CLEAN_ENOUGH (NumPy's serial side, say).
    watches = {side: SampleWatch(len(load.cores), -(-CLEAN_ENOUGH // CLEAN_PAIRS)) for side in (NUMPY_SIDE, JAX_SIDE)}
    if not watches[NUMPY_SIDE].available:
        return numpy_stats, jax_stats
    whole = run.timing.for_runtime()
    # A block stops on its budget or its watch, not on the precision of samples few of which count.
    block = replace(whole, phase_budget_s=max(whole.phase_budget_s, CLEAN_BUDGET_S) / CLEAN_PAIRS,
                    target_sample_s=CLEAN_SAMPLE_S, min_samples=3, max_samples=10**6, rel_ci=1e-9)
    run.progress.start(phases.RECHECK)
    meter = load.prefixed("recheck.")
    blocks: dict[str, list[Stats]] = {NUMPY_SIDE: [], JAX_SIDE: []}
    order = runtime_block_order(CLEAN_PAIRS + CLEAN_MORE_PAIRS)
    try:
        for pair in range(CLEAN_PAIRS + CLEAN_MORE_PAIRS):
            timed = _runtime_blocks(run, calls, block, meter, progress=False, order=order[2 * pair:2 * pair + 2],
                                    watches=watches, previous=order[2 * pair - 1] if pair else JAX_SIDE)
            for side in blocks:
                blocks[side] += timed[side]
            counted = min(sum(watch.clean) for watch in watches.values())
            if counted >= CLEAN_ENOUGH or counted < pair + 1:
                break
            if pair + 1 >= CLEAN_PAIRS and counted >= MIN_SAMPLES_FOR_RANGE:
                break
    finally:
        for watch in watches.values():
            watch.close()
    kept = {}
    for side, watch in watches.items():
        every = [x for b in blocks[side] for x in b.samples_s]
        kept[side] = [x for x, ok in zip(every, watch.clean, strict=True) if ok]
        record.setdefault("clean_samples", {})[side] = [len(kept[side]), len(every)]
    if min(map(len, kept.values())) < MIN_SAMPLES_FOR_RANGE:
        return numpy_stats, jax_stats
    record["kept"] = "clean"
    return tuple(_clean_stats(kept[side], blocks[side], whole) for side in (NUMPY_SIDE, JAX_SIDE))


def _clean_stats(samples: list[float], blocks: list[Stats], whole: TimingConfig) -> Stats:
    """One side's samples that had their cores, as its runtime Stats: stable when their median is
    known to the preset's precision."""
    first = Stats.from_samples(samples, loops=blocks[0].loops)
    if first.rel_ci <= whole.rel_ci:
        return first
    return replace(first, stable=False, unstable_reason=N_(
        "median of the {n} samples that had their cores varies by ±{rel:.0%}").format(rel=first.rel_ci, n=first.n))


def _sides_used(load: LoadMeter) -> dict[str, Any]:
    """How each side's first runtime blocks used the machine (the Result's ``load.recheck``): its
    cores' worth, threads, the cores it wanted, whether it ran in parallel, and whether both ran
    serially (``equal``: pinning both to the free cores keeps the comparison)."""
    own = {side: round(load.spans[side].own_cores, 2) for side in (NUMPY_SIDE, JAX_SIDE) if side in load.spans}
    parallel = [side for side in own if load.spans[side].parallel]
    return {"own_cores": own, "threads": {side: load.spans[side].threads for side in own},
            "demand": {side: round(d, 2) for side in own if (d := load.spans[side].demand) is not None},
            "parallel": parallel, "equal": not parallel}


def _others(load: LoadMeter, phases: tuple[str, ...]) -> float | None:
    spans = [load.spans[p] for p in phases if p in load.spans]
    wall = sum(s.wall_s for s in spans)
    others = [s.others_cpu_s for s in spans if s.others_cpu_s is not None]
    return sum(others) / wall if spans and wall > 0 and len(others) == len(spans) else None


def _spread(numpy_stats: Stats, jax_stats: Stats) -> float:
    """How wide the speedup's 95% range is (high / low), from the two medians' CIs; inf when unknown."""
    lo = numpy_stats.ci_low_s / jax_stats.ci_high_s if jax_stats.ci_high_s > 0 else 0.0
    hi = numpy_stats.ci_high_s / jax_stats.ci_low_s if jax_stats.ci_low_s > 0 else math.inf
    return hi / lo if lo > 0 and math.isfinite(hi) else math.inf


def _protocol(call: Any, jitted: Any, compiled_before: int | None, dev_inputs: Any, device: Any) -> dict[str, Any]:
    """How a JAX runtime was really timed, observed on the arrays after the timed calls."""
    return {
        "blocked": call.finished_when_timed,
        "compile_excluded": compiled_before is not None and compiled_before == _compiled_count(jitted) > 0,
        "inputs_on_device": _on_device(dev_inputs, device),
    }


def _compiled_count(jitted: Any) -> int | None:
    """How many executables the jitted function holds: one after warm-up, and still one after
    the timed calls unless one of them compiled again (None where JAX does not say)."""
    size = getattr(jitted, "_cache_size", None)
    return size() if callable(size) else None


def _on_device(dev_inputs: Any, device: Any) -> bool:
    """Whether the JAX runtime's inputs are arrays on ``device``, not host arrays it copies."""
    import jax

    leaves = jax.tree_util.tree_leaves(dev_inputs)
    return bool(leaves) and all(isinstance(a, jax.Array) and device in a.devices() for a in leaves)


# A loop of calls queued back to back ends in one block, which pays what a blocked call pays beyond
# a queued one (on a TPU v5e the host's round trip, about 0.5 ms beside 0.12 ms a queued call). Loops
# are sized so that this end is at most END_SHARE of a loop: sized from the blocked time alone (5 ms
# of it), a TPU loop held 8 calls and read 1.10-1.21x the hand protocol's 200 (benchmarks/RESULTS.md).
BACK_TO_BACK_END_SHARE = 0.02
BACK_TO_BACK_MAX_CALLS = 200  # the hand protocol's loop (benchmarks/hand_protocol.py)
# At most this long a loop: calls that long dwarf any round trip (a TPU's 0.5 ms is 1% of it), and the
# six loops a range needs fit the 0.3 s that three loops of 0.1 s took.
BACK_TO_BACK_MAX_LOOP_S = 0.05
# The probe: loops of k and 2k calls, k from this much blocked time, the fastest of up to three each
# (within the probe budget): their slope is a queued call's cost, the rest the end's.
BACK_TO_BACK_PROBE_S = 0.005
BACK_TO_BACK_PROBES = 3
BACK_TO_BACK_PROBE_BUDGET_S = 0.05


def back_to_back_calls(time_loop: Callable[[int], float], blocked_s: float) -> int:
    """Calls per back-to-back loop so that the one block at its end is at most BACK_TO_BACK_END_SHARE
    of it, from ``time_loop(n)`` (seconds for a loop of n calls and its block)."""
    k = int(min(BACK_TO_BACK_MAX_CALLS // 2, max(1, BACK_TO_BACK_PROBE_S // max(blocked_s, 1e-9))))
    short = long = math.inf
    for pairs in range(1, BACK_TO_BACK_PROBES + 1):
        short, long = min(short, time_loop(k)), min(long, time_loop(2 * k))
        # Pairs count at what the faster loop says a pair costs: one loop that hit a hiccup (a compile, a page
        # fault) does not end the probe as its reading (a TPU's first loop of 9 read 0.4 s, and loops held 9).
        if pairs * 3 * min(short, long / 2) >= BACK_TO_BACK_PROBE_BUDGET_S:
            break
    per_call = (long - short) / k
    # The probe's own per-call time (its end included) is never below a call's cost: the loop's cap.
    most = max(k, min(BACK_TO_BACK_MAX_CALLS, int(BACK_TO_BACK_MAX_LOOP_S // max(short / k, 1e-9))))
    if per_call <= 0:  # noise hid a call's cost: the longest loop allowed
        return most
    # The end: a loop of k less its k calls, but never less than what a blocked call pays beyond a queued
    # one. The difference of two short loops reads small when calls vary: TPU v5e loops held 45-153 calls
    # where a 0.41 ms end asks for 175 (benchmarks/RESULTS.md, "a loop's end").
    end = max(2 * short - long, blocked_s - per_call)
    return min(most, max(k, math.ceil(end / (BACK_TO_BACK_END_SHARE * per_call))))


def back_to_back(run: _Run, jitted: Any, dev_inputs: Any, blocked_s: float) -> Stats:
    """JAX's runtime per call with calls queued back to back and one block at the end: beside the
    blocked runtime (a round trip per call), what a loop of calls pays each."""
    import jax

    def loop_of(calls: int) -> Callable[[], None]:
        def loop() -> None:
            out = None
            for _ in range(calls):
                out = jitted(*dev_inputs)
            jax.block_until_ready(out)
        return loop

    calls = back_to_back_calls(lambda n: time_loops(loop_of(n), 1, run.clock) * NS, blocked_s)
    # It follows the host's own work (plain NumPy, JAX on the CPU), whose idle threads spin for a while:
    # on a TPU host a loop read 142 µs a call right after NumPy's BLAS, 128 µs after a pause.
    # Enough loops for a 95% range whatever the preset: the ports' race on calls back to back (on a TPU
    # the one that tells kernels apart) ranks them only within ranges, and quick timing's three gave none.
    enough = max(run.timing.min_samples, MIN_SAMPLES_FOR_RANGE)
    stats = sample(loop_of(calls), replace(run.timing, phase_budget_s=min(run.timing.phase_budget_s, 0.3),
                                           min_samples=enough, max_samples=max(run.timing.max_samples, enough)),
                   clock=run.clock, settle_s=BLAS_SETTLE_S)
    return Stats.from_samples([t / calls for t in stats.samples_s], loops=stats.loops * calls)
