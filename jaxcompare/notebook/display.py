"""How a Result and a sweep show themselves in a notebook (HTML with inline SVG, no Altair: only
the app may import it) and in a terminal (plain text). Pure functions of the results."""

from __future__ import annotations

import html
import math
import re
from collections.abc import Sequence

from ..analysis import summary
from ..analysis.advice import advice
from ..analysis.checks import FAIL, NA, PASS, WARN, checklist, overall
from ..analysis.ports import PortsVerdict, port_row, ports_lines, race_lines
from ..analysis.text import (
    advice_lines,
    checklist_lines,
    note_lines,
    ordered_checks,
    phase_table_lines,
    profile_lines,
    roofline_lines,
    sweep_lines,
)
from ..i18n import translate_text
from ..model.cases import format_shape
from ..model.formatting import format_crossover, format_time, matmul_precision_line
from ..model.palette import JAX_COLOR, NUMPY_COLOR
from ..model.phases import ONE_OFF_PHASES, PER_CALL_PHASES, PHASE_LABELS, PHASES, REFERENCE_PHASES
from ..model.reruns import rerun_bounds
from ..model.result import Result
from .roofline_svg import roofline_svg

STATUS_COLOR = {PASS: "#2E7D32", WARN: "#B26A00", FAIL: "#C62828", NA: "#6B6B6B"}
STATUS_MARK = {PASS: "✓", WARN: "⚠", FAIL: "✗", NA: "–"}
PHASE_GROUPS = (
    ("One-off costs (paid once per function, shape and dtype)", ONE_OFF_PHASES),
    ("Per-call costs (paid on every call)", PER_CALL_PHASES),
    ("What a naive %time f(x) shows", REFERENCE_PHASES),
)
TINY_S = 1e-9


# --- words: analysis/summary's, rendered from its Markdown -------------------------------------
# Where the verdict points when NumPy wins: the notebook's way to run a size sweep.
SWEEP_WITH = "jaxcompare.sweep()"
_BOLD = re.compile(r"\*\*(.+?)\*\*")
_ITALIC = re.compile(r"\*(.+?)\*")


def markdown_html(text: str) -> str:
    """summary's Markdown (``**bold**``, ``*italic*``) as escaped HTML."""
    return _ITALIC.sub(r"<i>\1</i>", _BOLD.sub(r"<b>\1</b>", html.escape(text)))


def markdown_text(text: str) -> str:
    """summary's Markdown as plain text for a terminal: the marks dropped."""
    return _ITALIC.sub(r"\1", _BOLD.sub(r"\1", text))


def verdict_lines(result: Result) -> list[str]:
    """The verdict and its companion lines as the notebook says them (Markdown): where NumPy
    wins, the verdict points at jaxcompare.sweep()."""
    return summary.verdict_lines(result, SWEEP_WITH)


def sides(result: Result) -> str:
    """'np.linalg.svd(x) vs jnp.linalg.svd(x)'; one function serving both sides is named once."""
    numpy_name, jax_name = result.case_info.get("numpy_name", ""), result.case_info.get("jax_name", "")
    if numpy_name == jax_name:
        return f"{numpy_name} on NumPy arrays vs under jax.jit"
    return f"{numpy_name} vs {jax_name}"


def title(result: Result) -> str:
    matmul = matmul_precision_line(result)
    return (f"{result.case} · {format_shape(result.shape)} · {result.precision} ({result.dtype}) · "
            f"{result.jax.device} ({result.jax.device_kind}) · {result.spec.timing.preset_name} timing"
            + (f" · {matmul}" if matmul else ""))


def sweep_verdict(results: Sequence[Result], crossover_elements: float | None) -> str:
    """From trusted points only, with how many were set aside (summary.sweep_verdict)."""
    return summary.sweep_verdict(results, crossover_elements)


# --- plain text (a terminal, print(result)) ----------------------------------------------------
def result_text(result: Result) -> str:
    lines = [title(result), f"  {sides(result)}", "",
             *map(markdown_text, verdict_lines(result)), ""]
    for row in summary.figure_rows(result):
        lines.append("  " + "   ".join(f"{f.label}: {f.value}" + (f" ({f.detail})" if f.detail else "") for f in row))
    lines += roofline_lines(result)
    lines += advice_lines(result)
    lines += ["", *phase_table_lines(result), "", *checklist_lines(result), *note_lines(result)]
    if result.profile is not None:
        lines += ["", *profile_lines(result)]
    return "\n".join(lines)


