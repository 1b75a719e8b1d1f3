"""The pitfalls lab: each classic benchmarking mistake measured live beside the right way."""

from __future__ import annotations

import functools
import time
from collections.abc import Mapping
from typing import Any

import streamlit as st

from jaxcompare import Case, JaxCompareError
from jaxcompare.analysis import lab_checks
from jaxcompare.analysis.checks import WARN
from jaxcompare.app import access, cases_ui, chart_ui, controls, form_ui, jobs, navigation, resources, ui
from jaxcompare.app import pitfalls_view as pv
from jaxcompare.app.charts_pitfalls import pitfall_chart
from jaxcompare.app.charts_profile import size_gap_chart
from jaxcompare.app.profile_view import side_gap_text
from jaxcompare.engine import PITFALLS, SECTIONS
from jaxcompare.i18n import _, sentences, translate_text
from jaxcompare.model.cases import format_shape

ui.start_page(navigation.PITFALLS)

JOB, RESULTS, ERROR = "pitfalls_job", "pitfalls_results", "pitfalls_error"
OPENED, UPLOADS = "pitfalls_opened", "pitfalls_uploads"  # the saved lab shown, and the uploader's generation
FORM = form_ui.page_form(pv.PitfallsConfig)
CASES, key, current_config = FORM.cases, FORM.key, FORM.current  # the widgets' keys: pf_ and the field names
BOX_HELP = form_ui.BoxHelp(
    case=_("The JAX docs' benchmarking example, centered_gram, is the default."),
    precision=_("The worker's mode. Pitfall 3 measures the other dtype too."),
    timing=_("Careful samples longer and stops when the median is known to ±3%; quick stops at ±10%. The {count} "
             "sections take several times one comparison.").format(count=len(PITFALLS)))


# --- callbacks (run before the script, so they never block it) ---------------------------------
def start_run(sections: tuple[str, ...] = SECTIONS) -> None:
    if jobs.running_job(JOB) is not None:
        return  # a second click while running never starts a second job
    config = current_config()
    try:
        spec = config.spec(cases_ui.case_by_name(config.case))
        job = resources.get_runner().submit_pitfalls(spec, sections, owner=access.owner_id())
    except JaxCompareError as exc:
        st.session_state[ERROR] = str(exc)
        return
    st.session_state[JOB] = job
    st.session_state[f"{JOB}_meta"] = {"sections": sections, "timing": config.timing}
    st.session_state.pop(ERROR, None)
    st.session_state["pitfalls_url_warnings"] = []


def charts_of(pitfall: Mapping[str, Any]) -> None:
    """A section's charts, built as the page draws them (a saved lab is shown once in a trial first)."""
    if pv.has_chart(pitfall):
        pitfall_chart(pitfall).to_dict()
        if pitfall["id"] == "size" and (gap := size_gap_chart(pitfall)) is not None:
            gap.to_dict()


def open_saved(key: str) -> None:
    """A saved lab replaces the sections shown; a file the page cannot show is one line, and changes nothing."""
    uploaded = st.session_state.get(key)
    if uploaded is None:
        return
    try:
        entries = pv.open_lab(uploaded.getvalue(), uploaded.name, also=charts_of)
    except JaxCompareError as exc:
        st.session_state[ERROR] = str(exc)
        return
    st.session_state[RESULTS] = entries
    st.session_state[OPENED] = pv.OpenedLab(uploaded.name, frozenset(e["context"]["run"] for e in entries.values()))
    # The sidebar set to the lab's case, shape, precision and timing: its sections then read as measured at the
    # settings shown, and one measured again is measured as the lab was.
    st.session_state.update(pv.lab_widgets(entries, CASES))
    st.session_state.pop(ERROR, None)
    st.session_state[UPLOADS] = st.session_state.get(UPLOADS, 0) + 1  # a fresh, empty uploader


def harvest() -> None:
    """Move a finished job's sections (or its error) into the session."""
    pending = st.session_state.get(JOB)
    if pending is None or not pending.done:
        return
    meta = st.session_state.pop(f"{JOB}_meta", {})
    job = jobs.take_finished(JOB, ERROR)
    if job is None:
        return
    entries = pv.section_entries(job.value, meta.get("timing", "careful"), run=job.id)
    st.session_state[RESULTS] = {**st.session_state.get(RESULTS, {}), **entries}


