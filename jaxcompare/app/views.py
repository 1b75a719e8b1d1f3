"""What the Compare and Size sweep pages show, as plain data (no Streamlit here): the verdict as
the app words it, captions, tables, progress text and crossovers (the headline figures and
sentences every front end shows are in analysis/summary; the machine's words are in
environment_view)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..analysis import summary
from ..analysis.checks import FAIL, PASS, WARN, Check, overall
from ..analysis.sweep import crossover
from ..model.cases import format_shape
from ..model.formatting import format_crossover, format_factor, format_time
from ..model.phases import PHASE_LABELS, PHASES, phase_kind
from ..model.result import Result

# What the worker reports while measuring -> what the page says.
JOB_PHASE_TEXT = {
    "queued": "Waiting in the device queue",
    "starting worker": "Starting the worker",
    "inputs": "Building inputs",
    "numpy": "Timing NumPy",
    "transfer": "Timing the host→device transfer",
    "compile": "Timing cold compiles (trace, lower, XLA compile)",
    "first_call": "Timing the naive first call",
    "runtime": "Timing the JAX runtime (blocked)",
    "dispatch": "Timing dispatch only (unblocked)",
    "fetch": "Timing the device→host fetch",
    "recheck": "Timing more pairs of NumPy and JAX blocks (drift check)",
    "jax_cpu": "Timing JAX on the CPU (the third side)",
    "profile": "Tracing a few JAX calls with jax.profiler",
    "agreement": "Checking that the outputs agree",
    "peak": "Finding the peak rates (the CPU's is measured once per host)",
    "done": "Done",
    "failed": "Failed",
    "cancelled": "Stopped",
}


def job_phase_text(phase: str) -> str:
    return JOB_PHASE_TEXT.get(phase, phase.replace("_", " ").capitalize())


# --- the verdict and tables ---------------------------------------------------------------------
# The headline figures and their sentences are analysis/summary's, shared with the notebook.
SWEEP_WITH = "The Size sweep page"


def verdict_lines(result: Result) -> list[str]:
    """The verdict and its companion lines as the Compare page says them (Markdown): where NumPy
    wins, the verdict points at the Size sweep page."""
    return summary.verdict_lines(result, SWEEP_WITH)


def phase_table(result: Result) -> list[dict[str, Any]]:
    """Rows for the page's phase table: formatted times and the stability flag; with the third
    side, JAX on the CPU's median beside each JAX phase."""
    rows = []
    for name in PHASES:
        s = result.phase(name)
        cpu = {} if result.jax_cpu is None else {
            "JAX on CPU": "" if name == "numpy" else format_time(getattr(result.jax_cpu, name).median_s)}
        rows.append({
            "Phase": PHASE_LABELS[name],
            "Kind": phase_kind(name),
            "Median": format_time(s.median_s),
            **cpu,
            "Min": format_time(s.min_s),
            "IQR": format_time(s.iqr_s),
            "95% CI of median": "—" if not math.isfinite(s.rel_ci) else f"±{s.rel_ci:.1%}",
            "Samples": s.n,
            "Loops/sample": s.loops,
            "Stable": "yes" if s.stable else f"no: {s.unstable_reason}",
        })
    return rows


def result_caption(result: Result, changed: str = "") -> str:
    """What was measured, where and how (markdown); ``changed``: a note that the settings moved on."""
    info = result.case_info
    return (f"`{info.get('numpy_name', '')}` vs `{info.get('jax_name', '')}` · shape "
            f"{format_shape(result.shape)} · {result.precision} ({result.dtype}) · {result.backend} "
            f"device `{result.device}` ({result.device_kind}) · {result.spec.timing.preset_name} timing · "
            f"measured {result.created}" + changed)


def file_stem(result: Result) -> str:
    """'matmul_10x10_x32': the start of every file name a result is downloaded as."""
    return f"{result.case}_{format_shape(result.shape)}_{result.precision}"


STATUS_ICON = {PASS: "✓ pass", WARN: "⚠ warn", FAIL: "✗ fail"}


def checks_tab_label(checklist: Sequence[Check]) -> str:
    """'Checks: warn': the tab's title carries the checklist's overall status."""
    return f"Checks: {STATUS_ICON[overall(list(checklist))].split()[1]}"


