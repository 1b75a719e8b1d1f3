"""The measurement protocol (DESIGN.md), run inside a worker whose x64 mode matches.

Each phase is measured on its own, so a naive number (first call, unblocked call) is
never mixed into the steady-state runtime.
"""

from __future__ import annotations

import datetime as dt
import time
import uuid
from collections.abc import Callable
from typing import Any

import numpy as np

from ..catalog import get_case
from ..model.cases import Case, as_tuple, format_shape
from ..model.errors import BadInput
from ..model.result import Result
from ..model.spec import Spec, TimingConfig
from ..model.stats import Stats
from .agreement import compare_outputs
from .environment import collect as collect_env
from .environment import resolve_device
from .memory import check_fits, device_free, estimate, host_available
from .timing import BLAS_SETTLE_S, NS, Clock, blocking_call, bound_call, combine_blocks, sample

Progress = Callable[[str, float], None]

# Phase name -> share of the progress bar (roughly how long each takes).
PHASES = (
    ("inputs", 0.02),
    ("transfer", 0.08),
    ("compile", 0.28),
    ("first_call", 0.12),
    ("dispatch", 0.08),
    ("fetch", 0.06),
    ("numpy", 0.16),
    ("runtime", 0.14),
    ("recheck", 0.0),  # only with TimingConfig.runtime_blocks > 1 (weights rescaled)
    ("agreement", 0.06),
)


def _no_progress(phase: str, fraction: float) -> None:
    return None


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


def check_memory(case: Case, spec: Spec, device: Any) -> None:
    """Refuse before allocating when inputs + outputs (from jax.eval_shape) will not fit."""
    est = estimate(case, spec.shape, spec.dtype, backend=device.platform)
    check_fits(est, case.name, spec.shape, host_free=host_available(), device_free_bytes=device_free(device))


def build_inputs(case: Case, spec: Spec) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(spec.seed)
    try:
        inputs = case.make_inputs(spec.shape, np.dtype(spec.dtype), rng)
    except BadInput:
        raise
    except Exception as exc:
        raise BadInput(
            f"case {case.name!r} could not build inputs of shape {format_shape(spec.shape)}: "
            f"{type(exc).__name__}: {exc}"
        ) from None
    inputs = tuple(inputs) if isinstance(inputs, tuple | list) else (inputs,)
    if not inputs or not all(isinstance(a, np.ndarray) for a in inputs):
        raise BadInput(f"case {case.name!r}: make_inputs must return a tuple of NumPy arrays")
    return inputs


def measure_compile(
    fn: Callable[..., Any], args: tuple[Any, ...], cfg: TimingConfig, *, cold: bool = True,
    static_argnums: tuple[int, ...] = (), clock: Clock = time.perf_counter_ns,
    on_sample: Callable[[int], None] | None = None,
) -> tuple[Stats, Stats, Stats]:
    """Trace, lower and compile times. ``cold`` clears JAX's caches before each sample;
    without that a second ``jax.jit(f)`` hits the cache and "compiles" in microseconds."""
    import jax

    samples: tuple[list[float], list[float], list[float]] = ([], [], [])
    deadline = clock() + cfg.phase_budget_s * 3 / NS
    # At least compile_samples; more (up to twice that) while the budget lasts.
    while len(samples[0]) < cfg.compile_samples or (
        len(samples[0]) < 2 * cfg.compile_samples and clock() < deadline
    ):
        if cold:
            jax.clear_caches()
        jitted = jax.jit(fn, static_argnums=static_argnums)
        t0 = clock()
        traced = jitted.trace(*args)
        t1 = clock()
        lowered = traced.lower()
        t2 = clock()
        lowered.compile()
        t3 = clock()
        for bucket, (a, b) in zip(samples, ((t0, t1), (t1, t2), (t2, t3)), strict=True):
            bucket.append((b - a) * NS)
        if on_sample is not None:
            on_sample(len(samples[0]))
    return tuple(Stats.from_samples(s) for s in samples)  # type: ignore[return-value]


