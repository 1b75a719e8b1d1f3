"""The measurement protocol, one function per phase; runs in the worker process whose x64
mode matches the Spec. Each phase is timed on its own, so a naive number (first call,
unblocked call) never mixes into the steady-state runtime.
"""

from __future__ import annotations

import datetime as dt
import functools
import math
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from ..catalog import get_case
from ..i18n import N_
from ..model.cases import Case, as_tuple, format_shape
from ..model.errors import BadInput, Unsupported
from ..model.platforms import error_first_line, float64_line, float64_note
from ..model.result import Result
from ..model.roofline import Roofline, RooflineSide, choose_counts, xla_counts
from ..model.sides import JaxSide, Peak
from ..model.spec import MIN_SAMPLES_FOR_RANGE, Spec, TimingConfig
from ..model.stats import Stats
from .agreement import compare_outputs, reduced_products
from .ceilings import (
    bandwidth_ceiling,
    ceilings,
    cpu_bandwidth,
    cpu_device_or_none,
    cpu_transcendental_rate,
    matmul_precision,
    transcendental_ceiling,
)
from .environment import collect as collect_env
from .environment import resolve_device
from .gpu_clocks import ClockWatch
from .load import LoadMeter, SampleWatch, Span, free_cores, is_busy, share_cores
from .memory import check_fits, device_memory, estimate, host_available, keep_freed_memory
from .profile import profile_jitted
from .timing import (
    BLAS_SETTLE_S,
    NS,
    XLA_SETTLE_S,
    Clock,
    blocking_call,
    bound_call,
    combine_blocks,
    lowest_block,
    sample,
)

ProgressCallback = Callable[[str, float], None]
SampleCallback = Callable[[int], None]

# Phase name -> share of the progress bar (roughly how long each takes).
PROGRESS_WEIGHTS = (
    ("inputs", 0.02),
    ("transfer", 0.08),
    ("compile", 0.28),
    ("first_call", 0.12),
    ("dispatch", 0.08),
    ("fetch", 0.06),
    ("numpy", 0.16),
    ("runtime", 0.14),
    ("recheck", 0.0),  # only with TimingConfig.runtime_blocks > 1 (weights rescaled)
    ("jax_cpu", 0.0),  # only with the third side, JAX on the CPU (weights rescaled)
    ("profile", 0.0),  # only when asked: a few traced calls, after every timed phase
    ("agreement", 0.06),
    ("peak", 0.0),  # the ceilings (the CPU's are cached after a host's first run), the empty calls
)
# The third side's phases, each an equal slice of the "jax_cpu" share.
CPU_SIDE_PARTS = ("transfer", "compile", "first_call", "dispatch", "fetch", "runtime")
# The third side's share of the bar: a whole second set of JAX phases, less the NumPy runtime.
CPU_SIDE_WEIGHT = 0.6
# A phase's samples move the bar through at most this much of its share: sampling may run
# past min_samples, and the bar must not reach the next phase before that phase starts.
SAMPLED_SHARE = 0.95
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
# An empty call's runtime, the roofline's measure of fixed cost: a few short samples (~30 ms).
EMPTY_CALL_TIMING = TimingConfig(target_sample_s=0.002, min_samples=5, max_samples=15, phase_budget_s=0.03,
                                 rel_ci=0.1, compile_samples=1, warmup_s=0.002)


def _no_progress(phase: str, fraction: float) -> None:
    return None


def phase_weights(runtime_blocks: int, cpu_side: bool = False) -> dict[str, float]:
    """Each phase's share of the bar; the later runtime blocks ("recheck") take about as
    long as the first pair, so with more than one pair the shares are rescaled, and so they
    are with the third side (JAX on the CPU)."""
    weights = dict(PROGRESS_WEIGHTS)
    if runtime_blocks > 1:
        weights["recheck"] = (weights["numpy"] + weights["runtime"]) * (runtime_blocks - 1)
    if cpu_side:
        weights["jax_cpu"] = CPU_SIDE_WEIGHT
    total = sum(weights.values())
    return {k: v / total for k, v in weights.items()}


