"""Runs jobs in worker processes: per device, one worker per precision and one queue.
Runs in the server/CLI process and never imports JAX; the work itself is in worker.py.

All jobs for a device (app sessions, the CLI) go through its FIFO queue, served by its own
dispatcher thread, so two measurements never overlap on a device and spoil each other's
timings. A server with several devices (``JAXCOMPARE_DEVICES``) has one queue and one worker
pair per device, so users of different devices do not wait for each other. A job past its
deadline, or a cancelled running job, kills its worker; the next job starts a fresh one.
With ``JAXCOMPARE_RAY_ADDRESS`` the lanes are the slots of a Ray cluster instead, and their
workers send each step there (engine/server/cluster.py); queues, deadlines and results stay as here.
"""

from __future__ import annotations

import functools
import logging
import os
import threading
import time
import uuid
from collections import OrderedDict, deque
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from ...i18n import N_
from ...model.cases import Case
from ...model.errors import BadInput, JaxCompareError, JobFailed
from ...model.platforms import Platform, platform
from ...model.result import Result
from ...model.spec import PRECISIONS, Spec
from ..common.ceilings_cache import ceilings_known
from ..common.fresh import fresh_first_call, fresh_processes
from ..common.requests import MeasureOptions
from ..common.shipping import pack_case
from .durations import FRESH_WORKER_S, Durations, Estimate, LoadReading, pitfalls_kind
from .envs import JaxEnv, env_for_job
from .process import Cancelled, Expired, WorkerProcess
from .settings import RateLimiter, Settings, preflight

__all__ = ["Cancelled", "Job", "Owner", "Runner", "Step"]

log = logging.getLogger("jaxcompare.runner")

# Bounds on what the server remembers, so its memory stays flat however long it runs.
_MAX_OWNERS = 4096
_MAX_CASES_FILES = 16
_CAPPED_KINDS = ("measure", "pitfalls")  # what a visitor asks for (queue cap, per-client cap)
_MAX_OTHER_JAX_WORKERS = 4  # per device: workers of other JAX versions kept warm between a versions run's rounds


@dataclass(frozen=True)
class Owner:
    """Who asked for a job: the app session, the client it is rate-limited as (an address;
    None: the session), and the logged-in user when the app asks for a login."""

    session: str
    client: str | None = None
    user: str | None = None

    @property
    def rate_key(self) -> str:
        return self.client or self.session


@dataclass(frozen=True)
class Step:
    """One call into a worker: which precision's worker, which function, what arguments."""

    precision: str
    target: str
    args: tuple[Any, ...] = ()


@dataclass(eq=False)
class Job:
    """A queued unit of work (one or more worker steps run back to back, never interleaved
    with another job on its device); its fields are updated by the runner's threads."""

    kind: str
    steps: tuple[Step, ...]
    timeout_s: float
    spec: Spec | None = None
    owner: str | None = None
    client: str | None = None
    user: str | None = None
    device: str | None = None  # the device whose queue it joined (None: the first device)
    id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    status: str = "queued"  # queued, running, done, failed, cancelled
    phase: str = "queued"
    progress: float = 0.0
    submitted_at: float = field(default_factory=time.time)
    started_at: float | None = None
    finished_at: float | None = None
    window: tuple[float, float] | None = None
    worker_pid: int | None = None
    node: str | None = None  # the Ray node it runs on (a cluster runner), once placed
    value: Any = None
    error: JaxCompareError | None = None
    # What a user should be told while it runs, beside its phase (a device handed from one process to another).
    notices: list[str] = field(default_factory=list)
    # A list_cases job: the cases file's version (path, size, mtime) its listing is kept under.
    cases_version: tuple[str, int, int] | None = field(default=None, repr=False)
    # A job of a versions run: the environment of the JAX release its worker runs (None: the runner's own).
    jax_env: JaxEnv | None = field(default=None, repr=False)
    # How long it should take once started (engine/server/durations.py): said when queued, said again when it
    # starts only if it waited (what a page showed before the run stays what its bar counts down from).
    estimate: Estimate | None = None
    work_started_at: float | None = None  # when its worker began the work (a fresh worker's start-up before)
    case: Case | None = field(default=None, repr=False)  # the case it measures, where this process knows it
    _cold: tuple[str, ...] = field(default=(), repr=False)  # the precisions whose workers it started
    _ceilings: bool = field(default=False, repr=False)  # it measured the CPU's ceilings first
    _peak_at: float | None = field(default=None, repr=False)  # when it reached the ceilings' phase
    _busy: float = field(default=0.0, repr=False)  # the share of the cores other programs took as it started
    _done: threading.Event = field(default_factory=threading.Event, repr=False)
    _cancel: threading.Event = field(default_factory=threading.Event, repr=False)
    _runner: Runner | None = field(default=None, repr=False)

    @property
    def precision(self) -> str:
        return self.steps[0].precision

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def cancel(self) -> None:
        """Cancel: a queued job leaves its queue at once (the jobs behind it move up); a
        running one has its worker stopped."""
        self._cancel.set()
        if self._runner is not None:
            self._runner._withdraw(self)

    def finished_within(self, timeout: float) -> bool:
        """Wait at most ``timeout`` s; True once finished. Short waits in a loop let a caller's
        Ctrl-C through (a long lock wait may not see it until the job ends)."""
        return self._done.wait(timeout)

    def wait(self, timeout: float | None = None) -> Any:
        """Block until finished; return the value or raise the job's error."""
        if not self._done.wait(timeout):
            raise JobFailed(N_("job {id} did not finish within {timeout} s of waiting").format(
                id=self.id, timeout=timeout))
        if self.error is not None:
            raise self.error
        return self.value


