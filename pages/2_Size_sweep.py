"""Size sweep: one case from tiny to large inputs, to see where JAX starts to win."""

from __future__ import annotations

import streamlit as st

from jaxcompare import JaxCompareError
from jaxcompare.analysis.trust import trusted
from jaxcompare.app import (
    access,
    cases_ui,
    chart_ui,
    controls,
    form_ui,
    jobs,
    navigation,
    resources,
    ui,
    views,
)
from jaxcompare.app.charts import sweep_runtime_chart, sweep_share_chart, sweep_speedup_chart
from jaxcompare.app.charts_roofline import sweep_roofline_chart
from jaxcompare.history.exchange import export_csv
from jaxcompare.i18n import _, translate_text
from jaxcompare.model import formatting
from jaxcompare.model.cases import format_shape
from jaxcompare.model.spec import PRECISIONS

ui.start_page(navigation.SIZE_SWEEP)

RUN, ERROR = "sweep_run", "sweep_error"
FORM = form_ui.page_form(controls.SweepConfig)
CASES, key, current_config = FORM.cases, FORM.key, FORM.current  # the widgets' keys: sweep_ and the field names


def active_run() -> controls.SweepRun | None:
    run = st.session_state.get(RUN)
    return run if run is not None and not run.finished else None


def start_sweep() -> None:
    if active_run() is not None:
        return  # never two sweeps at once from one session
    config = current_config()
    runner = resources.get_runner()
    try:
        run = config.plan(cases_ui.case_by_name(config.case), resources.known_environment())
        runner.settings.check_sweep(run.total)
        # The whole sweep counts once against the per-session rate limit; its first point
        # carries the check (a refused first point stops the sweep with the message).
        run.advance(lambda spec: runner.submit(spec, owner=access.owner_id()))
    except JaxCompareError as exc:
        st.session_state[ERROR] = str(exc)
        return
    st.session_state.pop(ERROR, None)
    st.session_state["sweep_url_warnings"] = []
    st.session_state[RUN] = run


def submit(spec):
    return resources.get_runner().submit(spec, owner=access.owner_id(), rate_limited=False)


def stop_sweep() -> None:
    run = st.session_state.get(RUN)
    if run is not None:
        run.stop()


@st.fragment(run_every=jobs.POLL_S)
def poll_sweep() -> None:
    """Advance the sweep one job at a time; a full rerun redraws the charts when a size lands."""
    run = st.session_state.get(RUN)
    if run is None:
        return
    landed = run.advance(submit)
    if landed or run.finished:
        st.rerun()
    if run.job is not None:
        jobs.job_progress(run.job, run.progress_label(), overall=run.fraction(),
                          after=jobs.sweep_left(run.job, run.specs(run.next_index)))
    st.button(_("Stop the sweep"), icon=":material/stop_circle:", on_click=stop_sweep, key="stop_sweep")


# --- page ---------------------------------------------------------------------------------------
url_warnings = ui.seed_from_url("sweep", lambda query: controls.sweep_config_from_query(query, CASES))

with st.sidebar:
    st.header(_("Sweep"))
    case = FORM.case_box(_("NumPy cases first, then SciPy. Type to search."), presets=False)
    FORM.ports_box(case)
    st.pills(_("Precision"), PRECISIONS, selection_mode="multi", key=key("precisions"),
             format_func=controls.precision_label,
             help=_("Pick both to overlay float32 and float64 on the same charts."))
    lo, hi = controls.STEPS_RANGE
    st.slider(_("Sizes"), min_value=lo, max_value=hi, key=key("steps"),
              help=_("How many sizes, spaced geometrically from the smallest to the largest."))
    env = resources.known_environment()
    config = current_config()
    default_top = controls.default_largest(case, controls.backend_for(config.device, env))
    st.text_input(_("Largest shape"), key=key("largest"), live=True,
                  placeholder=_("{shape} (default)").format(shape=format_shape(default_top)),
                  help=_("Leave empty for the default: the case's large preset on CPU, twice that per "
                         "dimension on a GPU or TPU."))
    FORM.device_box(env)
    FORM.matmul_precision_box()
    FORM.timing_box(_("Quick is the default for sweeps; careful samples longer at every size; thorough "
                      "samples the NumPy and JAX runtimes to ±1% at every size. The line below says about how "
                      "long the whole sweep takes at each."), form_ui.sweep_estimates(current_config(), case, env))
    config = current_config()
    problem = None
    try:
        planned = config.plan(case, env)
    except JaxCompareError as exc:
        problem = translate_text(str(exc))
        st.error(problem, icon=":material/error:")
    else:
        st.caption(planned.plan_text())
        problem = form_ui.refusal(planned.specs(), sweep=True)
        if problem:
            st.warning(problem, icon=":material/block:")
    busy = active_run() is not None
    st.button(_("Run sweep"), type="primary", icon=":material/play_arrow:", on_click=start_sweep,
              disabled=busy or problem is not None, width="stretch", key="run_sweep")
    if not busy and problem is None:
        form_ui.run_hint(planned.specs())

