"""``jaxcompare.compare`` and ``jaxcompare.sweep``: a notebook's own functions, measured with
the CLI's protocol in a worker of the requested precision.

The functions travel to the worker with the job (engine/common/shipping.py), so x64 runs in a
process where ``jax_enable_x64`` holds whatever the notebook's own setting. One Runner per
process, created on first use and closed at exit (or by :func:`shutdown`).
"""

from __future__ import annotations

import atexit
import functools
import math
import numbers
import os
import sys
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from .. import i18n
from ..analysis.checks import outputs_unlike
from ..analysis.ports import PortRun, ports_verdict
from ..analysis.sweep import crossover
from ..engine import Job, Runner
from ..history.store import traces_dir
from ..i18n import N_
from ..model.cases import NOTEBOOK, Case, GivenInputs, Port, any_shape, default_canonical, format_shape
from ..model.errors import BadInput, JaxCompareError
from ..model.invariants import eigh_invariants, qr_invariants, svd_invariants
from ..model.platforms import error_first_line
from ..model.spec import DTYPES, MAX_DIMS, PRECISIONS, Spec, TimingConfig, parse_shape
from .results import NotebookResult, OutputsDisagree, PortsResult, SweepResult

# How often a wait wakes to let a Ctrl-C (a kernel interrupt) through.
_POLL_S = 0.1
# How long a cancelled job may take to stop its worker before we give up waiting.
_CANCEL_WAIT_S = 30.0

_lock = threading.Lock()
_runner: Runner | None = None
_current: Job | None = None


def compare(numpy_fn: Callable[..., Any], jax_fn: Callable[..., Any] | Mapping[str, Callable[..., Any]],
            *inputs: Any, precision: str = "x32",
            device: str = "auto", timing: str | TimingConfig = "careful", name: str | None = None,
            shape: Sequence[int] | str | None = None, seed: int = 0, tolerance: float = 1.0,
            canonical: Callable[..., Any] | None = None, timeout_s: float | None = None,
            profile: bool | str | os.PathLike[str] = False,
            matmul_precision: str = "default") -> NotebookResult | PortsResult:
    """Measure ``numpy_fn`` against ``jax_fn`` (wrapped in ``jax.jit`` here) with every phase of
    the protocol, and return the Result.

    ``jax_fn`` may be a dict of port names to functions (``{"jnp": f, "scan": g}``: several ways of
    writing the JAX side, docs/ports.md): each port is measured in turn, as a job of its own under its
    own ``timeout_s``, and a PortsResult says which is fastest, beside each port's Result. A port that
    fails, or whose outputs disagree, gets its line there; the other ports stand.

    ``inputs``: NumPy arrays, passed to both functions as positional arguments (cast to float32
    for x32 or float64 for x64; a note says when that changed their dtype), or one
    ``make_inputs(shape, dtype, rng)`` with ``shape=``. The outputs must agree within the
    precision's tolerance times ``tolerance``; ``canonical(outputs, inputs)`` maps outputs that
    may legitimately differ to what must agree (NumPy's svd, eigh and qr get theirs by default).
    ``profile``: also trace a few steady-state calls with jax.profiler (True: into the traces
    folder beside the History database; or a folder) and show where the time goes (Result.profile).
    ``matmul_precision``: what JAX's float32 matrix products and convolutions run at, "default",
    "high" or "highest" (jax.default_matmul_precision; on a TPU one, three or six bfloat16 passes, on
    an NVIDIA Ampere or newer GPU TF32, TF32, float32), recorded with the result.
    Raises a JaxCompareError with one sentence for bad input, and OutputsDisagree (carrying
    ``.result``) when the outputs differ.
    """
    if isinstance(jax_fn, Mapping):
        return _compare_ports(numpy_fn, jax_fn, inputs, precision=precision, device=device, timing=timing,
                              name=name, shape=shape, seed=seed, tolerance=tolerance, canonical=canonical,
                              timeout_s=timeout_s, profile=profile, matmul_precision=matmul_precision)
    try:
        case, spec, notes = _request(numpy_fn, jax_fn, inputs, precision=precision, device=device,
                                     timing=timing, name=name, shape=shape, seed=seed, tolerance=tolerance,
                                     canonical=canonical, timeout_s=timeout_s, matmul_precision=matmul_precision)
        result = _measure(case, spec, timeout_s, _profile_dir(profile))
        if notes:
            result = replace(result, notes=result.notes + tuple(notes))
        _check_agreement(result)
        return result
    except JaxCompareError as exc:
        raise exc.with_traceback(None) from None  # one sentence, not our call stack


