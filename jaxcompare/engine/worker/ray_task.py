"""The body of a Ray task (server/cluster.py sends each step of a cluster runner's jobs as one): in a
fresh Ray worker process, it sets the step's environment before JAX is imported, then runs the step
as a local worker would (serve.run_target) and streams the worker's messages back.
"""

from __future__ import annotations

import os
import queue
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

_PROGRESS_EVERY_S = 0.1  # progress within one phase, at most this often: each message is a Ray object


class _Relay:
    """Stands in for the worker's socket (worker._conn) inside a Ray task: messages go to the
    task's stream; progress within a phase is thinned out."""

    def __init__(self, messages: queue.Queue[tuple[Any, ...]]) -> None:
        self._messages = messages
        self._last: tuple[str, float] | None = None

    def send(self, message: tuple[Any, ...]) -> None:
        if message[0] == "progress":
            now = time.monotonic()
            if self._last is not None and self._last[0] == message[2] and now - self._last[1] < _PROGRESS_EVERY_S:
                return
            self._last = (message[2], now)
        self._messages.put(message)


def _undo_ray_thread_limit() -> None:
    """Ray sets OMP_NUM_THREADS to a task's CPUs (1 here) where the node left it unset; a local
    worker's NumPy uses every core, so results would not compare. /proc/self/environ still holds
    the environment this process started with (the node's)."""
    try:
        with open("/proc/self/environ", "rb") as fh:
            initial = {item.split(b"=", 1)[0] for item in fh.read().split(b"\0") if item}
    except OSError:
        return
    if b"OMP_NUM_THREADS" not in initial:
        os.environ.pop("OMP_NUM_THREADS", None)


def run_step(job_id: str, target: str, args: tuple[Any, ...], precision: str,
             env: dict[str, str]) -> Iterator[tuple[Any, ...]]:
    """The body of a Ray task, in a fresh Ray worker process: sets ``env``, then yields ("placed",
    node, pid, host), then ("ready",) once JAX is set up, then the local worker's messages: progress,
    done or error. The step runs in a thread so that its progress can be yielded while it measures."""
    os.environ.update(env)  # before JAX's import, which reads JAX_PLATFORMS and JAX_ENABLE_X64
    import ray

    from . import environment
    from . import serve as worker

    node = ray.get_runtime_context().get_node_id()
    yield ("placed", node, os.getpid(), socket.gethostname())
    _undo_ray_thread_limit()
    environment.mark_runner("ray", node)
    messages: queue.Queue[tuple[Any, ...]] = queue.Queue()
    worker._conn = _Relay(messages)  # type: ignore[assignment]

    def body() -> None:
        try:
            worker.init_worker(precision)
        except BaseException as exc:
            messages.put(worker._error_message(exc))
            return
        messages.put(("ready",))
        try:
            envelope = worker.run_target(job_id, target, *args)
        except BaseException as exc:
            messages.put(worker._error_message(exc))
        else:
            messages.put(("done", envelope | {"node": node}))

    threading.Thread(target=body, name="jaxcompare-step", daemon=True).start()
    while True:
        message = messages.get()
        yield message
        if message[0] in ("done", "error"):
            return
