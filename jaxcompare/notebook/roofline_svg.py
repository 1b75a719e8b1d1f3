"""A result's roofline as inline SVG for the notebook (which may not import Altair): the roofs and
ridge points placed by analysis/roofline_plot, as the app's chart places them, and a dot per side."""

from __future__ import annotations

import html
import math

from ..analysis.roofline_plot import decades, intensity_domain, roofs
from ..analysis.text import ROOFLINE_SIDE_NAMES, roofline_point_label
from ..model.formatting import format_bandwidth, format_flops
from ..model.palette import JAX_COLOR, JAX_CPU_COLOR, NUMPY_COLOR
from ..model.result import Result
from ..model.roofline import ROOFLINE_SIDES

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
    points = [(name, False, rate) for name in ROOFLINE_SIDES
              if roofline.side(name) is not None and (rate := roofline.flops_per_s(name)) and rate > 0]
    # JAX read from its device time: its blocked call beside it, a ring (the host's round trip in it).
    blocked = roofline.blocked_flops_per_s("jax") if points else None
    points += [("jax", True, blocked)] if blocked and blocked > 0 else []
    roof_list = roofs(roofline)
    x_lo, x_hi, x_ticks = intensity_domain([roofline.side_intensity(name) or intensity for name, _b, _r in points]
                                           or [intensity], roof_list)
    corners = [roof.corners(x_lo, x_hi) for roof in roof_list]
    ys = [rate for _n, _b, rate in points] + [y for line in corners for _x, y in line]
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
    for name, hollow, rate in points:
        words = roofline_point_label(roofline, name, blocked=hollow)
        paint = (f'fill="none" stroke="{SIDE_COLORS[name]}" stroke-width="2"' if hollow
                 else f'fill="{SIDE_COLORS[name]}"')
        at = roofline.side_intensity(name) or intensity
        parts.append(f'<circle cx="{px(at):.1f}" cy="{py(rate):.1f}" r="5" {paint}>'
                     f'<title>{_e(words)} ({_e(format_flops(rate))})</title></circle>')
        legend.append(f'<span style="color:{SIDE_COLORS[name]}">{"○" if hollow else "●"}</span> {_e(words)}')
    parts.append(f'<text x="{left + plot_w / 2}" y="{top + plot_h + 32}" font-size="11" text-anchor="middle" '
                 f'fill-opacity="0.7">arithmetic intensity (FLOP per byte, log scale); up: attained FLOP/s</text>')
    width, height = left + plot_w + 12, top + plot_h + bottom
    return (f'<div style="font-weight:600;margin-top:8px">Roofline: what holds each side back</div>'
            f'<div style="font-size:12px">{" · ".join(legend)}</div>'
            f'<svg role="img" aria-label="Roofline" xmlns="http://www.w3.org/2000/svg" width="{width}" '
            f'height="{height}" viewBox="0 0 {width} {height}" style="max-width:100%;height:auto;'
            f'fill:currentColor;font-family:inherit">' + "".join(parts) + "</svg>")
