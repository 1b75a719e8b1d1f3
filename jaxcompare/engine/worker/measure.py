"""The measurement protocol: measure() runs every phase in order, in the worker process whose x64
mode matches the Spec. Each phase is timed on its own, so a naive number (first call, unblocked
call) never mixes into the steady-state runtime: JAX's phases are in jax_phases.py, the runtime
pairs and their recheck in runtimes.py; here are the checks, inputs, third side, ceilings and notes.
"""

from __future__ import annotations

import datetime as dt
import functools
import time
import uuid
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from ...catalog import get_case
from ...i18n import N_
from ...model import phases
from ...model.cases import Case, as_tuple
from ...model.errors import JaxCompareError
from ...model.platforms import float64_note, is_host, platform
from ...model.profile import Profile
from ...model.result import Result
from ...model.roofline import Counts, Roofline, RooflineSide, choose_counts, device_time
from ...model.sides import JaxSide, Peak
from ...model.spec import Spec, TimingConfig
from ...model.stats import Stats
from ..common.footprint import check_fits, host_available
from ..common.fresh import FreshCall, fresh_first_call
from ..common.load import LoadMeter
from .agreement import compare_outputs, program_products
from .ceilings import (
    bandwidth_ceiling,
    ceilings,
    cpu_bandwidth,
    cpu_device_or_none,
    cpu_transcendental_rate,
    matmul_precision,
    transcendental_ceiling,
    use_matmul_precision,
)
from .environment import collect as collect_env
from .environment import resolve_device
from .gpu_clocks import ClockWatch
from .inputs import build_inputs
from .jax_phases import compiled_counts, device_phases, user_call
from .memory import device_memory, estimate, keep_freed_memory
from .plain_numpy import numpy_as_users_run_it
from .profile import profile_jitted
from .run_state import CPU_SIDE_PARTS, Progress, ProgressCallback, SampleCallback, _Run
from .runtimes import _compiled_count, _protocol, _runtimes, back_to_back
from .timing import BLAS_SETTLE_S, Clock, blocking_call, bound_call, sample

# An empty call's runtime, the roofline's measure of fixed cost: a few short samples (~30 ms).
EMPTY_CALL_TIMING = TimingConfig(target_sample_s=0.002, min_samples=5, max_samples=15, phase_budget_s=0.03,
                                 rel_ci=0.1, compile_samples=1, warmup_s=0.002)


def _no_progress(phase: str, fraction: float) -> None:
    return None


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
    if cpu_side and not is_host(device.platform):
        est = replace(est, host_bytes=est.host_bytes + est.device_bytes)
    free, total = device_memory(device) or (None, None)
    check_fits(est, case.name, spec.shape, host_free=host_available(), device_free_bytes=free,
               device_total_bytes=total)


def measure(spec: Spec, progress: ProgressCallback = _no_progress, clock: Clock = time.perf_counter_ns,
            *, cpu_side: bool | None = None, case: Case | None = None,
            profile_dir: str | None = None, recheck: bool = True, load: LoadMeter | None = None,
            clocks: ClockWatch | None = None, first_calls: Sequence[FreshCall] | None = None) -> Result:
    """Run every phase of the protocol for ``spec`` and return the Result: inputs, transfer,
    cold compile, first call, dispatch, fetch, the two runtimes side by side, the third side
    (JAX on the CPU), the profile when asked, agreement, and the ceilings for the fraction of peak.

    ``cpu_side``: measure JAX on the CPU as a third side; by default only when the device is a
    GPU or TPU (True also measures it on a CPU-only host, where it repeats the main side).
    ``case``: a Case sent with the job (a notebook's functions) instead of the catalog's.
    ``profile_dir``: also trace a few steady-state calls, after every timed phase, into
    ``profile_dir/<result id>`` (engine/worker/profile.py); the timings are the same either way.
    ``recheck``: time the runtime pair again when the machine was busy or one side unstable
    (runtimes._recheck; off only in tests of the first pass). ``load``: the meter (tests inject its counters).
    ``clocks``: what reads the GPU's clocks (by default NVML's, on a GPU; tests replay readings).
    ``first_calls``: the fresh processes' first calls where the runner ran them (a device one process
    at a time may hold: they took it while no worker held it); None starts them here.
    Everything JAX does here (both sides, the profile, the ceilings) runs at ``spec.matmul_precision``."""
    check_precision(spec.precision)
    with use_matmul_precision(spec.matmul_precision):
        return _measure(spec, progress, clock, cpu_side=cpu_side, case=case, profile_dir=profile_dir,
                        recheck=recheck, load=load, clocks=clocks, first_calls=first_calls)


