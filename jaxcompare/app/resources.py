"""What every session of a server shares, made once per process (st.cache_resource): the one
Runner, the results Store, and the workers' environments, asked for in the background."""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import streamlit as st

from ..engine import Job, Runner, Settings
from ..history.store import Store, default_location, traces_dir
from ..model.result import Result

log = logging.getLogger("jaxcompare.app")


@st.cache_resource(show_spinner=False, on_release=lambda runner: runner.close())
def get_runner() -> Runner:
    """The server's one Runner: every session's jobs share its device queues. Its settings
    are resolved for the address the server listens on (case files only on loopback)."""
    address = st.get_option("server.address")
    settings = Settings.from_env()
    runner = Runner(settings=settings.for_server(address))
    runner.on_finished.append(_keep_in_history)
    _log_to_stderr()
    if settings.cases_file_exposed(address):
        log.warning("user case files are enabled (JAXCOMPARE_ALLOW_CASES_FILE=true) on a server listening on "
                    "%s: anyone who can open the app can run Python code on this machine", address or "every interface")
    if runner.settings.hosted_mode:
        # A hosted demo shows a generic message for unexpected errors; details go to the log.
        st.set_option("client.showErrorDetails", "none")
    return runner


def _keep_in_history(job: Job) -> None:
    """A finished measurement goes into History as it finishes, in the runner's thread, whether or not its
    page runs again to show it: a tab closed or moved to another page just before had lost it (a hosted
    demo's walk-through). The page's own save (ui.save_to_history) is then a no-op, and still says so.
    A JAX versions run's jobs are left to its page, which saves each version's pooled result."""
    if job.status == "done" and job.jax_env is None and isinstance(job.value, Result):
        get_store().save(job.value)


def _log_to_stderr() -> None:
    """Job records (who asked for what) and warnings reach the server's log, next to Streamlit's."""
    logger = logging.getLogger("jaxcompare")
    if not logger.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)


class _EnvironmentProbe:
    """Asks each worker for its environment in a background thread, so no page waits on it."""

    # A worker that could not start is asked again after this long, not on every poll: the pending banner
    # polled once a second and each time started a worker that failed (a device the machine lacks).
    RETRY_S = 30.0

    def __init__(self) -> None:
        self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="jaxcompare-env")
        self._futures: dict[str, Future] = {}
        self._ended: dict[str, float] = {}  # when each precision's last request ended
        self._lock = threading.Lock()

    def future(self, precision: str) -> Future:
        with self._lock:
            fut = self._futures.get(precision)
            failed = fut is not None and fut.done() and fut.exception() is not None
            if fut is None or (failed and time.monotonic() - self._ended.get(precision, 0.0) >= self.RETRY_S):
                fut = self._pool.submit(self._ask, precision)
                self._futures[precision] = fut
            return fut

    def _ask(self, precision: str) -> dict[str, Any]:
        try:
            return get_runner().environment(precision)
        finally:
            self._ended[precision] = time.monotonic()

    def refresh(self) -> None:
        with self._lock:
            self._futures = {p: f for p, f in self._futures.items() if not f.done()}


@st.cache_resource(show_spinner=False)
def _store_at(path: str) -> Store:
    return Store(path)


def get_store() -> Store:
    """The results database ($JAXCOMPARE_DB: a file or a postgresql:// URL, else
    ~/.jaxcompare/results.sqlite3), one Store per location per server: it hands each operation its
    own connection, so every session's thread can share it."""
    return _store_at(default_location())


def traces_folder() -> str:
    """Where the Compare page's profiler traces go: a traces folder beside the results
    database, one subfolder per result id (the server reads them back for the download)."""
    return str(traces_dir(default_location()))


@st.cache_resource(show_spinner=False)
def _probe() -> _EnvironmentProbe:
    return _EnvironmentProbe()


def worker_environment(precision: str = "x32") -> dict[str, Any] | None:
    """The worker's environment if it has reported, else None (the request is in flight).
    Raises the worker's error if it could not start."""
    fut = _probe().future(precision)
    if not fut.done():
        return None
    return fut.result()


def known_environment(precision: str = "x32") -> dict[str, Any] | None:
    """The worker's environment if it has already reported; never raises, never waits."""
    try:
        return worker_environment(precision)
    except Exception:
        return None


def worker_environment_ready(precision: str) -> bool:
    return _probe().future(precision).done()


def refresh_environment() -> None:
    _probe().refresh()
