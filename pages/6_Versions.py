"""JAX versions: one case under several JAX releases, adjacent releases compared."""

from __future__ import annotations

import streamlit as st

from jaxcompare import JaxCompareError
from jaxcompare.app import access, cases_ui, chart_ui, form_ui, jobs, navigation, resources, ui
from jaxcompare.app.charts_versions import versions_chart
from jaxcompare.app.versions_view import (
    VersionsConfig,
    VersionsJob,
    findings_markdown,
    hosted_refusals,
    outcome,
    set_aside_lines,
    versions_table,
)
from jaxcompare.i18n import _, translate_text
from jaxcompare.model.formatting import markdown_literal

ui.start_page(navigation.VERSIONS)

JOB, OUTCOME, ERROR = "versions_job", "versions_outcome", "versions_error"
FORM = form_ui.page_form(VersionsConfig, catalog_only=True)
CASES, key, current_config = FORM.cases, FORM.key, FORM.current


def start_run() -> None:
    if jobs.running_job(JOB) is not None:
        return  # never two at once from one session
    config = current_config()
    runner = resources.get_runner()
    try:
        spec = config.spec(cases_ui.case_by_name(config.case))
        versions = config.versions()
        runner.settings.check_spec(spec)
        refused = hosted_refusals(versions, runner.settings)
    except JaxCompareError as exc:
        st.session_state[ERROR] = [str(exc)]
        return
    if refused:
        st.session_state[ERROR] = refused
        return
    st.session_state.pop(ERROR, None)
    st.session_state.pop(OUTCOME, None)
    st.session_state[JOB] = VersionsJob(spec, versions, runner, access.owner_id())


def harvest() -> None:
    job = st.session_state.get(JOB)
    if job is None or not job.done:
        return
    del st.session_state[JOB]
    if job.error is not None:
        st.session_state[ERROR] = [job.error]
    else:
        st.session_state[OUTCOME] = outcome(job.runs)
        ui.save_to_history([result for _v, result in st.session_state[OUTCOME].pooled])


@st.fragment(run_every=jobs.POLL_S)
def poll() -> None:
    job = jobs.polled_job(JOB)
    if job is None:
        return
    current = job.current
    if current is None:  # environments being made, or between rounds
        st.progress(min(max(job.fraction, 0.0), 1.0), text=translate_text(job.message))
    else:  # the round's place in the queue, or its phase
        jobs.job_progress(current, translate_text(job.message), overall=job.fraction)
    st.button(_("Stop"), icon=":material/stop_circle:", on_click=jobs.cancel_job, args=(JOB,), key="stop_versions")


# --- page ---------------------------------------------------------------------------------------
settings = resources.get_runner().settings
offered = list(settings.jax_versions) if settings.hosted_mode else None  # hosted: only the operator's
if offered is not None:
    st.session_state.setdefault(key("jax"), offered)
for name, value in VersionsConfig().widgets().items():
    st.session_state.setdefault(name, value)
harvest()

with st.sidebar:
    st.header(_("Configuration"))
    case = FORM.case_box()
    FORM.shape_boxes(case, custom_help=None)
    FORM.precision_box()
    FORM.timing_box()
    if offered is None:
        st.text_input(_("Versions to compare"), key=key("jax"), live=True,
                      help=_("Releases separated by spaces, like 0.4.35 0.10.2. Each one other than this server's "
                             "own JAX runs in an environment of its own, made once (about a minute) and reused."))
    else:
        st.multiselect(_("Versions to compare"), offered, key=key("jax"), placeholder=_("Choose versions"),
                       help=_("The releases this server's operator prepared; each runs in an environment of its "
                              "own."))
    problem = None
    if offered == []:
        problem = _("This server offers no JAX versions to compare: its operator lists them in "
                    "JAXCOMPARE_JAX_VERSIONS.")
        st.info(problem, icon=":material/info:")
    try:
        config = current_config()
        config.shape(case)
        config.versions()
    except JaxCompareError as exc:
        if problem is None:
            problem = translate_text(str(exc))
            st.error(problem, icon=":material/error:")
    st.button(_("Run under each version"), type="primary", icon=":material/play_arrow:", on_click=start_run,
              disabled=jobs.running_job(JOB) is not None or problem is not None, width="stretch", key="run_versions")
    st.caption(_("Each round is a measurement in the queue every page shares, so no other job runs beside it."))

st.title(navigation.VERSIONS.label)
st.caption(_("Does the next JAX make this function faster or slower? Each version runs the same protocol in its "
             "own worker, in rounds whose order alternates (A B C, C B A) so a drifting machine favours none; "
             "every speedup is against the same NumPy."))
ui.device_banner()  # which device every version measures on (the CPU fallback said plainly)
slot = jobs.job_slot()
for message in st.session_state.get(ERROR, []):
    st.error(translate_text(message), icon=":material/error:")
if jobs.running_job(JOB) is not None:
    with slot:
        poll()
found = st.session_state.get(OUTCOME)
if found is None:
    if jobs.running_job(JOB) is None:
        st.info(_("Pick a case and the JAX versions in the sidebar, then **Run under each version**."),
                icon=":material/play_arrow:")
    st.stop()

for error in found.errors:
    st.error(translate_text(error), icon=":material/error:")
if not found.pooled:
    st.stop()
contradictions = found.findings
st.dataframe(versions_table(found.pooled, contradictions), hide_index=True, width="stretch")
for line in set_aside_lines(found.pooled):
    st.caption("? " + line)
for text in findings_markdown(contradictions):
    st.warning(text, icon=":material/warning:")
for comparison in found.comparisons:
    st.markdown("- " + markdown_literal(comparison["text"]))  # names a case, perhaps from a cases file
ui.history_note([result for _v, result in found.pooled])
first = found.pooled[0][1]
chart_ui.chart(versions_chart(found.pooled), _("Versions chart"), f"versions_{first.case}",
               stretch=True)