class Progress:
    """Turns "phase X has taken k of its n samples" into the overall fraction done that the
    worker reports; starting a phase counts the one before it as done."""

    def __init__(self, report: ProgressCallback, timing: TimingConfig, cpu_side: bool = False) -> None:
        self._report = report
        self._weights = phase_weights(timing.runtime_blocks, cpu_side)
        self._expected = max(timing.min_samples, 1)
        self._block_expected = max(timing.for_runtime_block().min_samples, 1)
        self._later_blocks = 2 * (timing.runtime_blocks - 1)
        self._current: str | None = None
        self._done = 0.0

    def start(self, phase: str) -> SampleCallback:
        """Report that ``phase`` started; returns the callback for its samples."""
        self._enter(phase)
        self._report(phase, self._done)
        return self._sampled(phase, self._expected)

    def part(self, phase: str, index: int, parts: int) -> SampleCallback:
        """Report that part ``index`` of ``parts`` of ``phase`` started (the third side's
        phases share "jax_cpu"); returns the callback for its samples."""
        self._enter(phase)
        on_sample = self._sampled(phase, self._expected, index, parts)
        on_sample(0)
        return on_sample

    def runtime_block(self, index: int, library: str) -> SampleCallback:
        """Report that runtime block ``index`` started; returns the callback for its samples.
        The first two blocks are the "numpy" and "runtime" phases; the later ones share the
        "recheck" phase, one equal slice each."""
        if index < 2:
            on_sample = self.start(library)
        else:
            self._enter("recheck")
            on_sample = self._sampled("recheck", self._block_expected, index - 2, self._later_blocks)
        on_sample(0)
        return on_sample

    def complete(self) -> None:
        """Report the measurement done: the bar at 1."""
        self._report("done", 1.0)

    def _enter(self, phase: str) -> None:
        """Make ``phase`` the current one; the phase it follows counts as done."""
        if phase == self._current:
            return
        if self._current is not None:
            self._done += self._weights[self._current]
        self._current = phase

    def _sampled(self, phase: str, expected: int, part: int = 0, parts: int = 1) -> SampleCallback:
        """The callback for ``part`` of ``parts`` of ``phase``: n samples of ``expected``."""
        share = self._weights[phase]
        return lambda n: self._report(
            phase, self._done + share * (part + min(n / expected, 1.0)) / parts * SAMPLED_SHARE)


def runtime_block_order(blocks: int) -> list[str]:
    """The order of the NumPy ("numpy") and JAX ("runtime") runtime blocks: side by side, in
    pairs that alternate which goes first (N J, J N, N J, ...), so a steady drift of the
    machine's speed weighs on both alike."""
    pairs = [("numpy", "runtime") if k % 2 == 0 else ("runtime", "numpy") for k in range(blocks)]
    return [phase for pair in pairs for phase in pair]


def check_precision(precision: str) -> None:
    """Refuse to measure if this process's x64 mode does not match the spec."""
    import jax.numpy as jnp

    want = "float64" if precision == "x64" else "float32"
    got = str(jnp.zeros(1, dtype=float).dtype)
    if got != want:
        raise RuntimeError(f"worker x64 mode gives {got} but the spec asks for {want}")


def check_memory(case: Case, spec: Spec, device: Any, *, cpu_side: bool = False) -> None:
    """Refuse before allocating when inputs + outputs (from jax.eval_shape) will not fit; with
    the third side on an accelerator, its CPU copies count against host memory too."""
    est = estimate(case, spec.shape, spec.dtype, backend=device.platform)
    if cpu_side and device.platform != "cpu":
        est = replace(est, host_bytes=est.host_bytes + est.device_bytes)
    free, total = device_memory(device) or (None, None)
    check_fits(est, case.name, spec.shape, host_free=host_available(), device_free_bytes=free,
               device_total_bytes=total)


def build_inputs(case: Case, spec: Spec) -> tuple[np.ndarray, ...]:
    """The case's inputs for ``spec`` (seeded); a failing or wrong ``make_inputs`` is a BadInput."""
    rng = np.random.default_rng(spec.seed)
    try:
        inputs = case.make_inputs(spec.shape, np.dtype(spec.dtype), rng)
    except BadInput:
        raise
    except Exception as exc:
        raise BadInput(
            N_("case {case!r} could not build inputs of shape {shape}: {error_type}: {error}").format(
                case=case.name, shape=format_shape(spec.shape), error_type=type(exc).__name__, error=exc)
        ) from None
    inputs = tuple(inputs) if isinstance(inputs, tuple | list) else (inputs,)
    if not inputs or not all(isinstance(a, np.ndarray) for a in inputs):
        raise BadInput(N_("case {case!r}: make_inputs must return a tuple of NumPy arrays").format(case=case.name))
    return inputs


