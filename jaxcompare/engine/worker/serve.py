"""The code that runs inside a worker process: one long-lived process per precision mode
(and per device, when the server measures on several).

``jax_enable_x64`` is process-global in practice, so the mode is fixed when the worker
starts (a fresh interpreter, never forked after importing JAX) and never toggled afterwards.
The server starts it with ``python -c`` (engine/server/process.py) and talks to it over a socket.
"""

from __future__ import annotations

import importlib
import os
import threading
import time
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

from ...i18n import N_
from ..common.requests import (
    ListCasesRequest,
    MeasureRequest,
    NoRequest,
    PitfallsRequest,
    SelfCheckRequest,
    SpecRequest,
)

_conn: Connection | None = None
_send_lock = threading.Lock()
_precision: str | None = None


def init_worker(precision: str, device: str | None = None) -> list[str]:
    """Set the environment before JAX is imported, then configure it; ``device``
    ('cpu:1', 'gpu:0') pins this worker's measurements to one device. Returns the platforms it
    opened: the runner learns from them whether another process may open the device beside it."""
    global _precision
    # stdout belongs to the parent (``--json -`` promises one document there): anything a
    # library prints in the worker goes to stderr instead.
    try:
        os.dup2(2, 1)
    except OSError:
        pass
    os.environ["JAX_ENABLE_X64"] = "1" if precision == "x64" else "0"
    # Two workers (x32 and x64) share one GPU: never let either grab 75% up front.
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    from .environment import pin_device, present_platforms, quiet_backend_start

    with quiet_backend_start():
        import jax

        jax.config.update("jax_enable_x64", precision == "x64")
        # A persistent cache would turn "cold compile" into a disk read.
        jax.config.update("jax_enable_compilation_cache", False)
        # Opening the backend here (not at the first job) takes a single-holder device now, so a
        # device held by another program fails the start with its own words.
        jax.devices()
        platforms = sorted(present_platforms())
    if device:
        jax.config.update("jax_default_device", pin_device(device))
    _precision = precision
    return platforms


# The parent has gone (its end of the socket closed: the CLI stopped by Ctrl-C, a server shut down):
# nobody is left to read a reply or an error, so the worker ends quietly rather than print a traceback.
PARENT_GONE = (BrokenPipeError, ConnectionResetError, EOFError)


def _send(message: tuple[Any, ...]) -> None:
    if _conn is not None:
        with _send_lock:
            _conn.send(message)


def _report(job_id: str, phase: str, fraction: float) -> None:
    try:
        _send(("progress", job_id, phase, float(fraction)))
    except PARENT_GONE:
        # Measuring on for no one would hold the device (a TPU chip) until the step ends: stop now.
        # os._exit from any thread, and no cleanup to wait for: the process's memory and devices go with it.
        os._exit(0)
    except Exception:  # progress is best effort; the measurement is not
        pass


def _error_message(exc: BaseException) -> tuple[Any, ...]:
    """An error as the parent may read it: jaxcompare's own errors as they are, anything
    else (a user's exception class may not unpickle) as text."""
    from ...model.errors import JaxCompareError

    trace = traceback.format_exc()
    text = f"{type(exc).__name__}: {exc}"
    return ("error", exc if isinstance(exc, JaxCompareError) else None, text, trace)


def serve(fd: int) -> None:
    """The worker's main loop: set up, say ready, then run one step per message until the
    parent goes away (the socket closes): then it returns quietly, whatever it was doing."""
    global _conn
    _conn = Connection(fd)
    try:
        _serve()
    except PARENT_GONE:
        return


def _serve() -> None:
    assert _conn is not None
    try:
        platforms = init_worker(os.environ.get("JAXCOMPARE_WORKER_PRECISION", "x32"),
                                os.environ.get("JAXCOMPARE_WORKER_DEVICE") or None)
    except BaseException as exc:
        _send(_error_message(exc))
        return
    _send(("ready", os.getpid(), platforms))
    while True:
        try:
            message = _conn.recv()
        except OSError:  # a socket closed under it: the parent has gone too
            return
        _, job_id, target, args = message
        try:
            envelope = run_target(job_id, target, *args)
        except BaseException as exc:
            reply = _error_message(exc)
        else:
            reply = ("done", envelope)
        try:
            _send(reply)
        except PARENT_GONE:
            raise
        except Exception as exc:  # an unpicklable value or error: say so rather than hang the parent
            text = N_("the worker could not send its reply: {error_type}: {error}").format(
                error_type=type(exc).__name__, error=exc)
            _send(("error", None, text, traceback.format_exc()))


Report = Callable[[str, float], None]


def run_measurement(request: MeasureRequest, report: Report) -> dict[str, Any]:
    """Measure one Spec; returns the Result as a dict."""
    from ..common.fresh import FreshCall
    from ..common.shipping import unpack_case
    from .measure import measure

    spec, options = request.spec, request.options
    if spec.precision != _precision:
        raise RuntimeError(f"job for {spec.precision} sent to the {_precision} worker")
    case = unpack_case(options.case_bytes, spec.case) if options.case_bytes is not None else None
    first_calls = None if options.first_calls is None else tuple(FreshCall(**c) for c in options.first_calls)
    return measure(spec, progress=report, case=case, profile_dir=options.profile_dir,
                   first_calls=first_calls).to_dict()


def run_pitfalls(request: PitfallsRequest, report: Report) -> dict[str, Any]:
    from ..common.fresh import FreshProcesses
    from .pitfalls import measure_pitfalls

    return measure_pitfalls(request.spec, tuple(request.sections), progress=report,
                            fresh=None if request.fresh is None else FreshProcesses.from_dict(request.fresh))


def run_fair_float64(request: SpecRequest, report: Report) -> dict[str, Any]:
    from .pitfalls import fair_float64

    report("dtype (float64 worker)", 0.95)
    return fair_float64(request.spec)


def run_environment(request: NoRequest, report: Report) -> dict[str, Any]:
    from .environment import collect

    return collect()


def run_list_cases(request: ListCasesRequest, report: Report) -> list[dict[str, Any]]:
    """Load a user's cases file here, never in the server, and describe its cases (names,
    titles, groups, shapes): what the app and the CLI list and look up."""
    from ...catalog import all_cases

    report("loading the cases file", 0.0)
    return [c.summary() for c in all_cases(request.cases_file) if c.cases_file is not None]


def run_selfcheck(request: SelfCheckRequest, report: Report) -> list[dict[str, Any]]:
    """Agreement of each case at its small shape (no timing)."""
    from ...catalog import all_cases
    from .selfcheck import check_case

    names = request.names
    cases = [c for c in all_cases(request.cases_file) if names is None or c.name in names]
    out = []
    for i, case in enumerate(cases):
        report(case.name, i / max(len(cases), 1))
        out.append(check_case(case, precision=_precision or "x32"))
    return out


def run_target(job_id: str, target: str, request: Any) -> dict[str, Any]:
    """Run one step: ``target`` names its function as ``module:function`` (a job kind's, server/job_kinds.py),
    called with the step's request and a progress callback; its value goes back with the time window
    it ran in and this process's id."""
    module, _, name = target.partition(":")
    function = getattr(importlib.import_module(module), name)
    started = time.time()
    value = function(request, lambda phase, fraction: _report(job_id, phase, fraction))
    return {"result": value, "window": (started, time.time()), "pid": os.getpid()}
