"""Jobs on a Ray cluster (``JAXCOMPARE_RAY_ADDRESS``, docs/cluster.md): a backend beside the local
worker processes, not a second runner. The Runner keeps its queues, one lane per measurement slot
of the cluster; a lane's worker sends each step to Ray as a task holding one whole slot (a GPU, or
one of a custom resource on TPU and CPU-only hosts), so no two measurements share a device. Each
task runs in a fresh Ray worker process (``max_calls=1``: x64 is per process, set by the task
before JAX is imported) and streams its messages back as a generator: where it was placed, ready,
progress, then the reply the local worker would send. Ray is imported here only, and this module
only when the variable is set.
"""

from __future__ import annotations

import importlib
import logging
import socket
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from ...i18n import N_
from ...model.errors import BadInput, DeadlinePassed, JobFailed
from ...model.platforms import HOST, PLATFORMS, PREFERRED
from .process import POLL_S, START_TIMEOUT_S, Cancelled, raise_reply_error

log = logging.getLogger("jaxcompare.runner")

LOCAL = "local"  # JAXCOMPARE_RAY_ADDRESS=local: a cluster of this machine alone, started here
# JAXCOMPARE_RAY_RESOURCE's words -> the Ray resource a job holds one of: each platform's in the platform
# table. GPUs are Ray's own; a TPU host (whose chips JAX takes together) and a CPU-only host each declare
# one slot of their own.
SLOT_RESOURCES = {name: found.ray_resource for name, found in PLATFORMS.items() if found.ray_resource}
# Ray's own resources, which a task asks for by keyword rather than in ``resources``.
_RAY_OWN = {"GPU": "num_gpus"}  # Ray sets CUDA_VISIBLE_DEVICES to the one it gives
# A job on a host's CPU slot sees no accelerator: JAX on the host only, every device-hiding variable empty.
_HOST_ONLY_ENV = {"JAX_PLATFORMS": HOST.name,
                  **{found.visible_devices: "" for found in PLATFORMS.values() if found.visible_devices}}
_REMEMBERED_JOBS = 256  # a job's later steps prefer its first step's node (the pitfalls' float64 side)
_PROBE_S = 5.0  # how long the head's port may take to accept a connection
# The body of every Ray task (worker/ray_task.py): it runs in a Ray worker process and imports JAX, so
# the server names it and loads it by name, as server/process.py names a local worker's entry point.
TASK = "jaxcompare.engine.worker.ray_task"

_lock = threading.Lock()  # ray.init is per process: Runners share one connection
_users = 0
_owned = False  # this process started it (ray.init), so the last Runner to close shuts it down


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise BadInput(N_("JAXCOMPARE_RAY_ADDRESS is set but Ray is not installed here: "
                          "pip install 'jaxcompare[cluster]'")) from None
    return ray


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def _unreachable(address: str, error: str) -> JobFailed:
    return JobFailed(N_("cannot reach the Ray cluster at {address} (JAXCOMPARE_RAY_ADDRESS): {error}; is it running "
                        "there, and with token authentication, does this process have RAY_AUTH_MODE=token and the "
                        "cluster's token?").format(address=address, error=error))


def _check_reachable(address: str) -> None:
    """Fail in seconds where nothing listens at HOST:PORT: ray.init would retry for minutes."""
    host, _, port = address.rpartition(":")
    if not host or not port.isdecimal():
        return  # 'auto' and other forms Ray resolves itself
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=_PROBE_S).close()
    except OSError as exc:
        raise _unreachable(address, exc.strerror or str(exc)) from None


def _connect(address: str) -> Any:
    global _users, _owned
    ray = _ray()
    with _lock:
        if not ray.is_initialized():
            if address != LOCAL:
                _check_reachable(address)
            # The workers' output stays in Ray's logs: stdout may be a `--json -` document.
            options: dict[str, Any] = {"log_to_driver": False, "logging_level": logging.WARNING,
                                       "namespace": "jaxcompare"}
            if address == LOCAL:
                # This machine is one slot of each kind it has: its GPUs (Ray finds them) or its CPU.
                options.update(address="local", include_dashboard=False, resources={SLOT_RESOURCES[HOST.name]: 1})
            else:
                options["address"] = address
            try:
                ray.init(**options)
            except Exception as exc:
                raise _unreachable(address, _one_line(exc)) from None
            _owned = True
        _users += 1
    return ray


def _disconnect() -> None:
    global _users, _owned
    with _lock:
        _users -= 1
        if _users <= 0 and _owned:
            _ray().shutdown()
            _users, _owned = 0, False


