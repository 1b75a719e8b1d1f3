"""Altair charts for the Pitfalls page: pure functions ``pitfall dict -> chart``, no Streamlit.

Each measurement (naive, correct, extras) is one row: a JAX dot and the NumPy reference dot
for the same input, joined by a line whose length on the log time axis *is* the speedup; each
dot carries a whisker, its median's 95% range, so a gap inside the noise looks it. Rows
are labelled NAIVE / CORRECT / ALSO in red, green and grey. Dots, not bars: a log axis has no
honest bar baseline (see charts.py).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

import altair as alt

from ..i18n import N_, _
from ..model.formatting import format_time, format_time_range
from .charts import FIT_WIDTH, JAX_COLOR, NUMPY_COLOR, TINY_S, _time_axis
from .pitfalls_view import compile_text, side_label, sides, speed_text

# English here, translated where a row is labelled (role_word()).
ROLE_WORDS = {"naive": N_("NAIVE"), "correct": N_("CORRECT"), "also": N_("ALSO")}
ROLE_COLORS = {"naive": "#B3261E", "correct": "#1E7B34", "also": "#555555"}
SIDE_DOTS = alt.Scale(domain=["JAX", "NumPy"], range=[JAX_COLOR, NUMPY_COLOR])
SIDE_SHAPES = alt.Scale(domain=["JAX", "NumPy"], range=["circle", "diamond"])
ROW_PX = 56
MIN_DECADES = 1.5
SEP = "|"  # splits a row's label into its two lines


def role_word(role: str) -> str:
    """'NAIVE', 'CORRECT', 'ALSO': a row label's first word, in the reader's language."""
    return _(ROLE_WORDS[role])


REGEX_SPECIAL = re.compile(r"[\\^$.*+?()[\]{}|/]")


def _starts_with(word: str) -> str:
    """A Vega expression: does the axis label start with ``word`` (escaped for a /regex/)?"""
    pattern = REGEX_SPECIAL.sub(lambda m: "\\" + m[0], word)
    return f"test(/^{pattern}/, datum.value)"


def _bounds(side: Mapping[str, Any], key: str, median: float) -> tuple[float, float]:
    """A side's 95% range (``range`` or ``numpy_range``), the median alone when it has none."""
    bounds = side.get(key)
    if not bounds or not all(isinstance(b, int | float) and math.isfinite(b) for b in bounds):
        return median, median
    return max(float(bounds[0]), TINY_S), max(float(bounds[1]), TINY_S)


