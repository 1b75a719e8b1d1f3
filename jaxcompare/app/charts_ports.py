"""The Compare page's chart of several JAX ports: each port's speedup over NumPy as a bar from
NumPy's line at 1x, on a log axis (2x faster and 2x slower are as long), with its 95% range. A port
whose time is no speed figure (a Pallas kernel interpreted on the CPU, a port that did not run or
disagrees with NumPy) gets its plain words on its row, never a bar."""

from __future__ import annotations

import math
from typing import Any

import altair as alt

from ..analysis.ports import DISAGREES, INTERPRETED, PortsVerdict
from ..analysis.summary import doubt_text
from ..i18n import N_, _
from ..model.cases import format_shape
from ..model.formatting import format_factor
from ..model.palette import DOUBT_GREY, JAX_COLOR, NUMPY_COLOR
from .charts import FIT_WIDTH

# A left-out port's words on its row (short: the port's own line, above the chart, says it in full).
SHORT_WHY = {INTERPRETED: N_("interpreted on the CPU: not a speed figure"),
             DISAGREES: N_("disagrees with NumPy: not compared")}
DID_NOT_RUN = N_("did not run")
FASTEST_COLOR, OTHER_COLOR = JAX_COLOR, "#F2A48F"  # the fastest in JAX's colour, the others a tint of it


def speedup_rows(verdict: PortsVerdict) -> list[dict[str, Any]]:
    """One row per port: its speedup over NumPy and 95% range where it raced, else ``note``, its words."""
    rows = []
    for run in verdict.runs:
        why = verdict.left_out.get(run.name)
        if run.result is None or why is not None or not math.isfinite(run.result.speedup):
            note = _(DID_NOT_RUN) if run.result is None or why is None else _(SHORT_WHY.get(why, why))
            rows.append({"port": run.name, "speedup": None, "note": note})
            continue
        low, high = run.result.speedup_range
        speedup = run.result.speedup
        low, high = (low if math.isfinite(low) else speedup), (high if math.isfinite(high) else speedup)
        doubt = doubt_text(run.result)
        rows.append({"port": run.name, "speedup": speedup, "one": 1.0, "low": low, "high": high,
                     # A set-aside figure marked as every front end marks it; its reason in the tooltip.
                     "text": format_factor(speedup) + ("?" if doubt else ""),
                     "set_aside": doubt or "",
                     # Coloured as the winner only where the race decided it, not within the noise.
                     "fastest": run.name == verdict.fastest and verdict.decided and not doubt,
                     # The label beyond the bar's far end, never on NumPy's line at 1x.
                     "label_at": high if speedup >= 1 else low, "right": speedup >= 1,
                     "range": f"{format_factor(low)}-{format_factor(high)}" if low != high else ""})
    return rows


def ports_speedup_chart(verdict: PortsVerdict) -> alt.LayerChart:
    """A horizontal bar per port from 1x (NumPy's line) to its speedup, log scale, the fastest port in
    JAX's colour; a left-out port's row holds its words at 1x."""
    rows = speedup_rows(verdict)
    bars = [r for r in rows if r["speedup"] is not None]
    notes = [r | {"one": 1.0} for r in rows if r["speedup"] is None]
    values = [1.0, *(r["low"] for r in bars), *(r["high"] for r in bars)]
    lo, hi = min(values) / 1.6, max(values) * 1.6
    if hi / lo < 10:  # at least a decade, centred on what is drawn
        pad = math.sqrt(10 / (hi / lo))
        lo, hi = lo / pad, hi * pad
    decades = [10.0**e for e in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)]
    ticks = sorted(t * m for t in decades for m in (1, 2, 5) if lo <= t * m <= hi)  # 0.5x, 1x, 2x, 5x...
    scale = alt.Scale(type="log", domain=[lo, hi], nice=False, clamp=True)
    y = alt.Y("port:N", title=None, sort=[r["port"] for r in rows],
              axis=alt.Axis(labelFontSize=13, labelFontWeight="bold", ticks=False, domain=False, labelLimit=200))
    x_axis = alt.Axis(title=_("speedup over NumPy (log scale; right of 1x: JAX faster)"), values=ticks,
                      labelExpr="format(datum.value, '~g') + 'x'", grid=True)
    tooltip = [alt.Tooltip("port:N", title=_("port")), alt.Tooltip("text:N", title=_("speedup")),
               alt.Tooltip("range:N", title=_("95% range")), alt.Tooltip("set_aside:N", title=_("set aside"))]
    color = (alt.when("datum.set_aside").then(alt.value(DOUBT_GREY))
             .when("datum.fastest").then(alt.value(FASTEST_COLOR)).otherwise(alt.value(OTHER_COLOR)))
    base = alt.Chart(alt.Data(values=bars)).encode(y=y, tooltip=tooltip)
    label = {"fontSize": 12, "fontWeight": "bold"}
    layers: list[Any] = [
        base.mark_bar(height={"band": 0.55}).encode(x=alt.X("one:Q", scale=scale, axis=x_axis), x2="speedup:Q",
                                                     color=color),
        base.mark_rule(strokeWidth=2, color="#333").encode(x=alt.X("low:Q", scale=scale), x2="high:Q"),
        base.transform_filter("datum.right").mark_text(align="left", dx=6, **label).encode(
            x=alt.X("label_at:Q", scale=scale), text="text:N"),
        base.transform_filter("!datum.right").mark_text(align="right", dx=-6, **label).encode(
            x=alt.X("label_at:Q", scale=scale), text="text:N"),
    ]
    if notes:  # from the plot's left edge: at 1x, near the right one, a long note ran past it
        layers.append(alt.Chart(alt.Data(values=[n | {"at": lo} for n in notes])).mark_text(
            align="left", dx=8, fontSize=12, fontStyle="italic", color="#555").encode(
            x=alt.X("at:Q", scale=scale), y=y, text="note:N"))
    numpy = alt.Chart(alt.Data(values=[{"one": 1.0, "label": _("NumPy (1x)")}]))
    layers += [numpy.mark_rule(color=NUMPY_COLOR, strokeWidth=2.5).encode(x=alt.X("one:Q", scale=scale)),
               numpy.mark_text(color=NUMPY_COLOR, align="left", baseline="top", dx=4, y=-14, fontWeight="bold")
               .encode(x=alt.X("one:Q", scale=scale), text="label:N")]
    return alt.layer(*layers).properties(
        autosize=FIT_WIDTH, width="container", height=48 * len(rows) + 20,
        title=alt.TitleParams(_("Each port's speedup over NumPy"), anchor="start",
                              subtitle=f"{verdict.case} · {format_shape(verdict.shape)} · {verdict.precision} · "
                                       + _("bar: the median speedup · black line: its 95% range")
                                       + (" · " + _("grey, marked ?: set aside (its line says why)")
                                          if any(r.get("set_aside") for r in bars) else "")))
