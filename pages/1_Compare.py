"""Compare one NumPy/SciPy function with its JAX port, phase by phase."""

from __future__ import annotations

import streamlit as st

from jaxcompare import JaxCompareError, Result
from jaxcompare.analysis import checks
from jaxcompare.app import (
    access,
    cases_ui,
    chart_ui,
    charts,
    charts_profile,
    controls,
    form_ui,
    jobs,
    language,
    navigation,
    pitfalls_view,
    ports_ui,
    profile_view,
    reopen,
    resources,
    ui,
    views,
)
from jaxcompare.history.exchange import export_csv
from jaxcompare.i18n import _, translate_text
from jaxcompare.model import formatting
from jaxcompare.model.cases import format_shape

ui.start_page(navigation.COMPARE)

JOB, RESULT, ERROR = "compare_job", "compare_result", "compare_error"
PORTS = "compare_ports"  # a race of several ports (controls.PortsRun): shown instead of RESULT while it is there
FORM = form_ui.page_form(controls.CompareConfig)
CASES, key, current_config = FORM.cases, FORM.key, FORM.current  # the widgets' keys: the config's field names
BOX_HELP = form_ui.BoxHelp(
    case=_("NumPy cases first, then SciPy. Type to search by name, library or title."),
    precision=_("x32 compares float32 on both sides, x64 float64; each runs in its own worker."),
    timing=_("Careful stops when each median is known to ±3%; quick stops at ±10%. Thorough samples the NumPy and "
             "JAX runtimes until each is known to ±1% (up to 2.5 s each) in four pairs of blocks side by side, and "
             "checks that the speedup held from pair to pair (*Speedup steady*)."))


# --- callbacks (run before the script, so they never block it) ---------------------------------
def ports_running() -> controls.PortsRun | None:
    run = st.session_state.get(PORTS)
    return run if run is not None and not run.finished else None


def submit_port(spec):
    # Each port counts as a run against the server's limits (rate, jobs at once), as a Compare run does; the
    # ports after the first run on the first's device (a server with several), so the race is on one device.
    run = st.session_state[PORTS]
    return resources.get_runner().submit(spec, owner=access.owner_id(), sticky=run.started,
                                         profile_dir=run.profile_dir)


def start_run() -> None:
    if jobs.running_job(JOB) is not None or ports_running() is not None:
        return  # a second click while running never starts a second job
    config = current_config()
    try:
        case = cases_ui.case_by_name(config.case)
        spec = config.spec(case)
        ports = config.chosen_ports(case)
        if len(ports) > 1:  # each port its own job, one after another, each traced on its own with Profile
            run = controls.PortsRun(spec, ports, profile_dir=resources.traces_folder() if config.profile else None)
            st.session_state[PORTS] = run
            run.advance(submit_port)
            st.session_state.pop(ERROR, None)
            st.session_state["compare_url_warnings"] = []
            return
        st.session_state[JOB] = resources.get_runner().submit(
            spec, owner=access.owner_id(), profile_dir=resources.traces_folder() if config.profile else None)
    except JaxCompareError as exc:
        st.session_state[ERROR] = str(exc)
        return
    st.session_state.pop(ERROR, None)
    st.session_state["compare_url_warnings"] = []


def harvest() -> None:
    """Move a finished job's result (or error) into the session."""
    job = jobs.take_finished(JOB, ERROR)
    if job is not None and isinstance(job.value, Result):
        st.session_state[RESULT] = job.value
        st.session_state.pop(PORTS, None)
        reopen.replaced()
        ui.save_to_history([job.value])
    run: controls.PortsRun | None = st.session_state.get(PORTS)
    if run is not None and run.finished and run.results and not run.harvested:  # each port's result, once
        run.harvested = True
        st.session_state.pop(RESULT, None)
        reopen.replaced()
        ui.save_to_history(run.results)