class Cluster:
    """The connection to one Ray cluster and what its jobs ask of it; share one per Runner."""

    def __init__(self, address: str, resource: str = "auto") -> None:
        self.address = address
        self._ray = _connect(address)
        try:
            totals = self._ray.cluster_resources()
            self.resource = _slot_resource(resource, totals)
            self.slots = int(totals.get(self.resource, 0))
            if self.slots < 1:
                raise BadInput(N_("the Ray cluster at {address} has no {resource} to measure on "
                                  "(JAXCOMPARE_RAY_RESOURCE; docs/cluster.md)").format(
                    address=address, resource=self.resource))
        except BaseException:
            _disconnect()
            raise
        self._remote = self._ray.remote(max_calls=1)(importlib.import_module(TASK).run_step)
        self._job_nodes: OrderedDict[str, str] = OrderedDict()
        self._nodes_lock = threading.Lock()
        log.info("jobs go to the Ray cluster at %s: %d slot(s) of %s", address, self.slots, self.resource)

    def worker(self, precision: str, placed: Callable[[str, str], None]) -> RayWorker:
        """A lane's worker for ``precision``; ``placed(job_id, node_id)`` is told where each step runs."""
        return RayWorker(self, precision, placed)

    def submit(self, job_id: str, target: str, args: tuple[Any, ...], precision: str) -> Any:
        """Start one step as a Ray task; returns its message stream (an ObjectRefGenerator)."""
        # The task sets its own environment before JAX is imported: with a runtime_env Ray starts
        # each task's worker through its setup_worker, one more Python process a task.
        env = {"JAXCOMPARE_WORKER_PRECISION": precision, "JAX_ENABLE_X64": "1" if precision == "x64" else "0"}
        options: dict[str, Any] = {"num_cpus": 0, "max_retries": 0}
        if self.resource in _RAY_OWN:
            options[_RAY_OWN[self.resource]] = 1
        else:
            options["resources"] = {self.resource: 1}
        if self.resource == SLOT_RESOURCES[HOST.name]:
            env.update(_HOST_ONLY_ENV)  # a GPU host's GPUs are not this job's
        with self._nodes_lock:
            node = self._job_nodes.get(job_id)
        if node is not None:
            from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

            options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(node, soft=True)
        return self._remote.options(**options).remote(job_id, target, args, precision, env)

    def remember(self, job_id: str, node: str) -> None:
        with self._nodes_lock:
            self._job_nodes[job_id] = node
            while len(self._job_nodes) > _REMEMBERED_JOBS:
                self._job_nodes.popitem(last=False)

    def forget(self, job_id: str) -> None:
        with self._nodes_lock:
            self._job_nodes.pop(job_id, None)

    def nodes(self) -> list[dict[str, Any]]:
        """The cluster's nodes as Ray's control store knows them: id, address, alive, resources."""
        out = []
        for node in self._ray.nodes():
            resources = node.get("Resources") or {}
            out.append({"id": node.get("NodeID"), "address": node.get("NodeManagerAddress"),
                        "hostname": node.get("NodeManagerHostname"), "alive": bool(node.get("Alive")),
                        "slots": int(resources.get(self.resource, 0)), "cpus": int(resources.get("CPU", 0)),
                        "gpus": int(resources.get("GPU", 0))})
        return out

    def close(self) -> None:
        _disconnect()


def _slot_resource(word: str, totals: dict[str, float]) -> str:
    """The resource a job holds: 'auto' takes the GPUs if the cluster has any, else the TPU hosts'
    slots, else the CPU hosts'; another word names it (gpu, tpu, cpu) or is a custom resource."""
    if word != "auto":
        return SLOT_RESOURCES.get(word, word)
    preferred = [SLOT_RESOURCES[name] for name in PREFERRED if name in SLOT_RESOURCES]
    for name in preferred:
        if totals.get(name, 0) >= 1:
            return name
    return preferred[0]  # none at all: the refusal names the first choice (the GPUs)


class _NodeLost(Exception):
    def __init__(self, node: str | None, started: bool) -> None:
        super().__init__(node)
        self.node, self.started = node, started


