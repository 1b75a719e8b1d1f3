"""What the Compare and Size sweep pages show, as plain data (no Streamlit here): headline
figures, the verdict, captions, tables, progress text and crossovers (the machine's words are
in environment_view)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..analysis.checks import FAIL, PASS, WARN, Check, overall
from ..analysis.sweep import crossover
from ..model.cases import format_shape
from ..model.formatting import (
    faster_or_slower,
    format_break_even,
    format_crossover,
    format_factor,
    format_speedup,
    format_time,
)
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
    "profile": "Tracing a few JAX calls with jax.profiler",
    "agreement": "Checking that the outputs agree",
    "done": "Done",
    "failed": "Failed",
    "cancelled": "Stopped",
}


def job_phase_text(phase: str) -> str:
    return JOB_PHASE_TEXT.get(phase, phase.replace("_", " ").capitalize())


# --- headline figures and tables --------------------------------------------------------------
@dataclass(frozen=True)
class Figure:
    label: str
    value: str
    help: str


def one_off_s(result: Result) -> float:
    return result.transfer.median_s + result.compile_total_s


def _speedup_range_text(result: Result) -> str:
    low, high = result.speedup_range
    if not (math.isfinite(low) and math.isfinite(high)):
        return ""
    preset = result.spec.timing.preset_name
    return (f" With 95% confidence between {format_factor(low)} and {format_factor(high)} (from the two "
            f"medians' confidence intervals; {preset} timing)."
            + ("" if preset == "thorough" else " Thorough timing narrows it."))


def headline(result: Result) -> list[Figure]:
    """The six numbers the Compare page leads with."""
    s = result.speedup
    be = result.break_even_calls
    return [
        Figure("NumPy runtime", format_time(result.numpy_runtime.median_s),
               "Median time per call of the NumPy/SciPy function on host arrays."),
        Figure("JAX runtime", format_time(result.runtime.median_s),
               "Median time per call of the jitted JAX function, inputs already on the device, "
               "each call blocked with block_until_ready()."),
        Figure("Speedup", format_factor(s), format_speedup(s) + ": NumPy runtime / JAX runtime; above 1x JAX is faster."
               + _speedup_range_text(result)),
        Figure("Compile", format_time(result.compile_total_s),
               "Cold trace + lower + XLA compile, paid once per function, shape and dtype."),
        Figure("Transfer", format_time(result.transfer.median_s),
               "Host→device copy of the inputs (device_put, blocked)."
               + (" Near zero here: the CPU backend aliased the NumPy buffer." if result.transfer_zero_copy
                  else "")),
        Figure("Break-even", calls_text(be),
               "Calls before JAX's one-off costs (transfer + compile) are paid back by its faster "
               "runtime: " + format_break_even(be) + "."),
    ]


def calls_text(calls: float | None) -> str:
    """Break-even calls as the page says it: 'never', '1 call', '1,234 calls'."""
    if calls is None:
        return "never"
    n = max(math.ceil(calls), 1)
    return f"{n:,} call{'s' if n != 1 else ''}"


def verdict(result: Result) -> str:
    """One sentence that says what the numbers mean."""
    s = result.speedup
    one_off = format_time(one_off_s(result))
    if not math.isfinite(s):
        return "JAX's runtime was too small to measure reliably."
    word, factor = faster_or_slower(s)
    if word == "faster":
        be = result.break_even_calls
        calls = "the first call" if be is not None and be <= 1 else calls_text(be)
        return (f"JAX is **{format_factor(factor)} faster** per call ({format_time(result.numpy_runtime.median_s)} → "
                f"{format_time(result.runtime.median_s)}); its one-off costs ({one_off}) are paid back "
                f"after **{calls}**." + _range_sentence(result))
    return (f"NumPy is **{format_factor(factor)} faster** per call at this size "
            f"({format_time(result.numpy_runtime.median_s)} vs {format_time(result.runtime.median_s)}), "
            f"so JAX never pays back its {one_off} of one-off costs." + _range_sentence(result)
            + " The Size sweep page shows whether larger inputs change that.")


def _range_sentence(result: Result) -> str:
    """How sure: the speedup's 95% range, whether it still allows 'no difference', and
    whether the speedup held from one pair of runtime blocks to the next."""
    low, high = result.speedup_range
    text = ""
    ranged = math.isfinite(low) and math.isfinite(high)
    if ranged:
        text = f" With 95% confidence the speedup is between {format_factor(low)} and {format_factor(high)}"
        text += ", so this run cannot tell the two apart." if low <= 1 <= high else "."
    pairs = result.speedup_pairs
    if result.speedup_steady is False:
        text += (f" {'But the' if ranged else 'The'} speedup moved from one pair of blocks to the next "
                 f"({format_factor(min(pairs))} to {format_factor(max(pairs))}): see *Speedup steady* below.")
    elif not (result.numpy_runtime.stable and result.runtime.stable):
        if result.speedup_steady:
            every = "both" if len(pairs) == 2 else f"all {len(pairs)}"
            text += (f" The machine's speed drifted during the run (see *Samples stable* below), but the "
                     f"speedup held in {every} pairs of blocks timed side by side "
                     f"({format_factor(min(pairs))} to {format_factor(max(pairs))}).")
        elif ranged:
            text += " That range assumes the machine held still, and it did not: see *Samples stable* below."
    return text


def phase_table(result: Result) -> list[dict[str, Any]]:
    """Rows for the page's phase table: formatted times and the stability flag."""
    rows = []
    for name in PHASES:
        s = result.phase(name)
        rows.append({
            "Phase": PHASE_LABELS[name],
            "Kind": phase_kind(name),
            "Median": format_time(s.median_s),
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
    notes = list(result.notes) or ["No notes for this run."]
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
            "Speedup": format_factor(r.speedup),
            "Compile": format_time(r.compile_total_s),
            "Transfer": format_time(r.transfer.median_s),
            "Break-even": calls_text(r.break_even_calls),
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


def crossover_figure(precision: str, elements: float | None, ndim: int, finished: bool) -> Figure:
    """The Size sweep's crossover tile; 'not yet' while a running sweep has not crossed."""
    value = "not yet" if elements is None and not finished else format_crossover(elements, ndim, short=True)
    return Figure(f"Crossover ({precision})", value,
                  "Where the speedup first crosses 1x, interpolated on log-log axes: "
                  + format_crossover(elements, ndim) + ".")


def best_speedup_figure(results: Sequence[Result]) -> Figure:
    best = max(results, key=lambda r: r.speedup)
    return Figure("Best speedup", format_factor(best.speedup), f"At {format_shape(best.shape)} {best.precision}.")