def measure_compile(
    fn: Callable[..., Any], args: tuple[Any, ...], cfg: TimingConfig, *, cold: bool = True,
    clock: Clock = time.perf_counter_ns, on_sample: SampleCallback | None = None,
    on_compiled: Callable[[Any], None] | None = None,
) -> tuple[Stats, Stats, Stats]:
    """Trace, lower and compile times. ``cold`` clears JAX's caches before each sample;
    without that a second ``jax.jit(f)`` hits the cache and "compiles" in microseconds.
    ``on_compiled`` gets each sample's compiled executable (its cost analysis costs no compile)."""
    import jax

    samples: tuple[list[float], list[float], list[float]] = ([], [], [])
    deadline = clock() + cfg.phase_budget_s * 3 / NS
    # At least compile_samples; more (up to twice that) while the budget lasts.
    while len(samples[0]) < cfg.compile_samples or (
        len(samples[0]) < 2 * cfg.compile_samples and clock() < deadline
    ):
        if cold:
            jax.clear_caches()
        jitted = jax.jit(fn)
        t0 = clock()
        traced = jitted.trace(*args)
        t1 = clock()
        lowered = traced.lower()
        t2 = clock()
        compiled = lowered.compile()
        t3 = clock()
        if on_compiled is not None:
            on_compiled(compiled)
        for bucket, (a, b) in zip(samples, ((t0, t1), (t1, t2), (t2, t3)), strict=True):
            bucket.append((b - a) * NS)
        if on_sample is not None:
            on_sample(len(samples[0]))
    return tuple(Stats.from_samples(s) for s in samples)  # type: ignore[return-value]


@dataclass
class _Run:
    """What every phase of one measurement needs."""

    case: Case
    timing: TimingConfig
    clock: Clock
    progress: Progress
    load: LoadMeter = field(default_factory=LoadMeter)
    recheck: bool = True
    # The GPU's clocks, read around the runtime blocks (engine/gpu_clocks.py); None off GPUs.
    clocks: ClockWatch | None = None
    # Whether NumPy's last work ran threads besides the caller (OpenBLAS's workers, which spin
    # for a while after it): the next JAX timing settles first only then (load.HELPER_SHARE).
    numpy_spun: bool = True
    # The Spec's precision: which operations the device lacks depends on it (model/platforms.py).
    precision: str = "x32"


StartPhase = Callable[[str], SampleCallback]


class Warm(NamedTuple):
    """What the phases after device_phases reuse: the warm jitted function, the inputs on the
    device, JAX's output on the host, and XLA's counts of the compiled program (xla_counts)."""

    jitted: Any
    dev_inputs: Any
    jax_out: tuple[np.ndarray, ...]
    cost: dict[str, float | None] | None = None


# A JaxSide less what is measured after device_phases: called with runtime, protocol and
# agreement, it is the JaxSide (so no side exists before its runtime does).
SideToFinish = Callable[..., JaxSide]


