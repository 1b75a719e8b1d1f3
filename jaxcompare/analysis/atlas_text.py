"""The atlas in words: a cell's label and detail, the CLI's progress line, the Markdown table, a plain
self-contained HTML page (for front ends without Altair: the CLI), the environments and ``--diff``'s lines.

Every front end words a cell here, so a cell set aside reads "set aside: <why>" with its figure marked
doubtful everywhere, a cell the device cannot run reads its one plain line, and a planned cell the atlas
does not hold reads "not measured", with the atlas said to be partial above it.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from typing import Any

from ..i18n import _, language, sentences, translate_text
from ..model.cases import format_shape
from ..model.formatting import format_factor
from ..model.palette import DOUBT_GREY, JAX_COLOR, NUMPY_COLOR
from ..model.peaks import lookup
from .atlas import (
    A_ONLY,
    B_FASTER,
    B_ONLY,
    B_SLOWER,
    DOUBTFUL,
    MISSING,
    NO_RANGE,
    NOT_MEASURED,
    OVERLAP,
    SIZE_LABELS,
    SIZES,
    TRUSTED,
    UNMEASURABLE,
    Atlas,
    CellDiff,
    CellKey,
    CellView,
    crossovers,
    grid,
    partial,
    views,
)
from .trust import JAX_FASTER, NUMPY_FASTER, WHY

# The colour scale's ends: a speedup of LIMIT (or 1/LIMIT) or beyond takes the full colour.
COLOUR_LIMIT = 30.0
NEUTRAL = "#f5f5f5"
PRECISION_LABELS = {"x32": "float32", "x64": "float64"}


def atlas_title() -> str:
    """The exports' title (outside f-strings: the catalog's extractor does not look inside them)."""
    return _("Speedup atlas")


def why_text(why: str | None) -> str:
    return _(WHY[why]) if why in WHY else _("the speedup's range is too wide")


def cell_label(v: CellView) -> str:
    """What a heatmap cell prints: '2.31x', '2.31x?' where set aside, 'not measured' for a planned cell the
    atlas lacks, 'cannot run' or 'over 120 s' (its deadline) for one the device did not finish, '—' where
    there is no figure."""
    if v.status == UNMEASURABLE:
        return _("over {timeout} s").format(timeout=f"{v.deadline_s:g}") if v.deadline_s else _("cannot run")
    if v.status == TRUSTED:
        return format_factor(v.speedup)
    if v.status == DOUBTFUL:
        return format_factor(v.speedup) + "?"
    if v.status == NOT_MEASURED:
        return _("not measured")
    return "—"


def range_text(v: CellView) -> str:
    if v.low is None or v.high is None:
        return _("no range")
    return f"{v.low:.3g}-{v.high:.3g}x"


def cell_detail(v: CellView) -> str:
    """The cell in a sentence: its speedup and range; a doubtful one leads with why it was set aside."""
    if v.status == UNMEASURABLE and v.deadline_s:  # it runs here, only slower than the run allowed: its line says so
        return translate_text(v.reason)
    if v.status == UNMEASURABLE:
        return _("cannot run here: {reason}").format(reason=translate_text(v.reason))
    if v.status == MISSING:
        return _("not measured back to back (saved before calls back to back were timed)")
    if v.status == NOT_MEASURED:
        return _("not measured: planned, but not in this atlas (its run stopped first, or the cell failed)")
    figure = (_("{speedup} (rerun range {range})").format(speedup=format_factor(v.speedup), range=range_text(v))
              if v.low is not None else format_factor(v.speedup))  # no range: "too few samples" says why
    if v.status == DOUBTFUL:
        return _("set aside: {why}; measured {figure}").format(why=why_text(v.why), figure=figure)
    return figure


def device_label(atlas: Atlas, device: str) -> str:
    """'TPU v5e' for a TPU (its published name: JAX says 'TPU v5 lite'), the device kind for another
    accelerator, 'CPU (13 cores)' for JAX on a host's CPU: what the facet is titled."""
    env = atlas.environments.get(device) or {}
    kind = str(env.get("device_kind") or device.upper())
    if device == "cpu":
        cores = env.get("host_cores")
        return _("CPU ({cores} cores)").format(cores=cores) if cores else "CPU"
    found = lookup(kind) if device == "tpu" else None
    return found.name if found is not None else kind