def sweep_text(results: Sequence[Result], crossover_elements: float | None) -> str:
    return "\n".join([f"{results[0].case} · {results[0].precision} · {len(results)} sizes",
                      *sweep_lines(results, crossover_elements)])


# --- HTML (Jupyter, Colab, VS Code) ------------------------------------------------------------
def _e(text: object) -> str:
    return html.escape(str(text))


_BOX = "font-family:system-ui,-apple-system,'Segoe UI',sans-serif;font-size:13px;line-height:1.45;max-width:760px"
_MUTED = "opacity:0.7"


def result_html(result: Result) -> str:
    """The verdict (with the third side and the fraction of peak where there are), the figures
    (their help on hover), where the time goes, the roofline (what holds each side back), the
    checklist (warnings first), notes."""
    tiles = "".join(
        '<div style="display:flex;flex-wrap:wrap;gap:8px;margin:8px 0">' + "".join(
            f'<div title="{_e(f.help)}" style="border:1px solid rgba(128,128,128,.35);border-radius:6px;'
            f'padding:6px 10px;min-width:150px;cursor:help">'
            f'<div style="font-size:11px;{_MUTED}">{_e(f.label)}</div>'
            f'<div style="font-size:20px;font-weight:600">{_e(f.value)}</div>'
            + (f'<div style="font-size:11px;{_MUTED}">{_e(f.detail)}</div>' if f.detail else "") + "</div>"
            for f in row) + "</div>"
        for row in summary.figure_rows(result))
    said = "".join(f'<p style="margin:6px 0">{markdown_html(line)}</p>' for line in verdict_lines(result))
    checks = ordered_checks(result)
    rows = "".join(
        f'<tr><td style="color:{STATUS_COLOR[c.status]};font-weight:600;white-space:nowrap;padding:2px 8px 2px 0">'
        f'{STATUS_MARK[c.status]} {_e(c.status)}</td><td style="padding:2px 8px 2px 0;white-space:nowrap">'
        f'{_e(c.title)}</td><td style="padding:2px 0">{_e(c.reason)}</td></tr>' for c in checks)
    notes = "".join(f"<li>{_e(n)}</li>" for n in result.notes)
    helps = "".join(f"<li>{_e(translate_text(a.text))}</li>" for a in advice(result))
    profile = "\n".join(line[2:] for line in profile_lines(result))  # the text table, as the CLI prints it
    return (
        f'<div class="jaxcompare-result" style="{_BOX}">'
        f'<div style="font-weight:600;font-size:15px">{_e(sides(result))}</div>'
        f'<div style="{_MUTED}">{_e(title(result))}</div>'
        f'<div style="font-size:14px;margin:8px 0">{said}</div>'
        f'{tiles}'
        f'{phase_svg(result)}'
        f'{roofline_svg(result)}'
        + "".join(f'<div style="margin:4px 0">{_e(line.strip())}</div>' for line in roofline_lines(result))
        + (f'<div style="font-weight:600;margin-top:6px">What would help most</div><ul style="margin:2px 0">'
           f'{helps}</ul>' if helps else "")
        + f'<div style="font-weight:600;margin-top:8px">Credibility checklist: '
        f'<span style="color:{STATUS_COLOR[overall(checks)]}">{_e(overall(checks))}</span></div>'
        f'<table style="border-collapse:collapse;margin:4px 0;font-size:inherit">{rows}</table>'
        + (f'<div style="font-weight:600;margin-top:6px">Notes</div><ul style="margin:2px 0">{notes}</ul>'
           if notes else "")
        + (f'<div style="font-weight:600;margin-top:6px">Profile</div>'
           f'<pre style="margin:2px 0;font-size:12px">{_e(profile)}</pre>' if profile else "")
        + f'<div style="font-size:11px;{_MUTED};margin-top:6px">result.save() keeps it in History · '
        f'result.to_json() · id {_e(result.id[:12])}</div></div>')


