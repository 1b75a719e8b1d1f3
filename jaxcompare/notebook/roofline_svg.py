"""A result's roofline as inline SVG for the notebook (which may not import Altair): the roofs and
ridge points placed by analysis/roofline_plot, as the app's chart places them, and a dot per side."""

from __future__ import annotations

import html
import math

from ..analysis.roofline_plot import decades, intensity_domain, roofs
from ..analysis.text import ROOFLINE_SIDE_NAMES
from ..model.formatting import format_bandwidth, format_flops, format_percent
from ..model.palette import JAX_COLOR, JAX_CPU_COLOR, NUMPY_COLOR
from ..model.result import Result
from ..model.roofline import LIMIT_WORDS, ROOFLINE_SIDES

ROOF_COLOR = "#6B6B6B"
SIDE_COLORS = {"numpy": NUMPY_COLOR, "jax": JAX_COLOR, "jax_cpu": JAX_CPU_COLOR}


def _e(text: object) -> str:
    return html.escape(str(text))


def roofline_svg(result: Result) -> str:
    """Log-log, intensity across and attained FLOP/s up; "" when there is nothing to place (no
    roofline recorded, or its counts not known: the roofline line says which)."""
    roofline = result.roofline
    intensity = None if roofline is None else roofline.intensity
    if roofline is None or intensity is None:
        return ""
    points = [(name, rate) for name in ROOFLINE_SIDES
              if roofline.side(name) is not None and (rate := roofline.flops_per_s(name)) and rate > 0]
    roof_list = roofs(roofline)
    x_lo, x_hi, x_ticks = intensity_domain([intensity], roof_list)
    corners = [roof.corners(x_lo, x_hi) for roof in roof_list]
    ys = [rate for _n, rate in points] + [y for line in corners for _x, y in line]
    y_lo, y_hi, y_ticks = decades(min(ys), max(ys))
    left, plot_w, plot_h, top, bottom = 78, 500, 240, 14, 40

    def px(value: float) -> float:
        return left + math.log10(value / x_lo) / math.log10(x_hi / x_lo) * plot_w

    def py(value: float) -> float:
        return top + plot_h - math.log10(value / y_lo) / math.log10(y_hi / y_lo) * plot_h

    parts = []
    for tick in x_ticks:
        parts.append(f'<line x1="{px(tick):.1f}" y1="{top}" x2="{px(tick):.1f}" y2="{top + plot_h}" '
                     f'stroke="currentColor" stroke-opacity="0.12"/><text x="{px(tick):.1f}" '
                     f'y="{top + plot_h + 14}" font-size="10" text-anchor="middle" fill-opacity="0.7">{tick:g}</text>')
    for tick in y_ticks:
        parts.append(f'<line x1="{left}" y1="{py(tick):.1f}" x2="{left + plot_w}" y2="{py(tick):.1f}" '
                     f'stroke="currentColor" stroke-opacity="0.12"/><text x="{left - 6}" y="{py(tick) + 3:.1f}" '
                     f'font-size="10" text-anchor="end" fill-opacity="0.7">{_e(format_flops(tick))}</text>')
    for roof, line in zip(roof_list, corners, strict=True):
        name = ", ".join(ROOFLINE_SIDE_NAMES[side] for side in roof.sides)
        tip = f"{name}: {format_flops(roof.peak)} · {format_bandwidth(roof.bandwidth)}"
        path = " ".join(f"{'M' if i == 0 else 'L'}{px(x):.1f},{py(y):.1f}" for i, (x, y) in enumerate(line))
        parts.append(f'<path d="{path}" fill="none" stroke="{ROOF_COLOR}" stroke-width="2"><title>{_e(tip)}</title>'
                     f'</path><text x="{left + plot_w - 4}" y="{py(line[-1][1]) - 5:.1f}" font-size="10" '
                     f'text-anchor="end" fill="{ROOF_COLOR}">{_e(tip)}</text>')
        if roof.ridge is not None:
            cx, cy = px(roof.ridge), py(roof.peak)
            parts.append(f'<path d="M{cx:.1f},{cy - 5:.1f} L{cx + 5:.1f},{cy:.1f} L{cx:.1f},{cy + 5:.1f} '
                         f'L{cx - 5:.1f},{cy:.1f} Z" fill="{ROOF_COLOR}"><title>ridge point: '
                         f'{roof.ridge:.3g} FLOP/byte</title></path>')
    legend = []
    for name, rate in points:
        limit = roofline.limit(name)
        words = (f"{ROOFLINE_SIDE_NAMES[name]}: {LIMIT_WORDS[limit] if limit else 'limit not known'}, "
                 f"{format_percent(roofline.fraction(name))} of its bound")
        parts.append(f'<circle cx="{px(intensity):.1f}" cy="{py(rate):.1f}" r="5" fill="{SIDE_COLORS[name]}">'
                     f'<title>{_e(words)} ({_e(format_flops(rate))})</title></circle>')
        legend.append(f'<span style="color:{SIDE_COLORS[name]}">●</span> {_e(words)}')
    parts.append(f'<text x="{left + plot_w / 2}" y="{top + plot_h + 32}" font-size="11" text-anchor="middle" '
                 f'fill-opacity="0.7">arithmetic intensity (FLOP per byte, log scale); up: attained FLOP/s</text>')
    width, height = left + plot_w + 12, top + plot_h + bottom
    return (f'<div style="font-weight:600;margin-top:8px">Roofline: what holds each side back</div>'
            f'<div style="font-size:12px">{" · ".join(legend)}</div>'
            f'<svg role="img" aria-label="Roofline" xmlns="http://www.w3.org/2000/svg" width="{width}" '
            f'height="{height}" viewBox="0 0 {width} {height}" style="max-width:100%;height:auto;'
            f'fill:currentColor;font-family:inherit">' + "".join(parts) + "</svg>")