def _measure(spec: Spec, progress: ProgressCallback, clock: Clock, *, cpu_side: bool | None, case: Case | None,
             profile_dir: str | None, recheck: bool, load: LoadMeter | None, clocks: ClockWatch | None,
             first_calls: Sequence[FreshCall] | None = None) -> Result:
    """measure()'s phases, at the matmul precision it set: protocol["matmul_precision"] reads it back."""
    keep_freed_memory()
    sent_case = case is not None
    # The one place a Spec's port becomes the JAX side (Case.for_port): every phase below measures it.
    first = get_case(spec.case, spec.cases_file) if case is None else case
    case = first.for_port(spec.port)
    case.check_shape(spec.shape)
    device = resolve_device(spec.device)
    cpu = cpu_device_or_none()
    # A Pallas kernel runs on the CPU only interpreted: as the third side its time would be no speed figure.
    want_cpu_side = (not is_host(device.platform) if cpu_side is None else cpu_side) and not case.pallas
    check_memory(case, spec, device, cpu_side=want_cpu_side and cpu is not None)
    run = _Run(case, spec.timing, clock, Progress(progress, spec.timing, cpu_side=want_cpu_side and cpu is not None),
               load if load is not None else LoadMeter(), recheck, clocks if clocks is not None else ClockWatch(device),
               precision=spec.precision, numpy_settle_s=platform(device.platform).numpy_settle_s)

    host_inputs, numpy_out = _inputs(run, spec)
    side, warm = device_phases(run, host_inputs, device, run.progress.start)
    numpy_stats, runtime_stats, protocol = _runtimes(run, warm.jitted, host_inputs, warm.dev_inputs, device)
    protocol["matmul_precision"] = matmul_precision()
    numpy_stats, numpy_kept, plain_failed = numpy_as_users_run_it(
        case, spec, numpy_stats, host_inputs, numpy_out, by_value=sent_case, load=run.load,
        starting=lambda: run.progress.start(phases.NUMPY_PLAIN))
    jax_cpu = None
    if want_cpu_side and cpu is not None:
        jax_cpu = measure_jax_side(run, spec, host_inputs, numpy_out, cpu)
        # Its compile phases cleared JAX's caches, the device's executable with them: built again here, untimed,
        # or the next phase's first call compiles (a TPU's back-to-back probe read 0.4 s and sized its loop to 9).
        blocking_call(warm.jitted, warm.dev_inputs)()
    result_id = uuid.uuid4().hex
    profile = None
    if profile_dir is not None:
        run.progress.start(phases.PROFILE)
        profile = profile_jitted(warm.jitted, warm.dev_inputs, Path(profile_dir) / result_id, runtime_stats.median_s)
    products = program_products(case, spec.dtype, device.platform, protocol["matmul_precision"], warm.jitted,
                                warm.dev_inputs)
    pipelined = back_to_back(run, warm.jitted, warm.dev_inputs, runtime_stats.median_s)
    fresh, first_call_note = _fresh_first_call(run, spec, device, protocol, by_value=sent_case, ran=first_calls)
    if fresh is not None:
        side = functools.partial(side, first_call=fresh, first_call_recompile=side.keywords["first_call"])
    jax = side(runtime=runtime_stats, protocol=protocol, back_to_back=pipelined,
               agreement=_agreement(run, spec, host_inputs, numpy_out, warm.jax_out, products=products))
    flops = case.flop_count(spec.shape)
    peak = _peak(run, spec, device, with_cpu_side=jax_cpu is not None)
    least_bytes = sum(a.nbytes for a in host_inputs) + sum(np.asarray(o).nbytes for o in numpy_out)
    roofline = _roofline(run, spec, device, peak, warm.cost, flops, numpy_stats, jax, jax_cpu, cpu,
                         profile=profile, host_inputs=host_inputs, least_bytes=least_bytes,
                         first_port=None if case is first else first)
    run.progress.complete()
    return Result(
        id=result_id,
        created=dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds"),
        spec=spec,
        case_info=case.summary(),
        dtype=spec.dtype,
        backend=device.platform,
        numpy_runtime=numpy_stats,
        numpy_kept=numpy_kept,
        jax=jax,
        env={**collect_env(), "freed_memory_kept": keep_freed_memory()},
        flops=flops,
        notes=_notes(spec, jax, device.platform, cpu_side_missing=want_cpu_side and cpu is None) + tuple(
            note for note in (plain_failed, first_call_note) if note),
        jax_cpu=jax_cpu,
        peak=peak if flops is not None else None,  # the fraction of peak needs the catalog's count
        profile=profile,
        load=run.load.to_dict(),
        roofline=roofline,
        gpu_clocks=run.clocks.result(),
    )