def facet_label(atlas: Atlas, device: str, precision: str) -> str:
    return f"{device_label(atlas, device)} · {PRECISION_LABELS.get(precision, precision)}"


def recorded_line(atlas: Atlas) -> str:
    """'recorded on TPU v5e, JAX 0.10.2, 2026-12-05': where and when, per device."""
    parts = []
    for device in atlas.devices():
        env = atlas.environments.get(device) or {}
        parts.append(_("recorded on {device}, JAX {version}, {date}").format(
            device=device_label(atlas, device), version=env.get("jax_version") or "?",
            date=env.get("date") or atlas.created[:10]))
    return "; ".join(parts)


def environment_rows(atlas: Atlas) -> list[dict[str, str]]:
    """Each device's environment, a row each (the export's and the page's table)."""
    rows = []
    for device in atlas.devices():
        env = atlas.environments.get(device) or {}
        cpu = str(env.get("cpu_model") or "")
        cpu = _("unknown") if cpu == "unknown" else cpu  # what a gVisor host's /proc/cpuinfo names its model
        rows.append({_("Device"): device_label(atlas, device), _("Device kind"): str(env.get("device_kind") or ""),
                     _("JAX"): str(env.get("jax_version") or ""), _("Host cores"): str(env.get("host_cores") or ""),
                     _("CPU"): cpu, _("Date"): str(env.get("date") or "")})
    return rows


def counts_line(atlas: Atlas, measure: str = "blocked", cases: Sequence[str] | None = None) -> str:
    """'12 cells: 7 trusted, 4 set aside, 1 cannot run here.' (of ``cases`` only, when given), and how many
    did not finish within their deadline where some did not."""
    found = views(atlas, measure, cases)
    count = {status: sum(v.status == status for v in found) for status in (TRUSTED, DOUBTFUL, UNMEASURABLE, MISSING)}
    late = sum(v.status == UNMEASURABLE and bool(v.deadline_s) for v in found)
    line = _("{n} cells: {trusted} trusted, {doubtful} set aside, {unmeasurable} cannot run here.").format(
        n=len(found), trusted=count[TRUSTED], doubtful=count[DOUBTFUL], unmeasurable=count[UNMEASURABLE] - late)
    if late:
        line = sentences(line, _("{late} did not finish within their deadline.").format(late=late))
    return line


def partial_line(atlas: Atlas) -> str | None:
    """None for a whole atlas; else how much of its plan it holds and which cells it lacks, a device and
    precision at a time: 'Partial: it holds 54 of the 174 cells planned. Not measured: TPU v5e · float32,
    33 cells: svd (large), lu, ...; TPU v5e · float64, all 87 cells.'"""
    gaps = partial(atlas)
    if not gaps:
        return None
    said = []
    for gap in gaps:
        facet = facet_label(atlas, gap.device, gap.precision)
        if gap.whole:
            said.append(_("{facet}, all {n} cells").format(facet=facet, n=gap.missing))
            continue
        # The list separators are translated: Chinese lists with "、" and "；".
        comma = _(", ")
        cases = comma.join(case if not sizes else _("{case} ({sizes})").format(
            case=case, sizes=comma.join(_(SIZE_LABELS[size]) for size in sizes)) for case, sizes in gap.cases)
        said.append(_("{facet}, {n} cells: {cases}").format(facet=facet, n=gap.missing, cases=cases))
    return _("Partial: it holds {held} of the {planned} cells planned. Not measured: {gaps}.").format(
        held=len(atlas.cells), planned=len(atlas.plan()), gaps=_("; ").join(said))


