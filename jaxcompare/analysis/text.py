"""The plain-text renderings that every front end prints alike (the CLI's tables, a notebook's
text repr): one wording, written once, in the current language (``i18n.using``).

Columns are padded by display width, not by characters: a Chinese character takes two columns
of a terminal, so ``str.ljust`` would shift every cell after a Chinese label.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any

from .. import i18n
from ..i18n import N_, _, translate_text
from ..model.cases import format_shape
from ..model.formatting import (
    PERFETTO_HINT,
    format_factor,
    format_flops,
    format_percent,
    format_rerun_range,
    format_share,
    format_speedup,
    format_time,
    gap_sentence,
    op_kind_text,
    with_detail,
)
from ..model.phases import JAX_PHASES, PHASE_LABELS, PHASES
from ..model.profile import Profile
from ..model.result import Result, memory_speedup
from ..model.roofline import AT_BOUND_NOISE, LIMIT_WORDS, ROOFLINE_SIDES, Roofline
from ..model.stats import Stats
from .advice import advice, advice_document
from .checks import FAIL, NA, PASS, WARN, Check, checklist, overall
from .summary import doubt_text, rerun_text, speedup_text, sweep_verdict
from .trust import direction, trusted

# A check's status as a reader sees it (the stored value stays 'pass', 'warn', ...).
STATUS_WORDS = {PASS: N_("pass"), WARN: N_("warn"), FAIL: N_("fail"), NA: N_("n/a")}
# Warnings first: what needs reading comes before what passed.
STATUS_ORDER = {FAIL: 0, WARN: 1, PASS: 2, NA: 3}


# --- display width ------------------------------------------------------------------------------
def display_width(text: str) -> int:
    """Columns ``text`` takes in a terminal: East Asian Wide and Fullwidth characters two,
    combining marks none, everything else one (Ambiguous ones too, as terminals outside a CJK
    locale draw them: ±, →, …)."""
    return sum(0 if unicodedata.combining(ch) else 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
               for ch in text)


def pad(text: str, width: int, align: str = "<") -> str:
    """``text`` padded with spaces to ``width`` display columns, left ('<'), right ('>') or
    centred ('^'); text already as wide is left as it is."""
    room = max(width - display_width(text), 0)
    if align == ">":
        return " " * room + text
    if align == "^":
        return " " * (room // 2) + text + " " * (room - room // 2)
    return text + " " * room


def clip(text: str, width: int) -> str:
    """``text`` cut to ``width`` display columns, an ellipsis marking the cut."""
    if display_width(text) <= width:
        return text
    out = ""
    for ch in text:
        if display_width(out + ch) > width - 1:
            break
        out += ch
    return out + "…"


def table_lines(header: Sequence[str], rows: Sequence[Sequence[str]], columns: Sequence[tuple[str, int]],
                indent: str = "  ") -> list[str]:
    """Rows under a header, each column padded to its widest cell (at least its given width,
    which holds the space before it); the last column is free text, left as it is."""
    widths = [max([w] + [display_width(r[i]) + 2 for r in [header, *rows]]) for i, (_a, w) in enumerate(columns)]

    def line(cells: Sequence[str]) -> str:
        body = "".join(pad(c, w, a) for c, (a, _w), w in zip(cells, columns, widths, strict=False))
        return (indent + body + "".join(f"  {c}" for c in cells[len(columns):])).rstrip()

    return [line(header), *map(line, rows)]


# --- a result ------------------------------------------------------------------------------------
PHASE_COLUMNS = (("<", 28), (">", 11), (">", 17), (">", 11), (">", 11), (">", 5), (">", 7))


def _stable(s: Stats) -> str:
    return _("yes") if s.stable else _("no: {reason}").format(reason=translate_text(s.unstable_reason))


def _phase_row(name: str, s: Stats) -> list[str]:
    return [_(PHASE_LABELS[name]), format_time(s.median_s), format_rerun_range(s), format_time(s.min_s),
            format_time(s.iqr_s), str(s.n), str(s.loops), _stable(s)]


def phase_header() -> list[str]:
    return [_("phase"), _("median"), _("rerun 95%"), _("min"), _("IQR"), _("n"), _("loops"), _("stable")]


def phase_table_lines(result: Result) -> list[str]:
    """Every phase with its median, where a rerun's median falls (95%), min, IQR, samples and loops, and
    whether its samples were stable; the third side's JAX phases beneath, when there is one."""
    rows = [_phase_row(name, result.phase(name)) for name in PHASES]
    side = result.jax_cpu
    if side is not None:
        cpu = [_phase_row(name, side.phase(name)) for name in JAX_PHASES]
        # One table, so the third side's columns line up with the first two sides'.
        lines = table_lines(phase_header(), rows + cpu, PHASE_COLUMNS)
        head = lines[:len(rows) + 1]
        return [*head, "", "  " + _("JAX on the CPU ({device}), the third side:").format(device=side.device),
                *lines[len(rows) + 1:]]
    return table_lines(phase_header(), rows, PHASE_COLUMNS)