class _Lane:
    """One device: its queue, the job it runs, its workers (one per precision)."""

    def __init__(self, index: int, device: str | None, env: dict[str, str], python: str | None = None,
                 python_path: tuple[str, ...] = (), factory: Callable[[str], Any] | None = None,
                 holders: int | None = None):
        """``factory(precision)``: a worker other than a local process (a cluster slot's).
        ``holders``: processes that may hold the device at once (None: as its platform allows,
        learnt from the first worker that starts)."""
        self.index = index
        self.holders = holders
        self.platform: Platform | None = None  # the device's platform, once a worker has opened it
        self.handovers = 0  # times a single-holder device went from one worker to another
        self.factory = factory
        self.python, self.python_path = python, python_path
        self.device = device
        self.env = env
        self.queue: deque[Job] = deque()
        self.current: Job | None = None
        self.workers: dict[str, WorkerProcess] = {}
        self.other_jax: OrderedDict[tuple[str, str], WorkerProcess] = OrderedDict()  # by (precision, python)
        self.thread: threading.Thread | None = None

    def worker(self, precision: str, jax_env: JaxEnv | None = None) -> WorkerProcess:
        if jax_env is not None and jax_env.python is not None:
            return self._other_jax_worker(precision, jax_env)
        if precision not in self.workers and self.factory is not None:
            self.workers[precision] = self.factory(precision)
        if precision not in self.workers:
            label = (N_("{precision} worker for {device}").format(precision=precision, device=self.device)
                     if self.device else "")  # else the worker labels itself ("x32 worker")
            self.workers[precision] = WorkerProcess(precision, self.env, label=label, python=self.python,
                                                    python_path=self.python_path)
        return self.workers[precision]

    def _other_jax_worker(self, precision: str, jax_env: JaxEnv) -> WorkerProcess:
        """A worker started from another JAX release's interpreter; the least recently used of
        these is stopped past _MAX_OTHER_JAX_WORKERS (each holds a JAX in memory)."""
        key = (precision, str(jax_env.python))
        worker = self.other_jax.pop(key, None) or WorkerProcess(
            precision, self.env, label=N_("{precision} worker for JAX {version}").format(
                precision=precision, version=jax_env.jax_version),
            python=jax_env.python, python_path=jax_env.python_path)
        self.other_jax[key] = worker
        while len(self.other_jax) > _MAX_OTHER_JAX_WORKERS:
            self.other_jax.popitem(last=False)[1].stop()
        return worker

    def all_workers(self) -> list[WorkerProcess]:
        return [*self.workers.values(), *self.other_jax.values()]

    @property
    def single_holder(self) -> bool:
        """One process at a time may hold this lane's device (a TPU chip, or the operator says so)."""
        if self.holders is not None:
            return self.holders == 1
        return self.platform is not None and self.platform.single_holder

    def learn(self, worker: WorkerProcess) -> None:
        """What a started worker opened says what the device is: the most restrictive platform."""
        opened = [found for found in map(platform, getattr(worker, "platforms", ())) if found is not None]
        if opened:
            self.platform = min(opened, key=lambda p: p.holders or 1 << 30)

    def hand_over(self, worker: WorkerProcess, say: Callable[[str], None]) -> None:
        """On a single-holder device, stop every other worker of this lane before ``worker`` runs."""
        if not self.single_holder:
            return
        others = [w for w in self.all_workers() if w is not worker and w.alive]
        if not others:
            return
        say(N_("handing the {device} to the {label}: one process at a time can hold it").format(
            device=self.device_label, label=worker.label))
        for other in others:
            other.stop()
        self.handovers += 1

    @property
    def device_label(self) -> str:
        return self.device or (self.platform.label if self.platform is not None else N_("device"))


def _lane_env(device: str | None, base: dict[str, str]) -> dict[str, str]:
    """The workers' environment for one device. A GPU worker sees only its own GPU (else each
    of the 2 x N workers would set up every GPU); other platforms pin by index."""
    env = dict(base)
    if device is None:
        return env
    platform, _, index = device.partition(":")
    if platform == "gpu":
        visible = [v.strip() for v in (env.get("CUDA_VISIBLE_DEVICES") or os.environ.get("CUDA_VISIBLE_DEVICES")
                                       or "").split(",") if v.strip()]
        env["CUDA_VISIBLE_DEVICES"] = visible[int(index)] if int(index) < len(visible) else index
        env["JAXCOMPARE_WORKER_DEVICE"] = "gpu:0"
    else:
        env["JAXCOMPARE_WORKER_DEVICE"] = device
    return env