def measure(spec: Spec, progress: ProgressCallback = _no_progress, clock: Clock = time.perf_counter_ns,
            *, cpu_side: bool | None = None, case: Case | None = None,
            profile_dir: str | None = None, recheck: bool = True, load: LoadMeter | None = None,
            clocks: ClockWatch | None = None) -> Result:
    """Run every phase of the protocol for ``spec`` and return the Result: inputs, transfer,
    cold compile, first call, dispatch, fetch, the two runtimes side by side, the third side
    (JAX on the CPU), the profile when asked, agreement, and the ceilings for the fraction of peak.

    ``cpu_side``: measure JAX on the CPU as a third side; by default only when the device is a
    GPU or TPU (True also measures it on a CPU-only host, where it repeats the main side).
    ``case``: a Case sent with the job (a notebook's functions) instead of the catalog's.
    ``profile_dir``: also trace a few steady-state calls, after every timed phase, into
    ``profile_dir/<result id>`` (engine/profile.py); the timings are the same either way.
    ``recheck``: time the runtime pair again when the machine was busy or one side unstable
    (_recheck; off only in tests of the first pass). ``load``: the meter (tests inject its counters).
    ``clocks``: what reads the GPU's clocks (by default NVML's, on a GPU; tests replay readings)."""
    check_precision(spec.precision)
    keep_freed_memory()
    case = get_case(spec.case, spec.cases_file) if case is None else case
    case.check_shape(spec.shape)
    device = resolve_device(spec.device)
    cpu = cpu_device_or_none()
    want_cpu_side = device.platform != "cpu" if cpu_side is None else cpu_side
    check_memory(case, spec, device, cpu_side=want_cpu_side and cpu is not None)
    run = _Run(case, spec.timing, clock, Progress(progress, spec.timing, cpu_side=want_cpu_side and cpu is not None),
               load if load is not None else LoadMeter(), recheck, clocks if clocks is not None else ClockWatch(device),
               precision=spec.precision)

    host_inputs, numpy_out = _inputs(run, spec)
    side, warm = device_phases(run, host_inputs, device, run.progress.start)
    numpy_stats, runtime_stats, protocol = _runtimes(run, warm.jitted, host_inputs, warm.dev_inputs, device)
    protocol["matmul_precision"] = matmul_precision()
    jax_cpu = None
    if want_cpu_side and cpu is not None:
        jax_cpu = measure_jax_side(run, spec, host_inputs, numpy_out, cpu)
    result_id = uuid.uuid4().hex
    profile = None
    if profile_dir is not None:
        run.progress.start("profile")
        profile = profile_jitted(warm.jitted, warm.dev_inputs, Path(profile_dir) / result_id, runtime_stats.median_s)
    products = reduced_products(spec.dtype, device.platform, protocol["matmul_precision"],
                                lambda: warm.jitted.lower(*warm.dev_inputs).as_text())
    jax = side(runtime=runtime_stats, protocol=protocol,
               agreement=_agreement(run, spec, host_inputs, numpy_out, warm.jax_out, products=products))
    flops = case.flop_count(spec.shape)
    peak = _peak(run, spec, device, with_cpu_side=jax_cpu is not None)
    least_bytes = sum(a.nbytes for a in host_inputs) + sum(np.asarray(o).nbytes for o in numpy_out)
    roofline = _roofline(run, spec, device, peak, warm.cost, flops, numpy_stats, jax, jax_cpu, cpu,
                         host_gap_share=None if profile is None else profile.gap_share, least_bytes=least_bytes)
    run.progress.complete()
    return Result(
        id=result_id,
        created=dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds"),
        spec=spec,
        case_info=case.summary(),
        dtype=spec.dtype,
        backend=device.platform,
        numpy_runtime=numpy_stats,
        jax=jax,
        env={**collect_env(), "freed_memory_kept": keep_freed_memory()},
        flops=flops,
        notes=_notes(spec, jax, device.platform, cpu_side_missing=want_cpu_side and cpu is None),
        jax_cpu=jax_cpu,
        peak=peak if flops is not None else None,  # the fraction of peak needs the catalog's count
        profile=profile,
        load=run.load.to_dict(),
        roofline=roofline,
        gpu_clocks=run.clocks.result(),
    )


def device_phases(run: _Run, host_inputs: tuple[np.ndarray, ...], device: Any,
                  start: StartPhase) -> tuple[SideToFinish, Warm]:
    """JAX's phases on ``device``: transfer, cold compile, first call, dispatch, fetch. The
    accelerator and the third side (JAX on the CPU) both go through here; ``start(phase)``
    reports a phase's start and returns the callback for its samples. Returns the side, to be
    finished with its runtime, protocol and agreement, and what the later phases reuse."""
    transfer, dev_inputs, transfer_zero_copy = _transfer(run, host_inputs, device, start)
    (trace, lower, compile_), cost = _cold_compile(run, dev_inputs, device.platform, start)
    first_call = _first_call(run, dev_inputs, start)
    jitted, dispatch = _dispatch(run, dev_inputs, start)
    fetch, jax_out, fetch_zero_copy = _fetch(run, jitted, dev_inputs, start)
    side = functools.partial(
        JaxSide, device=str(device), device_kind=getattr(device, "device_kind", device.platform),
        transfer=transfer, trace=trace, lower=lower, compile=compile_, first_call=first_call,
        dispatch=dispatch, fetch=fetch, transfer_zero_copy=transfer_zero_copy, fetch_zero_copy=fetch_zero_copy,
        transfer_bytes=int(sum(a.nbytes for a in host_inputs)))
    return side, Warm(jitted, dev_inputs, jax_out, cost)


