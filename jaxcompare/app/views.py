"""What the Compare and Size sweep pages show, as plain data (no Streamlit here): the verdict as
the app words it, captions, tables, progress text and crossovers (the headline figures and
sentences every front end shows are in analysis/summary; the machine's words are in
environment_view)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..analysis import summary
from ..analysis.advice import advice, advice_document
from ..analysis.checks import FAIL, NA, PASS, WARN, Check, overall
from ..analysis.sweep import crossover, crossover_bracket
from ..analysis.trust import set_aside_text, trusted
from ..i18n import N_, _, sentences, translate_text
from ..model.cases import format_shape
from ..model.formatting import (
    code_text,
    format_crossover,
    format_factor,
    format_rerun_range,
    format_time,
    markdown_literal,
    matmul_precision_line,
    utc_minute,
)
from ..model.phases import MEASURING, PHASES, phase_kind, phase_label
from ..model.platforms import is_host
from ..model.result import Result
from ..model.stats import Stats

# What the worker reports while measuring -> what the page says (in the reader's language: job_phase_text).
JOB_PHASE_TEXT = {
    "queued": N_("Waiting in the device queue"),
    "starting worker": N_("Starting the worker"),
    "cluster_wait": N_("Waiting for a free accelerator on the cluster"),
    "retrying": N_("Its cluster node was lost before it began measuring: trying once more on another"),
    **{phase.name: phase.text for phase in MEASURING},  # the protocol's own (model/phases.py)
    "done": N_("Done"),
    "failed": N_("Failed"),
    "cancelled": N_("Stopped"),
}


def job_phase_text(phase: str) -> str:
    text = JOB_PHASE_TEXT.get(phase)
    if text is not None:
        return _(text)
    said = translate_text(phase)  # a runner's notice, filled from an N_() template
    return said[:1].upper() + said[1:] if said != phase else phase.replace("_", " ").capitalize()


# --- the verdict and tables ---------------------------------------------------------------------
# The headline figures and their sentences are analysis/summary's, shared with the notebook.
SWEEP_WITH = N_("The Size sweep page")


def verdict_lines(result: Result) -> list[str]:
    """The verdict and its companion lines as the Compare page says them (Markdown): where NumPy
    wins, the verdict points at the Size sweep page."""
    return summary.verdict_lines(result, _(SWEEP_WITH))


def phase_table(result: Result) -> list[dict[str, Any]]:
    """Rows for the page's phase table (ui.plain_table, so why a phase is unstable is never cut
    off): formatted times and the stability flag; with the third side, JAX on the CPU's median
    beside each JAX phase."""
    rows = []
    for name in PHASES:
        s = result.phase(name)
        cpu = {} if result.jax_cpu is None else {
            _("JAX on CPU"): "" if name == "numpy" else format_time(getattr(result.jax_cpu, name).median_s)}
        rows.append({
            _("Phase"): phase_label(name),  # the label and the kind in the reader's language (model/phases)
            _("Kind"): phase_kind(name),
            _("Median"): format_time(s.median_s),
            **cpu,
            _("Min"): format_time(s.min_s),
            _("IQR"): format_time(s.iqr_s),
            _("Rerun 95%"): format_rerun_range(s),
            _("Samples"): s.n,
            _("Loops/sample"): s.loops,
            _("Stable"): stable_text(s),
        })
    return rows


def stable_text(s: Stats) -> str:
    """A phase's 'stable' cell (tables, tooltips): 'yes', or 'no: <why>' in the reader's language."""
    if s.stable:
        return _("yes")
    return _("no: {reason}").format(reason=translate_text(s.unstable_reason or ""))


def result_caption(result: Result, changed: str = "") -> str:
    """What was measured, where and how (markdown); ``changed``: a note that the settings moved on."""
    info = result.case_info
    return _("`{numpy_name}` vs `{jax_name}` · shape {shape} · {precision} ({dtype}) · {backend} device "
             "`{device}` ({device_kind}) · {timing} · measured {created}").format(
        numpy_name=code_text(info.get("numpy_name", "")), jax_name=code_text(info.get("jax_name", "")),
        shape=format_shape(result.shape),
        precision=result.precision, dtype=result.dtype, backend=result.backend, device=result.jax.device,
        device_kind=result.jax.device_kind, timing=summary.timing_name(result.spec.timing.preset_name),
        created=f"{when} UTC" if (when := utc_minute(result.created)) else result.created) \
        + _matmul_precision_part(result) + changed


def _matmul_precision_part(result: Result) -> str:
    """' · matmul precision: highest (...)' where JAX ran at other than its default; '' at it."""
    line = matmul_precision_line(result)
    return " · " + markdown_literal(line) if line else ""


def file_stem(result: Result) -> str:
    """'matmul_10x10_x32': the start of every file name a result is downloaded as."""
    return f"{result.case}_{format_shape(result.shape)}_{result.precision}"


STATUS_ICON = {PASS: N_("✓ pass"), WARN: N_("⚠ warn"), FAIL: N_("✗ fail"), NA: N_("– n/a")}  # shown with _()
CHECKS_TAB = {PASS: N_("Checks: pass"), WARN: N_("Checks: warn"), FAIL: N_("Checks: fail")}


def checks_tab_label(checklist: Sequence[Check]) -> str:
    """'Checks: warn': the tab's title carries the checklist's overall status."""
    return _(CHECKS_TAB[overall(list(checklist))])


def checklist_rows(checklist: Sequence[Check], link: Callable[[str | None], str | None]) -> list[dict[str, str]]:
    """One row per check, for st.table (whose cells are Markdown and wrap, so no reason is cut
    off): its words as plain text, and ``link``'s Markdown link to the Pitfalls page section
    explaining it ("" without one). The columns are named in the reader's language."""
    return [{_("Status"): _(STATUS_ICON[c.status]), _("Check"): markdown_literal(c.title),
             _("Why"): markdown_literal(c.reason), _("Explained in"): link(c.pitfall) or ""}
            for c in checklist]


