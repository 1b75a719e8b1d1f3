"""Streamlit helpers shared by the pages: the one Runner, the worker environment, URL state,
job progress, charts with PNG downloads, who the visitor is (login, client, operator). The
engine (jaxcompare/) never imports Streamlit; this module is the only place pages share
widget code.
"""

from __future__ import annotations

import contextlib
import hmac
import logging
import os
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import altair as alt
import pandas  # noqa: F401  (see below)
import streamlit as st

from ..catalog import builtin_cases, case_from_summary
from ..engine.runner import Job, Owner, Runner
from ..engine.settings import RateLimiter, Settings
from ..history.exchange import PRIVATE_ENV, redact
from ..history.store import Store, default_path, traces_dir
from ..i18n import N_, _, translate_text
from ..model.cases import Case
from ..model.errors import BadInput, JaxCompareError
from ..model.formatting import markdown_literal
from ..model.result import Result
from . import controls, environment_view, language, navigation, views
from .charts import chart_png_bytes
from .navigation import Page

log = logging.getLogger("jaxcompare.app")
# pandas is imported above, fully, before any page can draw a chart: Altair (through narwhals)
# uses pandas when it finds it in sys.modules, and two sessions drawing their first charts at
# once could otherwise find it there half-imported (AttributeError: partially initialized module).

POLL_S = 0.5
BANNER_ICONS = {"success": ":material/memory:", "warning": ":material/warning:", "info": ":material/hourglass_top:"}


# --- shared resources (one per server process, thread-safe) -----------------------------------
@st.cache_resource(show_spinner=False, on_release=lambda runner: runner.close())
def get_runner() -> Runner:
    """The server's one Runner: every session's jobs share its device queues. Its settings
    are resolved for the address the server listens on (case files only on loopback)."""
    address = st.get_option("server.address")
    settings = Settings.from_env()
    runner = Runner(settings=settings.for_server(address))
    _log_to_stderr()
    if settings.cases_file_exposed(address):
        log.warning("user case files are enabled (JAXCOMPARE_ALLOW_CASES_FILE=true) on a server listening on "
                    "%s: anyone who can open the app can run Python code on this machine", address or "every interface")
    if runner.settings.hosted_mode:
        # A hosted demo shows a generic message for unexpected errors; details go to the log.
        st.set_option("client.showErrorDetails", "none")
    return runner


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


CASES_FILE, CASES_FILE_CASES, CASES_FILE_JOB = "cases_file", "cases_file_cases", "cases_file_job"


@st.cache_resource(show_spinner=False)
def _builtin_cases() -> list[Case]:
    return controls.ordered_cases(builtin_cases())


def cases() -> list[Case]:
    """The catalog, plus this session's own cases file when one is loaded: its cases as a
    worker described them (the file is code; it never runs in the server)."""
    _take_cases_listing()
    summaries = st.session_state.get(CASES_FILE_CASES) if st.session_state.get(CASES_FILE) else None
    if not summaries:
        return _builtin_cases()
    return controls.ordered_cases(list(builtin_cases()) + [case_from_summary(s) for s in summaries])


def cases_files_allowed() -> bool:
    return bool(get_runner().settings.allow_cases_file)


def _load_cases_file() -> None:
    """on_change of the path box: a worker loads the file (under the job's deadline) and lists
    its cases; the box polls until it has (cases_file_ui)."""
    path = (st.session_state.get("cases_file_input") or "").strip()
    previous: Job | None = st.session_state.get(CASES_FILE_JOB)
    if previous is not None:
        previous.cancel()  # a file that hangs at import need not hold the worker until its deadline
    for key in ("cases_file_error", CASES_FILE_JOB):
        st.session_state.pop(key, None)
    if not path:
        st.session_state[CASES_FILE] = None
        return
    if not cases_files_allowed():  # the box is not drawn then; a forged widget value ends here
        # Kept in English and translated where shown (the reader may switch language meanwhile).
        st.session_state["cases_file_error"] = N_("Loading your own case files is disabled on this server.")
        return
    try:
        job = get_runner().submit_list_cases(os.path.abspath(os.path.expanduser(path)), owner=owner_id())
    except JaxCompareError as exc:
        st.session_state["cases_file_error"] = str(exc)
        return
    st.session_state[CASES_FILE_JOB] = job


