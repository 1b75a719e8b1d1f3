"""The Compare page's several JAX ports of one case: the port picker in the sidebar, and a finished
race on the page (its sentence, each port's line, the speedup chart, a tab per port with its
figures, phase chart, roofline and advice, the downloads)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import streamlit as st

from ..analysis import checks, summary
from ..history.exchange import export_csv
from ..i18n import _, translate_text
from ..model import formatting
from ..model.cases import Case
from ..model.errors import JaxCompareError
from ..model.result import Result
from . import (
    access,
    chart_ui,
    charts,
    charts_ports,
    charts_roofline,
    controls,
    language,
    pitfalls_view,
    ports_view,
    reopen,
    ui,
    views,
)


def show_figures(result: Result) -> None:
    """A result's figures as tiles, then its verdict against NumPy (the Compare page's, and each port's)."""
    for row in summary.figure_rows(result):
        for column, figure in zip(st.columns(3), row, strict=True):
            # The line under a value: a speedup's 95% range, grey and without an arrow.
            column.metric(figure.label, figure.value, delta=figure.detail or None, delta_color="off",
                          delta_arrow="off", help=figure.help, border=True)
    for line in views.verdict_lines(result):
        st.markdown(line)


def show_roofline_and_advice(result: Result, stem: str) -> None:
    """The roofline chart (or why there is none), then what would help most (the Compare page's, and each port's)."""
    roofline_chart = charts_roofline.roofline_chart(result)
    if roofline_chart is None:
        st.caption(views.roofline_missing_text(result))
    else:
        chart_ui.chart(roofline_chart, _("Roofline chart"), f"{stem}_roofline", stretch=True)
    advice_text = views.advice_markdown(result)
    if advice_text:
        st.markdown(advice_text)


def show_result_figures(result: Result, stem: str, cases: Sequence[Case]) -> None:
    """A port's tab: what it is, its figures, its verdict against NumPy, its phase chart, roofline, what would
    help most, and its checklist."""
    show_figures(result)
    chart_ui.chart(charts.phase_breakdown_chart(result), _("Phase chart"), f"{stem}_phases", stretch=True)
    show_roofline_and_advice(result, stem)
    st.table(views.checklist_rows(checks.checklist(result), lambda pitfall: pitfalls_view.result_link_markdown(
        pitfall, result, cases, language.url_params())), hide_index=True, border="horizontal")


def show_ports(run: controls.PortsRun, case: Case, cases: Sequence[Case]) -> None:
    """A finished (or stopped) race: the sentence on top, each port's line, the speedup chart, a tab
    per port, and the downloads."""
    try:
        verdict = run.verdict()
    except JaxCompareError as exc:  # ports landed on different devices: no race to show
        st.error(translate_text(str(exc)), icon=":material/error:")
        return
    # As this reader may see them: a hosted demo gives visitors no host name or interpreter path.
    shown = dict(zip((r.id for r in run.results), access.visible(run.results), strict=True))
    verdict = replace(verdict, runs=tuple(replace(r, result=shown[r.result.id]) if r.result is not None else r
                                          for r in verdict.runs))
    st.subheader(translate_text(case.title or case.name))
    st.caption(ports_view.caption(verdict))
    if not reopen.saved_race_note(run.results):
        ui.history_note(run.results)
    st.markdown(ports_view.verdict_markdown(verdict))
    st.markdown("\n".join(ports_view.port_lines(verdict)))
    stem = ports_view.file_stem(verdict)
    chart_ui.chart(charts_ports.ports_speedup_chart(verdict), _("Ports chart"), f"{stem}_speedups", stretch=True)
    tabs = st.tabs([ports_view.tab_label(r.name, r.result) for r in verdict.runs])
    for tab, port_run in zip(tabs, verdict.runs, strict=True):
        with tab:
            why = ports_view.port_why(case, port_run.name)
            if why:
                st.caption(why)
            if port_run.result is None:
                st.warning(_("{port} did not run: {error}").format(
                    port=port_run.name, error=translate_text(port_run.error or "")), icon=":material/error:")
                continue
            show_result_figures(port_run.result, f"{views.file_stem(port_run.result)}_{port_run.name}", cases)
    downloads = st.container(horizontal=True)
    downloads.download_button(_("Ports (JSON)"), formatting.dumps(ports_view.document(verdict)),
                              file_name=f"{stem}.json", mime="application/json", icon=":material/download:",
                              on_click="ignore", key="download_ports_json")
    measured = [r.result for r in verdict.runs if r.result is not None]
    downloads.download_button(_("Results (CSV)"), export_csv(measured), file_name=f"{stem}.csv",
                              mime="text/csv", icon=":material/download:", on_click="ignore",
                              key="download_ports_csv")