def pitfall_rows(pitfall: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per measurement: its role, label, JAX and NumPy seconds (with their ranges) and
    the row's text."""
    rows = []
    for order, (role, side) in enumerate(sides(pitfall)):
        jax_s = max(float(side["seconds"]), TINY_S)
        numpy_s = side.get("numpy_seconds")
        numpy_s = max(float(numpy_s), TINY_S) if numpy_s else None
        jax_lo, jax_hi = _bounds(side, "range", jax_s)
        numpy_lo, numpy_hi = _bounds(side, "numpy_range", numpy_s) if numpy_s else (None, None)
        text = f"JAX {format_time(side['seconds'])}"
        speed = speed_text(numpy_s, jax_s, subject=False) if numpy_s else ""
        if speed:
            text += f" · {speed}"
        if side.get("rel_error") is not None:
            text += " · " + _("error {error:.2g}").format(error=side["rel_error"])
        if compile_text(side):
            text += f" · {compile_text(side)}"
        label = f"{role_word(role)} · {side_label(side)}"
        rows.append({
            "order": order, "role": role, "label": label, "row": f"{label}{SEP}{text}",
            "jax_s": jax_s, "numpy_s": numpy_s, "lo_s": min(jax_s, numpy_s or jax_s),
            "hi_s": max(jax_s, numpy_s or jax_s), "text": text, "speed": speed or "—",
            "jax_text": format_time(side["seconds"]), "numpy_text": format_time(numpy_s),
            "jax_lo_s": jax_lo, "jax_hi_s": jax_hi, "numpy_lo_s": numpy_lo, "numpy_hi_s": numpy_hi,
            "jax_range": format_time_range(jax_lo, jax_hi),
            "numpy_range": format_time_range(numpy_lo, numpy_hi) if numpy_s else "—",
        })
    return rows


def dot_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The dots in long form: a JAX dot per row, a NumPy dot where the row has a reference."""
    dots = []
    for row in rows:
        common = {"row": row["row"], "label": row["label"], "role": row["role"], "speed": row["speed"]}
        dots.append({**common, "side": "JAX", "seconds": row["jax_s"], "time": row["jax_text"],
                     "lo_s": row["jax_lo_s"], "hi_s": row["jax_hi_s"], "range": row["jax_range"], "offset_px": -7})
        if row["numpy_s"] is not None:
            dots.append({**common, "side": "NumPy", "seconds": row["numpy_s"], "time": row["numpy_text"],
                         "lo_s": row["numpy_lo_s"], "hi_s": row["numpy_hi_s"], "range": row["numpy_range"],
                         "offset_px": 7})
    return dots


def _ticks(lo: float, hi: float) -> list[float]:
    """Powers of ten inside [lo, hi]; with 1-2-5 steps when that gives fewer than three."""
    ticks = [10.0**e * m for e in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)
             for m in (1, 2, 5)]
    decades = [t for t in ticks if lo <= t <= hi and f"{t:.0e}".startswith("1")]
    return decades if len(decades) >= 3 else [t for t in ticks if lo <= t <= hi]


def _domain(rows: list[dict[str, Any]]) -> tuple[float, float, list[float]]:
    """A log domain over the data, at least a decade and a half wide, centred on it."""
    lo = min(min([r["lo_s"], r["jax_lo_s"]] + ([r["numpy_lo_s"]] if r["numpy_s"] else [])) for r in rows)
    hi = max(max([r["hi_s"], r["jax_hi_s"]] + ([r["numpy_hi_s"]] if r["numpy_s"] else [])) for r in rows)
    pad = max(10 ** ((MIN_DECADES - math.log10(hi / lo)) / 2), 2.5)
    lo, hi = lo / pad, hi * pad
    return lo, hi, _ticks(lo, hi)


def pitfall_chart(pitfall: Mapping[str, Any]) -> alt.LayerChart:
    """Naive vs correct (and extra) JAX times beside NumPy's, on one log time axis. Each row's
    label says what it measured and what it would conclude (two lines)."""
    rows = pitfall_rows(pitfall)
    lo, hi, ticks = _domain(rows)
    scale = alt.Scale(type="log", domain=[lo, hi], nice=False, clamp=True)
    order = [r["row"] for r in rows]
    label_color = " : ".join(f"{_starts_with(role_word(role))} ? '{color}'"
                             for role, color in ROLE_COLORS.items() if role != "also")
    y = alt.Y("row:N", title=None, sort=order, scale=alt.Scale(domain=order, paddingInner=0.3),
              axis=alt.Axis(labelLimit=440, labelFontSize=13, ticks=False, domain=False, labelPadding=10,
                            labelExpr=f"split(datum.value, '{SEP}')", labelLineHeight=17, labelOffset=-8,
                            labelColor=alt.ExprRef(f"{label_color} : '{ROLE_COLORS['also']}'"),
                            labelFontWeight=alt.ExprRef(f"{_starts_with(role_word('also'))} ? 'normal' : 'bold'")))
    tooltip = [alt.Tooltip("label:N", title=_("measurement")), alt.Tooltip("jax_text:N", title="JAX"),
               alt.Tooltip("numpy_text:N", title="NumPy"), alt.Tooltip("speed:N", title=_("JAX is"))]
    gap = alt.Chart(alt.Data(values=rows)).mark_rule(strokeWidth=3, color="#9AA0A6", opacity=0.7).encode(
        x=alt.X("lo_s:Q", scale=scale, axis=_time_axis(_("time per call (log scale)"), ticks)), x2="hi_s:Q",
        y=y, tooltip=tooltip)
    # One legend (NumPy's diamond, JAX's dot) from the color and shape of every layer: a layer whose legend is
    # None hid the merged one.
    legend = alt.Legend(title=None, orient="top", direction="horizontal", symbolSize=120, labelFontSize=13)
    dots = alt.Chart(alt.Data(values=dot_rows(rows))).mark_point(filled=True, size=150, opacity=1).encode(
        x=alt.X("seconds:Q", scale=scale), y=y,
        color=alt.Color("side:N", scale=SIDE_DOTS, legend=legend),
        shape=alt.Shape("side:N", scale=SIDE_SHAPES, legend=legend),
        tooltip=[alt.Tooltip("label:N", title=_("measurement")), alt.Tooltip("side:N", title=_("side")),
                 alt.Tooltip("time:N", title=_("time per call")), alt.Tooltip("range:N", title=_("95% range")),
                 alt.Tooltip("speed:N", title=_("JAX is"))])
    # Just above (JAX) and below (NumPy) the gap line, so neither hides in it.
    whiskers = alt.Chart(alt.Data(values=dot_rows(rows))).mark_rule(
        strokeWidth=2, opacity=0.8, yOffset=alt.ExprRef("datum.offset_px")).encode(
        x=alt.X("lo_s:Q", scale=scale), x2="hi_s:Q", y=y, color=alt.Color("side:N", scale=SIDE_DOTS, legend=legend))
    return alt.layer(gap, whiskers, dots).properties(
        autosize=FIT_WIDTH, width="container", height=ROW_PX * len(rows),
        title=alt.TitleParams(_("Naive vs correct: time per call"), anchor="start",
                              # Two lines: one ran past a narrow page's edge.
                              subtitle=[_("each row: JAX and NumPy on the same input"),
                                        _("the gap is that row's speedup, the whiskers each median's 95% range")]))