@st.fragment(run_every=jobs.POLL_S)
def poll_job() -> None:
    job = jobs.polled_job(JOB)
    if job is None:
        return
    jobs.job_progress(job, f"{job.spec.case} {format_shape(job.spec.shape)} {job.spec.precision}")
    st.button(_("Stop"), icon=":material/stop_circle:", on_click=jobs.cancel_job, args=(JOB,), key="stop_compare")


def stop_ports() -> None:
    run = st.session_state.get(PORTS)
    if run is not None:
        run.stop()


@st.fragment(run_every=jobs.POLL_S)
def poll_ports() -> None:
    """Advance the race one port at a time; a full rerun shows it once every port has landed."""
    run = st.session_state.get(PORTS)
    if run is None:
        return
    run.advance(submit_port)
    if run.finished:
        st.rerun()
    if run.job is not None:
        jobs.job_progress(run.job, f"{run.progress_label()} · {run.base.case} {format_shape(run.base.shape)} "
                          f"{run.base.precision}", overall=run.fraction(),
                          after=jobs.sweep_left(run.job, run.specs(run.next_index)))
    st.button(_("Stop"), icon=":material/stop_circle:", on_click=stop_ports, key="stop_ports")


# --- page ---------------------------------------------------------------------------------------
# ?result=<id>: a saved run (<id>,<id>...: a saved race), before the sidebar reads the URL.
reopen.open_from_url(RESULT, ERROR, CASES, ports_key=PORTS)
url_warnings = ui.seed_from_url("compare", lambda query: controls.compare_config_from_query(query, CASES))
harvest()

with st.sidebar:
    case, shape = FORM.measurement_boxes(BOX_HELP, kind="measure")
    st.toggle(_("Profile the JAX call"), key=key("profile"),
              help=_("After the timed phases, trace a few steady-state JAX calls with jax.profiler: the XLA ops "
                     "that take the device's time, and how much of each call is host overhead. The timings are "
                     "the same either way; the Perfetto trace can be downloaded from the Profile tab."))
    busy = jobs.running_job(JOB) is not None or ports_running() is not None
    specs = FORM.port_specs(case) if shape is not None else []
    refused = form_ui.refusal(specs) if specs and not busy else None
    st.button(_("Run comparison"), type="primary", icon=":material/play_arrow:", on_click=start_run,
              disabled=busy or shape is None or refused is not None, width="stretch", key="run_compare")
    if busy:
        st.caption(_("Measuring… the page stays usable; change settings for the next run."))
    elif refused:
        st.warning(refused, icon=":material/block:")
    elif shape is not None:
        form_ui.run_hint(specs)

cases_ui.cases_file_ui()
ui.sync_url(reopen.url_query(current_config().query(case)))

st.title(navigation.COMPARE.label)
st.caption(_("{case}: `{numpy_name}` vs `{jax_name}`. {description}").format(
    case=controls.case_label(case), numpy_name=case.numpy_name, jax_name=case.jax_name,
    description=translate_text(case.description or "")))
env = ui.device_banner()
ui.show_url_warnings(url_warnings)
slot = jobs.job_slot()
if ERROR in st.session_state:
    st.error(translate_text(st.session_state[ERROR]), icon=":material/error:")
if jobs.running_job(JOB) is not None:
    with slot:
        poll_job()
if ports_running() is not None:
    with slot:
        poll_ports()

race: controls.PortsRun | None = st.session_state.get(PORTS)
if race is not None and race.finished:
    ports_ui.show_ports(race, cases_ui.case_by_name(race.base.case), CASES)
    st.stop()
result: Result | None = st.session_state.get(RESULT)
if result is None:
    if jobs.running_job(JOB) is None and race is None:
        st.info(_("Pick a case and a shape in the sidebar, then **Run comparison**. A run times NumPy, "
                  "then JAX's transfer, cold compile, first call, blocked runtime, dispatch and fetch."),
                icon=":material/play_arrow:")
    st.stop()

# --- result --------------------------------------------------------------------------------------
st.subheader(formatting.markdown_literal(translate_text(str(result.case_info.get("title", result.case)))))  # as written
st.caption(views.result_caption(result, current_config().changed_note(shape, result.case, result.shape,
                                                                      result.precision,
                                                                      result.spec.matmul_precision)))