def _compare_ports(numpy_fn: Callable[..., Any], ports: Mapping[str, Callable[..., Any]], inputs: tuple[Any, ...],
                   *, timeout_s: float | None, profile: bool | str | os.PathLike[str], name: str | None,
                   **request: Any) -> PortsResult:
    """compare() with a dict of ports: one Case naming them all (the first the default), measured port by
    port (Case.for_port in the worker), then the race (analysis/ports)."""
    try:
        if not ports or not all(isinstance(port, str) for port in ports):
            raise BadInput("jax_fn as a dict names each port by a string, at least one: {\"jnp\": f, \"scan\": g}")
        (first, first_fn), *others = ports.items()
        _check_callable(first_fn, f"jax_fn[{first!r}]")
        case, spec, notes = _request(numpy_fn, first_fn, inputs, name=name, timeout_s=timeout_s, **request)
        for port, fn in others:
            _check_callable(fn, f"jax_fn[{port!r}]")
        case = replace(case, default_port=first,
                       ports=tuple(Port(port, fn, jax_name=_fn_name(fn)) for port, fn in others))
        profile_dir = _profile_dir(profile)
        runs = []
        race = f"ports-{uuid.uuid4().hex}"  # one owner for the race: its later ports run on the first's device
        for index, port in enumerate(case.port_names):
            try:
                result = _measure(case, replace(spec, port=port), timeout_s, profile_dir, owner=race, sticky=index > 0)
            except JaxCompareError as exc:  # its line, and on to the next port (BadInput was raised above)
                runs.append(PortRun(port, error=error_first_line(str(exc))))
                continue
            runs.append(PortRun(port, replace(result, notes=result.notes + tuple(notes)) if notes else result))
        return PortsResult(ports_verdict(runs, case=case.name, shape=spec.shape, precision=spec.precision))
    except JaxCompareError as exc:
        raise exc.with_traceback(None) from None


def sweep(numpy_fn: Callable[..., Any], jax_fn: Callable[..., Any] | Mapping[str, Callable[..., Any]],
          make_inputs: Callable[..., Any],
          sizes: Sequence[int | str | Sequence[int]], *, ndim: int = 2, precision: str = "x32",
          device: str = "auto", timing: str | TimingConfig = "careful", name: str | None = None,
          seed: int = 0, tolerance: float = 1.0, canonical: Callable[..., Any] | None = None,
          timeout_s: float | None = None, profile: bool | str | os.PathLike[str] = False,
          matmul_precision: str = "default") -> SweepResult | dict[str, SweepResult]:
    """Measure the pair at each of ``sizes``, smallest first, and find the crossover: the size
    where JAX starts to win. A plain size n means n along each of ``ndim`` axes (n x n by
    default); a shape ("300x300" or (300, 300)) is taken as it is. ``jax_fn`` as a dict of ports
    (as compare() takes it): every port at each size, and a SweepResult per port, each with its own
    crossover; a port that did not run or disagreed at a size has no point there."""
    try:
        shapes = _sweep_shapes(sizes, ndim)
        _check_callable(make_inputs, "make_inputs")
        options = dict(precision=precision, device=device, timing=timing, name=name, seed=seed,
                       tolerance=tolerance, canonical=canonical, timeout_s=timeout_s, profile=profile,
                       matmul_precision=matmul_precision)
        if isinstance(jax_fn, Mapping):
            points: dict[str, list[NotebookResult]] = {port: [] for port in jax_fn}
            for shape in shapes:
                race = compare(numpy_fn, jax_fn, make_inputs, shape=shape, **options)  # type: ignore[arg-type]
                for run in race.verdict.runs:  # type: ignore[union-attr]
                    if run.result is not None and run.result.jax.agreement.get("ok", True):
                        points[run.name].append(run.result)
            return {port: SweepResult(tuple(found), crossover(found)) for port, found in points.items() if found}
        results = [compare(numpy_fn, jax_fn, make_inputs, shape=shape, **options) for shape in shapes]  # type: ignore[arg-type]
        return SweepResult(tuple(results), crossover(results))  # type: ignore[arg-type]
    except JaxCompareError as exc:
        raise exc.with_traceback(None) from None


