"""Fresh processes that time one first call each: what a restarted app pays (pitfall 7, with and
without JAX's persistent compilation cache), and a measurement's first call as a user's %time pays it.
They are started from here with their own interpreter and environment (``python -c``, as
server/process.py starts workers): by a worker, or by the runner while a device one process at a time
may hold is free of workers (server/job_kinds.py). The child (worker/restart.py) imports JAX, builds the
case's inputs, times one first jitted call and prints a JSON report; nothing here imports JAX.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from ...i18n import N_
from ...model.cases import Case
from ...model.errors import JobFailed
from ...model.platforms import backend_error_line
from ...model.spec import Spec
from .child import start_child
from .load import LoadMeter

# A child imports JAX and, on a GPU, creates its client: seconds, more on a busy machine.
CHILD_TIMEOUT_S = 180.0
# A user's own cache settings would turn the cold process into a cache hit.
CACHE_ENV = ("JAX_COMPILATION_CACHE_DIR", "JAX_ENABLE_COMPILATION_CACHE",
             "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES")
# The child's module (worker/restart.py), named and never imported here: it imports JAX.
CHILD = "jaxcompare.engine.worker.restart"
PROCESS_NAMES = {None: N_("without a cache"), "empty": N_("with an empty cache"), "filled": N_("with the filled cache")}


@dataclass(frozen=True)
class FreshCall:
    """One fresh process's first call: the whole call (trace, lower, compile or cache read,
    run), the compile step alone, the process's start (spawn until JAX's backend is up) and
    what the persistent cache saw; and the matmul precision it ran at (the Spec's)."""

    first_call_s: float
    compile_s: float | None
    start_s: float
    cache_hits: int
    cache_misses: int
    # XLA compiles the process ran before the timed call: 0, or the call was not its first.
    compiled_before: int = 0
    matmul_precision: str = "default"


@dataclass(frozen=True)
class FreshProcesses:
    """Pitfall 7's processes, in the order they ran: the one that filled an empty cache (and the
    cache files it wrote), then in turns one without a cache and one with the filled cache; and how
    busy the machine was meanwhile (``load``: the LoadMeter's to_dict, its one phase "cache"; {}
    where not measured), read where they ran: in the worker, or in the runner for a single-holder device."""

    fill: FreshCall
    entries: int
    cold: tuple[FreshCall, ...]
    hit: tuple[FreshCall, ...]
    load: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"fill": asdict(self.fill), "entries": self.entries, "cold": [asdict(c) for c in self.cold],
                "hit": [asdict(c) for c in self.hit], "load": self.load}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FreshProcesses:
        return cls(FreshCall(**data["fill"]), int(data["entries"]), tuple(FreshCall(**c) for c in data["cold"]),
                   tuple(FreshCall(**c) for c in data["hit"]), dict(data.get("load") or {}))


def fresh_processes(spec: Spec, pairs: int, *, env: dict[str, str] | None = None,
                    on_start: Callable[[int, int], None] | None = None) -> FreshProcesses:
    """Run pitfall 7's 1 + 2 x ``pairs`` fresh processes one after another (in a worker, or in the
    runner while a single-holder device's worker lets go of it). ``env``: the children's
    environment (default: this process's); ``on_start(i, n)`` before each (it may raise to stop)."""
    total = 1 + 2 * pairs
    count = iter(range(total))

    def call(cache_dir: str | None, state: str | None = None) -> FreshCall:
        if on_start is not None:
            on_start(next(count), total)
        return fresh_first_call(spec, cache_dir, state, env=env)

    cold: list[FreshCall] = []
    hit: list[FreshCall] = []
    # The children are this process's, so the meter counts their CPU as ours, not as others'.
    meter = LoadMeter()
    with tempfile.TemporaryDirectory(prefix="jaxcompare-cache-", ignore_cleanup_errors=True) as folder, \
            meter.phase("cache"):
        fill = call(folder, "empty")
        entries = len(os.listdir(folder))
        for _ in range(pairs):
            cold.append(call(None))
            hit.append(call(folder, "filled"))
    return FreshProcesses(fill, entries, tuple(cold), tuple(hit), meter.to_dict())


def fresh_first_call(spec: Spec, cache_dir: str | None, state: str | None = None, *,
                     timeout_s: float = CHILD_TIMEOUT_S, env: dict[str, str] | None = None,
                     case: Case | None = None, label: str = N_("pitfall 7")) -> FreshCall:
    """Start a fresh process of this interpreter, with this worker's environment (JAX_PLATFORMS,
    the pinned device; or ``env``) and precision, and time its first call of ``spec``'s case; with
    ``cache_dir``, JAX's persistent cache reads and writes there. ``case``: sent by value (a
    notebook's functions) instead of looked up by name. ``state`` names the cache and ``label``
    the caller in errors (PROCESS_NAMES). A failing child is a JobFailed of one line."""
    env = {k: v for k, v in (os.environ if env is None else env).items() if k not in CACHE_ENV}
    env["JAX_ENABLE_X64"] = "1" if spec.precision == "x64" else "0"
    request = json.dumps({"spec": spec.to_dict(), "cache_dir": cache_dir, "case_on_stdin": case is not None})
    payload = None
    if case is not None:
        import cloudpickle

        payload = cloudpickle.dumps(case)
    which = PROCESS_NAMES[state if cache_dir else None]
    spawned_ns = time.monotonic_ns()  # CLOCK_MONOTONIC: one clock for every process on the host
    try:
        report = start_child(CHILD, request, env=env, payload=payload, timeout_s=timeout_s)
    except subprocess.TimeoutExpired:
        raise JobFailed(N_("{label}: the fresh process {which} did not finish within {timeout_s:g} s").format(
            label=label, which=which, timeout_s=timeout_s)) from None
    except OSError as exc:
        raise JobFailed(N_("{label}: the fresh process {which} could not be started: {error}").format(
            label=label, which=which, error=exc)) from None
    if "error" in report:
        error = backend_error_line(report["error"]) or report["error"]
        raise JobFailed(N_("{label}: the fresh process {which} failed: {error}").format(
            label=label, which=which, error=error))
    return FreshCall(first_call_s=report["first_call_s"], compile_s=report["compile_s"],
                     start_s=(report["ready_ns"] - spawned_ns) / 1e9, cache_hits=report["cache_hits"],
                     cache_misses=report["cache_misses"], compiled_before=report.get("compiled_before", 0),
                     matmul_precision=report.get("matmul_precision", "default"))