def ordered_checks(result: Result) -> list[Check]:
    """The checklist, failures and warnings first (each group in the checklist's order)."""
    return sorted(checklist(result), key=lambda c: STATUS_ORDER[c.status])


def checklist_lines(result: Result) -> list[str]:
    """The checklist's verdict, whether the speedup may be quoted, then each check (failures
    and warnings first): status, title, reason, in columns."""
    checks = ordered_checks(result)
    why, verdict = doubt_text(result), overall(checks)
    if why is not None and verdict != FAIL:  # the checklist's PASS above it would otherwise read as a contradiction
        quoted = _("trusted: NO ({why}), though no check failed: do not quote this speedup").format(why=why)
    elif why is not None:
        quoted = _("trusted: NO ({why}): do not quote this speedup").format(why=why)
    elif verdict == FAIL:  # only a check that describes the workload failed (trust.MEASURED_NOT_DOUBTED)
        quoted = _("trusted: yes, the speedup may be quoted: the failed check describes this workload, "
                   "not a doubt about the measuring")
    else:
        quoted = _("trusted: yes, the speedup may be quoted")
    lines = ["  " + _("credibility checklist: {overall}").format(overall=_(STATUS_WORDS[verdict]).upper()),
             "  " + quoted]
    # A range too wide, or too few samples, is no check's failure (every row may pass above it): what would
    # settle it, on a line of its own.
    settle = rerun_text(result) if why is not None else ""
    lines += ["  " + settle] if settle else []
    status_w = max(display_width(_(w)) for w in STATUS_WORDS.values())
    title_w = max(display_width(c.title) for c in checks) + 2
    lines += [f"  [{pad(_(STATUS_WORDS[c.status]), status_w, '^')}] {pad(c.title, title_w)}{c.reason}".rstrip()
              for c in checks]
    return lines


def note_lines(result: Result) -> list[str]:
    return ["  " + _("note: {note}").format(note=translate_text(note)) for note in result.notes]


# --- the roofline ------------------------------------------------------------------------------
ROOFLINE_SIDE_NAMES = {"numpy": "NumPy", "jax": "JAX", "jax_cpu": N_("JAX on the CPU")}


def roofline_lines(result: Result) -> list[str]:
    """One line: what holds each side back (compute, memory or per-call overhead) and the share
    of its roofline bound it reached; "not recorded" for a result saved before the roofline."""
    roofline = result.roofline
    if roofline is None:
        return ["  " + _("roofline: not recorded")]
    clauses = [roofline_clause(roofline, side) for side in ROOFLINE_SIDES if roofline.side(side) is not None]
    return ["  " + _("roofline: {sides}").format(sides=_("; ").join(clauses))]


def roofline_clause(roofline: Roofline, side: str) -> str:
    """One side's limit and share of its bound. JAX on a GPU or TPU is read from its time on the
    device, the blocked call beside it; a side above its bound says so instead of a share over 100%."""
    name, point = _(ROOFLINE_SIDE_NAMES[side]), roofline.side(side)
    bound = roofline.bound_flops_per_s(side)
    limit = roofline.limit(side)
    if roofline.above_bound(side):
        values = {"side": name, "rate": format_flops(roofline.flops_per_s(side)), "bound": format_flops(bound)}
        if limit is not None:  # overhead, told from the empty calls or the profile: no roof needed
            return _("{side} {limit}, and above its bound ({rate} against {bound}): that ceiling is too low for "
                     "this call").format(limit=_(LIMIT_WORDS[limit]), **values)
        return _("{side} above its bound ({rate} against {bound}): that ceiling is too low for this call, so its "
                 "limit is not known").format(**values)
    if limit is None:
        return _("{side}: limit not known").format(side=name)
    if bound is None:  # overhead is told from the empty call alone; the roofs need the counts
        return _("{side} {limit}").format(side=name, limit=_(LIMIT_WORDS[limit]))
    values = {"side": name, "limit": _(LIMIT_WORDS[limit]), "share": format_percent(roofline.fraction(side)),
              "bound": format_flops(bound), "rate": format_flops(roofline.flops_per_s(side))}
    if roofline.at_bound(side):  # a little over: the ceiling's own noise, never a share over 100%
        main = _("{side} {limit}, at its bound ({rate} against {bound})").format(**values)
        return main if not point.device_s else with_detail(main, blocked_words(roofline, side))
    if not point.device_s:
        return _("{side} {limit}, {share} of its bound ({bound})").format(**values)
    if point.device_source == "profile":
        main = _("{side} {limit}, {share} of its bound ({bound}) in its time on the device").format(**values)
    else:
        main = _("{side} {limit}, at least {share} of its bound ({bound}) in calls back to back").format(**values)
    return with_detail(main, blocked_words(roofline, side))


