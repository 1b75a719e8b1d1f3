"""The runner's queues at work: one dispatcher thread a lane (server/lanes.py) takes its jobs in
order, runs each step in the lane's worker of its precision (after the job kind prepares it), and
finishes the job; estimates and waits come from the durations seen (server/durations.py).

Every queue, lane and job field is guarded by one condition variable, ``cv``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from typing import Any

from ...i18n import N_
from ...model.cases import Case
from ...model.errors import BadInput, DeadlinePassed, JaxCompareError, JobFailed
from ...model.formatting import seconds_text
from ...model.phases import CEILINGS_PHASE, STARTING_PHASE
from ...model.spec import PRECISIONS, Spec
from ..common.ceilings_cache import ceilings_known
from .durations import FRESH_WORKER_S, Durations, Estimate, LoadReading
from .jobs import Job, JobContext, JobKind, Owner
from .lanes import Lane, LaneContext
from .process import Cancelled
from .settings import RateLimiter, Settings

log = logging.getLogger("jaxcompare.runner")

_MAX_OWNERS = 4096  # sessions whose lane is remembered (a sweep's later points go there): memory stays flat


class Dispatcher:
    """The lanes, their threads and what they share: the jobs, the durations seen, the load."""

    def __init__(self, lanes: list[Lane], settings: Settings):
        self.settings = settings
        self.lanes = lanes
        self.rate = RateLimiter(settings.max_jobs_per_minute)  # per client; a sweep counts once
        self.cv = threading.Condition()  # re-entrant (an RLock)
        self.closed = False
        self.durations = Durations()
        self.load = LoadReading()  # other programs' load, read while the runner is idle
        self.owner_lane: OrderedDict[str, Lane] = OrderedDict()
        self.kept: dict[str, OrderedDict[Any, Any]] = {}  # each kind's memo (JobKind.known/keep)
        self.jobs_by_id: dict[str, Job] = {}
        self.history: deque[Job] = deque(maxlen=200)
        self.context = JobContext(withdraw=self.withdraw)
        self.listeners: list[Callable[[Job], None]] = []  # called with each job once it finished (Runner.on_finished)
        for lane in lanes:
            lane.thread = threading.Thread(target=self._loop, args=(lane,), daemon=True,
                                           name=f"jaxcompare-dispatch-{lane.index}")
            lane.thread.start()

    # --- joining a queue ---------------------------------------------------------------------
    def enqueue(self, job: Job, who: Owner | None = None, *, rate_limited: bool = False, sticky: bool = False) -> Job:
        """Queue ``job`` on the lane that starts it soonest (``sticky``: its owner's last one). A capped
        kind (a visitor's measurement) is refused past the queue's and the client's caps, and past the rate."""
        for step in job.steps:
            if step.precision not in PRECISIONS:
                raise JobFailed(N_("unknown precision {precision!r}").format(precision=step.precision))
        if who is not None:
            job.owner, job.client, job.user = who.session, who.client, who.user
        with self.cv:
            known = job.job_kind.known(job, self._kept(job.job_kind))
            if self.closed:
                raise JobFailed(N_("the runner is shut down"))
            job.context = self.context
            if known is not None:
                self.jobs_by_id[job.id] = job
        if known is not None:
            self.finish(job, value=known)
            return job
        with self.cv:
            lane = self.pick_lane(who, sticky)
            if job.job_kind.capped:
                self._check_caps(lane, who)
            job._busy = self.load.read(wait=False)
            job.estimate = self.estimate_on(lane, job, self.ahead(lane))[0]
            self._check_deadline(job)
            if rate_limited and who is not None:
                self.rate.acquire(who.rate_key)  # last: a refused request spends no token
            job.device = lane.device
            lane.queue.append(job)
            self.jobs_by_id[job.id] = job
            if who is not None:
                self.owner_lane[who.session] = lane
                self.owner_lane.move_to_end(who.session)
                while len(self.owner_lane) > _MAX_OWNERS:
                    self.owner_lane.popitem(last=False)
            self.cv.notify_all()
        if who is not None:
            log.info("job %s (%s%s%s) queued for %s: session %s, client %s, user %s", job.id, job.kind,
                     f" {job.spec.case}" if job.spec else "", f" under JAX {job.jax_env.jax_version}" if job.jax_env
                     else "", lane.device or "the first device", who.session, who.client or "-", who.user or "-")
        return job

    def _check_deadline(self, job: Job) -> None:
        """On a hosted server, a visitor's measurement whose estimate, at its low end, passes the job's deadline
        is refused: it would be stopped there with no result, after holding the queue (a visitor could do it on
        purpose). Locally the page warns (the CLI prints its estimate), and the run is still theirs to try."""
        if self.settings.hosted_mode and job.job_kind.capped and job.estimate is not None \
                and job.estimate.low > job.timeout_s:
            raise BadInput(N_("this run would take at least {low}, longer than the {limit} a job may take on this "
                              "server: it would be stopped with no result. Pick a smaller shape.").format(
                low=seconds_text(job.estimate.low), limit=seconds_text(job.timeout_s)))

    def _check_caps(self, lane: Lane, who: Owner | None) -> None:
        limit = self.settings.max_queue
        if limit is not None and len(lane.queue) >= limit:
            wait = self.wait_s(lane)
            raise BadInput(N_("the queue is full: {waiting} measurements are waiting, the most this server "
                              "allows (JAXCOMPARE_MAX_QUEUE={limit}); yours would have waited about {wait}. "
                              "Try again in a few minutes.").format(
                waiting=len(lane.queue), limit=limit,
                wait=f"{wait:.0f} s" if wait < 120 else f"{wait / 60:.0f} min"))
        cap = self.settings.max_jobs_per_client
        if cap is not None and who is not None:
            active = self.active_for(who.rate_key)
            if active >= cap:
                raise BadInput(N_("you already have {active} measurement(s) queued or running, the most this "
                                  "server allows at once (JAXCOMPARE_MAX_JOBS_PER_CLIENT={cap}); wait for one "
                                  "to finish or stop it").format(active=active, cap=cap))

    def withdraw(self, job: Job) -> None:
        """A cancelled job still in a queue leaves it now; a running one is stopped by its dispatcher."""
        with self.cv:
            lane = next((lane for lane in self.lanes if job in lane.queue), None)
            if lane is None:
                return
            lane.queue.remove(job)
            self.cv.notify_all()
        self.finish(job, error=Cancelled(N_("cancelled before it started")), status="cancelled")

    # --- what is queued, and how long it will take (lock held) ---------------------------------
    def ahead(self, lane: Lane) -> list[Job]:
        return [queued for queued in (lane.current, *lane.queue) if queued is not None]

    def active_for(self, rate_key: str) -> int:
        """A client's measurements queued or running (the jobs a queue's cap counts). A finished job
        stops counting at once, before its dispatcher clears ``lane.current``."""
        return sum(1 for lane in self.lanes for job in self.ahead(lane)
                   if not job.done and job.job_kind.capped and (job.client or job.owner) == rate_key)

    def idle(self) -> bool:
        return all(not lane.queue and lane.current is None for lane in self.lanes)

    def estimate_on(self, lane: Lane, job: Job, ahead: list[Job], key: str | None = None,
                    ) -> tuple[Estimate, tuple[str, ...], bool]:
        """A job's estimate on ``lane`` after the jobs ``ahead`` of it, the precisions whose workers it
        would start, and whether it would measure the CPU's ceilings first."""
        warm = {p for p, worker in lane.workers.items() if worker.alive}
        warm |= {step.precision for queued in ahead for step in queued.steps}  # a job ahead starts them
        cold = tuple(dict.fromkeys(p for p in job.precisions if p not in warm))
        spec = job.spec
        ceilings = (spec is not None and job.job_kind.capped and not any(queued.spec is not None for queued in ahead)
                    and not ceilings_known(spec.dtype))
        key = key or job.job_kind.estimate_key(job)
        return (self.durations.estimate(key, spec, job.case, cold=cold, ceilings=ceilings, busy=job._busy),
                cold, ceilings)

    def typical_s(self, job: Job) -> float:
        """What ``job`` is expected to take once it starts (its estimate); never under a second."""
        if job.estimate is None:
            job.estimate = self.durations.estimate(job.job_kind.estimate_key(job), job.spec, job.case)
        return max(job.estimate.seconds, 1.0)

    def wait_s(self, lane: Lane, before: Job | None = None) -> float:
        """How long until ``before`` (None: a job joining the end) starts on ``lane``."""
        wait = 0.0
        running = lane.current
        if before is not None and running is before:
            return 0.0
        # No job runs past its deadline: one expected to take longer is stopped there (a hosted visitor's 89 min
        # run put "about 78 min" before everyone behind it, on a server that stops jobs at 3 min).
        if running is not None:
            # One taking longer than usual has not told how much longer: say a second, not zero.
            elapsed = time.time() - running.started_at if running.started_at is not None else 0.0
            wait += max(min(self.typical_s(running), running.timeout_s) - elapsed, 1.0)
        for queued in lane.queue:
            if queued is before:
                break
            wait += min(self.typical_s(queued), queued.timeout_s)
        return wait

    def pick_lane(self, who: Owner | None, sticky: bool) -> Lane:
        """A sweep's later points go where its first went; anything else to the device that would start it soonest."""
        if sticky and who is not None and who.session in self.owner_lane:
            return self.owner_lane[who.session]
        return min(self.lanes, key=lambda lane: (self.wait_s(lane), len(lane.queue) + (lane.current is not None),
                                                 lane.index))

    def _kept(self, kind: JobKind) -> OrderedDict[Any, Any]:
        return self.kept.setdefault(kind.name, OrderedDict())

    # --- running -------------------------------------------------------------------------------
    def _loop(self, lane: Lane) -> None:
        while True:
            with self.cv:
                while not lane.queue and not self.closed:
                    self.cv.wait()
                if self.closed:
                    return
                job = lane.queue.popleft()
                lane.current = job
                job.status, job.phase, job.started_at = "running", STARTING_PHASE, time.time()
                if job.jax_env is None:  # another JAX release's workers are not the lane's: no estimate of theirs
                    waited = job.started_at - job.submitted_at > 1.0  # what was said when it queued may be stale
                    if waited:
                        job._busy = self.load.read(wait=False)
                    again, job._cold, job._ceilings = self.estimate_on(lane, job, [])
                    job.estimate = again if waited or job.estimate is None else job.estimate
                self.load.restart()  # its own load would hide the others' until it ends
            try:
                self._execute(lane, job)
            except Exception as exc:  # the dispatcher must survive anything
                log.exception("dispatcher error")
                self.finish(job, error=JobFailed(N_("internal error: {error_type}: {error}").format(
                    error_type=type(exc).__name__, error=exc)))
            finally:
                with self.cv:
                    lane.current = None
                    self.cv.notify_all()

    def _execute(self, lane: Lane, job: Job) -> None:
        values = []
        spent = 0.0  # the deadline covers the steps, not a fresh worker's start-up
        try:
            for step in job.steps:
                worker = lane.worker(step.precision, job.jax_env)
                started = time.monotonic()
                step = job.job_kind.prepare(job, step, LaneContext(
                    lane, worker, progress=lambda text, fraction: self.progress(job, text, fraction),
                    notice=lambda text: self.notice(job, text), cancel=job._cancel.is_set))
                spent += time.monotonic() - started
                lane.hand_over(worker, lambda text: self.notice(job, text))
                started = time.monotonic()
                try:
                    envelope = worker.call(job.id, step.target, (step.request,),
                                           timeout_s=max(job.timeout_s - spent, 1.0), cancel=job._cancel,
                                           on_progress=lambda p, f: self.progress(job, p, f))
                finally:
                    # Whatever became of its step, a worker that started has opened the device: a TPU atlas
                    # whose first cells failed learnt nothing and started its x64 worker beside the x32 one.
                    lane.learn(worker)
                spent += time.monotonic() - started
                start, end = envelope["window"]
                with self.cv:
                    job.window = (job.window[0] if job.window else start, end)
                    job.worker_pid = envelope["pid"]
                values.append(envelope["result"])
        except Cancelled as exc:
            self.finish(job, error=exc, status="cancelled")
            return
        except JaxCompareError as exc:
            if isinstance(exc, DeadlinePassed):  # a step's deadline is the job's remainder: named whole
                exc = DeadlinePassed(N_("stopped after its {timeout_s:g} s deadline; the worker was restarted").format(
                    timeout_s=job.timeout_s))
            self.finish(job, error=job.job_kind.failed(job, exc))
            return
        self.finish(job, value=job.job_kind.combine(job, values))

    def notice(self, job: Job, text: str) -> None:
        with self.cv:
            job.notices.append(text)
        self.progress(job, text, job.progress)

    def progress(self, job: Job, phase: str, fraction: float) -> None:
        with self.cv:
            if job.status == "running":  # a finished job's phase is its outcome, for good
                if job.work_started_at is None and phase != STARTING_PHASE:
                    job.work_started_at = time.time()
                if phase == CEILINGS_PHASE and job._peak_at is None:
                    job._peak_at = time.time()
                job.phase, job.progress = phase, min(max(fraction, 0.0), 1.0)

    def finish(self, job: Job, *, value: Any = None, error: JaxCompareError | None = None,
               status: str | None = None) -> None:
        with self.cv:
            if job.done:
                return
            if error is None and job.started_at is not None:
                job.job_kind.keep(job, value, self._kept(job.job_kind))
            job.value, job.error = value, error
            job.status = status or ("failed" if error is not None else "done")
            job.phase = job.status
            job.finished_at = time.time()
            if error is None:
                job.progress = 1.0
                if job.started_at is not None and job.jax_env is None:
                    self._learn(job)
            self.history.append(job)
            self.jobs_by_id.pop(job.id, None)
            if job.started_at is not None:  # one cancelled in its queue did not load the machine
                self.load.restart()
            job._done.set()
            self.cv.notify_all()
        if job.owner is not None:
            detail = getattr(error, "detail", "")  # XLA's own words behind a plain line, for the operator
            log.info("job %s (%s) %s%s%s", job.id, job.kind, job.status, f": {error}" if error is not None else "",
                     f" [{detail}]" if detail else "")
        for listener in list(self.listeners):  # outside the lock: a listener may take its time (a database write)
            try:
                listener(job)
            except Exception:  # one listener's failure is logged; the job, its waiters and the others go on
                log.exception("a listener of job %s failed", job.id)

    def _learn(self, job: Job) -> None:
        """Keep a finished job's duration for the estimates: its worker's start-up apart, and its own
        work without what a fresh worker or the CPU's ceilings added once. Lock held."""
        assert job.started_at is not None and job.finished_at is not None
        began = job.work_started_at or job.started_at
        if job._cold and job.work_started_at is not None:
            self.durations.learn_start(job._cold[0], job.work_started_at - job.started_at)
        work = job.finished_at - began
        if job._ceilings and job._peak_at is not None:
            work -= job.finished_at - job._peak_at
        if job._cold:
            work = max(work - FRESH_WORKER_S * len(job._cold), work / 2)
        self.durations.learn(job.job_kind.estimate_key(job), job.spec, job.case, work, self.load.during(job._busy))

    def placed(self, job_id: str, node: str) -> None:
        with self.cv:
            job = self.jobs_by_id.get(job_id)
            if job is not None:
                job.node = node

    def case_of(self, spec: Spec) -> Case | None:
        """The catalog's case a spec names (its size and FLOPs feed the first guess); None for a user's
        cases file, which is code and runs in a worker only."""
        if spec.cases_file:
            return None
        from ...catalog import get_case

        try:
            return get_case(spec.case)
        except JaxCompareError:
            return None