@st.fragment(run_every=jobs.POLL_S)
def poll_job() -> None:
    job = jobs.polled_job(JOB)
    if job is None:
        return
    runner = resources.get_runner()
    sections = st.session_state.get(f"{JOB}_meta", {}).get("sections", SECTIONS)
    ahead = runner.jobs_ahead(job) if job.status == "queued" else None
    elapsed = time.time() - (job.started_at or time.time())
    st.progress(min(max(job.progress, 0.0), 1.0),
                text=pv.progress_text(job.phase, job.progress, elapsed, sections, queued_behind=ahead,
                                      estimate=job.estimate))
    st.button(_("Stop"), icon=":material/stop_circle:", on_click=jobs.cancel_job, args=(JOB,), key="stop_pitfalls")


# --- sections -------------------------------------------------------------------------------------
ROLE_MARKUP = {"naive": _(":red[**✗ Naive**]"), "correct": _(":green[**✓ Correct**]"),
               "also": _("**Also measured**")}


def side_column(role: str, side: Mapping[str, Any], absent: str | None) -> None:
    """One side's code, and its figures; ``absent``: what stands instead where it was not measured."""
    st.markdown(f"{ROLE_MARKUP[role]} · {pv.side_label(side)}")
    st.code(pv.code_in_language(side["code"]), language="python", wrap_lines=True)
    if absent is None:
        st.markdown(pv.side_figures(side))
        gap = side_gap_text(side)
        if gap:
            st.markdown(gap)
    else:
        st.caption(absent)


def side_grid(rows: list[tuple[str, Mapping[str, Any], str | None]]) -> None:
    """Naive | correct side by side; extra measurements below, two to a row."""
    for start in range(0, len(rows), 2):
        pair = rows[start:start + 2]
        for column, (role, side, absent) in zip(st.columns(2, gap="large"), pair, strict=False):
            with column:
                side_column(role, side, absent)


def section(meta: Mapping[str, str], entry: Mapping[str, Any] | None, case: Case, config: pv.PitfallsConfig,
            shape: tuple[int, ...] | None, backend: str | None, busy: bool, absent: str) -> None:
    """One pitfall's section; ``absent``: what its sides say where it was not measured."""
    pid = meta["id"]
    pitfall = entry["pitfall"] if entry else None
    section_backend = entry["context"]["backend"] if entry else backend
    st.subheader(pv.title_text(pid, section_backend), anchor=pv.anchor(pid), divider="gray")
    st.markdown(sentences(pv.explanation_text(pid),
                          _("JAX docs: [{title}]({url}).").format(title=pv.doc_title(meta["doc"]), url=meta["doc"])))
    not_applicable = pv.not_applicable_text(pid, section_backend) if section_backend else None
    if pid == "ports":
        measured = next((c for c in CASES if entry and c.name == entry["context"]["case"]), case)
        not_applicable = pv.ports_note(measured, section_backend, CASES, pitfall)
    if not_applicable:
        st.info(not_applicable, icon=":material/info:")
    if pid == "size" and shape is not None and shape == case.small_shape and not entry:
        st.caption(_("Your shape is the case's small preset: pick a larger one to see the reversal."))
    if pitfall is not None:
        with st.container(border=True):
            st.markdown(f"**{pv.verdict_text(pitfall, section_backend)}**")
            st.markdown(pv.how_wrong(pitfall, section_backend))
            if pid == "tf32" and pv.tf32_errors(pitfall):
                st.markdown(pv.tf32_errors(pitfall))
            for line in lab_checks.left_out_lines(pitfall):
                st.caption(line)
            busy_note = pv.busy_note(entry)
            if busy_note:
                st.warning(busy_note, icon=":material/speed:")
        side_grid([(role, side, None) for role, side in pv.sides(pitfall)])
    else:  # the code each side will run, before anything is measured
        preview = pv.preview(pid, case, shape or case.large_shape, config.precision, backend)
        side_grid([(role, side, absent) for role in pv.ROLES for side in preview[role]])
    chart = pitfall_chart(pitfall) if pitfall is not None and pv.has_chart(pitfall) else None
    if chart is not None:
        chart_ui.draw(chart)
        gap_chart = size_gap_chart(pitfall) if pid == "size" else None
        if gap_chart is not None:
            chart_ui.draw(gap_chart)
    if pitfall is not None:
        context = entry["context"]
        st.caption(pv.measured_caption(context, entry["timing"], pitfall)
                   + config.changed_note(shape, context["case"], context["shape"], context["precision"]))
    row = st.container(horizontal=True)
    row.button(_("Measure this section") if pitfall is None else _("Measure this section again"),
               icon=":material/play_arrow:", on_click=start_run, args=((pid,),), key=f"run_pitfall_{pid}",
               disabled=busy or shape is None)
    if busy and pid in st.session_state.get(f"{JOB}_meta", {}).get("sections", ()):
        row.caption(_("Measuring… progress is at the top of the page."))
    if chart is not None:
        stem = pv.file_stem(pid, context)
        row.download_button(_("Chart (PNG)"), data=lambda chart=chart: chart_ui.png_bytes(chart),
                            file_name=f"{stem}.png", mime="image/png", icon=":material/download:", on_click="ignore",
                            key=f"png_{pid}")


