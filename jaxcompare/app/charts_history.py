"""Altair charts for the History page: several saved runs side by side. Pure functions
``Results -> chart``, no Streamlit.

Same conventions as charts.py: log time axes with power-of-ten ticks, lollipops and dots
rather than bars (a log axis has no honest baseline), colour = run.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import altair as alt

from ..analysis.summary import doubt_text
from ..i18n import _
from ..model.formatting import format_factor, format_time
from ..model.phases import ONE_OFF_PHASES, PER_CALL_PHASES, REFERENCE_PHASES, phase_label
from ..model.reruns import rerun_bounds
from ..model.result import Result
from .charts import (
    FIT_WIDTH,
    ONE_OFF_HEADING,
    PER_CALL_HEADING,
    TINY_S,
    _log_domain,
    _time_axis,
    headed_phase_axis,
)
from .history_view import lettered_labels
from .views import stable_text

# The naive first call sits with the one-off costs here: it is mostly compile.
ONE_OFF = (*ONE_OFF_PHASES, *REFERENCE_PHASES)
RUN_COLORS = ["#1F77B4", "#E4572E", "#54A24B", "#B279A2", "#F2A541", "#17BECF", "#8C564B", "#E377C2",
              "#7F7F7F", "#BCBD22"]


def run_scale(labels: Sequence[str]) -> alt.Scale:
    """One colour per run, the same in every chart of the page."""
    return alt.Scale(domain=list(labels), range=[RUN_COLORS[i % len(RUN_COLORS)] for i in range(len(labels))])


def _labels(results: Sequence[Result], labels: Sequence[str] | None) -> list[str]:
    labels = list(labels) if labels is not None else lettered_labels(results)
    if len(labels) != len(results):
        raise ValueError(f"{len(labels)} labels for {len(results)} results")
    return labels


# --- phases ------------------------------------------------------------------------------------
def phase_rows(results: Sequence[Result], labels: Sequence[str] | None = None) -> list[dict[str, Any]]:
    rows = []
    for result, label in zip(results, _labels(results, labels), strict=True):
        for group, phases in (("per call", PER_CALL_PHASES), ("one-off", ONE_OFF)):
            for name in phases:
                s = result.phase(name)
                median = max(s.median_s, TINY_S)
                rows.append({
                    "run": label, "phase": name, "label": phase_label(name), "group": group,
                    "median_s": median,
                    "low_s": max(rerun_bounds(s)[0], TINY_S), "high_s": max(rerun_bounds(s)[1], TINY_S),
                    "text": format_time(s.median_s) if s.median_s > 0 else "≈ 0", "n": s.n,
                    "stable": stable_text(s),
                })
    return rows


def phase_chart(results: Sequence[Result], labels: Sequence[str] | None = None) -> alt.LayerChart:
    """Every phase of every run on one log time axis: one row per phase, one dot per run in it
    (offset so they never hide each other), a faint stem and where a rerun's median falls (95%)."""
    labels = _labels(results, labels)
    rows = phase_rows(results, labels)
    lo, hi, ticks = _log_domain(min(r["median_s"] for r in rows) / 4, max(r["high_s"] for r in rows) * 3)
    for row in rows:
        row["base"] = lo
    scale = alt.Scale(type="log", domain=[lo, hi], nice=False, clamp=True)
    y, order = headed_phase_axis(((PER_CALL_HEADING, PER_CALL_PHASES), (ONE_OFF_HEADING, ONE_OFF)), 0.2)
    offset = alt.YOffset("run:N", scale=alt.Scale(domain=labels, paddingInner=0.15))
    color = alt.Color("run:N", scale=run_scale(labels),
                      legend=alt.Legend(title=None, orient="bottom", direction="vertical", labelLimit=900,
                                        labelFontSize=13, labelColor="#1F2430", symbolSize=140,
                                        symbolOpacity=1, symbolType="circle"))
    tooltip = [alt.Tooltip("run:N", title=_("run")), alt.Tooltip("label:N", title=_("phase")),
               alt.Tooltip("text:N", title=_("median")),
               alt.Tooltip("low_s:Q", title=_("rerun 95% low (s)"), format=".3g"),
               alt.Tooltip("high_s:Q", title=_("rerun 95% high (s)"), format=".3g"),
               alt.Tooltip("n:Q", title=_("samples")), alt.Tooltip("stable:N", title=_("stable"))]
    base = alt.Chart(alt.Data(values=rows)).encode(y=y, yOffset=offset, color=color, tooltip=tooltip)
    stem = base.mark_rule(strokeWidth=1.5, opacity=0.35).encode(
        x=alt.X("base:Q", scale=scale, axis=_time_axis(_("median time (log scale)"), ticks)), x2="median_s:Q")
    ci = base.mark_rule(strokeWidth=6, opacity=0.3).encode(x=alt.X("low_s:Q", scale=scale), x2="high_s:Q")
    dot = base.mark_circle(size=90, opacity=1).encode(x=alt.X("median_s:Q", scale=scale))
    band = max(32, 14 * len(labels) + 10)
    return alt.layer(stem, ci, dot).properties(
        autosize=FIT_WIDTH, width="container", height=band * len(order),
        title=alt.TitleParams(_("Phases, run by run"), anchor="start",
                              subtitle=_("median per phase; thick translucent line: where a rerun's median "
                                         "falls (95%)")))


