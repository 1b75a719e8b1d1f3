"""What the app's pages show, as plain data (no Streamlit here): headline figures, the verdict,
tables, progress text, crossovers per precision, and the device banner and warnings."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..analysis.sweep import crossover
from ..model.cases import format_shape
from ..model.formatting import (
    faster_or_slower,
    format_break_even,
    format_bytes,
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


# --- environment -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Banner:
    level: str  # "success" | "warning" | "info"
    text: str


def accelerators(env: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [d for d in (env.get("jax") or {}).get("devices", []) if d.get("platform") in ("gpu", "tpu")]


def cores_text(env: Mapping[str, Any]) -> str:
    cores = env.get("cpu_affinity") or env.get("cpu_count_logical")
    return f"{cores} core{'s' if cores != 1 else ''}" if cores else "unknown cores"


def device_banner(env: Mapping[str, Any] | None) -> Banner:
    """Which device the measurements run on, in one sentence."""
    if not env:
        return Banner("info", "Checking which device the measurements will run on…")
    accel = accelerators(env)
    if accel:
        first = accel[0]
        kinds = sorted({d.get("kind", d["platform"]) for d in accel})
        memory = format_bytes(first.get("memory_limit_bytes"))
        more = f" ({len(accel)} devices)" if len(accel) > 1 else ""
        mem = f", {memory} of memory" if memory != "—" else ""
        return Banner("success", f"Measuring on **{', '.join(kinds)}** ({first['platform'].upper()}"
                                 f"{mem}){more}.")
    return Banner("warning",
                  f"**No GPU or TPU found: falling back to JAX's CPU backend** on this machine "
                  f"({env.get('cpu_model', 'unknown CPU')}, {cores_text(env)}). Both sides run on the same "
                  f"CPU, so a speedup here is XLA's CPU code against NumPy's, not an accelerator.")


def device_problem(device: str, env: Mapping[str, Any] | None) -> str | None:
    """Why a run on ``device`` would fail here (None when it can run, or while unknown)."""
    if not env or device == "auto":
        return None
    platforms = {d.get("platform") for d in (env.get("jax") or {}).get("devices", [])}
    if device in platforms:
        return None
    present = ", ".join(sorted(p for p in platforms if p)) or "none"
    return f"No {device.upper()} is visible to JAX here (present: {present}); a run on it would fail."


def load_average() -> float | None:
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


def environment_warnings(workers: Mapping[str, Mapping[str, Any]], load: float | None = None) -> list[str]:
    """What makes numbers from this machine less trustworthy. ``workers``: precision -> env."""
    warnings: list[str] = []
    envs = [e for e in workers.values() if e]
    if not envs:
        return warnings
    env = envs[0]
    if not accelerators(env):
        warnings.append("CPU fallback: no GPU or TPU is visible to JAX, so every JAX number is for "
                        "the CPU backend.")
    cores = env.get("cpu_affinity") or env.get("cpu_count_logical") or 0
    if cores and cores <= 4:
        warnings.append(f"Shared cores: only {cores} core(s). NumPy's BLAS, XLA, the app server and "
                        f"anything else on the machine compete for them, so expect noise.")
    if load is not None and cores and load > 0.5 * cores:
        warnings.append(f"Busy machine: the 1-minute load average is {load:.2f} on {cores} core(s); "
                        f"other work will add noise to every timing.")
    logical, physical = env.get("cpu_count_logical"), env.get("cpu_count_physical")
    if logical and physical and logical > physical:
        warnings.append(f"Hyper-threading: {logical} logical CPUs on {physical} physical cores; "
                        f"two threads on one core slow each other down.")
    for precision, wenv in workers.items():
        jax_env = (wenv or {}).get("jax") or {}
        if not jax_env:
            continue
        want = precision == "x64"
        if bool(jax_env.get("x64_enabled")) != want:
            warnings.append(f"The {precision} worker reports jax_enable_x64={jax_env.get('x64_enabled')}: "
                            f"its dtypes do not match its precision mode.")
        if jax_env.get("compilation_cache"):
            warnings.append(f"The {precision} worker has the persistent compilation cache on: "
                            f"'compile' times may be disk reads.")
    for b in env.get("blas") or []:
        threads = b.get("num_threads")
        if threads and cores and threads > cores:
            warnings.append(f"{b.get('internal_api', 'BLAS')} uses {threads} threads on {cores} core(s): "
                            f"oversubscription makes NumPy slower and noisier.")
    env_vars = env.get("env_vars") or {}
    if "XLA_CLIENT_MEM_FRACTION" in env_vars and "XLA_PYTHON_CLIENT_MEM_FRACTION" in env_vars:
        warnings.append("Both XLA_CLIENT_MEM_FRACTION and its older alias XLA_PYTHON_CLIENT_MEM_FRACTION "
                        "are set; they conflict.")
    if env_vars.get("XLA_FLAGS"):
        warnings.append(f"Custom XLA_FLAGS are active: `{env_vars['XLA_FLAGS']}`.")
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        if var in env_vars:
            warnings.append(f"{var}={env_vars[var]} limits NumPy's threads (XLA is not limited by it).")
    available = env.get("memory_available_bytes")
    if available and available < 2 * 1024**3:
        warnings.append(f"Only {format_bytes(available)} of memory is free: large shapes may swap or fail.")
    return warnings


def crossovers(results: Sequence[Result]) -> dict[str, float | None]:
    """Crossover element count per precision (None where speedup never crosses 1x)."""
    by_precision: dict[str, list[Result]] = {}
    for r in results:
        by_precision.setdefault(r.precision, []).append(r)
    return {p: crossover(rs) for p, rs in sorted(by_precision.items())}
