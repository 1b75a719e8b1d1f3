"""The roofline chart of one result: pure functions, no Streamlit. Log-log: arithmetic intensity
(FLOP per byte) across, attained FLOP/s up; each side's ceilings as a roof (the memory slope,
bandwidth x intensity, up to the ridge point, then the flat compute peak) and each side's call as
a dot under its roof. Every value drawn is positive: a log axis has no place for zero or None."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import altair as alt

from ..analysis.roofline_plot import Roof, decades, intensity_domain, roofs
from ..analysis.text import bound_share, roofline_point_label
from ..i18n import _
from ..model.cases import format_shape
from ..model.formatting import format_bandwidth, format_flops
from ..model.palette import JAX_COLOR, JAX_CPU_COLOR, NUMPY_COLOR
from ..model.result import Result
from ..model.roofline import LIMIT_WORDS, ROOFLINE_SIDES, Roofline
from .charts import FIT_WIDTH, PRECISION_DASH, _subtitle, jax_cpu_side, precision_scale, side_scale

ROOF_COLOR = "#6B6B6B"
HEIGHT_PX = 340
# A dot is kept this far (a factor) inside the y axis's decades: one at 100 MFLOP/s sat on the axis at
# 1e8, half of it cut off (a dot's 6.7 px radius is 0.16 of a decade where eight decades share 340 px).
DOT_PAD = 10**0.2
# A roof's label sits this far above its line; labels closer than a line apart are stacked.
LABEL_GAP_PX, LABEL_LINE_PX = 6, 14
# Vega expressions: power-of-ten ticks with SI prefixes (10 GFLOP/s) and plain numbers (0.1).
RATE_LABEL = "format(datum.value, '~s') + ' FLOP/s'"
INTENSITY_LABEL = "format(datum.value, '~g')"


def side_name(side: str) -> str:
    """A side as the chart's legend names it (the reader's language)."""
    return {"numpy": "NumPy", "jax": "JAX"}.get(side) or jax_cpu_side()


def _lift_labels(labels: list[dict[str, Any]], px_per_decade: float) -> None:
    """Each roof label's ``lift_px``: two roofs with nearly the same peak (NumPy's and JAX's CPU
    ceilings measured apart) would print their labels on top of each other, so the higher of two
    labels closer than a line of text is lifted by a line (an estimate: the plot is a bit shorter
    than the chart)."""
    placed: list[float] = []  # each label's height in pixels from the lowest, once lifted
    for label in sorted(labels, key=lambda row: row["flops_per_s"]):
        at = math.log10(label["flops_per_s"]) * px_per_decade
        lifted = max([at, *(p + LABEL_LINE_PX for p in placed if at - p < LABEL_LINE_PX)])
        label["lift_px"] = round(lifted - at)
        placed.append(lifted)


def roof_rows(roof_list: list[Roof], x_lo: float, x_hi: float, suffix: str = "") -> tuple[list, list, list]:
    """Each roof's polyline rows, its ridge point's row and its label at the right end, named by the
    sides it holds (``suffix`` after the names: a sweep's precision)."""
    lines, ridge_rows, labels = [], [], []
    for roof in roof_list:
        name = _(", ").join(side_name(side) for side in roof.sides) + suffix  # Chinese lists take 、
        corners = roof.corners(x_lo, x_hi)
        lines += [{"roof": name, "order": i, "intensity": x, "flops_per_s": y} for i, (x, y) in enumerate(corners)]
        text = _("{sides}: {peak} · {bandwidth}").format(sides=name, peak=format_flops(roof.peak),
                                                         bandwidth=format_bandwidth(roof.bandwidth))
        labels.append({"roof": name, "intensity": x_hi, "flops_per_s": corners[-1][1], "text": text})
        if roof.ridge is not None:
            ridge_rows.append({"roof": name, "intensity": roof.ridge, "flops_per_s": roof.peak,
                               "ridge": _("{value} FLOP/byte").format(value=f"{roof.ridge:.3g}"),
                               "peak": format_flops(roof.peak), "bandwidth": format_bandwidth(roof.bandwidth)})
    return lines, ridge_rows, labels


def _axes(domain: dict[str, Any]) -> tuple[alt.X, alt.Y]:
    """Log-log: intensity across, attained FLOP/s up, over the data's decades."""
    x = alt.X("intensity:Q", title=_("arithmetic intensity (FLOP per byte)"),
              scale=alt.Scale(type="log", domain=domain["x"], nice=False),
              axis=alt.Axis(values=domain["x_ticks"], labelExpr=INTENSITY_LABEL, grid=True))
    y = alt.Y("flops_per_s:Q", title=_("attained FLOP/s"),
              scale=alt.Scale(type="log", domain=domain["y"], nice=False),
              axis=alt.Axis(values=domain["y_ticks"], labelExpr=RATE_LABEL, grid=True))
    return x, y


def roof_layers(data: dict[str, Any], x: alt.X, y: alt.Y) -> list[alt.Chart]:
    """The roofs, their labels and their ridge points (rows from roof_rows)."""
    roof_lines = alt.Chart(alt.Data(values=data["roofs"])).mark_line(color=ROOF_COLOR, strokeWidth=2).encode(
        x=x, y=y, detail="roof:N", order="order:Q",
        tooltip=[alt.Tooltip("roof:N", title=_("roof of"))])
    # A roof's ceilings above its right end, lifted clear of a label just below it.
    labels = [alt.Chart(alt.Data(values=[label])).mark_text(
        align="right", baseline="bottom", dx=-4, dy=-LABEL_GAP_PX - label["lift_px"], fontSize=11,
        color=ROOF_COLOR).encode(x=x, y=y, text="text:N") for label in data["labels"]]
    layers: list[alt.Chart] = [roof_lines, *labels]
    if data["ridges"]:
        layers.append(alt.Chart(alt.Data(values=data["ridges"])).mark_point(
            shape="diamond", filled=True, size=90, color=ROOF_COLOR).encode(
            x=x, y=y, tooltip=[alt.Tooltip("roof:N", title=_("roof of")),
                               alt.Tooltip("ridge:N", title=_("ridge point")),
                               alt.Tooltip("peak:N", title=_("compute peak")),
                               alt.Tooltip("bandwidth:N", title=_("memory bandwidth"))]))
    return layers


def _domain(points: list[dict[str, Any]], lines: list[dict[str, Any]], labels: list[dict[str, Any]],
            x_lo: float, x_hi: float, x_ticks: list[float]) -> list[dict[str, Any]]:
    """The y axis over the points and the roofs (which run to the x domain's ends, so their corners
    already frame it), with the roof labels lifted apart at that scale."""
    ys = [p["flops_per_s"] * pad for p in points for pad in (1 / DOT_PAD, DOT_PAD)] + [
        row["flops_per_s"] for row in lines]
    y_lo, y_hi, y_ticks = decades(min(ys), max(ys))
    _lift_labels(labels, HEIGHT_PX / math.log10(y_hi / y_lo))
    return [{"x": [x_lo, x_hi], "x_ticks": x_ticks, "y": [y_lo, y_hi], "y_ticks": y_ticks}]


def _point(roofline: Roofline, name: str, *, blocked: bool = False) -> dict[str, Any] | None:
    """One side's dot: where it sits and, as words, its limit and share of its bound (``legend``); None
    without an attained rate. ``blocked``: JAX's blocked call, beside a dot read from its device time."""
    side = roofline.side(name)
    rate = roofline.blocked_flops_per_s(name) if blocked else roofline.flops_per_s(name)
    if side is None or not rate or rate <= 0:
        return None
    limit = roofline.blocked_limit(name) if blocked else roofline.limit(name)
    moved = roofline.side_bytes(name)
    fraction = roofline.blocked_fraction(name) if blocked else roofline.fraction(name)
    return {"side": side_name(name), "intensity": roofline.side_intensity(name), "flops_per_s": rate,
            "rate": format_flops(rate),
            "bytes_rate": format_bandwidth(moved / (side.runtime_s if blocked else side.time_s) if moved else None),
            "bound": format_flops(roofline.bound_flops_per_s(name)),
            "fraction": bound_share(fraction),
            "limit": _(LIMIT_WORDS[limit]) if limit else _("not known"), "blocked": blocked,
            "legend": roofline_point_label(roofline, name, blocked=blocked)}


def roofline_rows(result: Result) -> dict[str, list[dict[str, Any]]] | None:
    """The chart's data: ``points`` (a dot per side), ``roofs`` (each roof's polyline),
    ``ridges`` (where a roof's slope meets its flat) and ``labels`` (a roof's name at its right
    end), with the axes' ``domain``; None when the result has no roofline or its counts are not
    known (no intensity: nothing to place on the x axis)."""
    roofline = result.roofline
    intensity = None if roofline is None else roofline.intensity
    if roofline is None or intensity is None:
        return None
    points = [p for p in (_point(roofline, name) for name in ROOFLINE_SIDES) if p is not None]
    # JAX read from its device time: its blocked call too, hollow, where the host's round trip puts it.
    blocked = _point(roofline, "jax", blocked=True) if points else None
    points += [blocked] if blocked is not None else []
    roof_list = roofs(roofline)
    x_lo, x_hi, x_ticks = intensity_domain([p["intensity"] for p in points] or [intensity], roof_list)
    lines, ridge_rows, labels = roof_rows(roof_list, x_lo, x_hi)
    return {"points": points, "roofs": lines, "ridges": ridge_rows, "labels": labels,
            "domain": _domain(points, lines, labels, x_lo, x_hi, x_ticks)}


def roofline_chart(result: Result) -> alt.LayerChart | None:
    """Both ceilings, the ridge point and a dot per side (tooltips: the limit and the share of the
    bound); None when the result has no roofline to draw (roofline_rows)."""
    data = roofline_rows(result)
    if data is None:
        return None
    x, y = _axes(data["domain"][0])
    layers = roof_layers(data, x, y)
    # The legend names each dot with its limit and share of its bound: labels beside the dots would
    # collide (the sides' intensities are often one or close, and so are NumPy's and JAX's rates).
    colors = {"NumPy": NUMPY_COLOR, "JAX": JAX_COLOR, jax_cpu_side(): JAX_CPU_COLOR}
    color = alt.Color("legend:N", scale=alt.Scale(domain=[p["legend"] for p in data["points"]],
                                                  range=[colors[p["side"]] for p in data["points"]]),
                      legend=alt.Legend(title=None, orient="top", direction="horizontal", labelLimit=460,
                                        **({"columns": 2} if len(data["points"]) > 3 else {})))
    tooltip = [alt.Tooltip("side:N", title=_("side")), alt.Tooltip("limit:N", title=_("limit")),
               alt.Tooltip("fraction:N", title=_("share of its bound")), alt.Tooltip("rate:N", title=_("attained")),
               alt.Tooltip("bound:N", title=_("bound")), alt.Tooltip("bytes_rate:N", title=_("bytes/s"))]
    for hollow in (False, True):  # JAX's blocked call is a ring: the same side, the host's round trip in it
        rows = [p for p in data["points"] if p["blocked"] == hollow]
        if rows:
            layers.append(alt.Chart(alt.Data(values=rows)).mark_point(
                filled=not hollow, size=140, opacity=1, strokeWidth=2.5).encode(x=x, y=y, color=color, tooltip=tooltip))
    intensities = sorted({p["intensity"] for p in data["points"]})
    if len(intensities) > 1:  # NumPy's counts, the CPU's program, or the arrays in and out moved a dot
        where = _("each dot at its own FLOP per byte (NumPy's: the function's count over the arrays in and out)")
    else:
        intensity = (intensities or [result.roofline.intensity])[0]
        where = _("{intensity} FLOP per byte").format(intensity=f"{intensity:.3g}")
    # Two lines: one did not fit beside the page's sidebar and ended in an ellipsis.
    limits = _("a dot under the slope is limited by memory, under the flat by compute, far below both by per-call "
               "overhead")
    return alt.layer(*layers).properties(
        autosize=FIT_WIDTH, width="container", height=HEIGHT_PX,
        title=alt.TitleParams(_("Roofline: what holds each side back"), anchor="start",
                              subtitle=[_subtitle(result), where, limits]))


# --- Size sweep ---------------------------------------------------------------------------------
def sweep_roofline_rows(results: Sequence[Result]) -> dict[str, list[dict[str, Any]]] | None:
    """The sweep's roofline: ``points`` (each size per side and precision, ``order`` its element
    count, so a side's line runs in size order), the roofs of each precision's largest size (the
    ceilings are the host's, the same at every size; the flat roof is at that size's mix) and the
    axes' ``domain``. Sizes without a roofline or counts are left out; None when none has one."""
    by_precision: dict[str, list[Result]] = {}
    for r in sorted(results, key=lambda r: math.prod(r.shape)):
        if r.roofline is not None and r.roofline.intensity is not None:
            by_precision.setdefault(r.precision, []).append(r)
    points: list[dict[str, Any]] = []
    roof_list: list[tuple[Roof, str]] = []
    for precision, sized in sorted(by_precision.items()):
        for r in sized:
            for name in ROOFLINE_SIDES:
                point = _point(r.roofline, name)
                if point is not None:
                    points.append(point | {"precision": precision, "series": f"{point['side']} {precision}",
                                           "order": math.prod(r.shape), "shape": format_shape(r.shape),
                                           "end_label": ""})
        suffix = f" {precision}" if len(by_precision) > 1 else ""
        roof_list += [(roof, suffix) for roof in roofs(sized[-1].roofline)]
    if not points:
        return None
    x_lo, x_hi, x_ticks = intensity_domain([p["intensity"] for p in points], [roof for roof, _s in roof_list])
    lines, ridge_rows, labels = [], [], []
    for roof, suffix in roof_list:
        more = roof_rows([roof], x_lo, x_hi, suffix)
        lines, ridge_rows, labels = lines + more[0], ridge_rows + more[1], labels + more[2]
    # The path's ends name their sizes: the smallest sits near the overhead corner, the largest nearest the roof.
    for series in {p["series"] for p in points}:
        own = [p for p in points if p["series"] == series]
        for p in (own[0], own[-1]):
            p["end_label"] = p["shape"]
    return {"points": points, "roofs": lines, "ridges": ridge_rows, "labels": labels,
            "domain": _domain(points, lines, labels, x_lo, x_hi, x_ticks)}


def sweep_roofline_chart(results: Sequence[Result]) -> alt.LayerChart | None:
    """The sizes as a path per side (and precision) under the roofs: small sizes far below, held
    back by per-call overhead, larger ones climbing towards the roof; None without a roofline."""
    data = sweep_roofline_rows(results)
    if data is None:
        return None
    x, y = _axes(data["domain"][0])
    layers = roof_layers(data, x, y)
    rows = alt.Data(values=data["points"])
    tooltip = [alt.Tooltip("side:N", title=_("side")), alt.Tooltip("precision:N", title=_("precision")),
               alt.Tooltip("shape:N", title=_("shape")), alt.Tooltip("limit:N", title=_("limit")),
               alt.Tooltip("fraction:N", title=_("share of its bound")), alt.Tooltip("rate:N", title=_("attained")),
               alt.Tooltip("bound:N", title=_("bound"))]
    color = alt.Color("side:N", scale=side_scale(any(p["side"] == jax_cpu_side() for p in data["points"])),
                      legend=alt.Legend(title=_("side"), orient="top", direction="horizontal"))
    dash = alt.StrokeDash("precision:N", scale=precision_scale(results, PRECISION_DASH),
                          legend=alt.Legend(title=_("precision"), orient="top", direction="horizontal"))
    base = alt.Chart(rows).encode(x=x, y=y, color=color, detail="series:N", order="order:Q")
    layers += [base.mark_line(strokeWidth=2).encode(strokeDash=dash),
               base.mark_point(filled=True, size=60, opacity=1).encode(tooltip=tooltip),
               base.mark_text(align="left", dx=6, dy=-6, fontSize=10).encode(text="end_label:N")]
    first = results[0]
    return alt.layer(*layers).properties(
        autosize=FIT_WIDTH, width="container", height=HEIGHT_PX,
        title=alt.TitleParams(_("Roofline by size: how close each size gets to the roof"), anchor="start",
                              subtitle=[f"{first.case} · {first.backend} ({first.jax.device_kind})",
                                        _("a dot per size, joined in size order; small sizes sit far below "
                                          "the roof (per-call overhead), larger ones climb towards it")]))