def _log_ticks(lo: float, hi: float) -> list[float]:
    return [10.0**e for e in range(math.ceil(math.log10(lo) - 1e-9), math.floor(math.log10(hi) + 1e-9) + 1)]


def phase_svg(result: Result) -> str:
    """Where the time goes: every phase as a lollipop on one log time axis (a compile 1000x the
    runtime and a sub-microsecond dispatch both readable), where a rerun's median falls (95%) as a band."""
    label_w, value_w, plot_w, row_h, head_h, axis_h = 190, 70, 440, 20, 22, 30
    values = [max(result.phase(p).median_s, TINY_S) for p in PHASES]
    his = [max(v, rerun_bounds(result.phase(p))[1]) for p, v in zip(PHASES, values, strict=True)]
    lo = 10 ** math.floor(math.log10(min(values) / 2))
    hi = 10 ** math.ceil(math.log10(max(his) * 1.5))

    def x(seconds: float) -> float:
        t = (math.log10(min(max(seconds, lo), hi)) - math.log10(lo)) / (math.log10(hi) - math.log10(lo))
        return label_w + t * plot_w

    parts: list[str] = []
    y = 0.0
    for heading, phases in PHASE_GROUPS:
        y += head_h
        parts.append(f'<text x="0" y="{y - 6:.0f}" font-weight="600" font-size="11">{_e(heading.upper())}</text>')
        for name in phases:
            s = result.phase(name)
            color = NUMPY_COLOR if name == "numpy" else JAX_COLOR
            cy = y + row_h / 2
            median = max(s.median_s, TINY_S)
            low, high = (max(b, TINY_S) for b in rerun_bounds(s))
            tip = f"{PHASE_LABELS[name]}: median {format_time(s.median_s)}, n={s.n}" + (
                "" if s.stable else f" (unstable: {s.unstable_reason})")
            parts.append(
                f'<g><title>{_e(tip)}</title>'
                f'<text x="0" y="{cy + 4:.1f}" font-size="12">{_e(PHASE_LABELS[name])}</text>'
                f'<line x1="{label_w}" y1="{cy:.1f}" x2="{x(median):.1f}" y2="{cy:.1f}" stroke="{color}" '
                f'stroke-width="2" opacity="0.55"/>'
                f'<line x1="{x(low):.1f}" y1="{cy:.1f}" x2="{x(high):.1f}" y2="{cy:.1f}" stroke="{color}" '
                f'stroke-width="7" opacity="0.3"/>'
                f'<circle cx="{x(median):.1f}" cy="{cy:.1f}" r="5" fill="{color}"/>'
                f'<text x="{label_w + plot_w + 8}" y="{cy + 4:.1f}" font-size="12" font-weight="600">'
                f'{_e(format_time(s.median_s) if s.median_s > 0 else "≈ 0")}'
                f'{"" if s.stable else " ⚠"}</text></g>')
            y += row_h
    top = y + 6
    for tick in _log_ticks(lo, hi):
        tx = x(tick)
        parts.append(f'<line x1="{tx:.1f}" y1="0" x2="{tx:.1f}" y2="{top:.0f}" stroke="currentColor" '
                     f'stroke-opacity="0.12"/>'
                     f'<text x="{tx:.1f}" y="{top + 14:.0f}" font-size="10" text-anchor="middle" '
                     f'fill-opacity="0.7">{_e(format_time(tick))}</text>')
    parts.append(f'<text x="{label_w + plot_w / 2:.0f}" y="{top + axis_h - 2:.0f}" font-size="10" '
                 f'text-anchor="middle" fill-opacity="0.7">median time per call (log scale); band: 95% CI; '
                 f'blue: NumPy, orange: JAX</text>')
    width, height = label_w + plot_w + value_w, top + axis_h
    return (f'<div style="font-weight:600;margin-top:8px">Where the time goes</div>'
            f'<svg role="img" aria-label="Where the time goes" xmlns="http://www.w3.org/2000/svg" '
            f'width="{width}" height="{height:.0f}" viewBox="0 0 {width} {height:.0f}" '
            f'style="max-width:100%;height:auto;fill:currentColor;font-family:inherit">'
            + "".join(parts) + "</svg>")


