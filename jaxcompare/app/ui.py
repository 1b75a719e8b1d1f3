"""Streamlit helpers shared by the pages: the one Runner, the worker environment, URL state,
job progress, charts with PNG downloads. The engine (jaxcompare/) never imports Streamlit;
this module is the only place pages share widget code.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import altair as alt
import streamlit as st

from ..catalog import all_cases
from ..engine.runner import Job, Runner
from ..history.store import Store, default_path, traces_dir
from ..model.cases import Case
from ..model.errors import JaxCompareError
from ..model.result import Result
from ..model.spec import Spec
from . import controls, environment_view, views
from .charts import chart_png_bytes

POLL_S = 0.5
BANNER_ICONS = {"success": ":material/memory:", "warning": ":material/warning:", "info": ":material/hourglass_top:"}


# --- shared resources (one per server process, thread-safe) -----------------------------------
@st.cache_resource(show_spinner=False, on_release=lambda runner: runner.close())
def get_runner() -> Runner:
    """The server's one Runner: every session's jobs share its device queue."""
    runner = Runner()
    if runner.settings.hosted_mode:
        # A hosted demo shows a generic message for unexpected errors; details go to the log.
        st.set_option("client.showErrorDetails", "none")
    return runner


class _EnvironmentProbe:
    """Asks each worker for its environment in a background thread, so no page waits on it."""

    def __init__(self) -> None:
        self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="jaxcompare-env")
        self._futures: dict[str, Future] = {}
        self._lock = threading.Lock()

    def future(self, precision: str) -> Future:
        with self._lock:
            fut = self._futures.get(precision)
            if fut is None or (fut.done() and fut.exception() is not None):
                fut = self._pool.submit(get_runner().environment, precision)
                self._futures[precision] = fut
            return fut

    def refresh(self) -> None:
        with self._lock:
            self._futures = {p: f for p, f in self._futures.items() if not f.done()}


@st.cache_resource(show_spinner=False)
def _store_at(path: str) -> Store:
    return Store(path)


def get_store() -> Store:
    """The results database ($JAXCOMPARE_DB, else ~/.jaxcompare/results.sqlite3), one Store per
    path per server: it opens a connection per operation, so every session's thread can share it."""
    return _store_at(str(default_path()))


def traces_folder() -> str:
    """Where the Compare page's profiler traces go: a traces folder beside the results
    database, one subfolder per result id (the server reads them back for the download)."""
    return str(traces_dir(default_path()))


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


CASES_FILE = "cases_file"


@st.cache_resource(show_spinner=False, max_entries=16)
def _cases_from(path: str | None, mtime_ns: int) -> list[Case]:
    """Built-ins plus a user's file, loaded once per file version (it is code: run it once)."""
    return controls.ordered_cases(all_cases(path))


def cases() -> list[Case]:
    """The catalog, plus this session's own cases file when one is loaded (local mode)."""
    path = st.session_state.get(CASES_FILE)
    if path:
        try:
            return _cases_from(path, os.stat(path).st_mtime_ns)
        except (OSError, JaxCompareError) as exc:
            st.session_state[CASES_FILE] = None
            st.session_state["cases_file_error"] = f"Your cases file was unloaded: {exc}"
    return _cases_from(None, 0)


def _load_cases_file() -> None:
    path = (st.session_state.get("cases_file_input") or "").strip()
    st.session_state.pop("cases_file_error", None)
    if not path:
        st.session_state[CASES_FILE] = None
        return
    path = os.path.abspath(os.path.expanduser(path))
    try:
        get_runner().settings.check_spec(Spec("probe", (1,), cases_file=path))
        loaded = _cases_from(path, os.stat(path).st_mtime_ns)
    except OSError as exc:
        st.session_state["cases_file_error"] = f"Cannot read {path}: {exc.strerror or exc}"
        return
    except JaxCompareError as exc:
        st.session_state["cases_file_error"] = str(exc)
        return
    st.session_state[CASES_FILE] = path
    added = [c.name for c in loaded if c.cases_file == path]
    st.session_state["cases_file_note"] = f"Loaded {len(added)} case(s): {', '.join(added)}"