def blocked_words(roofline: Roofline, side: str) -> str:
    """A side read from device time: its blocked call's limit and share of the same bound, labelled as
    holding the host's round trip."""
    share, limit = bound_share(roofline.blocked_fraction(side)), roofline.blocked_limit(side)
    if limit is None:
        return _("blocked, with the host's round trip: {share}").format(share=share)
    return _("blocked, with the host's round trip: {limit}, {share}").format(limit=_(LIMIT_WORDS[limit]), share=share)


def bound_share(share: float | None) -> str:
    """A share of a roofline bound as a reader sees it: "61%", never over 100% ("at its bound" within the
    ceilings' noise, "above its bound" beyond it: roofline.AT_BOUND_NOISE)."""
    if share is not None and share > 1.0 + AT_BOUND_NOISE:
        return _("above its bound")
    if share is not None and share > 1.0:
        return _("at its bound")
    return format_percent(share)


def roofline_point_label(roofline: Roofline, side: str, *, blocked: bool = False) -> str:
    """A side's dot on a roofline chart in words (the app's legend, the notebook's SVG): "JAX on the device:
    compute-bound, 98% of its bound"; ``blocked``: JAX's blocked call beside a dot read from device time."""
    name, point = _(ROOFLINE_SIDE_NAMES[side]), roofline.side(side)
    if blocked:
        limit = roofline.blocked_limit(side)
        return _("{side} blocked, round trip included: {limit}, {share} of its bound").format(
            side=name, limit=_(LIMIT_WORDS[limit]) if limit else _("limit not known"),
            share=bound_share(roofline.blocked_fraction(side)))
    limit = roofline.limit(side)
    if roofline.above_bound(side):
        if limit is not None:
            return _("{side}: {limit}, above its bound").format(side=name, limit=_(LIMIT_WORDS[limit]))
        return _("{side}: above its bound, limit not known").format(side=name)
    values = {"side": name, "limit": _(LIMIT_WORDS[limit]) if limit else _("limit not known"),
              "share": format_percent(roofline.fraction(side))}
    if roofline.at_bound(side):
        return _("{side}: {limit}, at its bound").format(**values)
    if point is not None and point.device_s and point.device_source == "profile":
        return _("{side} on the device: {limit}, {share} of its bound").format(**values)
    if point is not None and point.device_s:
        return _("{side} back to back: {limit}, at least {share} of its bound").format(**values)
    return _("{side}: {limit}, {share} of its bound").format(**values)


def advice_lines(result: Result) -> list[str]:
    """"What would help most": each rule that fires, its sentence in the reader's language; none
    when no rule fires."""
    found = advice(result)
    if not found:
        return []
    return ["  " + _("what would help most:"), *("    - " + translate_text(a.text) for a in found)]


# --- a sweep ----------------------------------------------------------------------------------
# Fixed widths: the CLI prints each size as it is measured, before the next one is known.
SWEEP_COLUMNS = ((">", 14), (">", 11), (">", 11), (">", 11))


def sweep_header_line() -> str:
    return "".join(pad(h, w, a) for h, (a, w) in zip((_("shape"), _("NumPy"), _("JAX"), _("compile")),
                                                     SWEEP_COLUMNS, strict=True)) + "  " + _("speedup")


