"""JAX's phases on one device, each timed on its own: transfer, cold compile, first call, dispatch
and fetch (device_phases); the main side and the third (JAX on the CPU) both go through here.
"""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from ...i18n import N_
from ...model import phases
from ...model.cases import Case, as_tuple
from ...model.errors import BadInput, TooLarge, Unsupported
from ...model.platforms import error_first_line, float64_line
from ...model.roofline import xla_counts
from ...model.sides import JaxSide
from ...model.spec import TimingConfig
from ...model.stats import Stats
from .run_state import SampleCallback, StartPhase, _Run
from .timing import BLAS_SETTLE_S, NS, Clock, sample, unblocked_call


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


def _transfer(run: _Run, host_inputs: tuple[np.ndarray, ...], device: Any,
              start: StartPhase) -> tuple[Stats, Any, bool]:
    """Host -> device, blocked; each sample frees its copy. Returns the stats, the inputs on
    the device, and whether the device arrays alias the host buffers (CPU zero-copy)."""
    import jax

    with run.load.phase(phases.TRANSFER.name):
        stats = sample(
            lambda: jax.block_until_ready(jax.device_put(host_inputs, device)),
            run.timing, clock=run.clock, teardown=_delete, settle_s=BLAS_SETTLE_S if run.numpy_spun else 0.0,
            on_sample=start(phases.TRANSFER),
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
    with run.load.phase(phases.COMPILE.name):
        stats = measure_compile(run.case.jax_fn, dev_inputs, run.timing, clock=run.clock,
                                on_sample=start(phases.COMPILE), on_compiled=compiled.append)
    return stats, _cost(compiled[-1]) if compiled else None


# A while loop in the optimized HLO: XLA's cost analysis counts its body once, whatever the trip count (a
# lax.scan cumsum of 20,000 elements: 3 FLOPs), so a program with one has no XLA counts.
_WHILE_LOOP = re.compile(r"\bwhile\(")


def _cost(compiled: Any) -> dict[str, float | None] | None:
    """XLA's counts of a compiled executable; None where the backend has no cost analysis, or the program
    loops (the roofline then takes the catalog's FLOP count, where it has one, and the arrays' bytes)."""
    try:
        if _WHILE_LOOP.search(compiled.as_text() or ""):
            return None
        return xla_counts(compiled.cost_analysis())
    except Exception:  # NotImplementedError, or a backend's runtime error: the counts are not known
        return None


def compiled_counts(case: Case, host_inputs: tuple[np.ndarray, ...], device: Any) -> dict[str, float | None] | None:
    """XLA's counts of ``case``'s JAX function compiled for ``device`` (one more compile, untimed); None
    where it cannot be compiled or counted there."""
    import jax

    try:
        inputs = jax.device_put(host_inputs, device)
        compiled = jax.jit(case.jax_fn).lower(*inputs).compile()
    except Exception:  # a function that does not compile there only goes uncounted: it was measured elsewhere
        return None
    return _cost(compiled)


def _first_call(run: _Run, dev_inputs: Any, start: StartPhase) -> Stats:
    """The first call with a cold cache: what a naive %time shows."""
    import jax

    cfg = run.timing
    with run.load.phase(phases.FIRST_CALL.name):
        return sample(
            lambda: jax.block_until_ready(jax.jit(run.case.jax_fn)(*dev_inputs)),
            cfg, clock=run.clock, setup=jax.clear_caches, min_samples=cfg.compile_samples, warmup=False,
            budget_s=cfg.phase_budget_s * 2, on_sample=start(phases.FIRST_CALL),
        )


def _dispatch(run: _Run, dev_inputs: Any, start: StartPhase) -> tuple[Any, Stats]:
    """Dispatch only: the time until an unblocked call returns to Python, per call over a short loop of
    them (as the blocked runtime is per call), blocked after the clock stops. Returns the warm jitted
    function the later phases call, and the stats."""
    import jax

    jitted = jax.jit(run.case.jax_fn)
    jax.block_until_ready(jitted(*dev_inputs))
    with run.load.phase(phases.DISPATCH.name):
        stats = sample(unblocked_call(jitted, dev_inputs), run.timing, clock=run.clock,
                       on_sample=start(phases.DISPATCH))
    return jitted, stats


def _fetch(run: _Run, jitted: Any, dev_inputs: Any, start: StartPhase) -> tuple[Stats, tuple[np.ndarray, ...], bool]:
    """Device -> host of a fresh, ready result (np.asarray caches its copy). Returns the
    stats, JAX's output on the host, and whether that output aliases the device buffers."""
    import jax

    fresh: list[Any] = []

    def fresh_result() -> None:
        fresh.clear()
        fresh.append(jax.block_until_ready(jitted(*dev_inputs)))

    with run.load.phase(phases.FETCH.name):
        stats = sample(lambda: jax.tree_util.tree_map(np.asarray, fresh[0]), run.timing, clock=run.clock,
                       setup=fresh_result, on_sample=start(phases.FETCH))
    result = jax.block_until_ready(jitted(*dev_inputs))
    return stats, as_tuple(jax.tree_util.tree_leaves(result)), _aliases_out(result)


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


# XLA's status for an allocation the device cannot make (a TPU v5e's fftconvolve at 10^6: "RESOURCE_EXHAUSTED:
# Ran out of memory on HBM, the total memory required for HLO temporaries (4.40T) exceeds available HBM").
OUT_OF_DEVICE_MEMORY = "RESOURCE_EXHAUSTED"


# JAX's errors for a traced array used as a concrete value: NumPy's function in the JAX slot, float(), an if.
TRACED_VALUE_ERRORS = ("TracerArrayConversionError", "ConcretizationTypeError", "TracerBoolConversionError",
                       "TracerIntegerConversionError")


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
        if OUT_OF_DEVICE_MEMORY in str(exc):
            raise TooLarge(N_("case {case!r}: {function} needs more memory than the device has at this shape: "
                              "{error}").format(case=case.name, function=label, error=text[:300])) from None
        if label == "jax_fn" and len(case.all_ports) > 1:  # the failing port, not only the case its ports share
            label = f"{label} ({case.default_port})"
        if type(exc).__name__ in TRACED_VALUE_ERRORS:
            raise BadInput(N_("case {case!r}: {function} failed: {error_type}: it used a traced array as a NumPy array "
                              "or a Python number (np.* functions, float(), if on a value): write it with jax.numpy "
                              "and jax.lax. {error}").format(case=case.name, function=label,
                                                             error_type=type(exc).__name__, error=text[:200])) from None
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
