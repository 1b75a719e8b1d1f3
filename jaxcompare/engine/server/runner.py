"""Runs jobs in worker processes: per device, one worker per precision and one queue.
Runs in the server/CLI process and never imports JAX; the work itself is in engine/worker/.

All jobs for a device (app sessions, the CLI) go through its FIFO queue, served by its own dispatcher thread
(server/dispatch.py), so two measurements never overlap on a device and spoil each other's timings. A server with
several devices (``JAXCOMPARE_DEVICES``) has one queue and one worker pair per device, so users of different
devices do not wait for each other. A job past its deadline, or a cancelled running job, kills its worker; the next
job starts a fresh one. With ``JAXCOMPARE_RAY_ADDRESS`` the lanes are the slots of a Ray cluster, whose workers
send each step there (server/cluster.py); queues, deadlines and results stay as here. What a job does is its kind's
(server/jobs.JobKind, the engine's own in server/job_kinds.py).
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Sequence
from typing import Any

from ...i18n import N_
from ...model.cases import Case
from ...model.errors import BadInput
from ...model.result import Result
from ...model.spec import Spec
from ..common.requests import MeasureOptions
from ..common.shipping import pack_case
from .dispatch import Dispatcher
from .durations import Estimate
from .envs import env_for_job
from .jobs import Job, JobKind, Owner, Step, as_owner, job_kind, kind_for_key
from .lanes import Lane, lane_env
from .process import Cancelled
from .settings import Settings, preflight

__all__ = ["Cancelled", "Job", "Owner", "Runner", "Step"]


class Runner:
    """Thread-safe front door to the workers; share one per process."""

    def __init__(self, *, timeout_s: float | None = None, worker_env: dict[str, str] | None = None,
                 settings: Settings | None = None, python: str | None = None, python_path: tuple[str, ...] = ()):
        """``python``/``python_path``: start the workers from another interpreter (an environment
        of another JAX version, engine/server/envs.py) with these folders first on its sys.path."""
        self.settings = settings or Settings.from_env()
        self.timeout_s = timeout_s or self.settings.job_timeout_s
        env = dict(worker_env or {})
        self._cluster = None  # a Ray cluster's connection, when the jobs go there
        if self.settings.ray_address and python is None:
            from .cluster import Cluster

            self._cluster = Cluster(self.settings.ray_address, self.settings.ray_resource)
            factory = functools.partial(self._cluster.worker, placed=lambda job_id, node: self._q.placed(job_id, node))
            lanes = [Lane(i, f"ray:{i}", env, factory=factory) for i in range(self._cluster.slots)]
        else:
            lanes = [Lane(i, device, lane_env(device, env), python, tuple(python_path),
                          holders=self.settings.device_holders)
                     for i, device in enumerate(self.settings.devices or (None,))]
        self._q = Dispatcher(lanes, self.settings)
        self.history = self._q.history
        self.on_finished = self._q.listeners  # append f(job): called in a runner thread as each job finishes

    # --- submitting ------------------------------------------------------------------------
    def submit_job(self, kind: JobKind | str, *args: Any, spec: Spec | None = None, case: Case | None = None,
                   timeout_s: float | None = None, owner: Owner | str | None = None, rate_limited: bool = False,
                   sticky: bool = False, **job: Any) -> Job:
        """Queue a job of ``kind`` (a registered JobKind or its name): its steps are
        ``kind.steps(*args)``. ``spec``/``case``: what it measures, for its estimate (the case is looked
        up in the catalog here when not given); ``job``: other Job fields (jax_env)."""
        kind = job_kind(kind) if isinstance(kind, str) else kind
        if spec is not None and case is None:
            case = self._q.case_of(spec)
        made = Job(kind, kind.steps(*args), timeout_s or self.timeout_s, spec=spec, case=case, **job)
        return self._q.enqueue(made, as_owner(owner), rate_limited=rate_limited, sticky=sticky)

    def submit(self, spec: Spec, *, case: Case | None = None, timeout_s: float | None = None,
               owner: Owner | str | None = None, rate_limited: bool = True, sticky: bool | None = None,
               profile_dir: str | os.PathLike[str] | None = None, jax: str | None = None) -> Job:
        """Queue a measurement; returns at once with a Job to poll or wait on. ``case``: a Case that is not in
        the catalog (a notebook's functions), sent with the job, cloudpickled, to the worker of ``spec.precision``.
        ``profile_dir``: also trace a few steady-state calls into ``profile_dir/<result id>`` (Result.profile).

        Raises BadInput / TooLarge at once for a request that cannot run (unknown case, bad shape, over a limit,
        more memory than the host has, a case that cannot be sent, a full queue, over the rate).
        ``rate_limited=False`` marks a later point of a sweep: it is not counted again and runs on the device of
        its owner's previous job; ``sticky`` alone asks the latter (a race's later ports, each still counted).
        ``jax``: measure under that JAX release, in its prepared environment (engine/server/envs.py; in hosted
        mode only a version the operator offers, JAXCOMPARE_JAX_VERSIONS), else VersionUnavailable at once."""
        if case is not None and case.name != spec.case:
            raise BadInput(N_("the spec names case {spec_case!r} but the case sent is {case!r}").format(
                spec_case=spec.case, case=case.name))
        found = self.check(spec, case)  # looked up once: the checks, the estimate
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
        return self.submit_job("measure", spec, options, spec=spec, case=found, timeout_s=timeout_s, owner=owner,
                               rate_limited=rate_limited, sticky=not rate_limited if sticky is None else sticky,
                               jax_env=jax_env)

    def check(self, spec: Spec, case: Case | None = None) -> Case | None:
        """submit's at-once checks (case, shape, limits, host memory), queueing nothing: a front end refuses before
        it says it is measuring. Returns ``case`` if sent, else the catalog's (None: a user's file, the worker's)."""
        found = case if case is not None else self._q.case_of(spec)
        preflight(spec, self.settings, case=case, found=found)
        return found

    def submit_pitfalls(self, spec: Spec, sections: tuple[str, ...] | None = None, *,
                        timeout_s: float | None = None, owner: Owner | str | None = None) -> Job:
        """Queue the pitfalls lab; an x32 run borrows the x64 worker for the fair float64 side."""
        from ..common.lessons import check_sections

        found = self.check(spec)
        return self.submit_job("pitfalls", spec, check_sections(sections), spec=spec, case=found, timeout_s=timeout_s,
                               owner=owner, rate_limited=True)

    def run(self, spec: Spec, *, timeout_s: float | None = None,
            profile_dir: str | os.PathLike[str] | None = None) -> Result:
        return self.submit(spec, timeout_s=timeout_s, profile_dir=profile_dir).wait()

    def environment(self, precision: str = "x32", *, timeout_s: float = 120.0) -> dict[str, Any]:
        """The worker's view: JAX version, backend, devices, x64 state."""
        return self.submit_environment(precision, timeout_s=timeout_s).wait()

    def submit_environment(self, precision: str = "x32", *, timeout_s: float = 120.0) -> Job:
        """Like environment(), without waiting: poll the Job (pages must not block)."""
        return self.submit_job("environment", precision, timeout_s=timeout_s)

    def selfcheck(self, precision: str, names: list[str] | None = None,
                  cases_file: str | None = None, *, timeout_s: float = 300.0) -> list[dict[str, Any]]:
        return self.submit_job("selfcheck", precision, names, cases_file, timeout_s=timeout_s).wait()

    def submit_list_cases(self, cases_file: str, *, timeout_s: float | None = None,
                          owner: Owner | str | None = None) -> Job:
        """Load a user's cases file in a worker, under the job's deadline, and report its
        cases (``Case.summary()`` dicts, no functions). A version already listed finishes at once."""
        if self.settings.allow_cases_file is False:
            raise BadInput(N_("user case files are disabled on this server (they are code; see "
                              "JAXCOMPARE_ALLOW_CASES_FILE in docs/hosting.md)"))
        return self.submit_job("list_cases", cases_file, timeout_s=timeout_s, owner=owner)

    def list_cases(self, cases_file: str, *, timeout_s: float | None = None) -> list[dict[str, Any]]:
        """The cases in a user's file (see submit_list_cases), waiting for them."""
        return self.submit_list_cases(cases_file, timeout_s=timeout_s).wait()

    # --- asking --------------------------------------------------------------------------------
    @property
    def devices(self) -> list[str | None]:
        """The devices with a queue of their own (None: the worker's first device)."""
        return [lane.device for lane in self._q.lanes]

    @property
    def single_holder(self) -> bool:
        """Whether a device here lets one process at a time hold it (a TPU chip), as far as known:
        its workers then take turns, and each switch of precision opens the device again."""
        return any(lane.single_holder for lane in self._q.lanes)

    @property
    def handovers(self) -> int:
        """How often a single-holder device has gone from one worker to another so far."""
        with self._q.cv:
            return sum(lane.handovers for lane in self._q.lanes)

    def position(self, job: Job) -> int:
        """0 when running, 1.. when queued (1 = next on its device), -1 when finished."""
        with self._q.cv:
            for lane in self._q.lanes:
                if lane.current is job:
                    return 0
                if job in lane.queue:
                    return lane.queue.index(job) + 1
        return -1

    def jobs_ahead(self, job: Job) -> int | None:
        """How many jobs run before ``job`` on its device, the running one included; None when
        it is not waiting (running or finished)."""
        with self._q.cv:
            for lane in self._q.lanes:
                if job in lane.queue:
                    return lane.queue.index(job) + (lane.current is not None)
        return None

    def estimate_wait_s(self, job: Job) -> float:
        """Rough wait before ``job`` starts, from recent job durations."""
        with self._q.cv:
            lane = next((lane for lane in self._q.lanes if job in lane.queue or lane.current is job), None)
            return 0.0 if lane is None else self._q.wait_s(lane, before=job)

    def estimate(self, spec: Spec, *, kind: str = "measure", case: Case | None = None) -> Estimate:
        """How long a ``kind`` job ('measure', 'pitfalls', or an estimate key such as durations.pitfalls_kind(sections))
        of ``spec`` would take once it starts, said before it is submitted: from the durations seen here, else a
        first guess (engine/server/durations.py); its wait in the queue is queue_wait()'s."""
        return self.estimate_all([spec], kind=kind, case=case)

    def estimate_all(self, specs: Sequence[Spec], *, kind: str = "measure", case: Case | None = None) -> Estimate:
        """How long ``specs`` run one after the other would take (a sweep's points): each worker's
        start-up and the CPU's ceilings counted once."""
        total: Estimate | None = None
        the_kind = kind_for_key(kind)
        with self._q.cv:
            idle = self._q.idle()
        busy = self._q.load.read(wait=idle)  # outside the lock: a fresh reading takes a moment
        with self._q.cv:
            lane = self._q.pick_lane(None, False)
            ahead = self._q.ahead(lane)
            for spec in specs:
                steps = tuple(Step(p, "") for p in the_kind.precisions(spec, kind))
                job = Job(the_kind, steps, 0.0, spec=spec, case=case if case is not None else self._q.case_of(spec),
                          _busy=busy)
                one = self._q.estimate_on(lane, job, ahead, key=kind)[0]
                total = one if total is None else total + one
                ahead.append(job)
        return total if total is not None else Estimate(0.0, 0.0, 0.0)

    def queue_wait(self) -> tuple[float, int]:
        """What a job submitted now would wait before it starts: seconds, and the measurements ahead of
        it (a page's own environment or case-list job adds to the wait, but is no one's measurement)."""
        with self._q.cv:
            lane = self._q.pick_lane(None, False)
            return self._q.wait_s(lane), sum(job.job_kind.capped for job in self._q.ahead(lane))

    def recent(self) -> list[Job]:
        """The last jobs that finished (up to 200), oldest first: a copy, safe to read."""
        with self._q.cv:
            return list(self._q.history)

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until nothing is queued or running (True), or ``timeout`` passes (False)."""
        with self._q.cv:
            return self._q.cv.wait_for(self._q.idle, timeout)

    def queue_length(self) -> int:
        with self._q.cv:
            return sum(len(self._q.ahead(lane)) for lane in self._q.lanes)

    def active_jobs(self) -> list[Job]:
        """Every job queued or running now, on every device (a copy, safe to read)."""
        with self._q.cv:
            return [job for lane in self._q.lanes for job in self._q.ahead(lane)]

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
        return {"address": backend.address, "resource": backend.resource, "slots": len(self._q.lanes),
                "nodes": nodes, "queued": sum(job.status == "queued" for job in active), "error": error}

    # --- stopping ------------------------------------------------------------------------------
    def close(self) -> None:
        """Stop: queued jobs fail, running jobs are cancelled, workers are shut down."""
        q = self._q
        with q.cv:
            q.closed = True
            pending = [job for lane in q.lanes for job in lane.queue]
            for lane in q.lanes:
                lane.queue.clear()
            running = [lane.current for lane in q.lanes if lane.current is not None]
            q.cv.notify_all()
        for job in running:
            job._cancel.set()  # the dispatcher finishes the job as cancelled
        # Kill first, wait after: Ctrl-C may come twice (`timeout -s INT` signals the CLI, then its group),
        # and a second KeyboardInterrupt cutting the waits below short must not leave a worker running on.
        for lane in q.lanes:
            lane.kill_workers()
        for job in pending:
            q.finish(job, error=Cancelled(N_("the runner was shut down before this job started")), status="cancelled")
        for lane in q.lanes:
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
