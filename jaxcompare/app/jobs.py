"""Jobs held in a session's state: polling one while it runs, taking it when done, its progress
bar and Stop button; and the watch that stops the jobs of a session whose browser tab has gone."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import streamlit as st

from ..engine import Job, Runner
from ..i18n import N_, _
from ..model.formatting import seconds_text
from . import estimates, resources, views

log = logging.getLogger("jaxcompare.app")

# How often a page following a job redraws its progress. Each redraw costs the server and the
# browser about 0.1 s of CPU: every 0.5 s the page took 0.43 cores from the measurement it
# followed, every 1 s 0.19-0.23 (Pitfalls, two cores; benchmarks/RESULTS.md).
POLL_S = 1.0



# --- jobs whose tab has gone ------------------------------------------------------------------------
SESSION_GONE_S = 10.0  # a websocket back within this (a network blip, a laptop lid) keeps its jobs


class _SessionWatch:
    """Stops the jobs of a session whose browser tab has gone (closed, reloaded, navigated away):
    nobody would see their results, and each holds a place in a shared queue. Streamlit has no
    session-end callback; its runtime says which sessions still have a connected websocket."""

    def __init__(self) -> None:
        self._sessions: dict[str, str] = {}  # owner id -> Streamlit session id
        self._gone_since: dict[str, float] = {}
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._runner: Runner | None = None

    def follow(self, owner: str) -> None:
        """Called from a session's script thread: tie its owner id to its Streamlit session."""
        from streamlit.runtime import Runtime
        from streamlit.runtime.scriptrunner import get_script_run_ctx

        ctx = get_script_run_ctx(suppress_warning=True)
        if ctx is None or not Runtime.exists():  # a script run without a server (AppTest)
            return
        with self._lock:
            self._sessions[owner] = ctx.session_id
            self._runner = resources.get_runner()  # the one the watch thread uses (looked up on a script thread)
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, daemon=True, name="jaxcompare-session-watch")
                self._thread.start()

    def _loop(self) -> None:
        while True:
            time.sleep(1.0)  # a periodic check of the runtime, not a synchronisation
            try:
                if self._runner is not None:
                    self.sweep(self._runner, time.monotonic())
            except Exception:  # the watch must outlive any one failure
                log.exception("session watch")

    def sweep(self, runner: Runner, now: float) -> list[Job]:
        """Cancel the jobs of sessions gone for SESSION_GONE_S; returns them."""
        from streamlit.runtime import Runtime

        if not Runtime.exists():
            return []
        runtime = Runtime.instance()
        owners = {job.owner for job in runner.active_jobs() if job.owner is not None}
        cancelled: list[Job] = []
        with self._lock:
            for owner in list(self._sessions):
                if runtime.is_active_session(self._sessions[owner]):
                    self._gone_since.pop(owner, None)
                    continue
                if owner not in owners and owner not in self._gone_since:
                    del self._sessions[owner]  # gone with nothing running: forget it
                    continue
                since = self._gone_since.setdefault(owner, now)
                if now - since >= SESSION_GONE_S:
                    cancelled += [job for job in runner.active_jobs() if job.owner == owner]
                    del self._sessions[owner], self._gone_since[owner]
        for job in cancelled:
            log.info("job %s (%s) stopped: its session %s ended (tab closed or reloaded)", job.id, job.kind,
                     job.owner)
            job.cancel()
        return cancelled


@st.cache_resource(show_spinner=False)
def session_watch() -> _SessionWatch:
    return _SessionWatch()


# --- jobs held in session state -------------------------------------------------------------------
def cancel_job(job_key: str) -> None:
    """on_click for a Stop button: cancel this session's job, queued or running."""
    job = st.session_state.get(job_key)
    if job is not None:
        job.cancel()


def running_job(job_key: str) -> Job | None:
    """This session's job under ``job_key`` while it is queued or running; None once it is done."""
    job = st.session_state.get(job_key)
    return job if job is not None and not job.done else None


def job_slot() -> Any:
    """A container, drawn on every run before the page's messages, to call its polling fragment
    in. A poll the browser had already asked for when the job ended (a Stop click ends a queued
    job at once) then redraws this empty slot, not the error below it that says why it stopped."""
    return st.container()


def polled_job(job_key: str) -> Job | None:
    """For a polling fragment: this session's job while it runs. When it is done, a full
    rerun (which shows the outcome and re-enables the page's buttons); None without one."""
    job = st.session_state.get(job_key)
    if job is not None and job.done:
        st.rerun()
    return job


def take_finished(job_key: str, error_key: str) -> Job | None:
    """Pop this session's job once it is done: a failed or stopped job leaves its message under
    ``error_key`` (in English, from an ``N_()`` template: the page shows it through
    ``translate_text``) and returns None; a successful one is returned for the page to keep."""
    job = st.session_state.get(job_key)
    if job is None or not job.done:
        return None
    del st.session_state[job_key]
    if job.error is not None:
        template = N_("Stopped: {error}") if job.status == "cancelled" else N_("The measurement failed: {error}")
        st.session_state[error_key] = template.format(error=job.error)
        return None
    return job


def sweep_left(job: Job, later: list[Any]) -> str | None:
    """A sweep's time left in all, where its running point has an estimate: that point's, and the
    estimate of the points after it (``later``, their Specs)."""
    if job.estimate is None or job.started_at is None or job.status != "running":
        return None
    left = job.estimate.left_s(time.time() - job.started_at)
    if later:
        left += resources.get_runner().estimate_all(later).seconds
    return _("about {left} left in all").format(left=estimates.seconds_text(left))


def job_progress(job: Job, label: str, *, overall: float | None = None, after: str | None = None) -> None:
    """A progress bar that says which phase is being measured and the time left (or where the job is
    queued); ``after``: what follows (a sweep's time left in all)."""
    runner = resources.get_runner()
    ahead = runner.jobs_ahead(job)
    if job.status == "queued" and ahead is not None:
        wait = runner.estimate_wait_s(job)
        text = _("{label}: queued behind {ahead} other measurement(s), about {wait}. "
                 "One measurement at a time, so they don't spoil each other's timings.").format(
                     label=label, ahead=ahead, wait=seconds_text(wait))
        st.progress(overall or 0.0, text=text)
        return
    elapsed = time.time() - (job.started_at or time.time())
    # Translators: a label, then the phase being measured (Chinese takes its full-width colon).
    text = (_("{label}: {phase}").format(label=label, phase=views.job_phase_text(job.phase))
            + f" · {job.progress:.0%} · {estimates.time_left_text(job.estimate, elapsed)}"
            + (f" · {after}" if after else ""))
    st.progress(min(max(overall if overall is not None else job.progress, 0.0), 1.0), text=text)