def _take_cases_listing() -> bool:
    """Move a finished listing into the session; True when there was one."""
    job: Job | None = st.session_state.get(CASES_FILE_JOB)
    if job is None or not job.done:
        return False
    del st.session_state[CASES_FILE_JOB]
    if job.error is not None:
        st.session_state["cases_file_error"] = str(job.error)
        return True
    path = job.steps[0].args[0]
    st.session_state[CASES_FILE], st.session_state[CASES_FILE_CASES] = path, job.value
    return True


def _cases_file_note() -> str:
    """Which cases the loaded file brought, worded when shown (in the reader's language)."""
    summaries = st.session_state.get(CASES_FILE_CASES) or []
    return _("Loaded {count} case(s): {names}").format(
        count=len(summaries), names=", ".join(s["name"] for s in summaries))


@st.fragment(run_every=POLL_S)
def _poll_cases_listing() -> None:
    job: Job | None = st.session_state.get(CASES_FILE_JOB)
    if job is None or job.done:
        st.rerun()  # the whole page: cases() takes the listing, so every case list has the new cases
    st.caption(_("Loading the file in a worker…"))


def cases_file_ui() -> None:
    """Sidebar box for a user's own cases file (a Python file defining CASES): local mode on a
    loopback address only, unless the operator allowed it (then with a warning)."""
    runner = get_runner()
    address = st.get_option("server.address")
    if runner.settings.allow_cases_file and Settings.from_env().cases_file_exposed(address):
        st.sidebar.warning(_("Case files are enabled on a server others can reach: anyone who can open this page "
                             "can run Python code on this machine."), icon=":material/warning:")
    with st.sidebar.expander(_("Your own cases"), icon=":material/upload_file:",
                             expanded=bool(st.session_state.get("cases_file_error"))):
        if not runner.settings.allow_cases_file:
            st.caption(_("Loading your own case files is disabled on this server: a cases file is code, so only "
                         "a local app listening on this machine alone (127.0.0.1) loads them."))
            st.text_input(_("Path to a cases file"), key="cases_file_input_disabled", disabled=True,
                          placeholder=_("disabled on this server"))
            return
        st.text_input(_("Path to a cases file"), key="cases_file_input", on_change=_load_cases_file,
                      placeholder="~/my_cases.py",
                      help=_("A Python file defining CASES, a list of jaxcompare.Case (see the README). "
                             "It runs on this machine, in the measuring worker processes."))
        if st.session_state.get(CASES_FILE_JOB) is not None:
            _poll_cases_listing()
        elif st.session_state.get("cases_file_error"):
            st.error(translate_text(st.session_state["cases_file_error"]), icon=":material/error:")
        elif st.session_state.get(CASES_FILE):
            st.caption(_cases_file_note())


def case_by_name(name: str) -> Case:
    """The loaded case called ``name``; BadInput, a message a page can show, when there is none
    (a stale choice in a callback once raised StopIteration here)."""
    found = next((c for c in cases() if c.name == name), None)
    if found is None:
        raise BadInput(N_("there is no case called {name!r}: choose one from the Case list").format(name=name))
    return found


def owner_id() -> Owner:
    """Who asks, as the runner records it with each job: this session, the client it is
    rate-limited as (which a reload does not change), and the logged-in user, if any. The
    session's jobs are watched: they are stopped once its browser tab has gone (_SessionWatch)."""
    if "owner_id" not in st.session_state:
        st.session_state["owner_id"] = uuid.uuid4().hex[:12]
    _session_watch().follow(st.session_state["owner_id"])
    return Owner(session=st.session_state["owner_id"], client=client_id(), user=current_user())