def checklist_rows(checklist: Sequence[Check], link: Callable[[str | None], str | None]) -> list[dict[str, str]]:
    """One row per check; ``link`` gives the Pitfalls page section explaining it ("" without one:
    a blank cell, not a grey "None")."""
    return [{"Status": STATUS_ICON[c.status], "Check": c.title, "Why": c.reason, "Pitfall": link(c.pitfall) or ""}
            for c in checklist]


def agreement_text(result: Result) -> tuple[bool, str]:
    """(whether the outputs agree, the sentence that says so with the errors and tolerances)."""
    a = result.agreement
    text = (f"max abs error {a['max_abs_err']:.3g}, max rel error {a['max_rel_err']:.3g} "
            f"(tolerance rtol {a['rtol']:.0e}, atol {a['atol']:.0e}; compared "
            f"{'via invariants' if a.get('method') == 'invariants' else 'directly'})")
    ok = bool(a.get("ok"))
    return ok, f"JAX and NumPy {'agree' if ok else 'disagree'}: {text}."


def dtypes_text(result: Result) -> str:
    a = result.agreement
    return f"Output dtypes: NumPy `{a.get('numpy_dtype')}`, JAX `{a.get('jax_dtype')}`; inputs `{result.dtype}`."


def float64_rows(agreement: Mapping[str, Any]) -> list[dict[str, str]]:
    """Both sides' errors against a float64 NumPy reference; [] when there is none."""
    ref = agreement.get("vs_float64")
    if not ref:
        return []
    return [{"Side": side, "Max abs error vs float64": f"{ref[f'{key}_max_abs_err']:.3g}",
             "Max rel error vs float64": f"{ref[f'{key}_max_rel_err']:.3g}"}
            for side, key in (("NumPy", "numpy"), ("JAX", "jax"))]


def notes_markdown(result: Result) -> list[str]:
    """The Notes tab: the run's notes as a list, then what a naive first call would have shown."""
    notes = list(result.notes)
    if result.jax_cpu is None and result.backend == "cpu":
        notes.append("JAX on the CPU (the third side, for runs on a GPU or TPU): n/a here, JAX already ran "
                     "on the CPU.")
    notes = notes or ["No notes for this run."]
    return ["\n".join(f"- {note}" for note in notes),
            f"- A naive first call took **{format_time(result.first_call.median_s)}** — that is what `%time f(x)` "
            f"reports, mostly compile, not the {format_time(result.runtime.median_s)} runtime."]


def sweep_table(results: Sequence[Result]) -> list[dict[str, Any]]:
    rows = []
    for r in sorted(results, key=lambda r: (r.precision, math.prod(r.shape))):
        rows.append({
            "Shape": format_shape(r.shape),
            "Precision": f"{r.precision} ({r.dtype})",
            "NumPy": format_time(r.numpy_runtime.median_s),
            "JAX": format_time(r.runtime.median_s),
            **({} if not any(x.jax_cpu for x in results) else {
                "JAX on CPU": format_time(r.jax_cpu.runtime.median_s) if r.jax_cpu else "n/a"}),
            "Speedup": format_factor(r.speedup),
            "Compile": format_time(r.compile_total_s),
            "Transfer": format_time(r.transfer.median_s),
            "Break-even": summary.calls_text(r.break_even_calls),
            "Agree": "yes" if r.agreement.get("ok") else "NO",
            "Stable": "yes" if r.numpy_runtime.stable and r.runtime.stable else "no",
        })
    return rows


def crossovers(results: Sequence[Result]) -> dict[str, float | None]:
    """Crossover element count per precision (None where speedup never crosses 1x)."""
    by_precision: dict[str, list[Result]] = {}
    for r in results:
        by_precision.setdefault(r.precision, []).append(r)
    return {p: crossover(rs) for p, rs in sorted(by_precision.items())}


def crossover_figure(precision: str, elements: float | None, ndim: int, finished: bool) -> summary.Figure:
    """The Size sweep's crossover tile; 'not yet' while a running sweep has not crossed."""
    value = "not yet" if elements is None and not finished else format_crossover(elements, ndim, short=True)
    return summary.Figure(f"Crossover ({precision})", value,
                  "Where the speedup first crosses 1x, interpolated on log-log axes: "
                  + format_crossover(elements, ndim) + ".")


def best_speedup_figure(results: Sequence[Result]) -> summary.Figure:
    best = max(results, key=lambda r: r.speedup)
    return summary.Figure("Best speedup", format_factor(best.speedup),
                          f"At {format_shape(best.shape)} {best.precision}.")