class Runner:
    """Thread-safe front door to the workers; share one per process."""

    def __init__(self, *, timeout_s: float | None = None, worker_env: dict[str, str] | None = None,
                 settings: Settings | None = None, python: str | None = None, python_path: tuple[str, ...] = ()):
        """``python``/``python_path``: start the workers from another interpreter (an environment
        of another JAX version, engine/server/envs.py) with these folders first on its sys.path."""
        self.settings = settings or Settings.from_env()
        self.timeout_s = timeout_s or self.settings.job_timeout_s
        # Per client (an address, else the session); a sweep counts once: its later points
        # pass rate_limited=False.
        self._rate = RateLimiter(self.settings.max_jobs_per_minute)
        self._cv = threading.Condition()  # guards every queue, lane and job field below
        self._closed = False
        self._durations = Durations()
        self._load = LoadReading()  # other programs' load, read while this runner is idle
        self._owner_lane: OrderedDict[str, _Lane] = OrderedDict()
        self._cases: OrderedDict[tuple[str, int, int], list[dict[str, Any]]] = OrderedDict()
        self._jobs_by_id: dict[str, Job] = {}
        self.history: deque[Job] = deque(maxlen=200)
        env = dict(worker_env or {})
        self._cluster = None  # a Ray cluster's connection, when the jobs go there
        if self.settings.ray_address and python is None:
            from .cluster import Cluster

            self._cluster = Cluster(self.settings.ray_address, self.settings.ray_resource)
            factory = functools.partial(self._cluster.worker, placed=self._placed)
            self._lanes = [_Lane(i, f"ray:{i}", env, factory=factory) for i in range(self._cluster.slots)]
        else:
            self._lanes = [_Lane(i, device, _lane_env(device, env), python, tuple(python_path),
                                 holders=self.settings.device_holders)
                           for i, device in enumerate(self.settings.devices or (None,))]
        for lane in self._lanes:
            lane.thread = threading.Thread(target=self._dispatch_loop, args=(lane,), daemon=True,
                                           name=f"jaxcompare-dispatch-{lane.index}")
            lane.thread.start()

    # --- public API ------------------------------------------------------------------------
    @property
    def devices(self) -> list[str | None]:
        """The devices with a queue of their own (None: the worker's first device)."""
        return [lane.device for lane in self._lanes]

    @property
    def single_holder(self) -> bool:
        """Whether a device here lets one process at a time hold it (a TPU chip), as far as known:
        its workers then take turns, and each switch of precision opens the device again."""
        return any(lane.single_holder for lane in self._lanes)

    @property
    def handovers(self) -> int:
        """How often a single-holder device has gone from one worker to another so far."""
        with self._cv:
            return sum(lane.handovers for lane in self._lanes)

    def submit(self, spec: Spec, *, case: Case | None = None, timeout_s: float | None = None,
               owner: Owner | str | None = None, rate_limited: bool = True,
               profile_dir: str | os.PathLike[str] | None = None, jax: str | None = None) -> Job:
        """Queue a measurement; returns at once with a Job to poll or wait on. ``case``: a Case
        that is not in the catalog (a notebook's functions), sent with the job, cloudpickled, to
        the worker of ``spec.precision``. ``profile_dir``: also trace a few steady-state calls
        into ``profile_dir/<result id>`` (Result.profile).

        Raises BadInput / TooLarge at once for a request that cannot run (unknown case, bad
        shape, over a limit, more memory than the host has, a case that cannot be sent, a full
        queue, over the rate). ``rate_limited=False`` marks a later point of a sweep: it is not
        counted again and runs on the device of its owner's previous job. ``jax``: measure under that
        JAX release, in its prepared environment (engine/server/envs.py; in hosted mode only a version the
        operator offers, JAXCOMPARE_JAX_VERSIONS), else VersionUnavailable at once."""
        if case is not None and case.name != spec.case:
            raise BadInput(N_("the spec names case {spec_case!r} but the case sent is {case!r}").format(
                spec_case=spec.case, case=case.name))
        preflight(spec, self.settings, case=case)
        if jax is not None and self._cluster is not None:
            # Its environment is prepared on this server, not on the cluster's nodes.
            raise BadInput(N_("a JAX versions run measures in environments prepared on this machine, and this "
                              "runner sends its jobs to a Ray cluster (JAXCOMPARE_RAY_ADDRESS): run it without "
                              "that variable"))
        jax_env = None if jax is None else env_for_job(jax, self.settings.jax_versions if self.settings.hosted_mode
                                                       else None)
        options = MeasureOptions(
            case_bytes=None if case is None else pack_case(case),
            # The worker may not share this process's working directory.
            profile_dir=None if profile_dir is None else os.path.abspath(os.path.expanduser(os.fspath(profile_dir))))
        job = Job("measure", (Step(spec.precision, "measure", (spec.to_dict(), options)),),
                  timeout_s or self.timeout_s, spec=spec, jax_env=jax_env,
                  case=case if case is not None else _catalog_case(spec))
        return self._enqueue(job, _owner(owner), capped=True, rate_limited=rate_limited, sticky=not rate_limited)

    def submit_pitfalls(self, spec: Spec, sections: tuple[str, ...] | None = None, *,
                        timeout_s: float | None = None, owner: Owner | str | None = None) -> Job:
        """Queue the pitfalls lab; an x32 run borrows the x64 worker for the fair float64 side."""
        from ..common.lessons import check_sections

        preflight(spec, self.settings)
        sections = check_sections(sections)
        steps = [Step(spec.precision, "pitfalls", (spec.to_dict(), sections))]
        if "dtype" in sections and spec.precision == "x32":
            steps.append(Step("x64", "fair_float64", (spec.to_dict() | {"precision": "x64"},)))
        job = Job("pitfalls", tuple(steps), timeout_s or self.timeout_s, spec=spec, case=_catalog_case(spec))
        return self._enqueue(job, _owner(owner), capped=True, rate_limited=True)

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

    def submit_list_cases(self, cases_file: str, *, timeout_s: float | None = None,
                          owner: Owner | str | None = None) -> Job:
        """Load a user's cases file in a worker, under the job's deadline, and report its
        cases (``Case.summary()`` dicts, no functions). A version already listed finishes at once."""
        if self.settings.allow_cases_file is False:
            raise BadInput(N_("user case files are disabled on this server (they are code; see "
                              "JAXCOMPARE_ALLOW_CASES_FILE in docs/hosting.md)"))
        version = _file_version(cases_file)
        job = Job("list_cases", (Step("x32", "list_cases", (version[0],)),), timeout_s or self.timeout_s,
                  cases_version=version)
        with self._cv:
            known = self._cases.get(version)
        if known is not None:
            job._runner = self
            self._finish(job, value=list(known))
            return job
        return self._enqueue(job, _owner(owner))

    def list_cases(self, cases_file: str, *, timeout_s: float | None = None) -> list[dict[str, Any]]:
        """The cases in a user's file (see submit_list_cases), waiting for them."""
        return self.submit_list_cases(cases_file, timeout_s=timeout_s).wait()

    def position(self, job: Job) -> int:
        """0 when running, 1.. when queued (1 = next on its device), -1 when finished."""
        with self._cv:
            for lane in self._lanes:
                if lane.current is job:
                    return 0
                for i, queued in enumerate(lane.queue, start=1):
                    if queued is job:
                        return i
        return -1

    def jobs_ahead(self, job: Job) -> int | None:
        """How many jobs run before ``job`` on its device, the running one included; None when
        it is not waiting (running or finished)."""
        with self._cv:
            for lane in self._lanes:
                for i, queued in enumerate(lane.queue):
                    if queued is job:
                        return i + (lane.current is not None)
        return None

    def estimate_wait_s(self, job: Job) -> float:
        """Rough wait before ``job`` starts, from recent job durations."""
        with self._cv:
            lane = next((lane for lane in self._lanes if job in lane.queue or lane.current is job), None)
            return 0.0 if lane is None else self._wait_s(lane, before=job)

    def estimate(self, spec: Spec, *, kind: str = "measure", case: Case | None = None) -> Estimate:
        """How long a ``kind`` job ('measure' or 'pitfalls') of ``spec`` would take once it starts,
        said before it is submitted: from the durations seen here, else a first guess (engine/server/durations.py).
        The wait in the queue before it is queue_wait()'s."""
        return self.estimate_all([spec], kind=kind, case=case)

    def estimate_all(self, specs: Sequence[Spec], *, kind: str = "measure", case: Case | None = None) -> Estimate:
        """How long ``specs`` run one after the other would take (a sweep's points): each worker's
        start-up and the CPU's ceilings counted once."""
        total: Estimate | None = None
        with self._cv:
            idle = self._idle()
        busy = self._load.read(wait=idle)  # outside the lock: a fresh reading takes a moment
        with self._cv:
            lane = self._pick_lane(None, False)
            ahead = [job for job in (lane.current, *lane.queue) if job is not None]
            for spec in specs:
                known = case if case is not None else _catalog_case(spec)
                precisions = ((spec.precision, "x64") if kind == "pitfalls" and spec.precision == "x32"
                              else (spec.precision,))
                one = self._estimate_on(lane, kind, spec, known, precisions, ahead, busy)[0]
                total = one if total is None else total + one
                ahead.append(Job(kind, tuple(Step(p, kind) for p in precisions), 0.0, spec=spec))
        return total if total is not None else Estimate(0.0, 0.0, 0.0)

    def queue_wait(self) -> tuple[float, int]:
        """What a job submitted now would wait before it starts: seconds, and the measurements ahead of
        it (a page's own environment or case-list job adds to the wait, but is no one's measurement)."""
        with self._cv:
            lane = self._pick_lane(None, False)
            jobs = [*lane.queue, *([lane.current] if lane.current is not None else [])]
            return self._wait_s(lane), sum(job.kind in _CAPPED_KINDS for job in jobs)

    def cancel(self, job: Job) -> None:
        job.cancel()

    def recent(self) -> list[Job]:
        """The last jobs that finished (up to 200), oldest first: a copy, safe to read."""
        with self._cv:
            return list(self.history)

    def get(self, job_id: str) -> Job | None:
        with self._cv:
            return self._jobs_by_id.get(job_id)

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until nothing is queued or running (True), or ``timeout`` passes (False)."""
        with self._cv:
            return self._cv.wait_for(self._idle, timeout)

    def queue_length(self) -> int:
        with self._cv:
            return sum(len(lane.queue) + (lane.current is not None) for lane in self._lanes)

    def close(self) -> None:
        """Stop: queued jobs fail, running jobs are cancelled, workers are shut down."""
        with self._cv:
            self._closed = True
            pending = [job for lane in self._lanes for job in lane.queue]
            for lane in self._lanes:
                lane.queue.clear()
            running = [lane.current for lane in self._lanes if lane.current is not None]
            self._cv.notify_all()
        for job in pending:
            self._finish(job, error=Cancelled(N_("the runner was shut down before this job started")),
                         status="cancelled")
        for job in running:
            job._cancel.set()  # the dispatcher stops its worker and finishes the job
        for lane in self._lanes:
            if lane.thread is not None and lane.thread is not threading.current_thread():
                lane.thread.join(timeout=30)
            for worker in lane.all_workers():
                worker.stop()
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None

    def __enter__(self) -> Runner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def active_jobs(self) -> list[Job]:
        """Every job queued or running now, on every device (a copy, safe to read)."""
        with self._cv:
            return [job for lane in self._lanes for job in (lane.current, *lane.queue) if job is not None]

    def cluster(self) -> dict[str, Any] | None:
        """The Ray cluster the jobs go to (None: local workers): its address, the resource a job
        holds, and each node with its slots and the jobs of this runner running there."""
        backend = self._cluster
        if backend is None:
            return None
        try:
            nodes, error = backend.nodes(), None
        except Exception as exc:  # the head is gone or unreachable: say so, do not fail the page
            nodes, error = [], f"{type(exc).__name__}: {exc}".splitlines()[0]
        active = self.active_jobs()
        for node in nodes:
            node["jobs"] = [job for job in active if job.status == "running" and job.node == node["id"]]
        return {"address": backend.address, "resource": backend.resource, "slots": len(self._lanes),
                "nodes": nodes, "queued": sum(job.status == "queued" for job in active), "error": error}

    # --- internals ---------------------------------------------------------------------------
    def _placed(self, job_id: str, node: str) -> None:
        with self._cv:
            job = self._jobs_by_id.get(job_id)
            if job is not None:
                job.node = node

    def _active_for(self, rate_key: str) -> int:
        """A client's measurements queued or running (the jobs a queue's cap counts); lock held.
        A finished job stops counting at once, before its dispatcher clears ``lane.current``."""
        return sum(1 for lane in self._lanes for job in (lane.current, *lane.queue)
                   if job is not None and not job.done and job.kind in _CAPPED_KINDS
                   and (job.client or job.owner) == rate_key)

    def _idle(self) -> bool:
        return all(not lane.queue and lane.current is None for lane in self._lanes)

    def _estimate_on(self, lane: _Lane, kind: str, spec: Spec | None, case: Case | None,
                     precisions: tuple[str, ...], ahead: list[Job], busy: float = 0.0,
                     guessed_as: str | None = None) -> tuple[Estimate, tuple[str, ...], bool]:
        """A job's estimate on ``lane`` after the jobs ``ahead`` of it, the precisions whose workers it
        would start, and whether it would measure the CPU's ceilings first. Lock held."""
        warm = {p for p, worker in lane.workers.items() if worker.alive}
        warm |= {step.precision for job in ahead for step in job.steps}  # a job ahead starts them
        cold = tuple(dict.fromkeys(p for p in precisions if p not in warm))
        ceilings = (spec is not None and kind in _CAPPED_KINDS and not any(job.spec is not None for job in ahead)
                    and not ceilings_known(spec.dtype))
        return (self._durations.estimate(guessed_as or kind, spec, case, cold=cold, ceilings=ceilings, busy=busy),
                cold, ceilings)

    def _typical_s(self, job: Job) -> float:
        """What ``job`` is expected to take once it starts (its estimate); never under a second. Lock held."""
        if job.estimate is None:
            job.estimate = self._durations.estimate(_guessed_as(job), job.spec, job.case)
        return max(job.estimate.seconds, 1.0)

    def _wait_s(self, lane: _Lane, before: Job | None = None) -> float:
        """How long until ``before`` (None: a job joining the end) starts on ``lane``; lock held."""
        wait = 0.0
        running = lane.current
        if before is not None and running is before:
            return 0.0
        if running is not None:
            # One taking longer than usual has not told how much longer: say a second, not zero.
            elapsed = time.time() - running.started_at if running.started_at is not None else 0.0
            wait += max(self._typical_s(running) - elapsed, 1.0)
        for queued in lane.queue:
            if queued is before:
                break
            wait += self._typical_s(queued)
        return wait

    def _pick_lane(self, who: Owner | None, sticky: bool) -> _Lane:
        """A sweep's later points go where its first went; anything else to the device that
        would start it soonest. Lock held."""
        if sticky and who is not None and who.session in self._owner_lane:
            return self._owner_lane[who.session]
        return min(self._lanes, key=lambda lane: (self._wait_s(lane), len(lane.queue) + (lane.current is not None),
                                                  lane.index))

    def _enqueue(self, job: Job, who: Owner | None = None, *, capped: bool = False, rate_limited: bool = False,
                 sticky: bool = False) -> Job:
        for step in job.steps:
            if step.precision not in PRECISIONS:
                raise JobFailed(N_("unknown precision {precision!r}").format(precision=step.precision))
        if who is not None:
            job.owner, job.client, job.user = who.session, who.client, who.user
        with self._cv:
            if self._closed:
                raise JobFailed(N_("the runner is shut down"))
            lane = self._pick_lane(who, sticky)
            limit = self.settings.max_queue
            if capped and limit is not None and len(lane.queue) >= limit:
                raise BadInput(N_("the queue is full: {waiting} measurements are waiting, the most this server "
                                  "allows (JAXCOMPARE_MAX_QUEUE={limit}); yours would have waited about {wait}. "
                                  "Try again in a few minutes.").format(
                    waiting=len(lane.queue), limit=limit, wait=_wait_text(self._wait_s(lane))))
            cap = self.settings.max_jobs_per_client
            if capped and cap is not None and who is not None:
                active = self._active_for(who.rate_key)
                if active >= cap:
                    raise BadInput(N_("you already have {active} measurement(s) queued or running, the most this "
                                      "server allows at once (JAXCOMPARE_MAX_JOBS_PER_CLIENT={cap}); wait for one "
                                      "to finish or stop it").format(active=active, cap=cap))
            if rate_limited and who is not None:
                self._rate.acquire(who.rate_key)  # last: a refused request spends no token
            job.device, job._runner = lane.device, self
            ahead = [queued for queued in (lane.current, *lane.queue) if queued is not None]
            job._busy = self._load.read(wait=False)
            job.estimate = self._estimate_on(lane, job.kind, job.spec, job.case,
                                             tuple(step.precision for step in job.steps), ahead, job._busy,
                                             _guessed_as(job))[0]
            lane.queue.append(job)
            self._jobs_by_id[job.id] = job
            if who is not None:
                self._owner_lane[who.session] = lane
                self._owner_lane.move_to_end(who.session)
                while len(self._owner_lane) > _MAX_OWNERS:
                    self._owner_lane.popitem(last=False)
            self._cv.notify_all()
        if who is not None:
            log.info("job %s (%s%s%s) queued for %s: session %s, client %s, user %s", job.id, job.kind,
                     f" {job.spec.case}" if job.spec else "", f" under JAX {job.jax_env.jax_version}" if job.jax_env
                     else "", lane.device or "the first device", who.session,
                     who.client or "-", who.user or "-")
        return job

    def _withdraw(self, job: Job) -> None:
        """A cancelled job still in a queue leaves it now; a running one is stopped by its dispatcher."""
        with self._cv:
            lane = next((lane for lane in self._lanes if job in lane.queue), None)
            if lane is None:
                return
            lane.queue.remove(job)
            self._cv.notify_all()
        self._finish(job, error=Cancelled(N_("cancelled before it started")), status="cancelled")

    def _dispatch_loop(self, lane: _Lane) -> None:
        while True:
            with self._cv:
                while not lane.queue and not self._closed:
                    self._cv.wait()
                if self._closed:
                    return
                job = lane.queue.popleft()
                lane.current = job
                job.status, job.phase, job.started_at = "running", "starting worker", time.time()
                if job.jax_env is None:  # another JAX release's workers are not the lane's: no estimate of theirs
                    waited = job.started_at - job.submitted_at > 1.0  # what was said when it queued may be stale
                    if waited:
                        job._busy = self._load.read(wait=False)
                    again, job._cold, job._ceilings = self._estimate_on(
                        lane, job.kind, job.spec, job.case, tuple(step.precision for step in job.steps), [],
                        job._busy, _guessed_as(job))
                    job.estimate = again if waited or job.estimate is None else job.estimate
                self._load.restart()  # its own load would hide the others' until it ends
            try:
                self._execute(lane, job)
            except Exception as exc:  # the dispatcher must survive anything
                log.exception("dispatcher error")
                self._finish(job, error=JobFailed(N_("internal error: {error_type}: {error}").format(
                    error_type=type(exc).__name__, error=exc)))
            finally:
                with self._cv:
                    lane.current = None
                    self._cv.notify_all()

    def _execute(self, lane: _Lane, job: Job) -> None:
        values = []
        spent = 0.0  # the deadline covers the steps, not a fresh worker's start-up
        try:
            for step in job.steps:
                worker = lane.worker(step.precision, job.jax_env)
                args = step.args
                if step.target == "pitfalls" and "cache" in step.args[1] and lane.factory is None:
                    started = time.monotonic()
                    args = (*args, self._fresh_processes(lane, job, worker))
                    spent += time.monotonic() - started
                elif step.target == "measure" and lane.factory is None and job.jax_env is None:
                    started = time.monotonic()
                    args = self._fresh_first_calls(lane, job, worker, args)
                    spent += time.monotonic() - started
                lane.hand_over(worker, lambda text: self._notice(job, text))
                started = time.monotonic()
                envelope = worker.call(job.id, step.target, args, timeout_s=max(job.timeout_s - spent, 1.0),
                                       cancel=job._cancel, on_progress=lambda p, f: self._progress(job, p, f))
                lane.learn(worker)
                spent += time.monotonic() - started
                start, end = envelope["window"]
                with self._cv:
                    job.window = (job.window[0] if job.window else start, end)
                    job.worker_pid = envelope["pid"]
                values.append(envelope["result"])
        except Cancelled as exc:
            self._finish(job, error=exc, status="cancelled")
            return
        except JaxCompareError as exc:
            if isinstance(exc, Expired):
                exc = JobFailed(N_("stopped after its {timeout_s:g} s deadline; the worker was restarted").format(
                    timeout_s=job.timeout_s))
            if job.kind == "list_cases" and isinstance(exc, JobFailed):  # a hang or a crash at import
                exc = JobFailed(N_("cases file {path!r} could not be loaded: {reason}").format(
                    path=job.steps[0].args[0], reason=exc))
            self._finish(job, error=exc)
            return
        self._finish(job, value=_combine(job.kind, values))

    def _let_go(self, lane: _Lane, job: Job, worker: WorkerProcess, notice: str) -> dict[str, str] | None:
        """On a single-holder device, before fresh processes that need it run from here: ``notice``
        (its {device} filled) told to the user, every worker of the lane stopped, and the environment
        the processes start with returned. None, with the workers left alone, on any other device."""
        if lane.platform is None and lane.holders is None:
            worker.start(job._cancel)  # the first worker to open the device says what it is
            lane.learn(worker)
        if not lane.single_holder:
            return None
        self._notice(job, notice.format(device=lane.device_label))
        for other in lane.all_workers():
            other.stop()
        return {**os.environ, **lane.env}

    def _fresh_processes(self, lane: _Lane, job: Job, worker: WorkerProcess) -> dict[str, Any] | None:
        """Pitfall 7 on a single-holder device: its fresh processes each need the device, so the
        lane's workers let go of it and the processes run from here, one at a time; the worker then
        measures the rest of the lab with them. None elsewhere: the worker starts them itself."""
        env = self._let_go(lane, job, worker, N_("pitfall 7: its fresh processes take the {device} in turn, so the "
                                                 "worker lets go of it until they are done"))
        if env is None:
            return None
        spec = job.spec
        assert spec is not None

        def on_start(i: int, total: int) -> None:
            if job._cancel.is_set():
                raise Cancelled(N_("cancelled while running"))
            self._progress(job, N_("pitfall 7: fresh process {i} of {total}, each holding the {device} in turn").format(
                i=i + 1, total=total, device=lane.device_label), 0.05 * i / total)

        from ..common.lessons import lab_timing

        return fresh_processes(spec, lab_timing(spec.timing).compile_samples, env=env, on_start=on_start).to_dict()

    def _fresh_first_calls(self, lane: _Lane, job: Job, worker: WorkerProcess,
                           args: tuple[Any, ...]) -> tuple[Any, ...]:
        """A measurement's first call as a user's %time pays it, on a single-holder device: its fresh
        processes each need the device, so the lane's workers let go of it and the processes run from
        here, one at a time; the worker then measures the rest with their calls (MeasureOptions.first_calls).
        ``args`` unchanged elsewhere (the worker starts them itself), in quick timing, or where one failed
        (the worker's recompile stands, and the notice says why)."""
        spec = job.spec
        assert spec is not None
        options = args[1] if len(args) > 1 and args[1] is not None else MeasureOptions()
        if spec.timing.first_call_processes == 0:
            return args
        env = self._let_go(lane, job, worker, N_("the first call: a fresh process takes the {device}, so the worker "
                                                 "lets go of it until that process is done"))
        if env is None:
            return args
        total = spec.timing.first_call_processes
        calls = []
        for i in range(total):
            if job._cancel.is_set():
                raise Cancelled(N_("cancelled while running"))
            self._progress(job, N_("the first call: fresh process {i} of {total}, holding the {device}").format(
                i=i + 1, total=total, device=lane.device_label), 0.05 * i / total)
            try:
                call = fresh_first_call(spec, None, env=env, label=N_("the first call"),
                                        case=job.case if options.case_bytes is not None else None)
            except JobFailed as exc:
                self._notice(job, N_("the first call was timed in the worker after jax.clear_caches(): {error}").format(
                    error=exc))
                return args
            calls.append(asdict(call))
        return (args[0], replace(options, first_calls=tuple(calls)), *args[2:])

    def _learn(self, job: Job) -> None:
        """Keep a finished job's duration for the estimates: its worker's start-up apart, and its own
        work without what a fresh worker or the CPU's ceilings added once. Lock held."""
        assert job.started_at is not None and job.finished_at is not None
        began = job.work_started_at or job.started_at
        if job._cold and job.work_started_at is not None:
            self._durations.learn_start(job._cold[0], job.work_started_at - job.started_at)
        work = job.finished_at - began
        if job._ceilings and job._peak_at is not None:
            work -= job.finished_at - job._peak_at
        if job._cold:
            work = max(work - FRESH_WORKER_S * len(job._cold), work / 2)
        self._durations.learn(_guessed_as(job), job.spec, job.case, work, self._load.during(job._busy))

    def _notice(self, job: Job, text: str) -> None:
        with self._cv:
            job.notices.append(text)
        self._progress(job, text, job.progress)

    def _progress(self, job: Job, phase: str, fraction: float) -> None:
        with self._cv:
            if job.status == "running":  # a finished job's phase is its outcome, for good
                if job.work_started_at is None and phase != "starting worker":
                    job.work_started_at = time.time()
                if phase == "peak" and job._peak_at is None:
                    job._peak_at = time.time()
                job.phase, job.progress = phase, min(max(fraction, 0.0), 1.0)

    def _finish(self, job: Job, *, value: Any = None, error: JaxCompareError | None = None,
                status: str | None = None) -> None:
        with self._cv:
            if job.done:
                return
            job.value, job.error = value, error
            job.status = status or ("failed" if error is not None else "done")
            job.phase = job.status
            job.finished_at = time.time()
            if error is None:
                job.progress = 1.0
                if job.started_at is not None and job.jax_env is None:
                    self._learn(job)
                if job.kind == "list_cases" and job.cases_version is not None:
                    self._cases[job.cases_version] = list(value)
                    while len(self._cases) > _MAX_CASES_FILES:
                        self._cases.popitem(last=False)
            self.history.append(job)
            self._jobs_by_id.pop(job.id, None)
            if job.started_at is not None:  # one cancelled in its queue did not load the machine
                self._load.restart()
            job._done.set()
            self._cv.notify_all()
        if job.owner is not None:
            detail = getattr(error, "detail", "")  # XLA's own words behind a plain line, for the operator
            log.info("job %s (%s) %s%s%s", job.id, job.kind, job.status, f": {error}" if error is not None else "",
                     f" [{detail}]" if detail else "")