def cases_file_ui() -> None:
    """Sidebar box for a user's own cases file (a Python file defining CASES); local mode only."""
    with st.sidebar.expander("Your own cases", icon=":material/upload_file:",
                             expanded=bool(st.session_state.get("cases_file_error"))):
        if not get_runner().settings.allow_cases_file:
            st.caption("Loading your own case files is disabled on this server (hosted mode).")
            return
        st.text_input("Path to a cases file", key="cases_file_input", on_change=_load_cases_file,
                      placeholder="~/my_cases.py",
                      help="A Python file defining CASES, a list of jaxcompare.Case (see the README). "
                           "It runs on this machine, in the app and in the workers.")
        if st.session_state.get("cases_file_error"):
            st.error(st.session_state["cases_file_error"], icon=":material/error:")
        elif st.session_state.get(CASES_FILE):
            st.caption(st.session_state.get("cases_file_note", ""))


def case_by_name(name: str) -> Case:
    return next(c for c in cases() if c.name == name)


def owner_id() -> str:
    """A per-session id the runner records with each job."""
    if "owner_id" not in st.session_state:
        st.session_state["owner_id"] = uuid.uuid4().hex[:12]
    return st.session_state["owner_id"]


# --- jobs held in session state -------------------------------------------------------------------
def cancel_job(job_key: str) -> None:
    """on_click for a Stop button: cancel this session's job, queued or running."""
    job = st.session_state.get(job_key)
    if job is not None:
        job.cancel()


def polled_job(job_key: str) -> Job | None:
    """For a polling fragment: this session's job while it runs. When it is done, a full
    rerun (which shows the outcome and re-enables the page's buttons); None without one."""
    job = st.session_state.get(job_key)
    if job is not None and job.done:
        st.rerun()
    return job


def take_finished(job_key: str, error_key: str) -> Job | None:
    """Pop this session's job once it is done: a failed or stopped job leaves its message under
    ``error_key`` and returns None; a successful one is returned for the page to keep."""
    job = st.session_state.get(job_key)
    if job is None or not job.done:
        return None
    del st.session_state[job_key]
    if job.error is not None:
        st.session_state[error_key] = (f"Stopped: {job.error}" if job.status == "cancelled"
                                       else f"The measurement failed: {job.error}")
        return None
    return job


# --- navigation ---------------------------------------------------------------------------------
PAGES = (
    ("app.py", "Home", ":material/home:"),
    ("pages/1_Compare.py", "Compare", ":material/compare_arrows:"),
    ("pages/2_Size_sweep.py", "Size sweep", ":material/stacked_line_chart:"),
    ("pages/3_Pitfalls.py", "Pitfalls", ":material/school:"),
    ("pages/4_History.py", "History", ":material/history:"),
    ("pages/5_Environment.py", "Environment", ":material/settings:"),
)


def sidebar_nav() -> None:
    """Page links with readable names (the pages/ directory names the home page 'app')."""
    with st.sidebar:
        for path, label, icon in PAGES:
            st.page_link(path, label=label, icon=icon)
        st.divider()


# --- device banner ---------------------------------------------------------------------------
def device_banner() -> dict[str, Any] | None:
    """Which device the measurements run on; polls (without blocking) until the worker reports."""
    try:
        env = worker_environment("x32")
    except Exception as exc:  # the worker could not start: say so, the page still renders
        st.error(f"The measurement worker could not start: {exc}", icon=":material/error:")
        return None
    if env is None:
        _pending_banner()
        return None
    show_banner(environment_view.device_banner(env))
    return env


def show_banner(banner: environment_view.Banner) -> None:
    show = {"success": st.success, "warning": st.warning}.get(banner.level, st.info)
    show(banner.text, icon=BANNER_ICONS.get(banner.level))


@st.fragment(run_every=1.0)
def _pending_banner() -> None:
    if _probe().future("x32").done():
        st.rerun()  # the full rerun shows the final banner and stops this polling
    show_banner(environment_view.device_banner(None))


# --- URL state ----------------------------------------------------------------------------------
def seed_from_url(page: str, read: Callable[[Mapping[str, Any]], tuple[Any, list[str]]],
                  widgets: Callable[[Any], dict[str, Any]]) -> list[str]:
    """Fill the page's widget keys from the URL when they are missing (a first visit, a shared
    link, a return from another page); bad values become warnings and their defaults."""
    config, warnings = read(st.query_params.to_dict())
    values = widgets(config)
    if any(key not in st.session_state for key in values):
        for key, value in values.items():
            if key not in st.session_state:
                st.session_state[key] = value
        st.session_state[f"{page}_url_warnings"] = warnings
    return st.session_state.get(f"{page}_url_warnings", [])


