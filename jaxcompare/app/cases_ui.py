"""The cases a page offers: the catalog, plus a session's own cases file, loaded by a worker
(the file is code; it never runs in the server) from the sidebar's path box."""

from __future__ import annotations

import os

import streamlit as st

from ..catalog import builtin_cases, case_from_summary
from ..engine import Job, Settings
from ..i18n import N_, _, translate_text
from ..model.cases import Case
from ..model.errors import BadInput, JaxCompareError
from . import access, controls, resources
from .jobs import POLL_S

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
    return bool(resources.get_runner().settings.allow_cases_file)


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
        job = resources.get_runner().submit_list_cases(os.path.abspath(os.path.expanduser(path)),
                                                       owner=access.owner_id())
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
    path = job.steps[0].request.cases_file
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
    runner = resources.get_runner()
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


def fill_preset_shape(config: type[controls.PageConfig]) -> None:
    """A Case or Size box's callback: the Custom shape box shows the chosen preset's shape (the
    Compare and Pitfalls pages, each with its config's widget keys)."""
    ss, key = st.session_state, config.key
    if ss[key("size")] != "custom":
        try:
            case = case_by_name(ss[key("case")])
        except JaxCompareError:
            return  # the page redraws the Case box with a choice it knows, and says so
        ss[key("custom_shape")] = controls.preset_shape_text(case, ss[key("size")])
