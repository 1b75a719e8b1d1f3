"""One worker process, seen from the server/CLI process: started with ``python -c`` and
spoken to over a private socket pair. Never imports JAX.

Why not multiprocessing: spawn re-runs the parent's ``__main__`` in every child, and under
Streamlit ``__main__`` is the page being shown (it would build a Runner of its own). Python
has no public way to leave it out, so a worker is a plain subprocess whose entry point is
``jaxcompare.engine.worker.serve``: nothing of the parent's is imported but that.

Messages are pickled tuples (``multiprocessing.connection.Connection``):
parent -> worker ``("run", job_id, target, args)``; worker -> parent ``("ready", pid, platforms)``,
``("progress", job_id, phase, fraction)``, ``("done", envelope)`` or
``("error", JaxCompareError | None, text, traceback)``. The parent never unpickles a user's
exception class: anything but a jaxcompare error arrives as text.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from multiprocessing.connection import Connection
from typing import Any, NoReturn

from ...i18n import N_
from ...model.errors import DeadlinePassed, DeviceHeld, JaxCompareError, JobFailed
from ...model.platforms import backend_error_line

log = logging.getLogger("jaxcompare.runner")

POLL_S = 0.05
# Importing JAX (and, on a GPU, creating its client) is not the job's time: it has its own limit.
START_TIMEOUT_S = 300.0
# What a worker is called in its errors (a runner with several devices names the device too).
WORKER_LABELS = {"x32": N_("x32 worker"), "x64": N_("x64 worker")}
# A terminal's Ctrl-C reaches the whole process group, the workers too: the parent alone decides (it
# cancels the job and stops its workers), so a worker ignores SIGINT from its first line on, rather than
# die mid-reply or mid-start with a KeyboardInterrupt's traceback (its children inherit the ignore).
_IGNORE_SIGINT = "import signal; signal.signal(signal.SIGINT, signal.SIG_IGN); "
# The worker gets the parent's sys.path (as spawn would), so it imports the same jaxcompare
# however the parent found it (an install, a checkout on PYTHONPATH, a test's sys.path entry).
_ENTRY = (_IGNORE_SIGINT + "import json, sys; sys.path[:] = json.loads(sys.argv[2]); "
          "from jaxcompare.engine.worker.serve import serve; serve(int(sys.argv[1]))")
# A worker from another interpreter (an environment of another JAX version, engine/server/envs.py)
# keeps its own sys.path, so its own JAX imports, and puts only the given folders first.
_FOREIGN_ENTRY = (_IGNORE_SIGINT + "import json, sys; sys.path[:0] = json.loads(sys.argv[2]); "
                  "from jaxcompare.engine.worker.serve import serve; serve(int(sys.argv[1]))")
# The parent's own import settings would bring the host's packages into a foreign interpreter.
_FOREIGN_UNSET = ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV")


class Cancelled(JobFailed):
    """The job's owner cancelled it."""


class Died(JobFailed):
    """The worker process exited while it held a job."""

    def __init__(self, message: str, exitcode: int | None):
        super().__init__(message)
        self.exitcode = exitcode


def raise_reply_error(message: tuple[Any, ...], job_id: str, where: str) -> NoReturn:
    """Raise a worker's ("error", error, text, trace) reply: the engine's own error as it is, any
    other as JobFailed with its one line, its traceback logged for the operator."""
    _, error, text, trace = message
    if isinstance(error, JaxCompareError):
        raise error
    log.error("job %s failed %s: %s\n%s", job_id, where, text, trace)
    raise JobFailed(text)


