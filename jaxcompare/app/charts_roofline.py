"""The roofline chart of one result: pure functions, no Streamlit. Log-log: arithmetic intensity
(FLOP per byte) across, attained FLOP/s up; each side's ceilings as a roof (the memory slope,
bandwidth x intensity, up to the ridge point, then the flat compute peak) and each side's call as
a dot under its roof. Every value drawn is positive: a log axis has no place for zero or None."""

from __future__ import annotations

import math
from typing import Any

import altair as alt

from ..analysis.roofline_plot import Roof, decades, intensity_domain, roofs
from ..i18n import _
from ..model.formatting import format_bandwidth, format_flops, format_percent
from ..model.palette import JAX_COLOR, JAX_CPU_COLOR, NUMPY_COLOR
from ..model.result import Result
from ..model.roofline import LIMIT_WORDS, ROOFLINE_SIDES, Roofline
from .charts import FIT_WIDTH, _subtitle, jax_cpu_side

ROOF_COLOR = "#6B6B6B"
HEIGHT_PX = 340
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
        name = ", ".join(side_name(side) for side in roof.sides) + suffix
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
    ys = [p["flops_per_s"] for p in points] + [row["flops_per_s"] for row in lines]
    y_lo, y_hi, y_ticks = decades(min(ys), max(ys))
    _lift_labels(labels, HEIGHT_PX / math.log10(y_hi / y_lo))
    return [{"x": [x_lo, x_hi], "x_ticks": x_ticks, "y": [y_lo, y_hi], "y_ticks": y_ticks}]


def _point(roofline: Roofline, name: str) -> dict[str, Any] | None:
    """One side's dot: where it sits and, as words, its limit and share of its bound; None
    without an attained rate."""
    rate = roofline.flops_per_s(name)
    if roofline.side(name) is None or not rate or rate <= 0:
        return None
    limit = roofline.limit(name)
    return {"side": side_name(name), "intensity": roofline.intensity, "flops_per_s": rate,
            "rate": format_flops(rate), "bytes_rate": format_bandwidth(roofline.bytes_per_s(name)),
            "bound": format_flops(roofline.bound_flops_per_s(name)),
            "fraction": format_percent(roofline.fraction(name)),
            "limit": _(LIMIT_WORDS[limit]) if limit else _("not known")}


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
    for point in points:
        point["legend"] = _("{side}: {limit}, {fraction} of its bound").format(**point)
    roof_list = roofs(roofline)
    x_lo, x_hi, x_ticks = intensity_domain([intensity], roof_list)
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
    # collide (every side has the same intensity, and NumPy's and JAX's rates are often close).
    colors = {"NumPy": NUMPY_COLOR, "JAX": JAX_COLOR, jax_cpu_side(): JAX_CPU_COLOR}
    color = alt.Color("legend:N", scale=alt.Scale(domain=[p["legend"] for p in data["points"]],
                                                  range=[colors[p["side"]] for p in data["points"]]),
                      legend=alt.Legend(title=None, orient="top", direction="horizontal", labelLimit=400))
    tooltip = [alt.Tooltip("side:N", title=_("side")), alt.Tooltip("limit:N", title=_("limit")),
               alt.Tooltip("fraction:N", title=_("share of its bound")), alt.Tooltip("rate:N", title=_("attained")),
               alt.Tooltip("bound:N", title=_("bound")), alt.Tooltip("bytes_rate:N", title=_("bytes/s"))]
    layers.append(alt.Chart(alt.Data(values=data["points"])).mark_point(filled=True, size=140, opacity=1).encode(
        x=x, y=y, color=color, tooltip=tooltip))
    intensity = data["points"][0]["intensity"] if data["points"] else result.roofline.intensity
    return alt.layer(*layers).properties(
        autosize=FIT_WIDTH, width="container", height=HEIGHT_PX,
        title=alt.TitleParams(_("Roofline: what holds each side back"), anchor="start",
                              subtitle=[_subtitle(result),
                                        _("{intensity} FLOP per byte; a dot under the slope is limited by memory, "
                                          "under the flat by compute, far below both by per-call overhead").format(
                                            intensity=f"{intensity:.3g}")]))