cases_ui.cases_file_ui()
ui.sync_url(config.query(case))

st.title(navigation.SIZE_SWEEP.label)
st.caption(_("Small inputs favour NumPy (JAX pays dispatch overhead on every call); large ones can favour "
             "JAX. This page measures one case from tiny to large and marks where the speedup crosses 1x."))
ui.device_banner()
ui.show_url_warnings(url_warnings)
slot = jobs.job_slot()
if ERROR in st.session_state:
    st.error(translate_text(st.session_state[ERROR]), icon=":material/error:")

run: controls.SweepRun | None = st.session_state.get(RUN)
if run is not None and not run.finished:
    with slot:
        poll_sweep()
    st.caption(_("The sweep advances while this page is open, one size at a time, so other users' "
                 "measurements can run in between."))
if run is None:
    st.info(_("Pick a case and precisions in the sidebar, then **Run sweep**."), icon=":material/play_arrow:")
    st.stop()

for point, error in run.failures:
    st.error(_("The sweep stopped at {point}: {error}").format(point=point, error=translate_text(error)),
             icon=":material/error:")
if run.stopped and not run.failures:
    st.info(_("Stopped after {done} of {total} measurement(s); the results so far are kept.").format(
        done=len(run.results), total=run.total), icon=":material/stop_circle:")
if not run.results:
    st.stop()

results = run.results
ui.save_to_history(results)  # each point once, as it lands
first = results[0]
st.subheader(formatting.markdown_literal(translate_text(str(first.case_info.get("title", first.case)))))  # as written
sweep_caption = (_("`{numpy_name}` vs `{jax_name}` · {backend} device `{device}` · {done} of {total} measurement(s)")
                 if run.finished else
                 _("`{numpy_name}` vs `{jax_name}` · {backend} device `{device}` · {done} of {total} measurement(s) "
                   "so far"))
matmul_line = formatting.matmul_precision_line(first)  # every point ran at the sweep's
st.caption(sweep_caption.format(numpy_name=formatting.code_text(first.case_info.get("numpy_name", "")),
                                jax_name=formatting.code_text(first.case_info.get("jax_name", "")),
                                backend=first.backend, device=first.jax.device, done=len(results), total=run.total)
           + (" · " + matmul_line if matmul_line else ""))
ui.history_note(results)
lines = views.sweep_lines(results)  # a line per precision, or per port and precision
figures = [views.crossover_figure(line, elements, len(first.shape), run.finished,
                                  any(trusted(r) for r in lines[line]), lines[line])
           for line, elements in views.crossovers(results).items()]
tiles = [*figures, views.best_speedup_figure(results)]
per_row = min(len(tiles), 4)  # several ports' crossovers wrap, four to a row
for column, figure in zip([c for _row in range(0, len(tiles), per_row) for c in st.columns(per_row)], tiles,
                          strict=False):
    column.metric(figure.label, figure.value, delta=figure.detail or None, delta_color="off", delta_arrow="off",
                  help=figure.help, border=True)
st.markdown(views.sweep_verdict(results))  # from trusted sizes only, with how many were set aside

stem = f"sweep_{first.case}"
if not run.finished:
    # Drawn in the browser while the next size was measured, the charts took 0.3-1.6 cores from it
    # and set every size of a two-core machine's sweep aside as busy (benchmarks/RESULTS.md).
    st.caption(_("The charts are drawn when the sweep ends: drawing them while a size is measured "
                 "would slow that measurement on this machine."))
else:
    chart_ui.chart(sweep_runtime_chart(results, run.extent()), _("Runtime chart"), f"{stem}_runtime", stretch=True)
    chart_ui.chart(sweep_speedup_chart(results, run.extent()), _("Speedup chart"), f"{stem}_speedup", stretch=True)
    # The share and the roofline of one port: several ports' points at each size would overlap.
    one_port = [r for r in results if r.port == first.port]
    if views.several_ports(results):
        st.caption(_("The one-off share and the roofline below are the {port} port's.").format(port=first.port))
    chart_ui.chart(sweep_share_chart(one_port), _("One-off share chart"), f"{stem}_share",
                   stretch=len({r.precision for r in one_port}) == 1)
    sweep_roofline = sweep_roofline_chart(one_port)
    if sweep_roofline is None:
        st.caption(views.roofline_missing_text(results[-1]))
    else:
        chart_ui.chart(sweep_roofline, _("Roofline chart"), f"{stem}_roofline", stretch=True)

ui.plain_table(views.sweep_table(results))
downloads = st.container(horizontal=True)
shown = access.visible(results)  # a hosted demo gives visitors no host name or interpreter path
downloads.download_button(_("Sweep (JSON)"), formatting.dumps([r.to_dict() for r in shown]),
                          file_name=f"{stem}.json", mime="application/json",
                          icon=":material/download:", on_click="ignore", key="download_sweep_json")
downloads.download_button(_("Sweep (CSV)"), export_csv(shown), file_name=f"{stem}.csv",
                          mime="text/csv", icon=":material/download:", on_click="ignore",
                          key="download_sweep_csv")
