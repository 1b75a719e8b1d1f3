"""Runs jobs in worker processes: one worker per precision, one queue for the device.
Runs in the server/CLI process and never imports JAX; the work itself is in worker.py.

All jobs from all callers (app sessions, the CLI) go through one FIFO queue served by one
dispatcher thread, so two measurements never overlap and spoil each other's timings.
Workers are Pebble process pools of one process: a job past its deadline, or a cancelled
running job, kills the worker and Pebble starts a fresh one.
"""

from __future__ import annotations

import itertools
import logging
import multiprocessing
import os
import queue
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from concurrent.futures import CancelledError, wait
from dataclasses import dataclass, field
from typing import Any

from pebble import ProcessExpired, ProcessPool

from ..model.cases import Case
from ..model.errors import BadInput, JaxCompareError, JobFailed
from ..model.result import Result
from ..model.spec import PRECISIONS, Spec
from . import worker
from .settings import RateLimiter, Settings, preflight
from .shipping import pack_case

log = logging.getLogger("jaxcompare.runner")

_spawn_lock = threading.Lock()


class _WorkerProcess(multiprocessing.context.SpawnProcess):
    """A spawned process that does not re-run the parent's ``__main__``.

    Streamlit installs the running page as ``sys.modules["__main__"]``; plain spawn would
    execute that page again in every worker (which would then build its own Runner).
    Workers need only jaxcompare.engine.worker, so the main-module entries are dropped from the
    spawn preparation data, for our processes only, while one is being started."""

    @staticmethod
    def _Popen(process_obj: Any) -> Any:
        from multiprocessing import spawn

        with _spawn_lock:
            original = spawn.get_preparation_data

            def without_main(name: str) -> dict[str, Any]:
                data = original(name)
                data.pop("init_main_from_path", None)
                data.pop("init_main_from_name", None)
                return data

            spawn.get_preparation_data = without_main
            try:
                return multiprocessing.context.SpawnProcess._Popen(process_obj)
            finally:
                spawn.get_preparation_data = original


class _WorkerContext(multiprocessing.context.SpawnContext):
    Process = _WorkerProcess

_POLL_S = 0.05


@dataclass(frozen=True)
class Step:
    """One call into a worker: which precision's worker, which function, what arguments."""

    precision: str
    target: str
    args: tuple[Any, ...] = ()


class Cancelled(JobFailed):
    """The job's owner cancelled it."""


TARGETS: dict[str, Callable[..., Any]] = {
    "measure": worker.run_measurement,
    "environment": worker.run_environment,
    "selfcheck": worker.run_selfcheck,
    "pitfalls": worker.run_pitfalls,
    "fair_float64": worker.run_fair_float64,
}


@dataclass
class Job:
    """A queued unit of work (one or more worker steps run back to back, never interleaved
    with another job); its fields are updated by the runner's threads."""

    kind: str
    steps: tuple[Step, ...]
    timeout_s: float
    spec: Spec | None = None
    owner: str | None = None
    id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    status: str = "queued"  # queued, running, done, failed, cancelled
    phase: str = "queued"
    progress: float = 0.0
    submitted_at: float = field(default_factory=time.time)
    started_at: float | None = None
    finished_at: float | None = None
    window: tuple[float, float] | None = None
    worker_pid: int | None = None
    value: Any = None
    error: JaxCompareError | None = None
    _done: threading.Event = field(default_factory=threading.Event, repr=False)
    _cancel: threading.Event = field(default_factory=threading.Event, repr=False)

    @property
    def precision(self) -> str:
        return self.steps[0].precision

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def cancel(self) -> None:
        """Ask to cancel: a queued job is dropped, a running one has its worker stopped."""
        self._cancel.set()

    def finished_within(self, timeout: float) -> bool:
        """Wait at most ``timeout`` s; True once finished. Short waits in a loop let a caller's
        Ctrl-C through (a long lock wait may not see it until the job ends)."""
        return self._done.wait(timeout)

    def wait(self, timeout: float | None = None) -> Any:
        """Block until finished; return the value or raise the job's error."""
        if not self._done.wait(timeout):
            raise JobFailed(f"job {self.id} did not finish within {timeout} s of waiting")
        if self.error is not None:
            raise self.error
        return self.value