# --- speedups ------------------------------------------------------------------------------------
def speedup_rows(results: Sequence[Result], labels: Sequence[str] | None = None) -> list[dict[str, Any]]:
    rows = []
    for result, label in zip(results, _labels(results, labels), strict=True):
        s = result.speedup
        if math.isfinite(s) and s > 0:
            doubt = doubt_text(result)  # a run set aside is marked ?, faded, its reason in the tooltip
            rows.append({"run": label, "speedup": s, "one": 1.0, "text": format_factor(s) + ("?" if doubt else ""),
                         "numpy": format_time(result.numpy_runtime.median_s),
                         "jax": format_time(result.jax.runtime.median_s), "faster": s >= 1,
                         "set_aside": doubt or ""})
    return rows


def speedup_chart(results: Sequence[Result], labels: Sequence[str] | None = None) -> alt.LayerChart:
    """Each run's speedup (NumPy time / JAX time) as a lollipop from the dashed 1x line:
    right of it JAX is faster per call, left of it NumPy."""
    labels = _labels(results, labels)
    rows = speedup_rows(results, labels)
    values = [r["speedup"] for r in rows] + [1.0]
    lo, hi, ticks = _log_domain(min(values), max(values), pad=2.5)
    if len(ticks) < 3:  # under two decades: 1-2-5 ticks, or the axis would show only "1x"
        ticks = [m * 10.0**e for e in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)
                 for m in (1, 2, 5) if lo <= m * 10.0**e <= hi]
    scale = alt.Scale(type="log", domain=[lo, hi], nice=False)
    axis = alt.Axis(title=_("speedup, NumPy time / JAX time (log scale)"), values=ticks, format="~g",
                    labelExpr="datum.label + 'x'", grid=True)
    y = alt.Y("run:N", title=None, scale=alt.Scale(domain=labels, paddingInner=0.3),
              axis=alt.Axis(labelLimit=520, labelFontSize=12, ticks=False, domain=False))
    color = alt.Color("run:N", scale=run_scale(labels), legend=None)
    tooltip = [alt.Tooltip("run:N", title=_("run")), alt.Tooltip("text:N", title=_("speedup")),
               alt.Tooltip("numpy:N", title=_("NumPy runtime")), alt.Tooltip("jax:N", title=_("JAX runtime")),
               alt.Tooltip("set_aside:N", title=_("set aside"))]
    base = alt.Chart(alt.Data(values=rows)).encode(y=y, color=color, tooltip=tooltip)
    stem = base.mark_rule(strokeWidth=3, opacity=0.6).encode(x=alt.X("one:Q", scale=scale, axis=axis),
                                                            x2="speedup:Q")
    dot = base.mark_circle(size=130).encode(x=alt.X("speedup:Q", scale=scale),
                                            opacity=alt.when("datum.set_aside").then(alt.value(0.3))
                                            .otherwise(alt.value(1.0)))
    right = base.transform_filter("datum.faster").mark_text(align="left", dx=10, fontSize=12, fontWeight="bold")
    left = base.transform_filter("!datum.faster").mark_text(align="right", dx=-10, fontSize=12, fontWeight="bold")
    texts = [t.encode(x=alt.X("speedup:Q", scale=scale), text="text:N") for t in (right, left)]
    one = alt.Chart(alt.Data(values=[{"x": 1.0}])).mark_rule(color="#333", strokeDash=[4, 3]).encode(
        x=alt.X("x:Q", scale=scale))
    zones = alt.Chart(alt.Data(values=[{"x": lo, "text": _("← NumPy faster"), "align": "left"},
                                       {"x": hi, "text": _("JAX faster →"), "align": "right"}]))
    zone_left = zones.transform_filter("datum.align == 'left'").mark_text(
        align="left", baseline="top", dx=4, y=-14, fontSize=11, color="#555").encode(
        x=alt.X("x:Q", scale=scale), text="text:N")
    zone_right = zones.transform_filter("datum.align == 'right'").mark_text(
        align="right", baseline="top", dx=-4, y=-14, fontSize=11, color="#555").encode(
        x=alt.X("x:Q", scale=scale), text="text:N")
    return alt.layer(one, stem, dot, *texts, zone_left, zone_right).properties(
        autosize=FIT_WIDTH, width="container", height=max(90, 38 * len(labels)),
        title=alt.TitleParams(_("Speedup per run"), anchor="start",
                              subtitle=_("NumPy runtime / JAX runtime (blocked), each run against its own NumPy")))
