"""The code that runs inside a worker process: one long-lived process per precision mode.

``jax_enable_x64`` is process-global in practice, so the mode is fixed when the worker
starts (spawned, never forked after importing JAX) and never toggled afterwards.
"""

from __future__ import annotations

import os
import time
from typing import Any

_progress_queue: Any = None
_precision: str | None = None


def init_worker(precision: str, progress_queue: Any, env: dict[str, str]) -> None:
    """Pebble initializer: set the environment before JAX is imported, then configure it."""
    global _progress_queue, _precision
    # stdout belongs to the parent (``--json -`` promises one document there): anything a
    # library prints in the worker goes to stderr instead.
    try:
        os.dup2(2, 1)
    except OSError:
        pass
    os.environ.update(env)
    os.environ["JAX_ENABLE_X64"] = "1" if precision == "x64" else "0"
    # Two workers (x32 and x64) share one GPU: never let either grab 75% up front.
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    import jax

    jax.config.update("jax_enable_x64", precision == "x64")
    # A persistent cache would turn "cold compile" into a disk read.
    jax.config.update("jax_enable_compilation_cache", False)
    _progress_queue = progress_queue
    _precision = precision


def _report(job_id: str, phase: str, fraction: float) -> None:
    if _progress_queue is not None:
        try:
            _progress_queue.put_nowait((job_id, phase, float(fraction)))
        except Exception:  # progress is best effort; the measurement is not
            pass


def run_measurement(job_id: str, spec_dict: dict[str, Any], case_bytes: bytes | None = None,
                    profile_dir: str | None = None) -> dict[str, Any]:
    """Measure one Spec; returns the Result as a dict plus the worker-side time window.
    ``case_bytes``: a Case sent with the job (engine/shipping.py), measured instead of the catalog's.
    ``profile_dir``: also trace a few calls into that folder, after the timed phases."""
    from ..model.spec import Spec
    from .measure import measure
    from .shipping import unpack_case

    spec = Spec.from_dict(spec_dict)
    if spec.precision != _precision:
        raise RuntimeError(f"job for {spec.precision} sent to the {_precision} worker")
    case = unpack_case(case_bytes, spec.case) if case_bytes is not None else None
    started = time.time()
    result = measure(spec, progress=lambda phase, frac: _report(job_id, phase, frac), case=case,
                     profile_dir=profile_dir)
    return {"result": result.to_dict(), "window": (started, time.time()), "pid": os.getpid()}


def run_pitfalls(job_id: str, spec_dict: dict[str, Any], sections: tuple[str, ...]) -> dict[str, Any]:
    from ..model.spec import Spec
    from .pitfalls import measure_pitfalls

    started = time.time()
    report = measure_pitfalls(Spec.from_dict(spec_dict), tuple(sections),
                              progress=lambda phase, frac: _report(job_id, phase, frac))
    return {"result": report, "window": (started, time.time()), "pid": os.getpid()}


def run_fair_float64(job_id: str, spec_dict: dict[str, Any]) -> dict[str, Any]:
    from ..model.spec import Spec
    from .pitfalls import fair_float64

    started = time.time()
    _report(job_id, "dtype (float64 worker)", 0.95)
    return {"result": fair_float64(Spec.from_dict(spec_dict)), "window": (started, time.time()),
            "pid": os.getpid()}


def run_environment(job_id: str) -> dict[str, Any]:
    from .environment import collect

    started = time.time()
    return {"result": collect(), "window": (started, time.time()), "pid": os.getpid()}


def run_selfcheck(job_id: str, names: list[str] | None, cases_file: str | None) -> dict[str, Any]:
    """Agreement of each case at its small shape (no timing)."""
    from ..catalog import all_cases
    from .selfcheck import check_case

    started = time.time()
    out = []
    cases = [c for c in all_cases(cases_file) if names is None or c.name in names]
    for i, case in enumerate(cases):
        _report(job_id, case.name, i / max(len(cases), 1))
        out.append(check_case(case, precision=_precision or "x32"))
    return {"result": out, "window": (started, time.time()), "pid": os.getpid()}