def sync_url(query: dict[str, str]) -> None:
    """Write the page's configuration into the URL, so the link reproduces it."""
    if st.query_params.to_dict() != query:
        st.query_params.from_dict(query)


def show_url_warnings(warnings: list[str]) -> None:
    for text in warnings:
        st.warning(text, icon=":material/link_off:")


# --- jobs ---------------------------------------------------------------------------------------
def job_progress(job: Job, label: str, *, overall: float | None = None) -> None:
    """A progress bar that says which phase is being measured (or where the job is queued)."""
    runner = get_runner()
    position = runner.position(job)
    if job.status == "queued" and position > 0:
        ahead = position - 1
        wait = runner.estimate_wait_s(job)
        text = (f"{label}: queued behind {ahead} other measurement(s), about {wait:.0f} s. "
                f"One measurement at a time, so they don't spoil each other's timings.")
        st.progress(overall or 0.0, text=text)
        return
    elapsed = time.time() - (job.started_at or time.time())
    text = f"{label}: {views.job_phase_text(job.phase)} · {job.progress:.0%} · {elapsed:.0f} s"
    st.progress(min(max(overall if overall is not None else job.progress, 0.0), 1.0), text=text)


# --- charts ---------------------------------------------------------------------------------------
def svg_rendered(chart_obj: alt.TopLevelMixin) -> alt.TopLevelMixin:
    """The chart with Vega's SVG renderer pinned: Streamlit draws charts of many points on a canvas,
    where a browser test cannot tell a plotted mark from a legend swatch; in SVG each mark is an element."""
    usermeta = chart_obj.usermeta if isinstance(chart_obj.usermeta, dict) else {}
    embed = {**(usermeta.get("embedOptions") or {}), "renderer": "svg"}
    return chart_obj.properties(usermeta={**usermeta, "embedOptions": embed})


def chart(chart_obj: alt.TopLevelMixin, name: str, file_stem: str, *, stretch: bool = False) -> None:
    """An Altair chart (drawn as SVG) and a button that downloads it as PNG (made only when clicked)."""
    st.altair_chart(svg_rendered(chart_obj), width="stretch" if stretch else "content")
    st.download_button(
        f"{name} (PNG)", data=lambda: chart_png_bytes(chart_obj), file_name=f"{file_stem}.png",
        mime="image/png", icon=":material/download:", on_click="ignore", key=f"png_{file_stem}",
    )


# --- results history --------------------------------------------------------------------------------
HISTORY_PAGE = "pages/4_History.py"
_SAVED = "history_saved"  # session state: result id -> None when saved, else why it was not


def save_to_history(results: Sequence[Result]) -> None:
    """Save finished results to the Store, each once per session. A failure is remembered for
    history_note() and never raised: the result on screen must survive an unwritable database."""
    status = st.session_state.setdefault(_SAVED, {})
    for result in results:
        if result.id in status:
            continue
        try:
            get_store().save(result)
        except Exception as exc:  # any failure to save must leave the page and its result intact
            status[result.id] = str(exc) or type(exc).__name__
        else:
            status[result.id] = None


def history_note(results: Sequence[Result]) -> None:
    """A small 'saved to history' line with a link, or a warning saying what was not saved."""
    status = st.session_state.get(_SAVED, {})
    failed = [status[r.id] for r in results if status.get(r.id)]
    saved = sum(1 for r in results if r.id in status and status[r.id] is None)
    if failed:
        what = "This result was" if len(results) == 1 else f"{len(failed)} of {len(results)} results were"
        st.warning(f"{what} not saved to history: {failed[0]}. It stays on this page; download it as JSON "
                   f"to keep it.", icon=":material/warning:")
    elif saved:
        text = "Saved to history." if len(results) == 1 else f"All {saved} measurements saved to history."
        with st.container(horizontal=True, vertical_alignment="center", gap="small"):
            st.caption(f":material/check_circle: {text}", width="content")
            st.page_link(HISTORY_PAGE, label="Open History", icon=":material/history:")
