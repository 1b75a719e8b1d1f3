"""The Versions page's chart: JAX's runtime (with its 95% range) and compile time by JAX release.
Pure functions ``[(version, Result)] -> data / chart``, no Streamlit.

Log time axis (runtime and compile differ by orders of magnitude) with dots and range rules,
no bars (a log axis has no honest baseline: DESIGN); releases in release order on x.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import altair as alt

from ..analysis.versions import release_key
from ..i18n import _
from ..model.formatting import format_time
from ..model.result import Result
from .charts import FIT_WIDTH, TINY_S, _log_domain, _time_axis, finite_or

METRICS = ("runtime", "compile")
METRIC_COLORS = {"runtime": "#1F77B4", "compile": "#E4572E"}


def metric_label(metric: str) -> str:
    return {"runtime": _("JAX runtime"), "compile": _("Compile")}[metric]


def versions_rows(pooled: Sequence[tuple[str, Result]]) -> list[dict[str, Any]]:
    """Per version, a runtime row (median and 95% range) and a compile row (its median; the
    range is the compile samples' own, trace + lower + compile summed at the median)."""
    rows = []
    for version, result in sorted(pooled, key=lambda item: release_key(item[0])):
        runtime = result.jax.runtime
        compile_s = result.jax.compile_total_s
        for metric, median, low, high in (
                ("runtime", runtime.median_s, finite_or(runtime.ci_low_s, runtime.median_s),
                 finite_or(runtime.ci_high_s, runtime.median_s)),
                ("compile", compile_s, compile_s, compile_s)):
            rows.append({"version": version, "metric": metric, "label": metric_label(metric),
                         "median_s": max(median, TINY_S), "low_s": max(low, TINY_S), "high_s": max(high, TINY_S),
                         "text": format_time(median)})
    return rows


def versions_chart(pooled: Sequence[tuple[str, Result]]) -> alt.LayerChart:
    """Runtime and compile time against JAX version: a line through each metric's dots, the
    runtime's 95% range as a rule."""
    rows = versions_rows(pooled)
    lo, hi, ticks = _log_domain(min(r["low_s"] for r in rows), max(r["high_s"] for r in rows), pad=2.0)
    order = list(dict.fromkeys(r["version"] for r in rows))
    labels = [metric_label(m) for m in METRICS]
    color = alt.Color("label:N", title=None, legend=alt.Legend(orient="top"),
                      scale=alt.Scale(domain=labels, range=[METRIC_COLORS[m] for m in METRICS]))
    x = alt.X("version:O", title=_("JAX version"), sort=order, axis=alt.Axis(labelAngle=0))
    y = alt.Y("median_s:Q", title=_("time (log)"), scale=alt.Scale(type="log", domain=[lo, hi]),
              axis=_time_axis(_("time (log)"), ticks))
    base = alt.Chart(alt.Data(values=rows))
    tooltip = [alt.Tooltip("version:N", title=_("JAX version")), alt.Tooltip("label:N", title=_("what")),
               alt.Tooltip("text:N", title=_("median"))]
    line = base.mark_line(strokeWidth=1.5, opacity=0.6).encode(x=x, y=y, color=color, detail="label:N")
    rule = base.mark_rule(strokeWidth=3).encode(x=x, y=alt.Y("low_s:Q", scale=alt.Scale(type="log", domain=[lo, hi])),
                                                 y2="high_s:Q", color=color)
    dots = base.mark_point(filled=True, size=90).encode(x=x, y=y, color=color, tooltip=tooltip)
    return alt.layer(line, rule, dots).properties(
        title=_("Runtime and compile time by JAX version"), height=320, autosize=FIT_WIDTH)