def measure_jax_side(run: _Run, spec: Spec, host_inputs: tuple[np.ndarray, ...],
                     numpy_out: tuple[np.ndarray, ...], device: Any) -> JaxSide:
    """The third side: every JAX phase again on ``device`` (the CPU), then its blocked runtime
    on its own, after the NumPy and accelerator runtimes (it competes with NumPy's BLAS for the
    same cores, so it settles first), and its output against NumPy's."""
    def start(phase: str) -> SampleCallback:
        return run.progress.part("jax_cpu", CPU_SIDE_PARTS.index(phase), len(CPU_SIDE_PARTS))

    run = replace(run, load=run.load.prefixed("jax_cpu."), numpy_spun=True)  # settles as after any NumPy work
    side, warm = device_phases(run, host_inputs, device, start)
    call = blocking_call(warm.jitted, warm.dev_inputs)
    compiled_before = _compiled_count(warm.jitted)
    with run.load.phase("runtime"):
        runtime = sample(call, run.timing.for_runtime(), clock=run.clock, settle_s=BLAS_SETTLE_S,
                         on_sample=start("runtime"))
    agreement = compare_outputs(run.case, spec.dtype, host_inputs, numpy_out, warm.jax_out, None)
    return side(runtime=runtime, protocol=_protocol(call, warm.jitted, compiled_before, warm.dev_inputs, device),
                agreement={k: agreement[k] for k in ("ok", "max_abs_err", "max_rel_err", "rtol", "method")})


def _inputs(run: _Run, spec: Spec) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]]:
    """The host inputs, and NumPy's output for the agreement check: a broken reference fails
    here, first. NumPy's runtime is timed at the end, side by side with JAX's."""
    run.progress.start("inputs")
    host_inputs = build_inputs(run.case, spec)
    with run.load.phase("inputs") as span:
        numpy_out = as_tuple(user_call(run.case, "numpy_fn", run.case.numpy_fn, host_inputs))
    run.numpy_spun = span.helpers_ran
    return host_inputs, numpy_out


def _transfer(run: _Run, host_inputs: tuple[np.ndarray, ...], device: Any,
              start: StartPhase) -> tuple[Stats, Any, bool]:
    """Host -> device, blocked; each sample frees its copy. Returns the stats, the inputs on
    the device, and whether the device arrays alias the host buffers (CPU zero-copy)."""
    import jax

    with run.load.phase("transfer"):
        stats = sample(
            lambda: jax.block_until_ready(jax.device_put(host_inputs, device)),
            run.timing, clock=run.clock, teardown=_delete, settle_s=BLAS_SETTLE_S if run.numpy_spun else 0.0,
            on_sample=start("transfer"),
        )
    dev_inputs = jax.block_until_ready(jax.device_put(host_inputs, device))
    return stats, dev_inputs, _aliases(host_inputs, dev_inputs)


def _cold_compile(run: _Run, dev_inputs: Any, platform: str,
                  start: StartPhase) -> tuple[tuple[Stats, Stats, Stats], dict[str, float | None] | None]:
    """Trace, lower and compile, caches cleared before each sample; and XLA's counts (FLOPs,
    bytes, transcendentals) of the last sample's executable, the program every later call runs."""
    import jax

    # A broken port fails here, and so does an operation the device lacks at this precision.
    user_call(run.case, "jax_fn", jax.jit(run.case.jax_fn), dev_inputs, where=(platform, run.precision))
    compiled: list[Any] = []
    with run.load.phase("compile"):
        stats = measure_compile(run.case.jax_fn, dev_inputs, run.timing, clock=run.clock,
                                on_sample=start("compile"), on_compiled=compiled.append)
    return stats, _cost(compiled[-1]) if compiled else None


def _cost(compiled: Any) -> dict[str, float | None] | None:
    """XLA's counts of a compiled executable; None where the backend has no cost analysis."""
    try:
        return xla_counts(compiled.cost_analysis())
    except Exception:  # NotImplementedError, or a backend's runtime error: the counts are not known
        return None


def _first_call(run: _Run, dev_inputs: Any, start: StartPhase) -> Stats:
    """The first call with a cold cache: what a naive %time shows."""
    import jax

    cfg = run.timing
    with run.load.phase("first_call"):
        return sample(
            lambda: jax.block_until_ready(jax.jit(run.case.jax_fn)(*dev_inputs)),
            cfg, clock=run.clock, setup=jax.clear_caches, min_samples=cfg.compile_samples, warmup=False,
            budget_s=cfg.phase_budget_s * 2, on_sample=start("first_call"),
        )


def _dispatch(run: _Run, dev_inputs: Any, start: StartPhase) -> tuple[Any, Stats]:
    """Dispatch only: the call returns before the work is done, so it is blocked outside
    the timer. Returns the warm jitted function the later phases call, and the stats."""
    import jax

    jitted = jax.jit(run.case.jax_fn)
    jax.block_until_ready(jitted(*dev_inputs))
    with run.load.phase("dispatch"):
        stats = sample(lambda: jitted(*dev_inputs), run.timing, clock=run.clock, teardown=jax.block_until_ready,
                       on_sample=start("dispatch"))
    return jitted, stats