def measure(spec: Spec, progress: Progress = _no_progress, clock: Clock = time.perf_counter_ns) -> Result:
    """Run every phase of the protocol for ``spec`` and return the Result."""
    import jax

    check_precision(spec.precision)
    case = get_case(spec.case, spec.cases_file)
    case.check_shape(spec.shape)
    device = resolve_device(spec.device)
    check_memory(case, spec, device)
    cfg = spec.timing
    done = 0.0
    weights = dict(PHASES)
    if cfg.runtime_blocks > 1:  # the later blocks take about as long as the first ones
        weights["recheck"] = (weights["numpy"] + weights["runtime"]) * (cfg.runtime_blocks - 1)
        weights = {k: v / sum(weights.values()) for k, v in weights.items()}
    statics = case.static_argnums

    def step(phase: str) -> Callable[[int], None]:
        progress(phase, done)
        share = weights[phase]
        expected = max(cfg.min_samples, 1)
        return lambda n: progress(phase, done + share * min(n / expected, 1.0) * 0.95)

    def finish(phase: str) -> None:
        nonlocal done
        done += weights[phase]

    # 1-2. Inputs, and NumPy's output for the agreement check (a broken reference fails here,
    # first). NumPy's runtime is timed at the end, side by side with JAX's (step 8).
    step("inputs")
    host_inputs = build_inputs(case, spec)
    numpy_out = as_tuple(_user_call(case, "numpy_fn", case.numpy_fn, host_inputs))
    finish("inputs")

    # 3. Transfer host -> device, blocked; each sample frees its copy.
    transfer_stats = sample(
        lambda: jax.block_until_ready(jax.device_put(host_inputs, device)),
        cfg, clock=clock, teardown=_delete, settle_s=BLAS_SETTLE_S, on_sample=step("transfer"),
    )
    dev_inputs = jax.block_until_ready(jax.device_put(host_inputs, device))
    zero_copy = _aliases(host_inputs, dev_inputs)
    finish("transfer")

    # 4. Cold compile, split into trace / lower / compile, caches cleared each sample.
    f = jax.jit(case.jax_fn, static_argnums=statics)
    _user_call(case, "jax_fn", f, dev_inputs)  # a broken port fails here with a clear message
    trace_stats, lower_stats, compile_stats = measure_compile(
        case.jax_fn, dev_inputs, cfg, static_argnums=statics, clock=clock, on_sample=step("compile"))
    finish("compile")

    # 5. First call with a cold cache: what a naive %time shows.
    first_stats = sample(
        lambda: jax.block_until_ready(jax.jit(case.jax_fn, static_argnums=statics)(*dev_inputs)),
        cfg, clock=clock, setup=jax.clear_caches, min_samples=cfg.compile_samples, warmup=False,
        budget_s=cfg.phase_budget_s * 2, on_sample=step("first_call"),
    )
    finish("first_call")

    # 6. Dispatch only: the call returns before the work is done; block outside the timer.
    f = jax.jit(case.jax_fn, static_argnums=statics)
    jax.block_until_ready(f(*dev_inputs))
    dispatch_stats = sample(lambda: f(*dev_inputs), cfg, clock=clock, teardown=jax.block_until_ready,
                            on_sample=step("dispatch"))
    finish("dispatch")

    # 7. Fetch device -> host of a fresh, ready result (np.asarray caches its copy).
    fresh: list[Any] = []

    def fresh_result() -> None:
        fresh.clear()
        fresh.append(jax.block_until_ready(f(*dev_inputs)))

    fetch_stats = sample(lambda: jax.tree_util.tree_map(np.asarray, fresh[0]), cfg, clock=clock,
                         setup=fresh_result, on_sample=step("fetch"))
    jax_result = jax.block_until_ready(f(*dev_inputs))
    jax_out = as_tuple(jax.tree_util.tree_leaves(jax_result))
    fetch_zero_copy = _aliases_out(jax_result)
    finish("fetch")

    # 8. The two runtimes the speedup is made of, NumPy on host arrays and JAX steady state
    # (device-resident inputs, each call blocked), timed side by side in alternating blocks:
    # NumPy, JAX, then JAX, NumPy, ... A shared machine drifts between speed regimes for
    # seconds at a time and the drift hits both alike, so adjacent blocks keep it out of the
    # ratio; timed a few seconds apart (compile in between), the speedup's spread over 10
    # repeats was wider: careful 80% vs 57%, thorough 55% vs 29% with four pairs
    # (benchmarks/RESULTS.md). Each switch of library settles first (BLAS_SETTLE_S).
    numpy_call = bound_call(case.numpy_fn, host_inputs)
    jax_call = blocking_call(f, dev_inputs)
    block_cfg = cfg.for_runtime_block()
    numpy_blocks: list[Stats] = []
    runtime_blocks: list[Stats] = []
    slices = 2 * (cfg.runtime_blocks - 1)  # one slice of the recheck's progress per later block

    def in_slice(k: int) -> Callable[[int], None]:
        expected = max(block_cfg.min_samples, 1)
        return lambda n: progress("recheck", done + weights["recheck"] * (k + min(n / expected, 1.0))
                                  / slices * 0.95)

    sides = {"numpy": (numpy_call, numpy_blocks), "runtime": (jax_call, runtime_blocks)}
    last = "runtime"  # fetch ran JAX
    for i, phase in enumerate(runtime_block_order(cfg.runtime_blocks)):
        call, blocks = sides[phase]
        on_sample = step(phase) if i < 2 else in_slice(i - 2)
        on_sample(0)
        blocks.append(sample(call, block_cfg, clock=clock, on_sample=on_sample,
                             settle_s=BLAS_SETTLE_S if phase != last else 0.0))
        last = phase
        if i < 2:
            finish(phase)
    finish("recheck")
    runtime_cfg = cfg.for_runtime()
    numpy_stats = combine_blocks(numpy_blocks, runtime_cfg.rel_ci, cfg.drift_tolerance, "the NumPy median")
    runtime_stats = combine_blocks(runtime_blocks, runtime_cfg.rel_ci, cfg.drift_tolerance, "the JAX median")

    # 9. Agreement at the same precision, and both against a float64 reference.
    progress("agreement", done)
    inputs64 = tuple(a.astype(np.float64) if a.dtype.kind == "f" else a for a in host_inputs)
    try:
        ref64 = as_tuple(case.numpy_fn(*inputs64))
    except Exception:
        ref64 = None
    agreement = compare_outputs(case, spec.dtype, host_inputs, numpy_out, jax_out, ref64)
    finish("agreement")

    notes = []
    if zero_copy:
        notes.append(
            "transfer is near zero because the CPU backend aliased the NumPy buffer (zero-copy): "
            "no bytes were copied"
        )
    if agreement["numpy_dtype"] != spec.dtype:
        notes.append(f"NumPy returned {agreement['numpy_dtype']} for {spec.dtype} inputs (it upcasts)")
    if agreement["jax_dtype"] != spec.dtype:
        notes.append(f"JAX returned {agreement['jax_dtype']} for {spec.dtype} inputs")
    progress("done", 1.0)
    return Result(
        id=uuid.uuid4().hex,
        created=dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds"),
        spec=spec,
        case_info=case.summary(),
        dtype=spec.dtype,
        backend=device.platform,
        device=str(device),
        device_kind=getattr(device, "device_kind", device.platform),
        numpy_runtime=numpy_stats,
        transfer=transfer_stats,
        trace=trace_stats,
        lower=lower_stats,
        compile=compile_stats,
        first_call=first_stats,
        runtime=runtime_stats,
        dispatch=dispatch_stats,
        fetch=fetch_stats,
        agreement=agreement,
        env=collect_env(),
        flops=case.flop_count(spec.shape),
        transfer_zero_copy=zero_copy,
        fetch_zero_copy=fetch_zero_copy,
        notes=tuple(notes),
    )


def _user_call(case: Case, label: str, fn: Callable[..., Any], args: tuple[Any, ...]) -> Any:
    """Call a case's function once; its failure is the case's problem, said in one line."""
    import jax

    try:
        return jax.block_until_ready(fn(*args))
    except Exception as exc:
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise BadInput(f"case {case.name!r}: {label} failed: {type(exc).__name__}: {text[:300]}") from None


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