def agreement_text(result: Result) -> tuple[bool, str]:
    """(whether the outputs agree, the sentence that says so with the errors and tolerances)."""
    a = result.jax.agreement
    values = {"abs_err": a["max_abs_err"], "rel_err": a["max_rel_err"], "rtol": a["rtol"], "atol": a["atol"]}
    if a.get("method") == "invariants":
        text = _("max abs error {abs_err:.3g}, max rel error {rel_err:.3g} (tolerance rtol {rtol:.0e}, "
                 "atol {atol:.0e}; compared via invariants)").format(**values)
    else:
        text = _("max abs error {abs_err:.3g}, max rel error {rel_err:.3g} (tolerance rtol {rtol:.0e}, "
                 "atol {atol:.0e}; compared directly)").format(**values)
    ok = bool(a.get("ok"))
    sentence = (_("JAX and NumPy agree: {details}.") if ok else _("JAX and NumPy disagree: {details}.")).format(
        details=text)
    if a.get("tf32"):  # the worker found a matrix product the GPU may run in TF32 (engine/worker/agreement.py)
        sentence += " " + _("The tolerance is TF32's: the GPU computed the float32 matrix products with about 10 "
                            "mantissa bits (pitfall 6).")
    return ok, sentence


def dtypes_text(result: Result) -> str:
    a = result.jax.agreement
    return _("Output dtypes: NumPy `{numpy_dtype}`, JAX `{jax_dtype}`; inputs `{dtype}`.").format(
        numpy_dtype=a.get("numpy_dtype"), jax_dtype=a.get("jax_dtype"), dtype=result.dtype)


def float64_rows(agreement: Mapping[str, Any]) -> list[dict[str, str]]:
    """Both sides' errors against a float64 NumPy reference; [] when there is none."""
    ref = agreement.get("vs_float64")
    if not ref:
        return []
    return [{_("Side"): side, _("Max abs error vs float64"): f"{ref[f'{key}_max_abs_err']:.3g}",
             _("Max rel error vs float64"): f"{ref[f'{key}_max_rel_err']:.3g}"}
            for side, key in (("NumPy", "numpy"), ("JAX", "jax"))]