class Runner:
    """Thread-safe front door to the workers; share one per process."""

    def __init__(self, *, timeout_s: float | None = None, worker_env: dict[str, str] | None = None,
                 settings: Settings | None = None):
        self.settings = settings or Settings.from_env()
        self.timeout_s = timeout_s or self.settings.job_timeout_s
        # Per owner (app session): a sweep counts once, its later points pass rate_limited=False.
        self._rate = RateLimiter(self.settings.max_jobs_per_minute)
        self._worker_env = dict(worker_env or {})
        self._ctx = _WorkerContext()
        self._progress: Any = self._ctx.Queue()
        self._pools: dict[str, ProcessPool] = {}
        self._queue: deque[Job] = deque()
        self._cv = threading.Condition()
        self._current: Job | None = None
        self._closed = False
        self._durations: dict[tuple[str, Any], float] = {}
        self.history: deque[Job] = deque(maxlen=200)
        self._threads = [
            threading.Thread(target=self._dispatch_loop, name="jaxcompare-dispatch", daemon=True),
            threading.Thread(target=self._progress_loop, name="jaxcompare-progress", daemon=True),
        ]
        self._jobs_by_id: dict[str, Job] = {}
        for t in self._threads:
            t.start()

    # --- public API ------------------------------------------------------------------------
    def submit(self, spec: Spec, *, timeout_s: float | None = None, owner: str | None = None,
               rate_limited: bool = True, profile_dir: str | os.PathLike[str] | None = None) -> Job:
        """Queue a measurement; returns at once with a Job to poll or wait on. ``profile_dir``:
        also trace a few steady-state calls into ``profile_dir/<result id>`` (Result.profile).

        Raises BadInput / TooLarge at once for a request that cannot run (unknown case,
        bad shape, over a limit, more memory than the host has)."""
        preflight(spec, self.settings)
        if rate_limited and owner is not None:
            self._rate.acquire(owner)
        args: tuple[Any, ...] = (spec.to_dict(),)
        if profile_dir is not None:  # the worker may not share this process's working directory
            args += (None, os.path.abspath(os.path.expanduser(os.fspath(profile_dir))))
        job = Job("measure", (Step(spec.precision, "measure", args),),
                  timeout_s or self.timeout_s, spec=spec, owner=owner)
        return self._enqueue(job)

    def submit_case(self, spec: Spec, case: Case, *, timeout_s: float | None = None,
                    owner: str | None = None) -> Job:
        """Queue a measurement of a Case that is not in the catalog (a notebook's functions):
        it travels with the job, cloudpickled, to the worker of ``spec.precision``. Raises
        BadInput at once when it cannot be sent (engine/shipping.py) or cannot run."""
        if case.name != spec.case:
            raise BadInput(f"the spec names case {spec.case!r} but the case sent is {case.name!r}")
        preflight(spec, self.settings, case=case)
        data = pack_case(case)
        if owner is not None:
            self._rate.acquire(owner)
        job = Job("measure", (Step(spec.precision, "measure", (spec.to_dict(), data)),),
                  timeout_s or self.timeout_s, spec=spec, owner=owner)
        return self._enqueue(job)

    def submit_pitfalls(self, spec: Spec, sections: tuple[str, ...] | None = None, *,
                        timeout_s: float | None = None, owner: str | None = None) -> Job:
        """Queue the pitfalls lab; an x32 run borrows the x64 worker for the fair float64 side."""
        from .pitfalls import SECTIONS

        preflight(spec, self.settings)
        if owner is not None:
            self._rate.acquire(owner)
        sections = tuple(sections or SECTIONS)
        unknown = set(sections) - set(SECTIONS)
        if unknown:
            raise BadInput(f"unknown pitfall section(s): {', '.join(sorted(unknown))}")
        steps = [Step(spec.precision, "pitfalls", (spec.to_dict(), sections))]
        if "dtype" in sections and spec.precision == "x32":
            steps.append(Step("x64", "fair_float64", (spec.to_dict() | {"precision": "x64"},)))
        return self._enqueue(Job("pitfalls", tuple(steps), timeout_s or self.timeout_s, spec=spec,
                                 owner=owner))

    def run(self, spec: Spec, *, timeout_s: float | None = None,
            profile_dir: str | os.PathLike[str] | None = None) -> Result:
        return self.submit(spec, timeout_s=timeout_s, profile_dir=profile_dir).wait()

    def environment(self, precision: str = "x32", *, timeout_s: float = 120.0) -> dict[str, Any]:
        """The worker's view: JAX version, backend, devices, x64 state."""
        return self.submit_environment(precision, timeout_s=timeout_s).wait()

    def submit_environment(self, precision: str = "x32", *, timeout_s: float = 120.0) -> Job:
        """Like environment(), without waiting: poll the Job (pages must not block)."""
        return self._enqueue(Job("environment", (Step(precision, "environment"),), timeout_s))

    def selfcheck(self, precision: str, names: list[str] | None = None,
                  cases_file: str | None = None, *, timeout_s: float = 300.0) -> list[dict[str, Any]]:
        step = Step(precision, "selfcheck", (names, cases_file))
        return self._enqueue(Job("selfcheck", (step,), timeout_s)).wait()

    def position(self, job: Job) -> int:
        """0 when running, 1.. when queued (1 = next), -1 when finished."""
        with self._cv:
            if job is self._current:
                return 0
            for i, queued in enumerate(self._queue, start=1):
                if queued is job:
                    return i
        return -1

    def estimate_wait_s(self, job: Job) -> float:
        """Rough wait before ``job`` starts, from recent job durations."""
        with self._cv:
            ahead = list(itertools.takewhile(lambda j: j is not job, self._queue))
            running = self._current
        wait = sum(self._typical_s(j) for j in ahead)
        if running is not None and running.started_at is not None:
            wait += max(self._typical_s(running) - (time.time() - running.started_at), 0.0)
        return wait

    @staticmethod
    def _duration_key(job: Job) -> tuple[str, Any]:
        """Jobs of one kind and timing settings take alike long (quick vs careful differ 3x)."""
        return (job.kind, job.spec.timing if job.spec is not None else None)

    def _typical_s(self, job: Job) -> float:
        """Last duration of a like job; else of any job of its kind; else a guess."""
        key = self._duration_key(job)
        if key in self._durations:
            return self._durations[key]
        same_kind = [d for (kind, _), d in self._durations.items() if kind == job.kind]
        return same_kind[-1] if same_kind else 5.0

    def get(self, job_id: str) -> Job | None:
        return self._jobs_by_id.get(job_id)

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until nothing is queued or running (True), or ``timeout`` passes (False)."""
        with self._cv:
            return self._cv.wait_for(lambda: not self._queue and self._current is None, timeout)

    def queue_length(self) -> int:
        with self._cv:
            return len(self._queue) + (1 if self._current is not None else 0)

    def close(self) -> None:
        """Stop: queued jobs fail, a running job is cancelled, workers are shut down."""
        with self._cv:
            self._closed = True
            pending = list(self._queue)
            self._queue.clear()
            running = self._current
            self._cv.notify_all()
        for job in pending:
            self._finish(job, error=Cancelled("the runner was shut down before this job started"),
                         status="cancelled")
        if running is not None:
            running.cancel()  # the dispatcher stops its worker and finishes the job
        self._threads[0].join(timeout=30)
        for pool in list(self._pools.values()):
            pool.stop()
            pool.join(timeout=10)
        self._pools.clear()

    def __enter__(self) -> Runner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- internals ---------------------------------------------------------------------------
    def _enqueue(self, job: Job) -> Job:
        for step in job.steps:
            if step.precision not in PRECISIONS:
                raise JobFailed(f"unknown precision {step.precision!r}")
        with self._cv:
            if self._closed:
                raise JobFailed("the runner is shut down")
            self._queue.append(job)
            self._jobs_by_id[job.id] = job
            self._cv.notify_all()
        return job

    def _pool(self, precision: str) -> ProcessPool:
        pool = self._pools.get(precision)
        if pool is None or not pool.active:
            pool = ProcessPool(max_workers=1, context=self._ctx, initializer=worker.init_worker,
                               initargs=(precision, self._progress, self._worker_env))
            self._pools[precision] = pool
        return pool

    def _dispatch_loop(self) -> None:
        while True:
            with self._cv:
                while not self._queue and not self._closed:
                    self._cv.wait()
                if self._closed:
                    return
                job = self._queue.popleft()
                if job._cancel.is_set():
                    self._finish(job, error=Cancelled("cancelled before it started"), status="cancelled")
                    continue
                self._current = job
            try:
                self._execute(job)
            except Exception as exc:  # the dispatcher must survive anything
                log.exception("dispatcher error")
                self._finish(job, error=JobFailed(f"internal error: {type(exc).__name__}: {exc}"))
            finally:
                with self._cv:
                    self._current = None
                    self._cv.notify_all()

    def _execute(self, job: Job) -> None:
        job.status, job.phase, job.started_at = "running", "starting worker", time.time()
        deadline = job.started_at + job.timeout_s
        values = []
        try:
            for step in job.steps:
                envelope = self._run_step(job, step, max(deadline - time.time(), 1.0))
                start, end = envelope["window"]
                job.window = (job.window[0] if job.window else start, end)
                job.worker_pid = envelope["pid"]
                values.append(envelope["result"])
        except Cancelled as exc:
            self._finish(job, error=exc, status="cancelled")
            return
        except JaxCompareError as exc:
            self._finish(job, error=exc)
            return
        self._finish(job, value=_combine(job.kind, values))

    def _run_step(self, job: Job, step: Step, timeout_s: float) -> dict[str, Any]:
        """Run one step in its worker; every way it can fail becomes one clear JobFailed."""
        future = self._pool(step.precision).schedule(TARGETS[step.target], args=(job.id, *step.args),
                                                     timeout=timeout_s)
        while not future.done():
            wait([future], timeout=_POLL_S)
            if job._cancel.is_set() and not future.done():
                future.cancel()  # Pebble terminates the worker and starts a new one
                raise Cancelled("cancelled while running; the worker was restarted")
        try:
            return future.result()
        except CancelledError:
            raise Cancelled("cancelled while running; the worker was restarted") from None
        except TimeoutError:  # Pebble's deadline (concurrent.futures.TimeoutError is this class)
            raise JobFailed(f"stopped after its {job.timeout_s:g} s deadline; the worker was restarted") from None
        except ProcessExpired as exc:
            raise JobFailed(
                f"the worker process died (exit code {exc.exitcode}: crashed, killed or out of "
                f"memory); a fresh worker has been started") from None
        except JaxCompareError:
            raise
        except Exception as exc:
            log.error("job %s failed: %s\n%s", job.id, exc, getattr(exc, "traceback", ""))
            raise JobFailed(f"{type(exc).__name__}: {exc}") from None

    def _finish(self, job: Job, *, value: Any = None, error: JaxCompareError | None = None,
                status: str | None = None) -> None:
        job.value, job.error = value, error
        job.status = status or ("failed" if error is not None else "done")
        job.phase = job.status
        job.finished_at = time.time()
        if error is None:
            job.progress = 1.0
            if job.started_at is not None:
                self._durations[self._duration_key(job)] = job.finished_at - job.started_at
        self.history.append(job)
        self._jobs_by_id.pop(job.id, None)
        job._done.set()

    def _progress_loop(self) -> None:
        while not self._closed:
            try:
                job_id, phase, fraction = self._progress.get(timeout=0.5)
            except queue.Empty:
                continue
            except (EOFError, OSError):
                return
            job = self._jobs_by_id.get(job_id)
            if job is not None and not job.done:
                job.phase, job.progress = phase, min(max(fraction, 0.0), 1.0)


def _combine(kind: str, values: list[Any]) -> Any:
    """Turn the steps' raw values into the job's value."""
    if kind == "measure":
        return Result.from_dict(values[0])
    if kind == "pitfalls":
        report = values[0]
        if len(values) > 1:  # the fair float64 side from the x64 worker joins pitfall 3
            for pitfall in report["pitfalls"]:
                if pitfall["id"] == "dtype":
                    pitfall["extra"].append(values[1])
        return report
    return values[0]