def _fetch(run: _Run, jitted: Any, dev_inputs: Any, start: StartPhase) -> tuple[Stats, tuple[np.ndarray, ...], bool]:
    """Device -> host of a fresh, ready result (np.asarray caches its copy). Returns the
    stats, JAX's output on the host, and whether that output aliases the device buffers."""
    import jax

    fresh: list[Any] = []

    def fresh_result() -> None:
        fresh.clear()
        fresh.append(jax.block_until_ready(jitted(*dev_inputs)))

    with run.load.phase("fetch"):
        stats = sample(lambda: jax.tree_util.tree_map(np.asarray, fresh[0]), run.timing, clock=run.clock,
                       setup=fresh_result, on_sample=start("fetch"))
    result = jax.block_until_ready(jitted(*dev_inputs))
    return stats, as_tuple(jax.tree_util.tree_leaves(result)), _aliases_out(result)


def _runtimes(run: _Run, jitted: Any, host_inputs: tuple[np.ndarray, ...], dev_inputs: Any,
              device: Any) -> tuple[Stats, Stats, dict[str, Any]]:
    """The speedup's two numbers: NumPy on host arrays and JAX steady state (device-resident
    inputs, each call blocked), timed side by side in pairs of blocks (runtime_block_order).
    A shared machine drifts between speed regimes for seconds at a time and the drift hits
    both alike, so adjacent blocks keep it out of the ratio (benchmarks/RESULTS.md, "Notes
    behind the engine's constants"). Each switch of library settles first (BLAS_SETTLE_S, XLA_SETTLE_S)."""
    cfg = run.timing
    calls = {"numpy": bound_call(run.case.numpy_fn, host_inputs), "runtime": blocking_call(jitted, dev_inputs)}
    compiled_before = _compiled_count(jitted)
    if run.clocks is not None:
        run.clocks.before()  # after fetch, whose calls have the GPU busy: its clocks under load
    blocks = _runtime_blocks(run, calls, cfg.for_runtime_block(), run.load)
    rel_ci = cfg.for_runtime().rel_ci
    numpy_stats = combine_blocks(blocks["numpy"], rel_ci, cfg.drift_tolerance, N_("the NumPy median"))
    jax_stats = combine_blocks(blocks["runtime"], rel_ci, cfg.drift_tolerance, N_("the JAX median"))
    numpy_stats, jax_stats = _recheck(run, calls, numpy_stats, jax_stats)
    protocol = _protocol(calls["runtime"], jitted, compiled_before, dev_inputs, device)
    return numpy_stats, jax_stats, protocol