def notes_markdown(result: Result) -> list[str]:
    """The Notes tab: the run's notes as a list, then what a naive first call would have shown."""
    notes = [markdown_literal(translate_text(note)) for note in result.notes]  # an imported result's, as written
    if result.jax_cpu is None and is_host(result.backend):
        notes.append(_("JAX on the CPU (the third side, for runs on a GPU or TPU): n/a here, JAX already ran "
                       "on the CPU."))
    notes = notes or [_("No notes for this run.")]
    return ["\n".join(f"- {note}" for note in notes),
            "- " + _("A naive first call took **{first_call}** — that is what `%time f(x)` reports, mostly "
                     "compile, not the {runtime} runtime.").format(
                first_call=format_time(result.jax.first_call.median_s),
                runtime=format_time(result.jax.runtime.median_s))]


def several_ports(results: Sequence[Result]) -> bool:
    """Whether a sweep measured more than one JAX port: then each port is a line of its own."""
    return len({r.port for r in results}) > 1


def line_name(result: Result, ports: bool) -> str:
    """The sweep's line a result belongs to: its precision ('x32'), or its port and precision ('scan x32')."""
    return f"{result.port} {result.precision}" if ports else result.precision


def sweep_lines(results: Sequence[Result]) -> dict[str, list[Result]]:
    """The sweep's results by line (line_name), by precision then in the order the ports ran."""
    ports = several_ports(results)
    order = {port: i for i, port in enumerate(dict.fromkeys(r.port for r in results))}
    lines: dict[str, list[Result]] = {}
    for r in sorted(results, key=lambda r: (r.precision, order[r.port])):
        lines.setdefault(line_name(r, ports), []).append(r)
    return lines


def sweep_table(results: Sequence[Result]) -> list[dict[str, Any]]:
    """A row per size and precision (and port, with several: ui.plain_table, so why a size was set aside
    is never cut off)."""
    rows = []
    ports = several_ports(results)
    for r in [r for line in sweep_lines(results).values() for r in sorted(line, key=lambda r: math.prod(r.shape))]:
        rows.append({
            **({_("Port"): r.port or ""} if ports else {}),
            _("Shape"): format_shape(r.shape),
            _("Precision"): f"{r.precision} ({r.dtype})",
            "NumPy": format_time(r.numpy_runtime.median_s),
            "JAX": format_time(r.jax.runtime.median_s),
            **({} if not any(x.jax_cpu for x in results) else {
                _("JAX on CPU"): format_time(r.jax_cpu.runtime.median_s) if r.jax_cpu else _("n/a")}),
            _("Speedup"): summary.speedup_text(r),
            _("Compile"): format_time(r.jax.compile_total_s),
            _("Transfer"): format_time(r.jax.transfer.median_s),
            _("Break-even"): summary.break_even_tile(r)[0],  # "not known" for a doubtful size, as its tile
            _("Agree"): _("yes") if r.jax.agreement.get("ok") else _("NO"),
            _("Stable"): _("yes") if r.numpy_runtime.stable and r.jax.runtime.stable else _("no"),
            _("Trusted"): _("yes") if trusted(r) else _("no: {why}").format(why=summary.doubt_text(r)),
        })
    return rows


def crossovers(results: Sequence[Result]) -> dict[str, float | None]:
    """Crossover element count per line: precision, or port and precision (None where the speedup never
    crosses 1x)."""
    return {line: crossover(rs) for line, rs in sweep_lines(results).items()}


