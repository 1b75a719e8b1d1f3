"""Altair charts of results: pure functions ``Result(s) -> chart``, no Streamlit.

Times span six decades (a 1 µs call beside a 100 ms compile), so time axes are log scales
with power-of-ten ticks labelled in s/ms/µs/ns. Bars on a log axis have no honest baseline,
so the charts use lollipops (a rule from a baseline well below the smallest value, then a
dot) and lines; shares of a whole use linear, normalised bars.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import altair as alt

from ..analysis import summary
from ..analysis.summary import one_off_s
from ..i18n import N_, _
from ..model.cases import format_shape
from ..model.formatting import format_crossover, format_time
from ..model.palette import JAX_COLOR, JAX_CPU_COLOR, NUMPY_COLOR
from ..model.phases import ONE_OFF_PHASES, PER_CALL_PHASES, phase_label
from ..model.reruns import rerun_bounds
from ..model.result import Result
from .views import crossovers, line_name, several_ports, stable_text, sweep_lines

# The third side's name: English here, translated where it is drawn (jax_cpu_side()).
JAX_CPU = N_("JAX on CPU")
SIDE_SCALE = alt.Scale(domain=["NumPy", "JAX"], range=[NUMPY_COLOR, JAX_COLOR])
PRECISION_DASH = {"x32": [1, 0], "x64": [6, 3]}
PRECISION_SHAPE = {"x32": "circle", "x64": "square"}
PRECISION_COLOR = {"x32": JAX_COLOR, "x64": "#72439A"}


def side_scale(third_side: bool) -> alt.Scale:
    """The sides' colours; the third only where it was measured, so a CPU-only host's legends
    do not list a side that is not there."""
    if not third_side:
        return SIDE_SCALE
    return alt.Scale(domain=["NumPy", "JAX", jax_cpu_side()], range=[NUMPY_COLOR, JAX_COLOR, JAX_CPU_COLOR])


def jax_cpu_side() -> str:
    """The third side's name as the charts' data and legends show it (the reader's language)."""
    return _(JAX_CPU)


def vega_string(text: str) -> str:
    """``text`` as a single-quoted Vega expression string literal."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


# Module constants in English (N_), translated where they are drawn.
ONE_OFF_TITLE = N_("One-off costs: paid once per function, shape and dtype")
PER_CALL_TITLE = N_("Per-call costs: paid on every call")
# The parts of a first JAX call, by phase, with their colours: the one-off phases and one call's runtime.
COMPONENT_COLORS = {"transfer": "#9D755D", "trace": "#B279A2", "lower": "#FF9DA6", "compile": JAX_COLOR,
                    "runtime": "#54A24B"}
ONE_CALL = N_("One JAX call (runtime)")


def component_label(phase: str) -> str:
    """A part of the first call as the one-off share chart names it (the reader's language)."""
    return _(ONE_CALL) if phase == "runtime" else phase_label(phase)
TINY_S = 1e-9
# Stretch to the container's width, keep the height asked for (Streamlit's default "fit" would
# squeeze titles, axes and plot into the given height).
FIT_WIDTH = alt.AutoSizeParams(type="fit-x", contains="padding")

# Vega expression: a seconds value with a readable unit (power-of-ten ticks: 1 µs, 10 ms, 1 s).
TIME_LABEL = (
    "datum.value >= 1 ? format(datum.value, '~g') + ' s'"
    " : datum.value >= 1e-3 ? format(datum.value * 1e3, '~r') + ' ms'"
    " : datum.value >= 1e-6 ? format(datum.value * 1e6, '~r') + ' µs'"
    " : format(datum.value * 1e9, '~r') + ' ns'"
)


def _log_domain(lo: float, hi: float, pad: float = 1.0) -> tuple[float, float, list[float]]:
    """A log domain from ``lo / pad`` to ``hi * pad`` (at least one decade wide), and the
    powers of ten inside it as ticks."""
    lo = max(lo, TINY_S) / pad
    hi = max(hi * pad, lo * 10)
    ticks = [10.0**e for e in range(math.ceil(math.log10(lo) - 1e-9), math.floor(math.log10(hi) + 1e-9) + 1)]
    return lo, hi, ticks


def _time_axis(title: str, ticks: list[float], **kwargs: Any) -> alt.Axis:
    return alt.Axis(title=title, values=ticks, labelExpr=TIME_LABEL, grid=True, **kwargs)


def finite_or(value: float, fallback: float) -> float:
    """``value`` when finite, else ``fallback``: an unknown CI end is drawn at the median."""
    return value if math.isfinite(value) else fallback


def _side(phase: str) -> str:
    return "NumPy" if phase == "numpy" else "JAX"


def _subtitle(result: Result) -> str:
    return (f"{result.case} · {format_shape(result.shape)} · {result.dtype} · {result.backend} "
            f"({result.jax.device_kind})")


# --- Compare page ------------------------------------------------------------------------------
def phase_rows(result: Result) -> list[dict[str, Any]]:
    """One row per phase and side: NumPy's and JAX's, and with the third side, JAX on the CPU's
    beside each JAX phase (``offset``: its pixels below the row's centre; JAX's moves above)."""
    rows = []
    third = result.jax_cpu
    for group, phases in ((ONE_OFF_TITLE, ONE_OFF_PHASES), (PER_CALL_TITLE, PER_CALL_PHASES)):
        for order, name in enumerate(phases):
            paired = third is not None and name != "numpy"
            rows.append(_phase_row(name, _(group), order, _side(name), result.phase(name),
                                   -PAIR_OFFSET if paired else 0))
            if paired:
                rows.append(_phase_row(name, _(group), order, jax_cpu_side(), third.phase(name), PAIR_OFFSET))
    return rows


# With the third side, a JAX phase's two lollipops sit this many pixels above and below the row's centre.
PAIR_OFFSET = 7


def _phase_row(name: str, group: str, order: int, side: str, s: Any, offset: int) -> dict[str, Any]:
    value = max(s.median_s, TINY_S)
    return {
        "phase": name, "label": phase_label(name), "group": group, "order": order,
        "side": side, "median_s": value, "offset": offset,
        "low_s": max(rerun_bounds(s)[0], TINY_S), "high_s": max(rerun_bounds(s)[1], TINY_S),
        "min_s": s.min_s, "n": s.n, "loops": s.loops,
        "text": format_time(s.median_s) if s.median_s > 0 else "≈ 0",
        "stable": stable_text(s),
    }


# The y axis's group headings (English, translated by headed_phase_axis).
ONE_OFF_HEADING = N_("ONE-OFF COSTS (paid once)")
PER_CALL_HEADING = N_("PER-CALL COSTS (every call)")


def headed_phase_axis(groups: Sequence[tuple[str, Sequence[str]]], padding: float) -> tuple[alt.Y, list[str]]:
    """A y axis of phase rows under bold group headings (each heading an empty row), and the
    row order, for charts whose data's ``label`` column holds phase_label()s (translated, as the
    headings are here: they arrive in English)."""
    groups = [(_(heading), phases) for heading, phases in groups]
    order = [label for heading, phases in groups for label in (heading, *(phase_label(p) for p in phases))]
    names = ", ".join(vega_string(heading) for heading, _phases in groups)
    headings = f"indexof([{names}], datum.value) >= 0"
    y = alt.Y("label:N", title=None, scale=alt.Scale(domain=order, paddingInner=padding),
              axis=alt.Axis(labelLimit=240, labelFontSize=12, ticks=False, domain=False,
                            labelFontWeight=alt.ExprRef(f"{headings} ? 'bold' : 'normal'"),
                            labelColor=alt.ExprRef(f"{headings} ? '#1F2430' : '#444'")))
    return y, order


def phase_breakdown_chart(result: Result) -> alt.LayerChart:
    """One-off costs above per-call costs on one log time axis, as lollipops, so a compile 1000x
    the runtime and a sub-microsecond dispatch are both readable. One layered chart (not a
    concat), so it can stretch to its container; headings are empty rows of the y axis. With
    the third side, each JAX phase has JAX on the CPU's lollipop just below it, in green."""
    rows = phase_rows(result)
    third = result.jax_cpu is not None
    lo, hi, ticks = _log_domain(min(r["median_s"] for r in rows) / 4, max(r["high_s"] for r in rows) * 6)
    for row in rows:
        row["base"] = lo
    scale = alt.Scale(type="log", domain=[lo, hi], nice=False, clamp=True)
    y, order = headed_phase_axis(((ONE_OFF_HEADING, ONE_OFF_PHASES), (PER_CALL_HEADING, PER_CALL_PHASES)), 0.25)
    tooltip = [
        alt.Tooltip("side:N", title=_("side")), alt.Tooltip("label:N", title=_("phase")),
        alt.Tooltip("text:N", title=_("median")),
        alt.Tooltip("min_s:Q", title=_("min (s)"), format=".3g"),
        alt.Tooltip("low_s:Q", title=_("rerun 95% low (s)"), format=".3g"),
        alt.Tooltip("high_s:Q", title=_("rerun 95% high (s)"), format=".3g"),
        alt.Tooltip("n:Q", title=_("samples")), alt.Tooltip("loops:Q", title=_("loops/sample")),
        alt.Tooltip("stable:N", title=_("stable")),
    ]
    legend = alt.Legend(title=None, orient="top", direction="horizontal") if third else None
    color = alt.Color("side:N", scale=side_scale(third), legend=legend)
    # Each pair's two lollipops are drawn offset from the row's centre (mark yOffset per group).
    layers: list[Any] = []
    for offset in sorted({r["offset"] for r in rows}):
        group = [r for r in rows if r["offset"] == offset]
        base = alt.Chart(alt.Data(values=group)).encode(y=y, tooltip=tooltip)
        stem = base.mark_rule(strokeWidth=2.5, opacity=0.55, yOffset=offset).encode(
            x=alt.X("base:Q", scale=scale, axis=_time_axis(_("median time (log scale)"), ticks)),
            x2="median_s:Q", color=color)
        ci = base.mark_rule(strokeWidth=7 if not offset else 5, opacity=0.3, yOffset=offset).encode(
            x=alt.X("low_s:Q", scale=scale), x2="high_s:Q", color=color)
        dot = base.mark_circle(size=110 if not offset else 80, opacity=1, yOffset=offset).encode(
            x=alt.X("median_s:Q", scale=scale), color=color)
        text = base.mark_text(align="left", dx=9, fontSize=12 if not offset else 11, fontWeight="bold",
                              yOffset=offset).encode(x=alt.X("high_s:Q", scale=scale), text="text:N")
        layers += [stem, ci, dot, text]
    return alt.layer(*layers).properties(
        autosize=FIT_WIDTH, width="container", height=(38 if third else 30) * len(order),
        title=alt.TitleParams(_("Where the time goes"), subtitle=_subtitle(result), anchor="start"))


def _runtime_sides(result: Result) -> list[tuple[str, str, Any]]:
    """(phase, side, Stats) of each runtime: NumPy, JAX, and JAX on the CPU where measured."""
    sides = [("numpy", "NumPy", result.numpy_runtime), ("runtime", "JAX", result.jax.runtime)]
    if result.jax_cpu is not None:
        sides.append(("jax_cpu", jax_cpu_side(), result.jax_cpu.runtime))
    return sides


def sample_rows(result: Result) -> list[dict[str, Any]]:
    rows = []
    for name, side, s in _runtime_sides(result):
        label = f"{side} · {format_time(s.median_s)} · n={s.n}"
        for i, value in enumerate(s.samples_s):
            rows.append({"phase": name, "side": side, "label": label, "sample": i, "time_s": value,
                         "text": format_time(value),
                         "deviation": (value / s.median_s - 1) if s.median_s > 0 else 0.0})
    return rows


def samples_chart(result: Result) -> alt.LayerChart:
    """Every sample of both sides as its deviation from that side's median: the noise of both
    sides on one axis, at a glance. Grey band: the 95% CI of the median."""
    rows = sample_rows(result)
    labels = list(dict.fromkeys(r["label"] for r in rows))
    summary = []
    sides = _runtime_sides(result)
    for (_phase, _side_name, s), label in zip(sides, labels, strict=True):
        m = s.median_s if s.median_s > 0 else 1.0
        lo_ci = finite_or(s.ci_low_s, m)
        hi_ci = finite_or(s.ci_high_s, m)
        summary.append({"label": label, "ci_low": lo_ci / m - 1, "ci_high": hi_ci / m - 1, "zero": 0.0,
                        "n": s.n, "loops": s.loops, "iqr": s.iqr_s / m, "stable": stable_text(s)})
    y = alt.Y("label:N", title=None, scale=alt.Scale(domain=labels),
              axis=alt.Axis(labelLimit=200, labelFontSize=12, labelFontWeight="bold", ticks=False))
    x = alt.X("deviation:Q", title=_("each sample vs its side's median"),
              axis=alt.Axis(format="+~%", grid=True))
    summary_tip = [alt.Tooltip("label:N", title=_("side")), alt.Tooltip("n:Q", title=_("samples")),
                   alt.Tooltip("loops:Q", title=_("loops/sample")), alt.Tooltip("iqr:Q", title="IQR", format=".1%"),
                   alt.Tooltip("stable:N", title=_("stable"))]
    band = alt.Chart(alt.Data(values=summary)).mark_bar(opacity=0.18, color="#333", height={"band": 0.8}).encode(
        x=alt.X("ci_low:Q"), x2="ci_high:Q", y=y, tooltip=summary_tip)
    ticks = alt.Chart(alt.Data(values=rows)).mark_tick(thickness=2, opacity=0.75, bandSize=0.7).encode(
        x=x, y=y, color=alt.Color("side:N", scale=side_scale(len(sides) > 2), legend=None),
        tooltip=[alt.Tooltip("label:N", title=_("side")), alt.Tooltip("sample:Q", title=_("sample")),
                 alt.Tooltip("text:N", title=_("time per call")),
                 alt.Tooltip("deviation:Q", title=_("deviation"), format="+.1%")])
    median = alt.Chart(alt.Data(values=summary)).mark_tick(color="#111", thickness=2.5).encode(
        x=alt.X("zero:Q"), y=y, tooltip=summary_tip)
    return alt.layer(band, ticks, median).properties(
        autosize=FIT_WIDTH, width="container", height=60 * len(sides),
        title=alt.TitleParams(_("Samples: how noisy is each side?"),
                              subtitle=_("ticks: samples · black: median · grey: 95% CI of the median"),
                              anchor="start"))


# --- Size sweep page --------------------------------------------------------------------------------
# With several ports, a sweep's lines take these colours by port, in the order they ran (the first JAX's).
PORT_COLORS = [JAX_COLOR, "#72439A", "#54A24B", "#B279A2", "#9D755D", "#E45756"]


def port_sides(results: Sequence[Result]) -> list[str]:
    """'JAX · jnp', 'JAX · scan': a sweep's JAX side per port, in the order they ran."""
    return [f"JAX · {port}" for port in dict.fromkeys(r.port for r in results)]


def sweep_rows(results: Sequence[Result]) -> list[dict[str, Any]]:
    rows = []
    ports = several_ports(results)
    first_port = results[0].port if results else None
    for r in results:
        elements = math.prod(r.shape)
        # With several ports, a JAX line per port; NumPy (measured beside each) is drawn from the first's runs.
        sides = [("NumPy", "NumPy", r.numpy_runtime)] if not ports or r.port == first_port else []
        sides.append(("JAX", f"JAX · {r.port}" if ports else "JAX", r.jax.runtime))
        if r.jax_cpu is not None and not ports:
            sides.append((JAX_CPU, jax_cpu_side(), r.jax_cpu.runtime))
        for key, side, s in sides:
            rows.append({  # series: an internal key (English side), one line per side, port and precision
                "elements": elements, "shape": format_shape(r.shape), "precision": r.precision,
                "series": f"{key} {r.port} {r.precision}" if ports else f"{key} {r.precision}", "side": side,
                "median_s": max(s.median_s, TINY_S),
                "low_s": max(rerun_bounds(s)[0], TINY_S), "high_s": max(rerun_bounds(s)[1], TINY_S),
                "text": format_time(s.median_s),
            })
    return sorted(rows, key=lambda row: (row["series"], row["elements"]))


Extent = tuple[float, float] | None


def _elements_axis(values: Sequence[float], extent: Extent = None) -> tuple[alt.Scale, alt.Axis]:
    """Log x axis over the data, or over the planned sizes (``extent``) so a running sweep's
    axis does not jump as sizes land."""
    values = list(values) + (list(extent) if extent else [])
    lo, hi, ticks = _log_domain(min(values), max(values), pad=1.5)
    return (alt.Scale(type="log", domain=[lo, hi], nice=False),
            alt.Axis(title=_("elements per input (log scale)"), values=ticks, format="~s", grid=True))


def precision_scale(results: Sequence[Result], style: dict[str, Any]) -> alt.Scale:
    """A scale over the precisions these results have, so a legend lists no precision
    that was not swept; each keeps its own style either way."""
    present = [p for p in style if any(r.precision == p for r in results)]
    return alt.Scale(domain=present, range=[style[p] for p in present])


def sweep_runtime_chart(results: Sequence[Result], extent: Extent = None) -> alt.LayerChart:
    """Runtime of both sides against size on log-log axes; x32 solid, x64 dashed."""
    rows = sweep_rows(results)
    x_scale, x_axis = _elements_axis([r["elements"] for r in rows], extent)
    lo, hi, ticks = _log_domain(min(r["low_s"] for r in rows), max(r["high_s"] for r in rows), pad=1.6)
    y_scale = alt.Scale(type="log", domain=[lo, hi], nice=False)
    sides = port_sides(results) if several_ports(results) else []
    color_scale = (alt.Scale(domain=["NumPy", *sides], range=[NUMPY_COLOR, *PORT_COLORS[:len(sides)]]) if sides
                   else side_scale(any(r["side"] == jax_cpu_side() for r in rows)))
    base = alt.Chart(alt.Data(values=rows)).encode(
        x=alt.X("elements:Q", scale=x_scale, axis=x_axis),
        color=alt.Color("side:N", scale=color_scale, legend=alt.Legend(title=_("side"), orient="right")),
        detail="series:N",
        tooltip=[alt.Tooltip("side:N", title=_("side")), alt.Tooltip("precision:N", title=_("precision")),
                 alt.Tooltip("shape:N", title=_("shape")), alt.Tooltip("text:N", title=_("median"))],
    )
    y = alt.Y("median_s:Q", scale=y_scale, axis=_time_axis(_("median time per call (log scale)"), ticks))
    line = base.mark_line(strokeWidth=2.2).encode(
        y=y, strokeDash=alt.StrokeDash("precision:N", scale=precision_scale(results, PRECISION_DASH),
                                       legend=alt.Legend(title=_("precision"), orient="right")))
    points = base.mark_point(filled=True, size=60, opacity=1).encode(
        y=y, shape=alt.Shape("precision:N", scale=precision_scale(results, PRECISION_SHAPE), legend=None))
    bars = base.mark_rule(strokeWidth=1.5, opacity=0.6).encode(
        y=alt.Y("low_s:Q", scale=y_scale), y2="high_s:Q")
    return alt.layer(bars, line, points).properties(
        autosize=FIT_WIDTH, width="container", height=330,
        title=alt.TitleParams(_("Runtime vs size"), subtitle=(
            _("{case}: NumPy and JAX (blocked) and JAX on the CPU median per call; whiskers: where a rerun's "
              "median falls (95%)")
            if any(r.jax_cpu for r in results) else
            _("{case}: NumPy and JAX (blocked) median per call; whiskers: where a rerun's median falls (95%)")
        ).format(case=results[0].case),
            anchor="start"))


def speedup_rows(results: Sequence[Result]) -> list[dict[str, Any]]:
    """One row per point: its speedup, 95% range (the speedup itself where unknown) and whether it
    is trusted (analysis/trust.py), with the reason it was set aside."""
    rows = []
    ports = several_ports(results)
    for r in results:
        if math.isfinite(r.speedup) and r.speedup > 0:
            low, high = r.speedup_range
            known = math.isfinite(low) and math.isfinite(high) and low > 0
            why = summary.doubt_text(r)
            rows.append({"elements": math.prod(r.shape), "shape": format_shape(r.shape),
                         "precision": r.precision, "port": r.port or "", "line": line_name(r, ports),
                         "speedup": r.speedup, "text": summary.speedup_text(r),
                         "low": low if known else r.speedup, "high": high if known else r.speedup,
                         "trusted": why is None, "status": _("trusted") if why is None else
                         _("set aside: {why}").format(why=why)})
    return sorted(rows, key=lambda row: (row["precision"], row["port"], row["elements"]))


def sweep_speedup_chart(results: Sequence[Result], extent: Extent = None) -> alt.LayerChart:
    """Speedup (NumPy / JAX) against size with the 1x line and each precision's crossover."""
    rows = speedup_rows(results)
    ndim = len(results[0].shape)
    x_scale, x_axis = _elements_axis([r["elements"] for r in rows], extent)
    values = [r["speedup"] for r in rows] + [r["low"] for r in rows] + [r["high"] for r in rows] + [1.0]
    lo, hi, ticks = _log_domain(min(values), max(values), pad=2.0)
    y_scale = alt.Scale(type="log", domain=[lo, hi], nice=False)
    y_axis = alt.Axis(title=_("speedup, NumPy time / JAX time (log scale)"), values=ticks, format="~g",
                      labelExpr="datum.label + 'x'")
    x_lo = x_scale.domain[0]
    # A line per precision; with several ports a line per port (and precision), in its port's colour.
    lines = list(crossovers(results))
    ports = several_ports(results)
    line_colors = [PORT_COLORS[list(dict.fromkeys(r.port for r in results)).index(rs[0].port) % len(PORT_COLORS)]
                   for rs in sweep_lines(results).values()] if ports else []
    color = (alt.Color("line:N", scale=alt.Scale(domain=lines, range=line_colors),
                       legend=alt.Legend(title=_("port"), orient="right")) if ports else
             alt.Color("precision:N", scale=precision_scale(results, PRECISION_COLOR),
                       legend=alt.Legend(title=_("precision"), orient="right")))
    base = alt.Chart(alt.Data(values=rows)).encode(
        x=alt.X("elements:Q", scale=x_scale, axis=x_axis),
        y=alt.Y("speedup:Q", scale=y_scale, axis=y_axis),
        color=color, detail="line:N",
        tooltip=[*([alt.Tooltip("port:N", title=_("port"))] if ports else []),
                 alt.Tooltip("precision:N", title=_("precision")), alt.Tooltip("shape:N", title=_("shape")),
                 alt.Tooltip("text:N", title=_("speedup")), alt.Tooltip("status:N", title=_("headline"))],
    )
    # The line joins the trusted points only; a doubtful point is hollow, with its 95% range.
    trusted_only = alt.datum.trusted
    line = base.mark_line(strokeWidth=2.2).encode(
        strokeDash=alt.StrokeDash("precision:N", scale=precision_scale(results, PRECISION_DASH), legend=None)
    ).transform_filter(trusted_only)
    shape = alt.Shape("precision:N", scale=precision_scale(results, PRECISION_SHAPE), legend=None)
    points = base.mark_point(filled=True, size=60, opacity=1).encode(shape=shape).transform_filter(trusted_only)
    # Clamped into the domain: a rule's end below a log axis's minimum would leave the plot.
    doubtful_range = base.mark_rule(strokeWidth=1.5, opacity=0.55).encode(
        y=alt.Y("low_in:Q", scale=y_scale), y2="high_in:Q").transform_filter(~trusted_only).transform_calculate(
        low_in=f"max(datum.low, {lo})", high_in=f"min(datum.high, {hi})")
    hollow = base.mark_point(filled=False, size=70, opacity=1, strokeWidth=1.8).encode(
        shape=shape).transform_filter(~trusted_only)
    one = alt.Chart(alt.Data(values=[{"y": 1.0}])).mark_rule(color="#333", strokeDash=[4, 3]).encode(
        y=alt.Y("y:Q", scale=y_scale))
    zone_text = alt.Chart(alt.Data(values=[{"x": x_lo, "y": hi, "text": _("↑ JAX faster")}])).mark_text(
        align="left", baseline="top", dx=6, dy=4, fontSize=12, color="#555").encode(
        x=alt.X("x:Q", scale=x_scale), y=alt.Y("y:Q", scale=y_scale), text="text:N")
    zone_text_low = alt.Chart(alt.Data(values=[{"x": x_lo, "y": lo, "text": _("↓ NumPy faster")}])).mark_text(
        align="left", baseline="bottom", dx=6, dy=-4, fontSize=12, color="#555").encode(
        x=alt.X("x:Q", scale=x_scale), y=alt.Y("y:Q", scale=y_scale), text="text:N")
    layers: list[Any] = [one, zone_text, zone_text_low, line, doubtful_range, hollow, points]
    cross = [{"precision": p, "line": p, "elements": e,
              "text": _("{precision} crossover {where}").format(precision=p,
                                                               where=format_crossover(e, ndim, short=True)),
              "detail": format_crossover(e, ndim)}
             for p, e in crossovers(results).items() if e is not None]
    cross_color = (alt.Color("line:N", scale=alt.Scale(domain=lines, range=line_colors), legend=None) if ports
                   else alt.Color("precision:N", legend=None))
    if cross:
        layers.append(alt.Chart(alt.Data(values=cross)).mark_rule(strokeDash=[2, 2], strokeWidth=1.5).encode(
            x=alt.X("elements:Q", scale=x_scale),
            color=cross_color,
            tooltip=[alt.Tooltip("precision:N", title=_("precision")),
                     alt.Tooltip("detail:N", title=_("crossover"))]))
        x_lo, x_hi = x_scale.domain
        for align, dx in (("left", 5), ("right", -5)):
            # Labels right of their line, unless the line is in the right third of the plot.
            labels = [dict(c, ypix=34 + 16 * i) for i, c in enumerate(cross)
                      if (math.log(c["elements"] / x_lo) / math.log(x_hi / x_lo) > 0.62) == (align == "right")]
            if labels:
                layers.append(alt.Chart(alt.Data(values=labels)).mark_text(
                    align=align, dx=dx, fontSize=11, fontWeight="bold").encode(
                    x=alt.X("elements:Q", scale=x_scale), y=alt.Y("ypix:Q", scale=None, axis=None),
                    text="text:N", color=cross_color))
    return alt.layer(*layers).properties(
        autosize=FIT_WIDTH, width="container", height=330,
        title=alt.TitleParams(_("Speedup vs size"), subtitle=_("above the dashed 1x line JAX is faster per call; "
                                                               "dotted verticals: where the speedup crosses 1x; "
                                                               "hollow: set aside as doubtful, with its 95% range"),
                              anchor="start"))


def share_rows(results: Sequence[Result]) -> list[dict[str, Any]]:
    rows = []
    for r in results:
        parts = [(phase, r.phase(phase).median_s) for phase in COMPONENT_COLORS]
        total = sum(max(v, 0.0) for _phase, v in parts) or 1.0
        one_off_share = one_off_s(r) / total
        for order, (phase, seconds) in enumerate(parts):
            rows.append({"shape": format_shape(r.shape), "elements": math.prod(r.shape),
                         "precision": r.precision, "component": component_label(phase), "order": order,
                         "seconds": max(seconds, 0.0), "share": max(seconds, 0.0) / total,
                         "text": format_time(seconds), "one_off_share": one_off_share})
    return sorted(rows, key=lambda row: (row["precision"], row["elements"], row["order"]))


def sweep_share_chart(results: Sequence[Result]) -> alt.Chart | alt.FacetChart:
    """How much of a first JAX call is one-off cost (transfer + compile) at each size: normalised
    bars (linear 0–100%, so no log-scale bar pitfalls); one panel per precision."""
    rows = share_rows(results)
    shapes = [row["shape"] for row in sorted(rows, key=lambda row: row["elements"])]
    order = list(dict.fromkeys(shapes))
    components = [component_label(phase) for phase in COMPONENT_COLORS]
    chart = alt.Chart(alt.Data(values=rows)).mark_bar().encode(
        x=alt.X("shape:N", sort=order, title=_("input shape"), axis=alt.Axis(labelAngle=-40, labelOverlap=False)),
        y=alt.Y("share:Q", stack="normalize", title=_("share of one-off costs + one call"),
                axis=alt.Axis(format="%")),
        color=alt.Color("component:N", scale=alt.Scale(domain=components, range=list(COMPONENT_COLORS.values())),
                        sort=components, legend=alt.Legend(title=None, orient="bottom", columns=3)),
        order=alt.Order("order:Q", sort="ascending"),
        tooltip=[alt.Tooltip("shape:N", title=_("shape")), alt.Tooltip("precision:N", title=_("precision")),
                 alt.Tooltip("component:N", title=_("component")),
                 alt.Tooltip("text:N", title=_("time")), alt.Tooltip("share:Q", title=_("share"), format=".1%"),
                 alt.Tooltip("one_off_share:Q", title=_("one-off share"), format=".1%")],
    )
    precisions = sorted({r.precision for r in results})
    title = alt.TitleParams(_("One-off costs vs size"),
                            subtitle=_("transfer + compile against one blocked JAX call: "
                                       "the one-off share falls as the work grows"), anchor="start")
    if len(precisions) > 1:
        return chart.properties(width=300, height=260).facet(
            column=alt.Column("precision:N", title=None, header=alt.Header(labelFontSize=13)),
        ).properties(title=title)
    return chart.properties(autosize=FIT_WIDTH, width="container", height=300, title=title)


# --- export -------------------------------------------------------------------------------------------
def chart_png_bytes(chart: alt.TopLevelMixin, scale: float = 2.0, font: str | None = None) -> bytes:
    """PNG of a chart without a browser (vl-convert). Container widths become fixed. ``font``: a
    CSS font list for its text (the app passes its theme's: vl-convert's own default is a serif,
    and draws Chinese with Japanese glyph forms)."""
    import vl_convert

    spec = chart.to_dict()
    _fix_container_width(spec)
    if font:
        spec.setdefault("config", {}).setdefault("font", font)
    return vl_convert.vegalite_to_png(spec, scale=scale)


def _fix_container_width(spec: Any, width: int = 640) -> None:
    if isinstance(spec, dict):
        if spec.get("width") == "container":
            spec["width"] = width
        for value in spec.values():
            _fix_container_width(value, width)
    elif isinstance(spec, list):
        for value in spec:
            _fix_container_width(value, width)