def _owner(owner: Owner | str | None) -> Owner | None:
    if owner is None or isinstance(owner, Owner):
        return owner
    return Owner(session=str(owner))


def _catalog_case(spec: Spec) -> Case | None:
    """The catalog's case a spec names (its size and FLOPs feed the first guess); None for a user's
    cases file, which is code and runs in a worker only."""
    if spec.cases_file:
        return None
    from ...catalog import get_case

    try:
        return get_case(spec.case)
    except JaxCompareError:
        return None


def _file_version(path: str) -> tuple[str, int, int]:
    """(absolute path, mtime, size): a cases file is listed again only when it changes."""
    full = os.path.abspath(os.path.expanduser(str(path)))
    if not os.path.isfile(full):
        raise BadInput(N_("cases file {path!r} does not exist or is not a file").format(path=str(path)))
    try:
        stat = os.stat(full)
    except OSError as exc:
        raise BadInput(N_("cases file {path!r} cannot be read: {reason}").format(
            path=str(path), reason=exc.strerror or exc)) from None
    return full, stat.st_mtime_ns, stat.st_size


def _wait_text(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


def _guessed_as(job: Job) -> str:
    """What a job's duration is guessed and learnt as: its kind, and for the pitfalls lab its sections."""
    args = job.steps[0].args if job.steps else ()
    return pitfalls_kind(args[1] if len(args) > 1 else None) if job.kind == "pitfalls" else job.kind


def _combine(kind: str, values: list[Any]) -> Any:
    """Turn the steps' raw values into the job's value."""
    if kind == "measure":
        return Result.from_dict(values[0])
    if kind == "pitfalls":
        report = values[0]
        if len(values) > 1:  # the fair float64 side from the x64 worker joins pitfall 3
            from ..common.lessons import join_fair_float64

            join_fair_float64(report, values[1])
        return report
    return values[0]