def measure_jax_side(run: _Run, spec: Spec, host_inputs: tuple[np.ndarray, ...],
                     numpy_out: tuple[np.ndarray, ...], device: Any) -> JaxSide:
    """The third side: every JAX phase again on ``device`` (the CPU), then its blocked runtime
    on its own, after the NumPy and accelerator runtimes (it competes with NumPy's BLAS for the
    same cores, so it settles first), and its output against NumPy's."""
    def start(phase: phases.MeasuringPhase) -> SampleCallback:
        return run.progress.part(phases.JAX_CPU, CPU_SIDE_PARTS.index(phase), len(CPU_SIDE_PARTS))

    # Its load phases as "jax_cpu.transfer"...; it settles as after any NumPy work.
    run = replace(run, load=run.load.prefixed(f"{phases.JAX_CPU.name}."), numpy_spun=True)
    side, warm = device_phases(run, host_inputs, device, start)
    call = blocking_call(warm.jitted, warm.dev_inputs)
    compiled_before = _compiled_count(warm.jitted)
    with run.load.phase(phases.RUNTIME.name):
        runtime = sample(call, run.timing.for_runtime(), clock=run.clock, settle_s=BLAS_SETTLE_S,
                         on_sample=start(phases.RUNTIME))
    agreement = compare_outputs(run.case, spec.dtype, host_inputs, numpy_out, warm.jax_out, None)
    return side(runtime=runtime, protocol=_protocol(call, warm.jitted, compiled_before, warm.dev_inputs, device),
                agreement={k: agreement[k] for k in ("ok", "max_abs_err", "max_rel_err", "rtol", "method")})


def _fresh_first_call(run: _Run, spec: Spec, device: Any, protocol: dict[str, Any], *, by_value: bool,
                      ran: Sequence[FreshCall] | None = None) -> tuple[Stats | None, str | None]:
    """The first call as a user's %time pays it: in fresh processes (TimingConfig.first_call_processes)
    that never compiled this function, persistent cache off; their cache hits and earlier compiles go
    in ``protocol["first_call"]``. ``ran``: those processes' calls where the runner ran them, while no
    worker held a device one process at a time may hold. None (the worker's recompile stands) in quick
    timing, on such a device when the runner did not run them, or where a fresh process failed: then
    with a note saying so."""
    processes = spec.timing.first_call_processes
    protocol["first_call"] = {"process": "worker"}
    found = platform(device.platform)
    if processes == 0:
        return None, None
    if ran:
        calls = list(ran)
    elif found is not None and found.single_holder:
        return None, N_("the first call was timed in this worker after jax.clear_caches(), not in a fresh process: "
                        "one process at a time can hold the {device}, and this one holds it; a fresh process's "
                        "first call costs more").format(device=found.label)
    else:
        run.progress.start(phases.FIRST_CALL_FRESH)
        try:
            calls = [fresh_first_call(spec, None, case=run.case if by_value else None, label=N_("the first call"))
                     for _ in range(processes)]
        except JaxCompareError as exc:
            return None, N_("the first call was timed in this worker after jax.clear_caches(): {error}").format(
                error=exc)
    protocol["first_call"] = {"process": "fresh", "processes": len(calls),
                              "cache_hits": sum(c.cache_hits for c in calls),
                              "compiled_before": sum(c.compiled_before for c in calls)}
    return Stats.from_samples([c.first_call_s for c in calls]), None


def _inputs(run: _Run, spec: Spec) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]]:
    """The host inputs, and NumPy's output for the agreement check: a broken reference fails
    here, first. NumPy's runtime is timed at the end, side by side with JAX's."""
    run.progress.start(phases.INPUTS)
    host_inputs = build_inputs(run.case, spec)
    with run.load.phase(phases.INPUTS.name) as span:
        numpy_out = as_tuple(user_call(run.case, "numpy_fn", run.case.numpy_fn, host_inputs))
    run.numpy_spun = span.helpers_ran
    return host_inputs, numpy_out


def _peak(run: _Run, spec: Spec, device: Any, *, with_cpu_side: bool) -> Peak:
    """The compute ceilings, for the fraction of peak and the roofline. NumPy's is the CPU's
    rate at the dtype NumPy computes in (numpy.linalg upcasts float32 to float64)."""
    run.progress.start(phases.PEAK)
    numpy_dtype = run.case.summary().get("numpy_computes_in") or spec.dtype
    return ceilings(device, spec.dtype, numpy_dtype, with_cpu_side=with_cpu_side)