def crossover_figure(precision: str, elements: float | None, ndim: int, finished: bool,
                     any_trusted: bool = True, results: Sequence[Result] = ()) -> summary.Figure:
    """The Size sweep's crossover tile; 'not yet' while a running sweep has not crossed. Placed
    between firm sizes only (trusted, their ranges excluding 1x: sweep.firm); where none places it,
    bracketed by the firm sizes of one side (sweep.crossover_bracket: 'above 63x63'), else '—'."""
    label = _("Crossover ({precision})").format(precision=precision)
    bracket = crossover_bracket(results) if elements is None else None
    if bracket is not None:
        below, above = (None if shape is None else format_shape(shape) for shape in bracket)
        if below and above:
            value, where = _("{below}–{above}").format(below=below, above=above), _(
                "between {below}, where NumPy is faster, and {above}, where JAX is").format(below=below, above=above)
        elif below:
            value, where = _("above {shape}").format(shape=below), _(
                "above {shape}: NumPy is faster up to there").format(shape=below)
        else:
            value, where = _("below {shape}").format(shape=above), _(
                "below {shape}: JAX is faster from there").format(shape=above)
        return summary.Figure(label, value, sentences(_(
            "No pair of trusted sizes places the crossover; the trusted sizes whose whole 95% range lies on one "
            "side of 1x put it {where}.").format(where=where), _("The verdict below says which sizes and why.")))
    if elements is None and not finished:
        return summary.Figure(label, _("not yet"), _("The sweep has not crossed 1x at a trusted size so far."))
    if elements is None:
        # A crossover from sizes set aside, or from ranges that hold 1x, would state what their checks deny.
        why = (_("No trusted size's 95% range lies wholly on one side of 1x, so no crossover is placed.")
               if any_trusted else _("No size could be trusted, so no crossover is placed."))
        return summary.Figure(label, "—", sentences(why, _("The verdict below says which sizes and why.")))
    return summary.Figure(label, format_crossover(elements, ndim, short=True),
                          _("Where the speedup first crosses 1x between trusted sizes whose ranges exclude 1x, "
                            "interpolated on log-log axes: {crossover}.").format(
                              crossover=format_crossover(elements, ndim)))


def best_speedup_figure(results: Sequence[Result]) -> summary.Figure:
    """The highest trusted speedup, with its 95% range; doubtful sizes never lead (analysis/trust.py)."""
    best = summary.best_trusted(results)
    aside = set_aside_text(results)
    if best is None:
        return summary.Figure(_("Best trusted speedup"), "—", sentences(_("No size could be trusted."), aside or ""))
    return summary.Figure(_("Best trusted speedup"), format_factor(best.speedup), sentences(
        _("At {shape} {precision}, among the trusted sizes.").format(shape=format_shape(best.shape),
                                                                     precision=best.precision), aside or ""),
                          summary.range_detail(best))


def sweep_verdict(results: Sequence[Result]) -> str:
    """The sweep's verdict under its tiles, per line (precision, or port and precision), from trusted points
    only, with how many sizes were set aside and why (summary.sweep_verdict)."""
    lines = sweep_lines(results)
    if len(lines) == 1:
        return summary.sweep_verdict(results, crossover(results))
    return "\n\n".join(_("**{line}**: {verdict}").format(line=markdown_literal(line),
                                                         verdict=summary.sweep_verdict(rs, crossover(rs)))
                       for line, rs in lines.items())


# --- the roofline and what would help most ------------------------------------------------------
def roofline_missing_text(result: Result) -> str:
    """Why a result has no roofline chart: saved before the roofline was recorded, or its counts
    (FLOPs, bytes) are not known on this backend."""
    if result.roofline is None:
        return _("Roofline: not recorded (this result was saved by a version that did not measure it).")
    return _("Roofline: not known (XLA's cost analysis gave no FLOP or byte count for this call).")


def advice_markdown(result: Result) -> str | None:
    """'What would help most': each rule that fired, with its numbers, as a Markdown list in the
    reader's language; None when no rule fires."""
    found = advice(result)
    if not found:
        return None
    return "\n".join([_("**What would help most**"), "", *(f"- {translate_text(a.text)}" for a in found)])


def result_document(result: Result) -> dict[str, Any]:
    """The Result (JSON) download: the result's document and its advice (recorded English, as the CLI writes it)."""
    return result.to_dict() | {"advice": advice_document(result)}