if not reopen.saved_note(result):
    ui.history_note([result])
ports_ui.show_figures(result)

stem = views.file_stem(result)
left, right = st.columns([6, 5], gap="large")
with left:
    chart_ui.chart(charts.phase_breakdown_chart(result), _("Phase chart"), f"{stem}_phases", stretch=True)
with right:
    chart_ui.chart(charts.samples_chart(result), _("Samples chart"), f"{stem}_samples", stretch=True)

ports_ui.show_roofline_and_advice(result, stem)

checklist = checks.checklist(result)
tab_checks, tab_phases, tab_agree, tab_profile, tab_ipython, tab_notes = st.tabs(
    [views.checks_tab_label(checklist), _("All phases"), _("Agreement"), _("Profile"), _("Reproduce in IPython"),
     _("Notes")])
with tab_checks:
    st.table(views.checklist_rows(checklist, lambda pitfall: pitfalls_view.result_link_markdown(
        pitfall, result, CASES, language.url_params())), hide_index=True, border="horizontal")
with tab_phases:
    ui.plain_table(views.phase_table(result))
    st.caption(_("One-off: paid once per function, shape and dtype. Per call: paid every call. "
                 "The naive first call (compile + one run) is what a plain `%time f(x)` shows."))
with tab_agree:
    agree, text = views.agreement_text(result)
    if agree:
        st.success(text, icon=":material/check_circle:")
    else:
        st.error(text, icon=":material/error:")
    st.markdown(views.dtypes_text(result))
    float64_rows = views.float64_rows(result.jax.agreement)
    if float64_rows:
        st.dataframe(float64_rows, hide_index=True)
        st.caption(_("Both sides against a float64 NumPy reference: what the precision costs."))
with tab_profile:
    profile = result.profile
    if profile is None:
        st.info(profile_view.not_profiled_text(), icon=":material/troubleshoot:")
    elif not profile.ok:
        st.warning(_("The profiler could not run: {error}. The timings above are complete.").format(
            error=translate_text(str(profile.error))), icon=":material/warning:")
    else:
        figures = profile_view.gap_figures(result)  # a fourth, copying, where the device copied
        per_row = 3 if len(figures) <= 3 else 2  # four in a row cut their values short
        for start in range(0, len(figures), per_row):
            row = figures[start:start + per_row]
            for column, figure in zip(st.columns(per_row), row, strict=False):
                column.metric(figure.label, figure.value, help=figure.help, border=True)
        chart_ui.chart(charts_profile.profile_chart(result), _("Profile chart"), f"{stem}_profile", stretch=True)
        st.dataframe(profile_view.op_rows(profile), hide_index=True, width="stretch")
        path, where = profile_view.trace_file(profile, private=access.private_details_hidden())
        st.caption(where)
        if path is not None:
            st.download_button(_("Trace (Perfetto)"), data=lambda path=path: path.read_bytes(),
                               file_name=profile_view.trace_download_name(result), mime="application/gzip",
                               icon=":material/download:", on_click="ignore", key="download_trace")
        st.caption(profile_view.open_trace_text())
with tab_ipython:
    st.code(formatting.ipython_lines(result), language="python")
    st.caption(_("Paste into IPython or Jupyter to reproduce this measurement by hand."))
with tab_notes:
    for block in views.notes_markdown(result):
        st.markdown(block)

downloads = st.container(horizontal=True)
shown = access.visible([result])  # a hosted demo gives visitors no host name or interpreter path
downloads.download_button(_("Result (JSON)"), formatting.dumps(views.result_document(shown[0])),
                          file_name=f"{stem}.json",
                          mime="application/json", icon=":material/download:", on_click="ignore",
                          key="download_result_json")
downloads.download_button(_("Result (CSV)"), export_csv(shown), file_name=f"{stem}.csv",
                          mime="text/csv", icon=":material/download:", on_click="ignore",
                          key="download_result_csv")