# --- page -------------------------------------------------------------------------------------------
url_warnings = ui.seed_from_url("pitfalls", lambda query: pv.config_from_query(query, CASES))
harvest()

with st.sidebar:
    case, shape = FORM.measurement_boxes(BOX_HELP, kind="pitfalls")
    busy = jobs.running_job(JOB) is not None
    specs = [s for s in [FORM.spec(case)] if s is not None] if shape is not None else []
    refused = form_ui.refusal(specs, kind="pitfalls") if specs and not busy else None
    st.button(_("Run all pitfalls"), type="primary", icon=":material/play_arrow:", on_click=start_run,
              disabled=busy or shape is None or refused is not None, width="stretch", key="run_all_pitfalls",
              help=_("Measures every section in one job, one after another."))
    if refused:
        st.warning(refused, icon=":material/block:")
    elif not busy and shape is not None:
        form_ui.run_hint(specs, kind="pitfalls")
    if busy:
        st.caption(_("Measuring… the page stays usable; change settings for the next run."))
    with st.expander(_("Keep or open a lab"), icon=":material/save:"):
        # The sections read here, in the script's run: Streamlit calls ``data`` in a thread with no session.
        shown = dict(st.session_state.get(RESULTS, {}))
        st.download_button(_("This lab (JSON)"), data=functools.partial(pv.lab_json, shown),
                           file_name="pitfalls_lab.json", mime="application/json", icon=":material/download:",
                           on_click="ignore", disabled=not st.session_state.get(RESULTS), key="pitfalls_download",
                           help=_("Every section measured here, with its figures, to open again later (a reload "
                                  "keeps nothing) or on another machine."))
        upload_key = f"pitfalls_upload_{st.session_state.get(UPLOADS, 0)}"
        st.file_uploader(_("Open a saved lab (JSON)"), type=["json"], key=upload_key, on_change=open_saved,
                         args=(upload_key,), help=_("A download from this page, or `python -m jaxcompare pitfalls "
                                                    "--json`: its sections replace those shown, as measured then."))

cases_ui.cases_file_ui()
config = current_config()
ui.sync_url(config.query())

st.title(navigation.PITFALLS.label)
st.caption(_("Each classic JAX benchmarking mistake, measured live beside the right way, for "
             "`{case}` at {shape} ({precision}). "
             "The naive way is what a quick `%timeit` in a notebook shows; the gap to the correct way is "
             "how wrong that conclusion is.").format(case=case.name, shape=format_shape(shape) if shape else "—",
                                                    precision=config.precision))
env = ui.device_banner()
ui.show_url_warnings(url_warnings)
slot = jobs.job_slot()
if ERROR in st.session_state:
    st.error(translate_text(st.session_state[ERROR]), icon=":material/error:")

results: dict[str, Any] = st.session_state.get(RESULTS, {})
opened = st.session_state.get(OPENED)
opened_text = pv.opened_text(opened, results)
if opened_text:
    st.info(opened_text, icon=":material/folder_open:")
backend = controls.known_backend(config.device, env)
if busy:
    with slot:
        poll_job()
elif not results:
    st.info(_("**Run all pitfalls** (sidebar) measures all {count} sections in one job; each section can also "
              "be measured on its own.").format(count=len(PITFALLS)), icon=":material/play_arrow:")
st.markdown(pv.markdown_table(pv.summary_rows(results, opened)))
numpy_speeds = pv.numpy_speeds_lines(results)
if numpy_speeds:
    st.info("\n\n".join(numpy_speeds), icon=":material/memory:")
busy_summary = pv.busy_summary(results)
if busy_summary:
    st.warning(busy_summary, icon=":material/speed:")
for finding in pv.run_findings(results):
    (st.warning if finding.status == WARN else st.info)(pv.finding_text(finding), icon=":material/compare_arrows:")

absent = _("Not in the saved lab.") if pv.only_saved(opened, results) else _("Not measured yet.")
for meta in PITFALLS:
    section(meta, results.get(meta["id"]), case, config, shape, backend, busy, absent)