class RayWorker:
    """Sends a lane's steps of one precision to the cluster, with the local worker's ``call`` and
    ``stop``: the deadline (from when the task's worker is ready), Stop, and a node lost midway."""

    def __init__(self, cluster: Cluster, precision: str, placed: Callable[[str, str], None]) -> None:
        self.cluster, self.precision, self._placed = cluster, precision, placed
        self._running: Any = None
        self.pid: int | None = None

    @property
    def alive(self) -> bool:
        """A task in flight holds its node's device; between calls nothing of ours does."""
        return self._running is not None

    def call(self, job_id: str, target: str, args: tuple[Any, ...], *, timeout_s: float,
             cancel: threading.Event, on_progress: Callable[[str, float], None]) -> dict[str, Any]:
        """Run ``target(job_id, *args)`` on the cluster. A node that dies before the step started
        measuring costs one retry elsewhere; once timing has begun, the step fails and says so."""
        if cancel.is_set():
            raise Cancelled(N_("cancelled before it started"))
        lost: list[str | None] = []
        while True:
            try:
                return self._attempt(job_id, target, args, timeout_s, cancel, on_progress, retry=bool(lost))
            except _NodeLost as exc:
                lost.append(exc.node)
                if exc.started:
                    raise JobFailed(N_("the cluster node {node} died or left the cluster while this job was measuring "
                                       "on it; it was not run again, since its timing had begun").format(
                        node=_short(exc.node))) from None
                if len(lost) > 1:
                    raise JobFailed(N_("the cluster nodes {nodes} died or left the cluster before this job began "
                                       "measuring; it was tried twice").format(
                        nodes=", ".join(_short(n) for n in lost))) from None
                log.warning("job %s: node %s was lost before it began measuring; trying once more elsewhere",
                            job_id, exc.node)
                self.cluster.forget(job_id)

    def stop(self) -> None:
        running, self._running = self._running, None
        if running is not None:
            self._cancel(running)

    def _cancel(self, stream: Any) -> None:
        try:
            self.cluster._ray.cancel(stream, force=True)  # kills the task's worker: its device is free at once
        except Exception as exc:  # already finished, or its node is gone
            log.debug("cancel: %s", exc)

    def _attempt(self, job_id: str, target: str, args: tuple[Any, ...], timeout_s: float,
                 cancel: threading.Event, on_progress: Callable[[str, float], None], *, retry: bool) -> dict[str, Any]:
        ray = self.cluster._ray
        stream = self.cluster.submit(job_id, target, args, self.precision)
        self._running = stream
        on_progress("retrying" if retry else "cluster_wait", 0.0)
        node: str | None = None
        started = False  # the step has reported progress: its timing has begun
        start_by = time.monotonic() + START_TIMEOUT_S
        deadline: float | None = None
        try:
            while True:
                if cancel.is_set():
                    self._cancel(stream)
                    raise Cancelled(N_("cancelled while running; its cluster worker was stopped"))
                now = time.monotonic()
                if deadline is None and now > start_by:
                    self._cancel(stream)
                    raise JobFailed(N_("no {resource} of the cluster became free, or its worker did not start, within "
                                       "{timeout_s:g} s").format(resource=self.cluster.resource,
                                                                 timeout_s=START_TIMEOUT_S))
                if deadline is not None and now > deadline:
                    self._cancel(stream)
                    raise DeadlinePassed(N_(
                        "stopped after its {timeout_s:g} s deadline; its cluster worker was stopped").format(
                        timeout_s=timeout_s))
                ready, _ = ray.wait([stream], timeout=POLL_S)
                if not ready:
                    continue
                try:
                    message = ray.get(next(stream))
                except StopIteration:
                    raise JobFailed(N_("the cluster task ended without a reply")) from None
                except ray.exceptions.TaskCancelledError:
                    raise Cancelled(N_("cancelled while running; its cluster worker was stopped")) from None
                except (ray.exceptions.NodeDiedError, ray.exceptions.ObjectLostError) as exc:
                    log.warning("job %s: %s", job_id, _one_line(exc))
                    raise _NodeLost(node, started) from None
                except ray.exceptions.WorkerCrashedError:
                    raise JobFailed(N_("the worker process on cluster node {node} died (crashed, killed or out of "
                                       "memory)").format(node=_short(node))) from None
                except ray.exceptions.RayError as exc:
                    raise JobFailed(N_("the cluster could not run this job: {error}").format(
                        error=_one_line(exc))) from None
                kind = message[0]
                if kind == "placed":
                    node, self.pid = message[1], message[2]
                    self.cluster.remember(job_id, node)
                    self._placed(job_id, node)
                    on_progress("starting worker", 0.0)
                elif kind == "ready":
                    deadline = time.monotonic() + timeout_s  # the deadline covers the step, not JAX's import
                elif kind == "progress":
                    started = True
                    on_progress(str(message[2]), float(message[3]))
                elif kind == "done":
                    return message[1]
                elif kind == "error":
                    raise_reply_error(message, job_id, f"on cluster node {node}")
        finally:
            self._running = None


def _short(node: str | None) -> str:
    return node[:12] if node else "?"