def _roofline(run: _Run, spec: Spec, device: Any, peak: Peak, cost: dict[str, float | None] | None,
              catalog_flops: float | None, numpy_stats: Stats, jax: JaxSide, jax_cpu: JaxSide | None,
              cpu: Any | None, *, profile: Profile | None = None, host_inputs: tuple[np.ndarray, ...] = (),
              least_bytes: float | None = None, first_port: Case | None = None) -> Roofline:
    """Each side's point on the roofline: XLA's counts of the main side's program and, where that runs
    on a GPU or TPU, of the same function compiled for the CPU (JAX on the CPU's: the same maths, without
    a TPU's float64 emulation); where another port than the case's first was measured, the first port
    compiled for the CPU (``first_port``: NumPy's counts where the catalog has none, Roofline.counts);
    each side's ceilings, and an empty call on each side.
    JAX's side on a GPU or TPU is read from its time on the device (device_time), the blocked runtime
    beside it. The transcendental rate is measured (once per host) only for a call that has
    transcendentals."""
    counts = choose_counts(cost, catalog_flops, least_bytes)

    def program_counts(case: Case, on: Any) -> Counts | None:
        """``case``'s function compiled for ``on`` (one more compile, untimed), counted as the main program is."""
        found = compiled_counts(case, host_inputs, on)
        return None if found is None else Counts(**choose_counts(found, catalog_flops, least_bytes), xla=found,
                                                 least_bytes=least_bytes)

    cpu_counts = program_counts(run.case, cpu) if not is_host(device.platform) and cpu is not None else None
    numpy_counts = None if first_port is None else program_counts(first_port, cpu if cpu is not None else device)
    transcendentals = (counts["transcendentals"] or (cpu_counts is not None and cpu_counts.transcendentals)
                       or (numpy_counts is not None and numpy_counts.transcendentals))
    cpu_bw = cpu_bandwidth(cpu, clock=run.clock)
    jax_bw, jax_bw_source = bandwidth_ceiling(device, cpu_bw)
    numpy_trans = jax_trans = cpu_trans = (None, None)
    if transcendentals:
        numpy_trans = (cpu_transcendental_rate(spec.dtype, cpu, clock=run.clock), "measured")
        jax_trans = transcendental_ceiling(device, numpy_trans[0])
        cpu_trans = numpy_trans
    on_device = device_time(device.platform, profile, jax.back_to_back)
    numpy_side = RooflineSide(numpy_stats.median_s, peak.numpy_flops_per_s, "measured", cpu_bw, "measured",
                              _empty_call(run, None, spec.dtype), *numpy_trans)
    jax_side = RooflineSide(jax.runtime.median_s, peak.flops_per_s, peak.source, jax_bw, jax_bw_source,
                            _empty_call(run, device, spec.dtype), *jax_trans,
                            host_gap_share=None if profile is None else profile.gap_share,
                            device_s=on_device[1] if on_device else None,
                            device_source=on_device[0] if on_device else None,
                            dispatch_s=jax.dispatch.median_s if on_device else None)
    cpu_side = None
    if jax_cpu is not None:
        cpu_side = RooflineSide(jax_cpu.runtime.median_s, peak.cpu_flops_per_s, "measured", cpu_bw, "measured",
                                _empty_call(run, cpu, spec.dtype), *cpu_trans)
    return Roofline(**counts, catalog_flops=catalog_flops, xla=cost, numpy=numpy_side, jax=jax_side,
                    jax_cpu=cpu_side, cpu_counts=cpu_counts, least_bytes=least_bytes, numpy_counts=numpy_counts)


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


def _agreement(run: _Run, spec: Spec, host_inputs: tuple[np.ndarray, ...], numpy_out: tuple[np.ndarray, ...],
               jax_out: tuple[np.ndarray, ...], *, products: str | None = None) -> dict[str, Any]:
    """JAX vs NumPy at the same precision, and both against a float64 reference (none when
    NumPy cannot run in float64); ``products``: the reduced precision the program's products may have run at."""
    run.progress.start(phases.AGREEMENT)
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
    if agreement["numpy_dtype"] != spec.dtype:
        notes.append(N_("NumPy returned {returned} for {dtype} inputs (it upcasts)").format(
            returned=agreement["numpy_dtype"], dtype=spec.dtype))
    if agreement["jax_dtype"] != spec.dtype:
        notes.append(N_("JAX returned {returned} for {dtype} inputs").format(
            returned=agreement["jax_dtype"], dtype=spec.dtype))
    return tuple(notes)