def sweep_svg(results: Sequence[Result], crossover_elements: float | None) -> str:
    """The speedup against the element count, both log scales, the 1x line, the crossover."""
    left, plot_w, plot_h, top, bottom = 56, 520, 220, 12, 44
    points = [(math.prod(r.shape), r.speedup) for r in results if math.isfinite(r.speedup) and r.speedup > 0]
    if not points:
        return ""
    xs = [n for n, _ in points]
    ys = [s for _, s in points] + [1.0]
    x_lo, x_hi = 10 ** math.floor(math.log10(min(xs))), 10 ** math.ceil(math.log10(max(xs) * 1.0001))
    y_lo, y_hi = 10 ** math.floor(math.log10(min(ys) / 1.2)), 10 ** math.ceil(math.log10(max(ys) * 1.2))

    def px(n: float) -> float:
        return left + (math.log10(n) - math.log10(x_lo)) / (math.log10(x_hi) - math.log10(x_lo)) * plot_w

    def py(s: float) -> float:
        return top + plot_h - (math.log10(s) - math.log10(y_lo)) / (math.log10(y_hi) - math.log10(y_lo)) * plot_h

    parts = []
    for tick in _log_ticks(x_lo, x_hi):
        parts.append(f'<line x1="{px(tick):.1f}" y1="{top}" x2="{px(tick):.1f}" y2="{top + plot_h}" '
                     f'stroke="currentColor" stroke-opacity="0.12"/><text x="{px(tick):.1f}" y="{top + plot_h + 14}" '
                     f'font-size="10" text-anchor="middle" fill-opacity="0.7">{tick:,.0f}</text>')
    for tick in _log_ticks(y_lo, y_hi):
        parts.append(f'<line x1="{left}" y1="{py(tick):.1f}" x2="{left + plot_w}" y2="{py(tick):.1f}" '
                     f'stroke="currentColor" stroke-opacity="0.12"/><text x="{left - 6}" y="{py(tick) + 3:.1f}" '
                     f'font-size="10" text-anchor="end" fill-opacity="0.7">{tick:g}x</text>')
    parts.append(f'<line x1="{left}" y1="{py(1):.1f}" x2="{left + plot_w}" y2="{py(1):.1f}" stroke="currentColor" '
                 f'stroke-dasharray="4 3" stroke-opacity="0.6"/><text x="{left + plot_w - 4}" y="{py(1) - 4:.1f}" '
                 f'font-size="10" text-anchor="end" fill-opacity="0.7">1x: JAX faster above</text>')
    path = " ".join(f"{'M' if i == 0 else 'L'}{px(n):.1f},{py(s):.1f}" for i, (n, s) in enumerate(points))
    parts.append(f'<path d="{path}" fill="none" stroke="{JAX_COLOR}" stroke-width="2"/>')
    shown = [r for r in results if math.isfinite(r.speedup) and r.speedup > 0]
    for (n, s), r in zip(points, shown, strict=True):
        # A doubtful point is drawn hollow, with its 95% range, and never leads the verdict.
        why = summary.doubt_text(r)
        low, high = r.speedup_range
        if why is not None and math.isfinite(low) and math.isfinite(high) and low > 0:
            parts.append(f'<line x1="{px(n):.1f}" y1="{py(max(low, y_lo)):.1f}" x2="{px(n):.1f}" '
                         f'y2="{py(min(high, y_hi)):.1f}" stroke="{JAX_COLOR}" stroke-opacity="0.5"/>')
        fill = f'fill="{JAX_COLOR}"' if why is None else f'fill="white" stroke="{JAX_COLOR}" stroke-width="1.5"'
        tip = summary.speedup_text(r) + ("" if why is None else f" (set aside: {why})")
        parts.append(f'<circle cx="{px(n):.1f}" cy="{py(s):.1f}" r="4" {fill}>'
                     f'<title>{_e(format_shape(r.shape))}: {_e(tip)}</title></circle>')
    if crossover_elements is not None:
        cx = px(crossover_elements)
        parts.append(f'<line x1="{cx:.1f}" y1="{top}" x2="{cx:.1f}" y2="{top + plot_h}" stroke="{NUMPY_COLOR}" '
                     f'stroke-width="1.5"/><text x="{cx + 4:.1f}" y="{top + 12}" font-size="11" fill="{NUMPY_COLOR}">'
                     f'crossover {_e(format_crossover(crossover_elements, len(results[0].shape), short=True))}</text>')
    parts.append(f'<text x="{left + plot_w / 2}" y="{top + plot_h + 34}" font-size="11" text-anchor="middle" '
                 f'fill-opacity="0.7">elements per input (log scale); speedup = NumPy / JAX runtime</text>')
    width, height = left + plot_w + 36, top + plot_h + bottom  # room for the last tick's label
    return (f'<svg role="img" aria-label="Speedup by size" xmlns="http://www.w3.org/2000/svg" width="{width}" '
            f'height="{height}" viewBox="0 0 {width} {height}" style="max-width:100%;height:auto;'
            f'fill:currentColor;font-family:inherit">' + "".join(parts) + "</svg>")