def sweep_row_line(result: Result) -> str:
    """One size: its times and speedup, why it is set aside when it is, and JAX on the CPU
    where there is a third side."""
    cells = (format_shape(result.shape), format_time(result.numpy_runtime.median_s),
             format_time(result.jax.runtime.median_s), format_time(result.jax.compile_total_s))
    line = "".join(pad(c, w, a) for c, (a, w) in zip(cells, SWEEP_COLUMNS, strict=True))
    line += "  " + speedup_text(result)
    why = doubt_text(result)
    if why is not None:
        line += "  " + _("[set aside: {why}]").format(why=why)
    if result.jax_cpu is not None:
        line += "  " + _("| JAX on the CPU {time}, {speedup}").format(
            time=format_time(result.jax_cpu.runtime.median_s), speedup=format_speedup(result.cpu_speedup))
    return line


def sweep_lines(results: Sequence[Result], crossover_elements: float | None) -> list[str]:
    """The table of a sweep and its verdict (from trusted sizes only)."""
    return [sweep_header_line(), *map(sweep_row_line, results), sweep_verdict(results, crossover_elements)]


# --- a profile --------------------------------------------------------------------------------
def profile_lines(result: Result) -> list[str]:
    """Where the time goes inside the JAX call: the gap, the top ops, the trace file."""
    profile = result.profile
    if profile is None:
        return []
    if not profile.ok:
        return ["  " + _("profile: {text}").format(text=gap_sentence(profile))]
    return ["  " + _("profile ({calls} traced call(s), {where}):").format(
                calls=profile.calls, where=translate_text(profile.where)),
            f"    {gap_sentence(profile)}",
            "    " + _("(for comparison, the timed runtime without the tracer: {runtime})").format(
                runtime=format_time(result.jax.runtime.median_s)),
            "", *op_table_lines(profile), "  " + _("trace: {path}").format(path=profile.trace_file),
            f"    {_(PERFETTO_HINT)}"]


def op_table_lines(profile: Profile, *, name_width: int = 31, of_busy: bool = False) -> list[str]:
    """The top ops: name, kind, time (per call, or over the whole window), share of the wall
    time (or window); ``of_busy`` adds each op's share of the device's busy time."""
    whole = profile.whole_window
    header = [_("XLA op"), _("kind"), _("time") if whole else _("per call"), _("of window") if whole else _("of wall")]
    busy = profile.device_busy_s or 0.0
    if of_busy:
        header.append(_("of busy"))
    rows = [[clip(op.name, name_width), clip(op_kind_text(op.kind, op.holds), 39), format_time(op.time_s),
             format_share(op.share)] + ([format_share(op.time_s / busy if busy else None)] if of_busy else [])
            for op in profile.ops]
    if profile.other_ops_s > 0:
        rows.append([_("(all other ops)"), "", format_time(profile.other_ops_s),
                     format_share(profile.other_ops_s / profile.wall_s)]  # type: ignore[operator]
                    + ([format_share(profile.other_ops_s / busy if busy else None)] if of_busy else []))
    columns = [("<", name_width + 1), ("<", 14 if of_busy else 40), (">", 10), (">", 9)]
    columns += [(">", 9)] if of_busy else []
    return table_lines(header, rows, columns, indent="    ")


def trace_lines(profile: Profile) -> list[str]:
    """A trace file's summary (``jaxcompare trace``): what was summarised, the top device ops
    with their shares, each device's busy and copy time."""
    if not profile.ok:
        return [gap_sentence(profile)]
    where = translate_text(profile.where)
    if not profile.whole_window:
        where = _("{calls} traced call(s), {where}").format(calls=profile.calls, where=where)
    lines = [_("trace: {path}").format(path=profile.trace_file), f"  {where}", f"  {gap_sentence(profile)}", ""]
    lines += op_table_lines(profile, name_width=47, of_busy=True) if profile.ops else ["    " + _("(no ops)")]
    if profile.devices:
        per = _("busy (over the window)") if profile.whole_window else _("busy per call")
        rows = [[d.name, f"{format_time(d.busy_s)} · {format_share(_fraction(d.busy_s, profile.wall_s))}",
                 format_time(d.copy_s), str(d.copies)] for d in profile.devices]
        lines += ["", *table_lines([_("device"), per, _("copying"), _("copies")], rows,
                                   (("<", 18), (">", 24), (">", 10), (">", 8)), indent="    ")]
    return lines


def _fraction(part: float | None, whole: float | None) -> float | None:
    return None if part is None or not whole else part / whole


