"""A device's lane: its queue, the job it runs, its workers (one per precision), and what a job kind
may ask of it before a step runs (LaneContext): a device one process at a time may hold (a TPU chip)
is handed from worker to worker, or let go for fresh processes started from here.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...i18n import N_
from ...model.platforms import Platform, platform
from .envs import JaxEnv
from .jobs import Job
from .process import Cancelled, WorkerProcess

_MAX_OTHER_JAX_WORKERS = 4  # per device: workers of other JAX versions kept warm between a versions run's rounds


class Lane:
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

    def kill_workers(self) -> None:
        """SIGKILL this lane's local worker processes now, without waiting (a cluster's slots stop as they do)."""
        for worker in self.all_workers():
            if isinstance(worker, WorkerProcess):
                worker.kill()

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


def lane_env(device: str | None, base: dict[str, str]) -> dict[str, str]:
    """The workers' environment for one device. Where the platform has a visibility variable (a GPU's
    CUDA_VISIBLE_DEVICES) a worker sees only its own device (else each of the 2 x N workers would set
    up every one); other platforms pin by index."""
    env = dict(base)
    if device is None:
        return env
    name, _, index = device.partition(":")
    found = platform(name)
    variable = found.visible_devices if found is not None else None
    if variable is None:
        env["JAXCOMPARE_WORKER_DEVICE"] = device
        return env
    visible = [v.strip() for v in (env.get(variable) or os.environ.get(variable) or "").split(",") if v.strip()]
    env[variable] = visible[int(index)] if int(index) < len(visible) else index
    env["JAXCOMPARE_WORKER_DEVICE"] = f"{name}:0"
    return env


@dataclass(frozen=True)
class LaneContext:
    """What a job kind's prepare() may do before its step runs on ``lane`` in ``worker`` (jobs.StepContext):
    say how far the job is, tell its user something, and on a single-holder device take the device from
    the lane's workers for processes started here."""

    lane: Lane
    worker: WorkerProcess
    progress: Callable[[str, float], None]
    notice: Callable[[str], None]
    cancel: Callable[[], bool]

    @property
    def local(self) -> bool:
        """The lane's workers are local processes (not a cluster's slots): processes started here run beside them."""
        return self.lane.factory is None

    @property
    def device_label(self) -> str:
        return self.lane.device_label

    def check_cancelled(self) -> None:
        if self.cancel():
            raise Cancelled(N_("cancelled while running"))

    def let_go(self, notice: str, job: Job) -> dict[str, str] | None:
        """On a single-holder device, before fresh processes that need it run from here: ``notice``
        (its {device} filled) told to the user, every worker of the lane stopped, and the environment
        the processes start with returned. None, with the workers left alone, on any other device."""
        lane = self.lane
        if lane.platform is None and lane.holders is None:
            self.worker.start(job._cancel)  # the first worker to open the device says what it is
            lane.learn(self.worker)
        if not lane.single_holder:
            return None
        self.notice(notice.format(device=lane.device_label))
        for other in lane.all_workers():
            other.stop()
        return {**os.environ, **lane.env}