def sweep_html(results: Sequence[Result], crossover_elements: float | None) -> str:
    first = results[0]
    head = "".join(f'<th style="text-align:right;padding:2px 8px">{h}</th>'
                   for h in ("shape", "NumPy", "JAX", "speedup (95% range)", "compile", "break-even", "checks",
                             "trusted"))
    body = "".join(
        "<tr>" + "".join(f'<td style="text-align:right;padding:2px 8px">{_e(v)}</td>' for v in (
            format_shape(r.shape), format_time(r.numpy_runtime.median_s), format_time(r.jax.runtime.median_s),
            summary.speedup_text(r), format_time(r.jax.compile_total_s), summary.break_even_tile(r)[0],
            overall(checklist(r)), "yes" if summary.doubt_text(r) is None else f"no: {summary.doubt_text(r)}"))
        + "</tr>" for r in results)
    return (f'<div class="jaxcompare-sweep" style="{_BOX}">'
            f'<div style="font-weight:600;font-size:15px">{_e(sides(first))}</div>'
            f'<div style="{_MUTED}">{_e(first.case)} · {_e(first.precision)} ({_e(first.dtype)}) · '
            f'{_e(first.jax.device)} · {len(results)} sizes</div>'
            f'<p style="font-size:14px;margin:8px 0">{_e(sweep_verdict(results, crossover_elements))}</p>'
            f'{sweep_svg(results, crossover_elements)}'
            f'<table style="border-collapse:collapse;margin:6px 0;font-size:inherit"><tr>{head}</tr>{body}</table>'
            f'<div style="font-size:11px;{_MUTED}">sweep[i] is the full result at each size · sweep.save() · '
            f'sweep.to_json()</div></div>')


# --- several ports ----------------------------------------------------------------------------------
def ports_text(verdict: PortsVerdict) -> str:
    """The race (the CLI's lines: a row per port, the verdict), then each measured port's result."""
    parts = ["\n".join(ports_lines(verdict))]
    for run in verdict.runs:
        if run.result is not None:
            parts.append(f"=== port {run.name} ===\n{result_text(run.result)}")
    return "\n\n".join(parts)


def ports_html(verdict: PortsVerdict) -> str:
    """The race's sentence on top, a line per port (its speedup over NumPy, or why it is out of the race),
    then each measured port's result, folded (the fastest open)."""
    rows = "".join(f"<li>{_e(port_row(run, verdict.left_out.get(run.name) if run.result is not None else None))}</li>"
                   for run in verdict.runs)
    head = (f'<div style="font-weight:600;margin:4px 0">{_e(verdict.case)} · {_e(format_shape(verdict.shape))} · '
            f"{_e(verdict.precision)}: {'<br>'.join(_e(line) for line in race_lines(verdict))}</div>"
            f"<ul style=\"margin:4px 0\">{rows}</ul>")
    folds = "".join(
        f'<details{" open" if run.name == verdict.fastest else ""} style="margin:6px 0">'
        f"<summary><b>{_e(run.name)}</b></summary>{result_html(run.result)}</details>"
        for run in verdict.runs if run.result is not None)
    return f'<div class="jaxcompare-ports">{head}{folds}</div>'