def versions(numpy_fn: Callable[..., Any], jax_fn: Callable[..., Any], *inputs: Any, jax: Sequence[str],
             precision: str = "x32", device: str = "auto", timing: str | TimingConfig = "careful",
             name: str | None = None, shape: Sequence[int] | str | None = None, seed: int = 0,
             tolerance: float = 1.0, canonical: Callable[..., Any] | None = None, rounds: int = 2,
             timeout_s: float | None = None, quiet: bool = False, matmul_precision: str = "default") -> dict[str, Any]:
    """``compare()`` under each JAX version in ``jax`` (each in its own cached environment, like
    ``jaxcompare versions``); returns the same record as ``versions --json`` (docs/json.md). The
    functions are cloudpickled to each version's worker, so they may use only what that JAX has.
    A version that cannot be installed is listed under "unavailable"; the others still run."""
    from ..analysis.versions import versions_document
    from ..engine import measure_versions

    try:
        case, spec, _notes = _request(numpy_fn, jax_fn, inputs, precision=precision, device=device,
                                      timing=timing, name=name, shape=shape, seed=seed, tolerance=tolerance,
                                      canonical=canonical, timeout_s=timeout_s, matmul_precision=matmul_precision)
        if isinstance(jax, str) or not jax:
            raise BadInput("jax= takes a list of versions, e.g. jax=['0.4.35', '0.10.2']")
        report = None if quiet else (lambda message, fraction: print(f"[{fraction:4.0%}] {message}", file=sys.stderr))
        runs = measure_versions(spec, list(jax), rounds=rounds, timeout_s=timeout_s, progress=report, case=case)
        return versions_document(runs, rounds, sys.executable)
    except JaxCompareError as exc:
        raise exc.with_traceback(None) from None


def shutdown() -> None:
    """Stop the worker processes compare() and sweep() started (also done at exit); the next
    call starts fresh ones."""
    global _runner
    with _lock:
        runner, _runner = _runner, None
    if runner is not None:
        runner.close()


def runner() -> Runner:
    """The Runner compare() and sweep() use, started on first use."""
    global _runner
    with _lock:
        if _runner is None:
            _runner = Runner()
            atexit.unregister(shutdown)  # once, however often shutdown() and a new Runner alternate
            atexit.register(shutdown)
        return _runner


def current_job() -> Job | None:
    """The job compare() is waiting on now, if any (for progress displays and tests)."""
    return _current


# --- outputs that may legitimately differ --------------------------------------------------------
def _unwrap(fn: Any) -> Any:
    while isinstance(fn, Labelled | functools.partial):
        fn = fn.fn if isinstance(fn, Labelled) else fn.func
    return fn


def _known_canonical(numpy_fn: Any) -> Callable[..., Any] | None:
    """The invariants for NumPy's decompositions whose outputs are unique only up to signs."""
    return {np.linalg.svd: svd_invariants, np.linalg.eigh: eigh_invariants,
            np.linalg.qr: qr_invariants}.get(_unwrap(numpy_fn))


def _numpy_computes_in(numpy_fn: Any) -> str | None:
    """numpy.linalg computes float32 inputs in float64 and rounds the result back; the checklist's
    Matched precision check says so."""
    module = getattr(_unwrap(numpy_fn), "__module__", "") or ""
    return "float64" if module.startswith("numpy.linalg") else None


class Labelled:
    """A function that a result names by the text it was written as ("np.linalg.svd(x)"), as the
    magic does; its ``__name__`` stays the function's own, for the default case name."""

    def __init__(self, fn: Callable[..., Any], text: str) -> None:
        self.fn = fn
        self.__name__ = _short_name(fn)
        self.__qualname__ = text
        self.__module__ = "__main__"

    def __call__(self, *args: Any) -> Any:
        return self.fn(*args)