def crossover_text(elements: float | None) -> str:
    return "" if elements is None else _("about {n} elements").format(n=f"{elements:.3g}")


def crossover_cells(atlas: Atlas) -> dict[tuple[str, str, str], str]:
    """(case, precision, device) -> the exports' crossover column: where the blocked speedup crosses 1x, or,
    where the sizes place none, whether one side is faster at every size it could say (an empty cell read as
    "not computed")."""
    cross = crossovers(atlas)
    sides: dict[tuple[str, str, str], list[str | None]] = {}
    for v in grid(atlas, "blocked"):
        if v.status in (TRUSTED, DOUBTFUL):
            sides.setdefault((v.key.case, v.key.precision, v.key.device), []).append(v.side)
    cells = {}
    for key, found in sides.items():
        if key in cross:
            cells[key] = crossover_text(cross[key])
        elif all(side == JAX_FASTER for side in found):
            cells[key] = _("none: JAX faster at every size")
        elif all(side == NUMPY_FASTER for side in found):
            cells[key] = _("none: NumPy faster at every size")
        else:
            cells[key] = _("none found")
    return cells


# --- the CLI ----------------------------------------------------------------------------------
def cell_where(key: CellKey, shape: tuple[int, ...]) -> str:
    """A cell as the progress lines name it: 'svd 100x100 x32 cpu'."""
    return f"{key.case} {format_shape(shape)} {key.precision} {key.device}"


def progress_line(done: int, total: int, v: CellView, left_s: float | None) -> str:
    """'[3/12] svd 100x100 x32 cpu: 1.82x (rerun range 1.5-2.1x) · about 40 s left'."""
    from ..model.formatting import seconds_text

    line = f"[{done}/{total}] {cell_where(v.key, v.shape)}: {cell_detail(v)}"
    if left_s is not None and done < total:
        line += " · " + _("about {duration} left").format(duration=seconds_text(left_s))
    return line