# The header uvicorn (Streamlit's server) takes a client's address from when the connection comes
# from an address in FORWARDED_ALLOW_IPS (loopback unless set): anyone can write it.
_UVICORN_FORWARDED = "X-Forwarded-For"
UNVERIFIED_CLIENT = "forwarded"  # every visitor whose address only an unnamed header gave


def client_id() -> str:
    """The visitor's address: from the trusted proxy's header when the operator named one
    (the last address in it, the one that proxy saw), else the connection's. Streamlit says
    None for a loopback connection: every visitor on this machine is one client. An address
    that uvicorn took from an X-Forwarded-For nobody named is the visitor's own say: all such
    visitors are one client (`make serve` sets FORWARDED_ALLOW_IPS= so uvicorn does not)."""
    header = get_runner().settings.trusted_proxy_header
    if header:
        forwarded = (st.context.headers.get(header) or "").split(",")[-1].strip()
        if forwarded:
            return forwarded
    address = st.context.ip_address
    if not isinstance(address, str) or not address:
        return "localhost"
    if address in _forwarded_addresses(st.context.headers.get_all(_UVICORN_FORWARDED)):
        return UNVERIFIED_CLIENT
    return address


def _forwarded_addresses(values: Sequence[str]) -> set[str]:
    """Every address an X-Forwarded-For header names (each with its port dropped, as uvicorn does)."""
    out = set()
    for value in values:
        for item in value.split(","):
            host = item.strip()
            if host.startswith("[") and "]" in host:
                host = host[1:host.index("]")]
            elif host.count(":") == 1:
                host = host.partition(":")[0]
            if host:
                out.add(host)
    return out


# --- login (when the operator configures Streamlit's [auth]) ---------------------------------------
def auth_providers() -> list[str] | None:
    """None without an [auth] section in secrets.toml; else the named providers ([] for one
    unnamed provider: st.login() takes no argument then)."""
    try:
        if "auth" not in st.secrets:
            return None
        section = st.secrets["auth"]
    except Exception:  # no secrets file at all: no login
        return None
    return [name for name, value in section.items() if isinstance(value, Mapping)]


def current_user() -> str | None:
    """The logged-in user's e-mail (else name, else subject), None without a login."""
    if auth_providers() is None:
        return None
    try:
        if not st.user.is_logged_in:
            return None
        return str(st.user.get("email") or st.user.get("name") or st.user.get("sub") or "") or None
    except Exception:
        return None


def require_login() -> None:
    """With [auth] configured, nothing below runs until the visitor has logged in."""
    providers = auth_providers()
    if providers is None:
        return
    if current_user() is not None:
        with st.sidebar:
            st.caption(f":material/person: {current_user()}")
            st.button(_("Log out"), on_click=st.logout, icon=":material/logout:", key="logout")
        return
    st.title("jaxcompare")
    st.info(_("This demo asks you to log in first."), icon=":material/lock:")
    for provider in providers or [None]:
        label = _("Log in with {provider}").format(provider=provider) if provider else _("Log in")
        st.button(label, on_click=st.login, args=(provider,) if provider else (), type="primary",
                  icon=":material/login:", key=f"login_{provider or 'default'}")
    st.stop()


# --- what visitors may see and do with the shared history --------------------------------------------
OPERATOR = "history_operator"
TOKEN_INPUT = "history_token_input"


def _admin_token() -> str | None:
    return os.environ.get("JAXCOMPARE_ADMIN_TOKEN") or None


# Token guesses: five a minute per session, and per client, but a session's first guess is always
# heard, so a visitor guessing from the operator's address (say, the same machine) cannot lock the
# operator out. Reloading for fresh guesses costs a page load each: the token's length is the defence.
TOKEN_GUESSES_PER_MINUTE = 5
_GUESSED = "history_token_guessed"