# --- the request ---------------------------------------------------------------------------
def _request(numpy_fn: Any, jax_fn: Any, inputs: tuple[Any, ...], *, precision: str, device: str,
             timing: str | TimingConfig, name: str | None, shape: Any, seed: int, tolerance: float,
             canonical: Callable[..., Any] | None, timeout_s: float | None,
             matmul_precision: str = "default") -> tuple[Case, Spec, list[str]]:
    """Validate everything in this process and build the Case and Spec the worker needs."""
    _check_callable(numpy_fn, "numpy_fn")
    _check_callable(jax_fn, "jax_fn")
    if precision not in PRECISIONS:
        raise BadInput(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
    timing_cfg = timing if isinstance(timing, TimingConfig) else TimingConfig.preset(timing)
    if (isinstance(tolerance, bool) or not isinstance(tolerance, int | float) or not math.isfinite(tolerance)
            or tolerance <= 0):
        raise BadInput(f"tolerance must be a positive number (a factor on the default), got {tolerance!r}")
    if timeout_s is not None and (isinstance(timeout_s, bool) or not isinstance(timeout_s, int | float)
                                  or not math.isfinite(timeout_s) or timeout_s <= 0):
        raise BadInput(f"timeout_s must be a positive number of seconds, got {timeout_s!r}")
    notes: list[str] = []
    if not inputs:
        raise BadInput("give the inputs: NumPy arrays after the two functions, or make_inputs with shape=")
    if len(inputs) == 1 and callable(inputs[0]) and not _is_array(inputs[0]):
        if shape is None:
            raise BadInput("make_inputs needs shape=, e.g. shape=(1000, 1000)")
        make_inputs, shape_rule = inputs[0], any_shape
        spec_shape = parse_shape(shape if not isinstance(shape, int) else [shape])
    else:
        if shape is not None:
            raise BadInput("shape= goes with make_inputs; the arrays given have their own shapes")
        arrays, notes = _arrays(inputs, precision)
        given = GivenInputs(arrays)
        make_inputs, shape_rule, spec_shape = given, given.shape_rule, given.shape
    if canonical is not None:
        _check_callable(canonical, "canonical")
    case = Case(name=name or _default_name(numpy_fn, jax_fn), numpy_fn=numpy_fn, jax_fn=jax_fn,
                make_inputs=make_inputs, numpy_name=_fn_name(numpy_fn), jax_name=_fn_name(jax_fn),
                shape_rule=shape_rule, tolerance=float(tolerance), source=NOTEBOOK,
                canonical=canonical or _known_canonical(numpy_fn) or default_canonical,
                numpy_computes_in=_numpy_computes_in(numpy_fn))
    case.check_shape(spec_shape)
    spec = Spec(case=case.name, shape=spec_shape, precision=precision, device=device, seed=seed,
                timing=timing_cfg, matmul_precision=matmul_precision)
    return case, spec, notes


def _check_callable(fn: Any, label: str) -> None:
    if not callable(fn) or _is_array(fn):
        hint = (": pass the function itself (np.sin), not its result (np.sin(x))"
                if _is_array(fn) or isinstance(fn, int | float | complex | tuple) else "")
        raise BadInput(f"{label} must be a function, got {describe(fn)}{hint}")


def describe(x: Any) -> str:
    """'a NumPy array', 'a JAX array', 'a list', 'an int': what a message says was given."""
    if isinstance(x, np.ndarray):
        return "a NumPy array"
    if _is_array(x):
        return "a JAX array"
    what = type(x).__name__
    return f"{'an' if what[:1].lower() in 'aeiou' else 'a'} {what}"


def _is_array(x: Any) -> bool:
    """A NumPy array, or a JAX array (recognised without importing JAX here)."""
    if isinstance(x, np.ndarray):
        return True
    jax = sys.modules.get("jax")
    return jax is not None and isinstance(x, getattr(jax, "Array", ()))


def _arrays(inputs: tuple[Any, ...], precision: str) -> tuple[tuple[np.ndarray, ...], list[str]]:
    """The inputs as NumPy arrays of the precision's dtype; a note for each one cast."""
    dtype = np.dtype(DTYPES[precision])
    arrays, cast = [], []
    for i, x in enumerate(inputs, start=1):
        if not _is_array(x):
            raise BadInput(f"input {i} is {describe(x)}, not an array: give NumPy arrays "
                           "(np.asarray(...)), or make_inputs with shape=")
        arr = np.asarray(x)
        if arr.dtype.kind != "f":
            raise BadInput(f"input {i} is an array of {arr.dtype}; compare() measures float arrays "
                           f"({dtype} for {precision}): cast it, or build it inside both functions")
        if arr.ndim > MAX_DIMS:
            raise BadInput(f"input {i} has {arr.ndim} dimensions; at most {MAX_DIMS}")
        if arr.dtype != dtype:
            cast.append(f"input {i} was {arr.dtype}")
            arr = arr.astype(dtype)
        arrays.append(arr)
    if all(a.ndim == 0 for a in arrays):
        raise BadInput("every input is a scalar (a 0-d array): give at least one array with a shape")
    if any(a.size == 0 for a in arrays):
        raise BadInput("an input is empty (it has a zero-length axis): nothing to measure")
    notes = []
    if cast:
        other = "x64" if precision == "x32" else "x32"
        notes.append(f"{'; '.join(cast)}: cast to {dtype} for {precision}, as both sides run at the same "
                     f"precision (precision=\"{other}\" measures {DTYPES[other]})")
    return tuple(arrays), notes


_AFFIXES = (("np_", "numpy_", "jnp_", "jax_"), ("_np", "_numpy", "_jnp", "_jax"))


def _short_name(fn: Any) -> str:
    if isinstance(fn, functools.partial):
        fn = fn.func
    name = getattr(fn, "__name__", None) or type(fn).__name__
    return "lambda" if name == "<lambda>" else name


def _stem(name: str) -> str:
    for prefix in _AFFIXES[0]:
        if name.startswith(prefix) and len(name) > len(prefix):
            return name[len(prefix):]
    for suffix in _AFFIXES[1]:
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return name


def _default_name(numpy_fn: Any, jax_fn: Any) -> str:
    """'svd' for np.linalg.svd and jnp.linalg.svd; 'gram' for np_gram and jax_gram;
    otherwise 'a vs b'."""
    a, b = _short_name(numpy_fn), _short_name(jax_fn)
    if a == b:
        return a
    if _stem(a) == _stem(b):
        return _stem(a)
    return f"{a} vs {b}"


def _fn_name(fn: Any) -> str:
    """How a function is named in the result: its dotted name, without ``__main__.``."""
    module = getattr(fn, "__module__", None) or ""
    if isinstance(fn, functools.partial):
        return f"partial({_fn_name(fn.func)})"
    qual = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__
    return qual if module in ("", "__main__") else f"{module}.{qual}"


def _sweep_shapes(sizes: Any, ndim: int) -> list[tuple[int, ...]]:
    if isinstance(sizes, str | int) or not isinstance(sizes, Sequence) or not sizes:
        raise BadInput("sizes must be a non-empty list, e.g. sizes=[100, 300, 1000]")
    if isinstance(ndim, bool) or not isinstance(ndim, int) or not 1 <= ndim <= MAX_DIMS:
        raise BadInput(f"ndim must be a whole number from 1 to {MAX_DIMS}, got {ndim!r}")
    shapes = []
    for size in sizes:
        if isinstance(size, numbers.Real) and not isinstance(size, bool):  # NumPy's integers too
            if not float(size).is_integer():
                raise BadInput(f"sizes must be whole numbers (or shapes like '100x200'), got {size!r}")
            shapes.append(parse_shape([int(size)] * ndim))
        else:
            shapes.append(parse_shape(size))
    return sorted(set(shapes), key=math.prod)


# --- running -------------------------------------------------------------------------------
def _profile_dir(profile: bool | str | os.PathLike[str]) -> str | None:
    """Where compare(profile=...) writes its traces: None (no profile), the traces folder beside
    the History database (True), or the folder given."""
    if profile is False or profile is None:
        return None
    if profile is True:
        return str(traces_dir())
    if isinstance(profile, str | os.PathLike) and os.fspath(profile).strip():
        return os.fspath(profile)
    raise BadInput(N_("profile must be True, False or a folder, got {value!r}").format(value=profile))


def _measure(case: Case, spec: Spec, timeout_s: float | None, profile_dir: str | None = None,
             owner: str | None = None, sticky: bool = False) -> NotebookResult:
    """Queue the job and wait for it; Ctrl-C cancels it (its worker is restarted) and re-raises. ``owner`` and
    ``sticky``: a race's later ports on its first's device (Runner.submit)."""
    global _current
    job = runner().submit(spec, case=case, timeout_s=timeout_s, profile_dir=profile_dir, owner=owner,
                          sticky=sticky)
    _current = job
    try:
        while not job.finished_within(_POLL_S):
            pass
    except KeyboardInterrupt:
        job.cancel()
        job.finished_within(_CANCEL_WAIT_S)
        raise
    finally:
        _current = None
    return NotebookResult.of(job.wait(0))


def _check_agreement(result: NotebookResult) -> None:
    a = result.jax.agreement
    if a.get("ok"):
        return
    with i18n.using(i18n.SOURCE_LANGUAGE):  # an exception's text is English, as the rest of the API's
        unlike = outputs_unlike(a)
    what = unlike or (f"largest relative error {a['max_rel_err']:.3g} against a tolerance of {a['rtol']:.0e}")
    raise OutputsDisagree(
        f"numpy_fn and jax_fn disagree at {format_shape(result.shape)} ({result.precision}): {what}; check that both "
        "compute the same thing (the measurement is on this error's .result; tolerance= loosens the check)", result)