# --- Markdown -----------------------------------------------------------------------------------
def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(atlas: Atlas, measure: str = "blocked") -> str:
    """The atlas as Markdown: a table per device and precision (case by size, with the crossover),
    then each device's environment."""
    short = partial_line(atlas)
    lines = ["# " + atlas_title(), "", recorded_line(atlas), "", *([f"**{short}**", ""] if short else []),
             _("Speedup: NumPy's time over JAX's ({measure}); above 1x JAX is faster. A cell set aside by the "
               "checklist reads \"set aside\" with its reason; its figure is marked with ?.").format(
                 measure=measure_label(measure)), "", counts_line(atlas, measure), ""]
    found = grid(atlas, measure)
    cross = crossover_cells(atlas)
    for device in atlas.devices():
        for precision in atlas.precisions():
            facet = [v for v in found if v.key.device == device and v.key.precision == precision]
            if not facet:
                continue
            lines += [f"## {facet_label(atlas, device, precision)}", "",
                      "| " + " | ".join([_("case"), *(_(SIZE_LABELS[s]) for s in SIZES), _("crossover")]) + " |",
                      "|---|---|---|---|---|"]
            for case in dict.fromkeys(v.key.case for v in facet):
                by_size = {v.key.size: v for v in facet if v.key.case == case}
                cells = [(f"{format_shape(by_size[s].shape)}: {_table_text(by_size[s])}" if s in by_size else "")
                         for s in SIZES]
                cells.append(cross.get((case, precision, device), ""))
                lines.append("| " + " | ".join(_md(c) for c in [case, *cells]) + " |")
            lines.append("")
    lines += [f"## {_('Environment')}", ""]
    rows = environment_rows(atlas)
    if rows:
        lines += ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
        lines += ["| " + " | ".join(_md(v) for v in row.values()) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _table_text(v: CellView) -> str:
    """A table's cell: its sentence; a cell not measured only says so (the partial line above says why)."""
    return cell_label(v) if v.status == NOT_MEASURED else cell_detail(v)


def measure_label(measure: str) -> str:
    return _("calls back to back") if measure == "back_to_back" else _("blocked calls")


# --- a plain HTML page -------------------------------------------------------------------------
def _mix(colour: str, share: float) -> str:
    """``colour`` blended with NEUTRAL: share 0 is NEUTRAL, 1 the colour."""
    a = [int(NEUTRAL[i:i + 2], 16) for i in (1, 3, 5)]
    b = [int(colour[i:i + 2], 16) for i in (1, 3, 5)]
    return "#" + "".join(f"{round(x + (y - x) * share):02x}" for x, y in zip(a, b, strict=True))


def speedup_colour(speedup: float | None) -> str:
    """The diverging log scale every picture of the atlas uses: NumPy's blue below 1x, JAX's colour
    above, NEUTRAL at 1x, full at COLOUR_LIMIT."""
    if speedup is None or not math.isfinite(speedup) or speedup <= 0:
        return NEUTRAL
    share = min(abs(math.log(speedup)) / math.log(COLOUR_LIMIT), 1.0)
    return _mix(JAX_COLOR if speedup >= 1 else NUMPY_COLOR, share)


HATCH = "repeating-linear-gradient(45deg, {grey} 0 4px, {colour} 4px 9px)"


STYLE = ("body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin-bottom:1.5em}"
         "td,th{border:1px solid #ccc;padding:.3em .6em;text-align:center}th{background:#fafafa}"
         "td small{display:block;color:#333;font-size:.75em}"
         "td.not_measured{border:1px dotted #999;color:#777;font-size:.85em}p.partial{color:#8a4b00}")


def html_body(atlas: Atlas, measure: str = "blocked", chart_html: str = "") -> str:
    """The atlas as coloured HTML tables (a set-aside cell hatched grey, each cell's detail in its tooltip)
    and each device's environment; ``chart_html``: a chart drawn by a front end that has one, above the tables."""
    esc = html.escape
    found = grid(atlas, measure)
    cross = crossover_cells(atlas)
    intro = _("Speedup: NumPy time over JAX time ({measure}); above 1x JAX is faster.").format(
        measure=measure_label(measure))
    short = partial_line(atlas)
    parts = [f"<h1>{esc(atlas_title())}</h1>", f"<p>{esc(recorded_line(atlas))}</p>",
             f"<p class=\"partial\"><strong>{esc(short)}</strong></p>" if short else "",
             f"<p>{esc(intro)} {esc(counts_line(atlas, measure))}</p>", chart_html]
    for device in atlas.devices():
        for precision in atlas.precisions():
            facet = [v for v in found if v.key.device == device and v.key.precision == precision]
            if not facet:
                continue
            head = "".join(f"<th>{esc(h)}</th>"
                           for h in [_("case"), *(_(SIZE_LABELS[s]) for s in SIZES), _("crossover")])
            rows = []
            for case in dict.fromkeys(v.key.case for v in facet):
                by_size = {v.key.size: v for v in facet if v.key.case == case}
                tds = [f"<th>{esc(case)}</th>"]
                tds += ["<td></td>" if by_size.get(size) is None else _html_cell(by_size[size]) for size in SIZES]
                tds.append(f"<td>{esc(cross.get((case, precision, device), ''))}</td>")
                rows.append("<tr>" + "".join(tds) + "</tr>")
            parts.append(f"<h2>{esc(facet_label(atlas, device, precision))}</h2>"
                         f"<table><tr>{head}</tr>{''.join(rows)}</table>")
    env = environment_rows(atlas)
    if env:
        parts.append(f"<h2>{esc(_('Environment'))}</h2><table><tr>"
                     + "".join(f"<th>{esc(h)}</th>" for h in env[0]) + "</tr>"
                     + "".join("<tr>" + "".join(f"<td>{esc(v)}</td>" for v in row.values()) + "</tr>" for row in env)
                     + "</table>")
    return f"<style>{STYLE}</style>" + "".join(parts)


def html_page(atlas: Atlas, measure: str = "blocked") -> str:
    """One self-contained page: no script, stylesheet or font from elsewhere (opens with no network)."""
    return (f"<!DOCTYPE html><html lang=\"{html.escape(language())}\"><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(atlas_title())}</title></head><body>"
            + html_body(atlas, measure) + "</body></html>\n")


def _html_cell(v: CellView) -> str:
    esc = html.escape
    colour = speedup_colour(v.speedup)
    if v.status == DOUBTFUL:
        background = HATCH.format(grey=DOUBT_GREY, colour=colour)
    elif v.status == TRUSTED:
        background = colour
    else:
        background = "#ffffff"
    label = cell_label(v)
    return (f"<td class=\"{v.status}\" style=\"background:{background}\" title=\"{esc(cell_detail(v))}\">"
            f"{esc(label)}<small>{esc(format_shape(v.shape))}</small></td>")


# --- two atlases ---------------------------------------------------------------------------------
def diff_lines(rows: Sequence[CellDiff], a_name: str, b_name: str) -> list[str]:
    """A line per cell where the two differ beyond both ranges, then how many overlap or could not be compared."""
    lines = []
    for row in rows:
        if row.verdict not in (B_FASTER, B_SLOWER):
            continue
        assert row.a is not None and row.b is not None
        devices = row.a.key.device if row.a.key.device == row.b.key.device else f"{row.a.key.device}→{row.b.key.device}"
        where = f"{row.key.case} {format_shape(row.b.shape)} {row.key.precision} {devices}"
        # "b is faster" read as "that machine is faster": it is JAX's speedup over NumPy that is higher there.
        text = (_("{where}: {speedup_b} in {b} ({range_b}) against {speedup_a} in {a} ({range_a}): the speedup is "
                  "higher in {b}, beyond both ranges") if row.verdict == B_FASTER else
                _("{where}: {speedup_b} in {b} ({range_b}) against {speedup_a} in {a} ({range_a}): the speedup is "
                  "lower in {b}, beyond both ranges"))
        line = text.format(where=where, a=a_name, b=b_name, speedup_a=format_factor(row.a.speedup),
                           speedup_b=format_factor(row.b.speedup), range_a=range_text(row.a), range_b=range_text(row.b))
        if row.doubt:  # the side set aside named: diff() takes A's doubt first
            doubted = a_name if row.a.status == DOUBTFUL else b_name
            line = sentences(line, _("(set aside in {name}: {why})").format(name=doubted, why=why_text(row.doubt)))
        lines.append(line)
    count = {v: sum(r.verdict == v for r in rows) for v in (B_FASTER, B_SLOWER, OVERLAP, NO_RANGE, A_ONLY, B_ONLY)}
    lines.append(_("In {b}, the speedup is higher in {higher} cells and lower in {lower}, beyond both ranges; "
                   "{overlap} whose ranges overlap (no direction); {none} without a figure on one side; {a_only} "
                   "only in {a}, {b_only} only in {b}.")
                 .format(higher=count[B_FASTER], lower=count[B_SLOWER], overlap=count[OVERLAP], none=count[NO_RANGE],
                         a_only=count[A_ONLY], b_only=count[B_ONLY], a=a_name, b=b_name))
    return lines


def diff_document(rows: Sequence[CellDiff]) -> list[dict[str, Any]]:
    """``--diff --json``: each cell's two figures and ranges, and the verdict (English keys)."""
    def side(v: CellView | None) -> dict[str, Any] | None:
        if v is None:
            return None
        return {"status": v.status, "speedup": v.speedup, "range": [v.low, v.high], "set_aside": v.why,
                "result_id": v.result_id, "shape": list(v.shape), "reason": v.reason or None}

    return [{"cell": r.key.id, "verdict": r.verdict, "doubt": r.doubt, "a": side(r.a), "b": side(r.b)} for r in rows]