class WorkerProcess:
    """A long-lived worker for one precision (and one device). ``call`` runs one step and
    returns its envelope, or raises; a worker that was stopped or died is started afresh
    by the next call. Used by one dispatcher thread at a time."""

    def __init__(self, precision: str, env: Mapping[str, str], *, label: str = "", python: str | None = None,
                 python_path: tuple[str, ...] = ()):
        """``python``: the interpreter to start (None: this one, with this process's sys.path);
        ``python_path``: the folders a foreign interpreter puts first on its sys.path."""
        self.precision = precision
        self.python = python
        self.python_path = tuple(python_path)
        self.label = label or WORKER_LABELS.get(precision, f"{precision} worker")
        self._env = dict(env)
        self._proc: subprocess.Popen[bytes] | None = None
        self._conn: Connection | None = None
        self.pid: int | None = None
        self._killed = False  # kill() stopped it: its lost socket is a cancellation
        # The JAX platforms the last started worker opened ('cpu', 'tpu'...): the lane reads from
        # them whether another process may hold the device beside this one.
        self.platforms: tuple[str, ...] = ()

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def call(self, job_id: str, target: str, args: tuple[Any, ...], *, timeout_s: float,
             cancel: threading.Event, on_progress: Callable[[str, float], None]) -> dict[str, Any]:
        """Run ``target(job_id, *args)`` in the worker. The deadline starts once the worker is
        up (a fresh one imports JAX first); ``cancel`` is checked every POLL_S."""
        if cancel.is_set():
            raise Cancelled(N_("cancelled before it started"))
        self._ensure_started(cancel)
        conn = self._conn
        assert conn is not None
        try:
            conn.send(("run", job_id, target, args))
        except OSError:
            raise self._died() from None
        deadline = time.monotonic() + timeout_s
        while True:
            if cancel.is_set():
                self.stop()
                raise Cancelled(N_("cancelled while running; the worker was restarted"))
            left = deadline - time.monotonic()
            if left <= 0:
                self.stop()
                raise DeadlinePassed(N_("stopped after its {timeout_s:g} s deadline; the worker was restarted").format(
                    timeout_s=timeout_s))
            if not conn.poll(min(POLL_S, left)):
                continue
            message = self._receive()
            kind = message[0]
            if kind == "progress":
                _, msg_job, phase, fraction = message
                if msg_job == job_id:
                    on_progress(str(phase), float(fraction))
            elif kind == "done":
                return message[1]
            elif kind == "error":
                raise_reply_error(message, job_id, f"in the {self.label}")

    def start(self, cancel: threading.Event) -> None:
        """Start the worker now, unless it runs (``call`` starts it too): its platforms are then known."""
        self._ensure_started(cancel)

    def kill(self) -> None:
        """SIGKILL the worker now, without waiting for it (``stop`` reaps it): the runner's shutdown kills
        every worker before it waits for anything, so a second Ctrl-C cutting the wait short leaves none
        measuring on. The step it held ends as cancelled, not as a crash."""
        proc = self._proc
        if proc is not None and proc.poll() is None:
            self._killed = True
            proc.kill()

    def stop(self) -> None:
        """Kill the worker now (a stuck measurement cannot be interrupted more gently)."""
        proc, conn = self._proc, self._conn
        self._proc = self._conn = None
        if proc is not None and proc.poll() is None:
            proc.kill()
        if proc is not None:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                log.error("the %s (pid %s) did not exit after SIGKILL", self.label, proc.pid)
        if conn is not None:
            conn.close()

    # --- internals -------------------------------------------------------------------------
    def _ensure_started(self, cancel: threading.Event) -> None:
        if self.alive and self._conn is not None:
            return
        self.stop()  # reap a dead one
        self._killed = False
        ours, theirs = socket.socketpair()
        env = dict(os.environ)
        env.update(self._env)
        env["JAXCOMPARE_WORKER_PRECISION"] = self.precision
        if self.python is None:
            command = [sys.executable, "-c", _ENTRY, str(theirs.fileno()), json.dumps(sys.path)]
        else:
            for name in _FOREIGN_UNSET:
                env.pop(name, None)
            command = [self.python, "-c", _FOREIGN_ENTRY, str(theirs.fileno()), json.dumps(list(self.python_path))]
        try:
            self._proc = subprocess.Popen(command,
                                          pass_fds=(theirs.fileno(),), env=env, stdin=subprocess.DEVNULL,
                                          close_fds=True)
        except OSError as exc:
            ours.close()
            raise JobFailed(N_("the {label} could not be started: {error}").format(
                label=self.label, error=exc)) from None
        finally:
            theirs.close()
        self._conn = Connection(ours.detach())
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self._conn.poll(POLL_S):
            if cancel.is_set():
                self.stop()
                raise Cancelled(N_("cancelled while its worker was starting"))
            if time.monotonic() > deadline:
                self.stop()
                raise JobFailed(N_("the {label} did not start within {timeout_s:g} s").format(
                    label=self.label, timeout_s=START_TIMEOUT_S))
        message = self._receive()
        if message[0] != "ready":
            text = message[2] if message[0] == "error" else repr(message[0])
            log.error("the %s could not start: %s\n%s", self.label, text,
                      message[3] if len(message) > 3 else "")
            self.stop()
            # A device held by another program is one line that says so, not the backend's trace.
            held = backend_error_line(str(text))
            error = held or (str(text).splitlines() or [""])[0]
            raise (DeviceHeld if held else JobFailed)(N_("the {label} could not start: {error}").format(
                label=self.label, error=error))
        self.pid = int(message[1])
        self.platforms = tuple(message[2]) if len(message) > 2 else ()

    def _receive(self) -> tuple[Any, ...]:
        assert self._conn is not None
        try:
            message = self._conn.recv()
        except (EOFError, OSError):
            raise self._died() from None
        except Exception as exc:  # a message that does not unpickle: the worker is not to be trusted
            self.stop()
            raise JobFailed(N_("the {label} sent a message that cannot be read ({error}); "
                               "it has been restarted").format(label=self.label, error=exc)) from None
        if not isinstance(message, tuple) or not message:
            self.stop()
            raise JobFailed(N_("the {label} sent a malformed message; it has been restarted").format(
                label=self.label))
        return message

    def _died(self) -> JobFailed:
        if self._killed:
            self.stop()
            return Cancelled(N_("cancelled while running; the worker was stopped"))
        proc = self._proc
        code = None
        if proc is not None:
            try:
                code = proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        self.stop()
        return Died(N_("the worker process died (exit code {code}: crashed, killed or out of memory); "
                       "a fresh worker will be started for the next job").format(code=code), code)