@st.cache_resource(show_spinner=False)
def _token_attempts() -> tuple[RateLimiter, RateLimiter]:
    return RateLimiter(TOKEN_GUESSES_PER_MINUTE), RateLimiter(TOKEN_GUESSES_PER_MINUTE)  # (session, client)


def history_editable() -> bool:
    """Delete and import: always in local mode; in hosted mode only for a session that entered
    the operator token (JAXCOMPARE_ADMIN_TOKEN), and for nobody without one."""
    return not get_runner().settings.hosted_mode or bool(st.session_state.get(OPERATOR))


def private_details_hidden() -> bool:
    """In hosted mode visitors see no host names or paths of the server."""
    return get_runner().settings.hosted_mode and not st.session_state.get(OPERATOR)


def visible(results: Sequence[Result]) -> list[Result]:
    """Results as this visitor may see them (without the host name and interpreter path)."""
    return [redact(r) for r in results] if private_details_hidden() else list(results)


def visible_env(env: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if env is None or not private_details_hidden():
        return None if env is None else dict(env)
    return {k: v for k, v in env.items() if k not in PRIVATE_ENV}


def _check_token() -> None:
    entered = st.session_state.get(TOKEN_INPUT) or ""
    st.session_state[TOKEN_INPUT] = ""  # the secret does not stay in the session
    token = _admin_token()
    if not entered or token is None:
        return
    per_session, per_client = _token_attempts()
    try:
        per_session.acquire(owner_id().session)
        if st.session_state.get(_GUESSED):
            per_client.acquire(client_id())
        else:  # counted, but never refused: the session's first guess
            with contextlib.suppress(BadInput):
                per_client.acquire(client_id())
    except BadInput:
        st.session_state["history_token_error"] = N_("Too many attempts; try again in a minute.")
        return
    st.session_state[_GUESSED] = True
    if hmac.compare_digest(entered.encode(), token.encode()):
        st.session_state[OPERATOR] = True
        st.session_state.pop("history_token_error", None)
        log.info("operator unlocked History: client %s, user %s", client_id(), current_user() or "-")
    else:
        st.session_state["history_token_error"] = N_("That is not the operator token.")


def _lock() -> None:
    st.session_state.pop(OPERATOR, None)


def operator_ui() -> None:
    """Sidebar: in hosted mode, the operator token unlocks delete and import for this session."""
    if not get_runner().settings.hosted_mode:
        return
    st.header(_("Operator"))
    if st.session_state.get(OPERATOR):
        st.caption(_("Unlocked for this session: delete and import are on."))
        st.button(_("Lock"), icon=":material/lock:", on_click=_lock, key="history_lock")
        return
    if _admin_token() is None:
        st.caption(_("History is read-only on this server."))
        return
    st.caption(_("History is read-only for visitors. The operator's token turns on delete and import."))
    st.text_input(_("Operator token"), type="password", key=TOKEN_INPUT, on_change=_check_token)
    if st.session_state.get("history_token_error"):
        st.error(translate_text(st.session_state["history_token_error"]), icon=":material/error:")


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
            self._runner = get_runner()  # the one the watch thread uses (looked up on a script thread)
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
def _session_watch() -> _SessionWatch:
    return _SessionWatch()


# --- jobs held in session state -------------------------------------------------------------------
def cancel_job(job_key: str) -> None:
    """on_click for a Stop button: cancel this session's job, queued or running."""
    job = st.session_state.get(job_key)
    if job is not None:
        job.cancel()


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


# --- navigation ---------------------------------------------------------------------------------
def start_page(page: Page) -> None:
    """Every page's first lines: its browser tab (title and icon from the page list), then the
    sidebar (sidebar_nav)."""
    title = "jaxcompare" if page is navigation.HOME else f"{page.label} · jaxcompare"
    st.set_page_config(page_title=title, page_icon=page.icon, layout="wide")
    sidebar_nav()


def sidebar_nav() -> None:
    """Every page calls this first: the language switch, the login gate (when [auth] is
    configured), then page links with readable names (the pages/ directory names the home page
    'app')."""
    get_runner()  # the server's settings (hosted mode's error details) apply from the first page shown
    with st.sidebar:
        language.language_switch()
    require_login()
    with st.sidebar:
        for page in navigation.PAGES:
            page_link(page)
        st.divider()


def page_link(page: Page, label: str | None = None, container: Any = st) -> None:
    """A link to another page that keeps the reader's language (Streamlit drops the URL's
    parameters on the way); ``label``: other words than the page's title."""
    container.page_link(page.path, label=label or page.label, icon=page.icon, query_params=language.url_params())


# --- device banner ---------------------------------------------------------------------------
def device_banner() -> dict[str, Any] | None:
    """Which device the measurements run on; polls (without blocking) until the worker reports."""
    try:
        env = worker_environment("x32")
    except Exception as exc:  # the worker could not start: say so, the page still renders
        st.error(_("The measurement worker could not start: {error}").format(error=translate_text(str(exc))),
                 icon=":material/error:")
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
    """Write the page's configuration (and the reader's language) into the URL, so the link
    reproduces it."""
    query = language.with_language(query)
    if st.query_params.to_dict() != query:
        st.query_params.from_dict(query)


def show_url_warnings(warnings: list[str]) -> None:
    """The URL's warnings as plain text: they quote what the link said, and anyone can write a link."""
    for text in warnings:
        st.warning(markdown_literal(translate_text(text)), icon=":material/link_off:")


# --- jobs ---------------------------------------------------------------------------------------
def job_progress(job: Job, label: str, *, overall: float | None = None) -> None:
    """A progress bar that says which phase is being measured (or where the job is queued)."""
    runner = get_runner()
    ahead = runner.jobs_ahead(job)
    if job.status == "queued" and ahead is not None:
        wait = runner.estimate_wait_s(job)
        text = _("{label}: queued behind {ahead} other measurement(s), about {wait:.0f} s. "
                 "One measurement at a time, so they don't spoil each other's timings.").format(
                     label=label, ahead=ahead, wait=wait)
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


def png_bytes(chart_obj: alt.TopLevelMixin) -> bytes:
    """A chart's PNG download, drawn in the app's fonts (theme.font: Chinese in its own glyph forms)."""
    return chart_png_bytes(chart_obj, font=st.get_option("theme.font"))


def chart(chart_obj: alt.TopLevelMixin, name: str, file_stem: str, *, stretch: bool = False) -> None:
    """An Altair chart (drawn as SVG) and a button that downloads it as PNG (made only when clicked);
    ``name`` (the button says "{name} (PNG)") comes in the reader's language."""
    st.altair_chart(svg_rendered(chart_obj), width="stretch" if stretch else "content")
    st.download_button(
        _("{name} (PNG)").format(name=name), data=lambda: png_bytes(chart_obj), file_name=f"{file_stem}.png",
        mime="image/png", icon=":material/download:", on_click="ignore", key=f"png_{file_stem}",
    )


# --- results history --------------------------------------------------------------------------------
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
        error = translate_text(failed[0])
        if len(results) == 1:
            text = _("This result was not saved to history: {error}. It stays on this page; download it as JSON "
                     "to keep it.").format(error=error)
        else:
            text = _("{failed} of {total} results were not saved to history: {error}. It stays on this page; "
                     "download it as JSON to keep it.").format(failed=len(failed), total=len(results), error=error)
        st.warning(text, icon=":material/warning:")
    elif saved:
        text = (_("Saved to history.") if len(results) == 1
                else _("All {count} measurements saved to history.").format(count=saved))
        with st.container(horizontal=True, vertical_alignment="center", gap="small"):
            st.caption(f":material/check_circle: {text}", width="content")
            page_link(navigation.HISTORY, _("Open History"))