def back_to_back_line(result: Result) -> str | None:
    """JAX's per-call time back to back beside the blocked one, the speedup at that rate (labelled:
    the headline stays the blocked one), and the host's round trip (a blocked empty call)."""
    pipelined = result.jax.back_to_back
    if pipelined is None:
        return None
    trip = result.roofline.jax.empty_call_s if result.roofline is not None else None
    values = {"per_call": format_time(pipelined.median_s), "blocked": format_time(result.jax.runtime.median_s),
              "speedup": format_factor(result.speedup_back_to_back), "trip": format_time(trip)}
    if not trip:
        return _("back to back (one block after a loop of calls): {per_call} per call against {blocked} blocked; "
                 "speedup at that rate {speedup}").format(**values)
    return _("back to back (one block after a loop of calls): {per_call} per call against {blocked} blocked; "
             "speedup at that rate {speedup}; the host's round trip (a blocked empty call): {trip}").format(**values)


def numpy_speeds_line(result: Result) -> str | None:
    """NumPy as a plain process runs it (the headline's) beside the worker's, with freed memory kept
    (engine/worker/plain_numpy.py); None where only one was timed (no array large enough for it to matter)."""
    return numpy_speeds_text(result.numpy_runtime, result.numpy_kept)


def numpy_speeds_text(plain: Stats, kept: Stats | None, what: str = "NumPy") -> str | None:
    """'NumPy: 14.9 ms as a plain process runs it, 3 ms with freed memory kept (4.97x faster); ...' for
    one call's two figures; ``what``: the call ('NumPy at 1000x1000, float32'); None where only one was timed."""
    if kept is None:
        return None
    values = {"what": what, "plain": format_time(plain.median_s), "kept": format_time(kept.median_s)}
    factor = memory_speedup(plain, kept)
    if factor is None and plain.below(kept):  # kept slower: a busy machine's multithreaded BLAS, say
        return _("{what}: {plain} as a plain process runs it, {kept} with freed memory kept ({factor} slower); the "
                 "speedup is against the plain figure").format(factor=format_factor(kept.median_s / plain.median_s),
                                                               **values)
    if factor is None:
        return _("{what}: {plain} as a plain process runs it, {kept} with freed memory kept: the same within "
                 "their ranges").format(**values)
    return _("{what}: {plain} as a plain process runs it, {kept} with freed memory kept ({factor} faster); the "
             "speedup is against the plain figure").format(factor=format_factor(factor), **values)


def lab_numpy_speeds_lines(report: Mapping[str, Any]) -> list[str]:
    """The pitfalls lab's NumPy figures, each as `run` gives it (engine/worker/pitfalls.Lab.users_numpy): one line
    a call where a plain process timed it again, or where it was not and a note says why."""
    lines = []
    for entry in report.get("numpy_speeds") or ():
        what = _("NumPy at {shape}, {dtype}").format(shape=format_shape(entry["shape"]), dtype=entry["dtype"])
        kept = entry.get("kept_memory")
        line = numpy_speeds_text(Stats.from_dict(entry["runtime"]), kept and Stats.from_dict(kept), what)
        if line is not None:
            lines.append(line)
        elif entry.get("note"):
            lines.append(f"{what}: {translate_text(entry['note'])}")
    return lines


def first_call_line(result: Result) -> str | None:
    """Where the first call was timed: fresh processes (what %time shows), with the worker's
    recompile beside it, or the worker alone; None for results saved before it was recorded."""
    where = result.jax.protocol.get("first_call")
    if not isinstance(where, dict):
        return None
    recompile = result.jax.first_call_recompile
    if where.get("process") == "fresh" and recompile is not None:
        return _("first call: {fresh} in a fresh process, as %time shows it (processes: {processes}, compilation-cache "
                 "hits: {hits}); {recompile} in this worker after jax.clear_caches(), a recompile").format(
            fresh=format_time(result.jax.first_call.median_s), processes=where.get("processes"),
            hits=where.get("cache_hits", 0), recompile=format_time(recompile.median_s))
    return _("first call: timed in this worker after jax.clear_caches(), a recompile; a fresh process pays more "
             "(careful and thorough timing measure it there)")


def result_document(result: Result) -> dict[str, Any]:
    """One result's JSON document, as ``run --json`` writes it and a notebook's ``to_json()``: the Result's
    fields, its checklist (in English, whatever the reader's language), whether it may lead (``trusted``), the
    side faster for sure (``direction``) and the advice (docs/json.md)."""
    with i18n.using(i18n.SOURCE_LANGUAGE):
        checks = [c.to_dict() for c in checklist(result)]
    return result.to_dict() | {"checklist": checks, "trusted": trusted(result), "direction": direction(result).side,
                               "advice": advice_document(result)}