def _runtime_blocks(run: _Run, calls: dict[str, Any], block_cfg: TimingConfig, load: LoadMeter,
                    progress: bool = True, order: list[str] | None = None,
                    watches: dict[str, SampleWatch] | None = None,
                    previous: str = "runtime") -> dict[str, list[Stats]]:
    """The NumPy and JAX runtime blocks in ``order`` (runtime_block_order of the preset's
    blocks), each timed with ``block_cfg``, each library switch settled; ``watches``: each
    side's SampleWatch, judging its samples; ``previous``: the library that ran last (fetch: JAX)."""
    blocks: dict[str, list[Stats]] = {"numpy": [], "runtime": []}
    for index, library in enumerate(order or runtime_block_order(run.timing.runtime_blocks)):
        on_sample = run.progress.runtime_block(index, library) if progress else None
        if library == previous:
            settle_s = 0.0
        elif library == "runtime":
            settle_s = BLAS_SETTLE_S if run.numpy_spun else 0.0
        else:
            settle_s = XLA_SETTLE_S
        with load.phase(library) as span:
            before = (span.helper_s, span.wall_s)  # the span adds up its library's blocks
            blocks[library].append(sample(calls[library], block_cfg, clock=run.clock, on_sample=on_sample,
                                          settle_s=settle_s, watch=(watches or {}).get(library)))
        if library == "numpy":
            run.numpy_spun = _block_helpers_ran(span, *before)
        if library == "runtime" and run.clocks is not None:
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
    others = _others(load, ("numpy", "runtime"))
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
    run.progress.start("recheck")  # the page says more blocks are being timed
    with share_cores(pinned) as shared:
        blocks = _runtime_blocks(run, calls, block, meter, progress=False, order=runtime_block_order(2))
    record: dict[str, Any] = {"why": "busy" if busy else "unstable", "cores": len(pinned or load.cores),
                              "blas_threads": shared.get("blas_threads"), "pinned": bool(shared),
                              "first_speedup": numpy_stats.median_s / jax_stats.median_s
                              if jax_stats.median_s > 0 else None}
    kept = (lowest_block(blocks["numpy"]), lowest_block(blocks["runtime"]))
    # A busy first pass is the false number itself; otherwise keep the pair whose speedup is known better.
    use_recheck = busy or _spread(*kept) <= _spread(numpy_stats, jax_stats)
    record["kept"] = "recheck" if use_recheck else "first"
    record |= sides
    record["block_medians_s"] = {side: [b.median_s for b in blocks[side]] for side in ("numpy", "runtime")}
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
    watches = {side: SampleWatch(len(load.cores), -(-CLEAN_ENOUGH // CLEAN_PAIRS)) for side in ("numpy", "runtime")}
    if not watches["numpy"].available:
        return numpy_stats, jax_stats
    whole = run.timing.for_runtime()
    # A block stops on its budget or its watch, not on the precision of samples few of which count.
    block = replace(whole, phase_budget_s=max(whole.phase_budget_s, CLEAN_BUDGET_S) / CLEAN_PAIRS,
                    target_sample_s=CLEAN_SAMPLE_S, min_samples=3, max_samples=10**6, rel_ci=1e-9)
    run.progress.start("recheck")
    meter = load.prefixed("recheck.")
    blocks: dict[str, list[Stats]] = {"numpy": [], "runtime": []}
    order = runtime_block_order(CLEAN_PAIRS + CLEAN_MORE_PAIRS)
    try:
        for pair in range(CLEAN_PAIRS + CLEAN_MORE_PAIRS):
            timed = _runtime_blocks(run, calls, block, meter, progress=False, order=order[2 * pair:2 * pair + 2],
                                    watches=watches, previous=order[2 * pair - 1] if pair else "runtime")
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
    return _clean_stats(kept["numpy"], blocks["numpy"], whole), _clean_stats(kept["runtime"], blocks["runtime"], whole)


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
    own = {side: round(load.spans[side].own_cores, 2) for side in ("numpy", "runtime") if side in load.spans}
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


def _peak(run: _Run, spec: Spec, device: Any, *, with_cpu_side: bool) -> Peak:
    """The compute ceilings, for the fraction of peak and the roofline. NumPy's is the CPU's
    rate at the dtype NumPy computes in (numpy.linalg upcasts float32 to float64)."""
    run.progress.start("peak")
    numpy_dtype = run.case.summary().get("numpy_computes_in") or spec.dtype
    return ceilings(device, spec.dtype, numpy_dtype, with_cpu_side=with_cpu_side)


def _roofline(run: _Run, spec: Spec, device: Any, peak: Peak, cost: dict[str, float | None] | None,
              catalog_flops: float | None, numpy_stats: Stats, jax: JaxSide, jax_cpu: JaxSide | None,
              cpu: Any | None, *, host_gap_share: float | None = None, least_bytes: float | None = None) -> Roofline:
    """Each side's point on the roofline: XLA's counts of the main side's program (NumPy and JAX
    on the CPU do the same maths), each side's ceilings, and an empty call on each side. The
    transcendental rate is measured (once per host) only for a call that has transcendentals."""
    counts = choose_counts(cost, catalog_flops, least_bytes)
    cpu_bw = cpu_bandwidth(cpu, clock=run.clock)
    jax_bw, jax_bw_source = bandwidth_ceiling(device, cpu_bw)
    numpy_trans = jax_trans = cpu_trans = (None, None)
    if counts["transcendentals"]:
        numpy_trans = (cpu_transcendental_rate(spec.dtype, cpu, clock=run.clock), "measured")
        jax_trans = transcendental_ceiling(device, numpy_trans[0])
        cpu_trans = numpy_trans
    numpy_side = RooflineSide(numpy_stats.median_s, peak.numpy_flops_per_s, "measured", cpu_bw, "measured",
                              _empty_call(run, None, spec.dtype), *numpy_trans)
    jax_side = RooflineSide(jax.runtime.median_s, peak.flops_per_s, peak.source, jax_bw, jax_bw_source,
                            _empty_call(run, device, spec.dtype), *jax_trans, host_gap_share=host_gap_share)
    cpu_side = None
    if jax_cpu is not None:
        cpu_side = RooflineSide(jax_cpu.runtime.median_s, peak.cpu_flops_per_s, "measured", cpu_bw, "measured",
                                _empty_call(run, cpu, spec.dtype), *cpu_trans)
    return Roofline(**counts, catalog_flops=catalog_flops, xla=cost, numpy=numpy_side, jax=jax_side,
                    jax_cpu=cpu_side)


def _empty_call(run: _Run, device: Any | None, dtype: str) -> float:
    """The median runtime of a call that does next to nothing: on ``device``, a jitted x + 1 on
    one element, blocked (dispatch, one executable run, sync); None for NumPy's, np.add on one
    element. The roofline's measure of what any call costs (model/roofline.py, OVERHEAD_CALLS)."""
    import jax

    one = np.zeros(1, dtype=dtype)
    if device is None:
        call = bound_call(np.add, (one, one))
    else:
        x = jax.device_put(one, device)
        plus_one = jax.jit(lambda a: a + 1)
        jax.block_until_ready(plus_one(x))
        call = blocking_call(plus_one, (x,))
    return sample(call, EMPTY_CALL_TIMING, clock=run.clock).median_s


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


def _agreement(run: _Run, spec: Spec, host_inputs: tuple[np.ndarray, ...], numpy_out: tuple[np.ndarray, ...],
               jax_out: tuple[np.ndarray, ...], *, products: str | None = None) -> dict[str, Any]:
    """JAX vs NumPy at the same precision, and both against a float64 reference (none when
    NumPy cannot run in float64); ``products``: the reduced precision the program's products may have run at."""
    run.progress.start("agreement")
    inputs64 = tuple(a.astype(np.float64) if a.dtype.kind == "f" else a for a in host_inputs)
    try:
        ref64 = as_tuple(run.case.numpy_fn(*inputs64))
    except Exception:
        ref64 = None
    return compare_outputs(run.case, spec.dtype, host_inputs, numpy_out, jax_out, ref64, products=products)


def _notes(spec: Spec, jax: JaxSide, platform: str, *, cpu_side_missing: bool = False) -> tuple[str, ...]:
    """What a reader of the Result must know to read its numbers right."""
    agreement = jax.agreement
    notes = [note for note in [float64_note(platform, spec.precision)] if note]
    if cpu_side_missing:
        notes.append(N_("JAX on the CPU was not measured: this worker's JAX has no CPU backend "
                        "(JAX_PLATFORMS leaves it out)"))
    if jax.transfer_zero_copy:
        notes.append(N_(
            "transfer is near zero because the CPU backend aliased the NumPy buffer (zero-copy): "
            "no bytes were copied"
        ))
    if agreement["numpy_dtype"] != spec.dtype:
        notes.append(N_("NumPy returned {returned} for {dtype} inputs (it upcasts)").format(
            returned=agreement["numpy_dtype"], dtype=spec.dtype))
    if agreement["jax_dtype"] != spec.dtype:
        notes.append(N_("JAX returned {returned} for {dtype} inputs").format(
            returned=agreement["jax_dtype"], dtype=spec.dtype))
    return tuple(notes)


def user_call(case: Case, label: str, fn: Callable[..., Any], args: tuple[Any, ...], *,
              where: tuple[str, str] | None = None) -> Any:
    """Call a case's function once; its failure is the case's problem, said in one line. ``where``:
    the (platform, precision) it runs at, so an operation XLA lacks there is named plainly (Unsupported)."""
    import jax

    try:
        return jax.block_until_ready(fn(*args))
    except Exception as exc:
        text = error_first_line(str(exc))
        plain = float64_line(*where, str(exc)) if where is not None else None
        if plain is not None:
            raise Unsupported(N_("case {case!r}: {reason}").format(case=case.name, reason=plain),
                              detail=f"{type(exc).__name__}: {text}" if text else "") from None
        raise BadInput(N_("case {case!r}: {function} failed: {error_type}: {error}").format(
            case=case.name, function=label, error_type=type(exc).__name__, error=text[:300])) from None


def _delete(arrays: Any) -> None:
    import jax

    for leaf in jax.tree_util.tree_leaves(arrays):
        try:
            leaf.delete()
        except Exception:  # an aliased buffer may refuse: it is freed with its owner
            pass


def _aliases(host: tuple[np.ndarray, ...], device_arrays: Any) -> bool:
    """True when device_put handed back the NumPy buffer itself (CPU zero-copy)."""
    try:
        return all(
            d.unsafe_buffer_pointer() == h.ctypes.data
            for h, d in zip(host, device_arrays, strict=True)
        )
    except Exception:
        return False


def _aliases_out(result: Any) -> bool:
    import jax

    try:
        leaves = jax.tree_util.tree_leaves(result)
        return all(np.asarray(x).ctypes.data == x.unsafe_buffer_pointer() for x in leaves)
    except Exception:
        return False
