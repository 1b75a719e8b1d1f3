"""Test-only Streamlit script: renders one saved Result the way the Compare page and the Size
sweep page do, with the same view and chart functions, so a result from a GPU (with JAX on the
CPU beside it and the fraction of peak) can be looked at on a machine without one.

Run as ``streamlit run tests/render_result.py`` with JAXCOMPARE_TEST_RENDER_RESULT=<a JSON list of
results, smallest first> (tests/test_browser_accelerator.py does): the last is shown as on
Compare, all of them as a sweep.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import streamlit as st

from jaxcompare import Result
from jaxcompare.analysis import checks, summary
from jaxcompare.app import chart_ui, charts, ui, views

st.set_page_config(page_title="Result · jaxcompare tests", layout="wide")
results = [Result.from_dict(doc) for doc in json.loads(Path(os.environ["JAXCOMPARE_TEST_RENDER_RESULT"]).read_text())]
result = results[-1]

st.title("Compare")
st.caption(views.result_caption(result))
# The Compare page's result section: headline rows, verdicts, the two charts, the tables.
for row in summary.figure_rows(result):
    for column, figure in zip(st.columns(3), row, strict=True):
        column.metric(figure.label, figure.value, help=figure.help, border=True)
for line in views.verdict_lines(result):
    st.markdown(line)
left, right = st.columns([6, 5], gap="large")
with left:
    st.altair_chart(chart_ui.svg_rendered(charts.phase_breakdown_chart(result)), width="stretch")
with right:
    st.altair_chart(chart_ui.svg_rendered(charts.samples_chart(result)), width="stretch")
ui.plain_table(views.phase_table(result))
st.table(views.checklist_rows(checks.checklist(result), lambda pitfall: None), hide_index=True)

st.header("Size sweep")
st.altair_chart(chart_ui.svg_rendered(charts.sweep_runtime_chart(results)), width="stretch")
ui.plain_table(views.sweep_table(results))
