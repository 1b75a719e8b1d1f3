"""The credibility checklist: can this Result's comparison be trusted, and if not, why?

Each item is pass / warn / fail with a one-line reason and the pitfall (see pitfalls.py)
that explains it. Computed from a Result alone, so the CLI and the app show the same.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ..model.formatting import format_factor, format_time, transfer_rate_text
from ..model.result import Result

PASS, WARN, FAIL = "pass", "warn", "fail"
MIN_SAMPLES = 5
# JAX's per-call overhead is tens of µs on CPU; below ~10x that, dispatch dominates.
DISPATCH_RATIO_WARN = 10.0
DISPATCH_RATIO_FAIL = 2.0


@dataclass(frozen=True)
class Check:
    id: str
    title: str
    status: str
    reason: str
    pitfall: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _precision_bits(dtype: str | None) -> int | None:
    """float32 and complex64 are both 32-bit precision; None when unknown or not float."""
    if not dtype:
        return None
    try:
        dt = np.dtype(dtype)
    except TypeError:
        return None
    if dt.kind == "c":
        return dt.itemsize * 4
    if dt.kind == "f":
        return dt.itemsize * 8
    return None


def check_workload(r: Result) -> Check:
    ratio = r.runtime.median_s / r.dispatch.median_s if r.dispatch.median_s > 0 else float("inf")
    detail = f"JAX runtime {format_time(r.runtime.median_s)} vs dispatch {format_time(r.dispatch.median_s)}"
    if ratio < DISPATCH_RATIO_FAIL:
        return Check("workload", "Workload large enough", FAIL,
                     f"{detail}: the call is mostly dispatch overhead; try a larger shape", "size")
    if ratio < DISPATCH_RATIO_WARN:
        return Check("workload", "Workload large enough", WARN,
                     f"{detail}: overhead is a large share; small inputs favour NumPy", "size")
    return Check("workload", "Workload large enough", PASS, f"{detail} ({ratio:.0f}x)", "size")


def check_precision(r: Result) -> Check:
    a = r.agreement
    bits = {side: _precision_bits(a.get(f"{side}_dtype")) for side in ("numpy", "jax")}
    want = _precision_bits(r.dtype)
    if bits["numpy"] is None or bits["jax"] is None:
        return Check("precision", "Matched precision", WARN, "output dtypes are unknown", "dtype")
    if bits["numpy"] != bits["jax"]:
        return Check("precision", "Matched precision", FAIL,
                     f"NumPy computed in {a['numpy_dtype']}, JAX in {a['jax_dtype']}: "
                     "a 64-bit vs 32-bit race, not a fair comparison", "dtype")
    internal = _precision_bits(r.case_info.get("numpy_computes_in"))
    if internal is not None and want is not None and internal > want:
        return Check("precision", "Matched precision", WARN,
                     f"NumPy returns {a['numpy_dtype']} but computes in {r.case_info['numpy_computes_in']} "
                     "internally: it does double-precision work here", "dtype")
    if want is not None and bits["jax"] != want:
        return Check("precision", "Matched precision", WARN,
                     f"both sides returned {a['jax_dtype']} for {r.dtype} inputs", "dtype")
    return Check("precision", "Matched precision", PASS, f"both sides in {a['jax_dtype']}", "dtype")


def _not_recorded(check_id: str, title: str, pitfall: str) -> Check:
    return Check(check_id, title, WARN, "not recorded: this result was saved by a version that did not check it",
                 pitfall)


def check_blocked(r: Result) -> Check:
    if "blocked" not in r.protocol:
        return _not_recorded("blocked", "Blocked timing", "async")
    if not r.protocol["blocked"]:
        return Check("blocked", "Blocked timing", FAIL,
                     "a timed JAX call's output was not ready when its clock stopped: the time is dispatch, "
                     "not the work", "async")
    if r.runtime.median_s < r.dispatch.median_s:
        return Check("blocked", "Blocked timing", WARN,
                     "blocked runtime is below dispatch time: the numbers look inconsistent", "async")
    return Check("blocked", "Blocked timing", PASS, "every timed JAX call ends in block_until_ready()", "async")


def check_compile_excluded(r: Result) -> Check:
    if "compile_excluded" not in r.protocol:
        return _not_recorded("compile", "Compile excluded from runtime", "jit")
    if not r.protocol["compile_excluded"]:
        return Check("compile", "Compile excluded from runtime", FAIL,
                     "the function was not compiled before the timed calls, or compiled again during them", "jit")
    worst = max(r.runtime.samples_s) if r.runtime.samples_s else 0.0
    if r.compile_total_s > 0 and worst > 0.5 * r.compile_total_s and worst > 5 * r.runtime.median_s:
        return Check("compile", "Compile excluded from runtime", WARN,
                     f"one runtime sample ({format_time(worst)}) looks like a recompile", "jit")
    return Check("compile", "Compile excluded from runtime", PASS,
                 f"warmed up first; compile ({format_time(r.compile_total_s)}) reported separately", "jit")


def check_on_device(r: Result) -> Check:
    if "inputs_on_device" not in r.protocol:
        return _not_recorded("transfer", "Inputs already on the device", "transfer")
    if not r.protocol["inputs_on_device"]:
        return Check("transfer", "Inputs already on the device", FAIL,
                     "host arrays were passed in, so every call paid a transfer", "transfer")
    rate = transfer_rate_text(r)
    return Check("transfer", "Inputs already on the device", PASS,
                 f"device_put once; transfer ({format_time(r.transfer.median_s)}) reported separately"
                 f"{': ' + rate if rate else ''}", "transfer")


def check_agreement(r: Result) -> Check:
    a = r.agreement
    text = f"max rel err {a['max_rel_err']:.2g} (tolerance {a['rtol']:.0e}, {a.get('method', 'direct')})"
    if not a.get("ok"):
        return Check("agreement", "Outputs agree", FAIL, f"outputs differ: {text}", "dtype")
    return Check("agreement", "Outputs agree", PASS, text, "dtype")


def check_stability(r: Result) -> Check:
    shaky = [(name, s) for name, s in (("NumPy", r.numpy_runtime), ("JAX", r.runtime)) if not s.stable]
    if shaky:
        name, s = shaky[0]
        return Check("stable", "Samples stable", WARN, f"{name}: {s.unstable_reason}", None)
    return Check("stable", "Samples stable", PASS,
                 f"median known to ±{max(r.numpy_runtime.rel_ci, r.runtime.rel_ci):.1%} (95% CI)", None)


def check_speedup_steady(r: Result) -> Check:
    """With the runtimes timed in pairs of blocks side by side: did the speedup hold from
    pair to pair? A drift of the machine's speed moves both medians, but not their ratio."""
    pairs = r.speedup_pairs
    title = "Speedup steady"
    if not pairs:
        why = ("no block medians recorded (measured before jaxcompare kept them)" if r.spec.timing.runtime_blocks > 1
               else "one block a side (the thorough timing times four pairs of blocks)")
        return Check("steady", title, PASS, f"not checked: {why}", None)
    each = ", ".join(format_factor(p) for p in pairs)
    spread = r.speedup_moved
    tolerance = r.spec.timing.pair_tolerance
    if not r.speedup_steady:
        return Check("steady", title, WARN,
                     f"the speedup moved by {spread:.0%} between the {len(pairs)} pairs of blocks ({each}), "
                     f"more than the blocks' precision allows ({tolerance:.1%}): rerun when the machine is "
                     f"quieter", None)
    return Check("steady", title, PASS,
                 f"{len(pairs)} pairs of NumPy and JAX blocks timed side by side agree within {spread:.1%} "
                 f"({each})", None)


def check_sample_count(r: Result) -> Check:
    n = min(r.numpy_runtime.n, r.runtime.n)
    if n < 3:
        return Check("samples", "Enough samples", FAIL, f"only {n} sample(s) on one side", None)
    if n < MIN_SAMPLES:
        return Check("samples", "Enough samples", WARN, f"only {n} samples on one side", None)
    return Check("samples", "Enough samples", PASS,
                 f"NumPy {r.numpy_runtime.n} x {r.numpy_runtime.loops} loops, "
                 f"JAX {r.runtime.n} x {r.runtime.loops} loops", None)


def check_threads(r: Result) -> Check:
    if r.backend != "cpu":
        return Check("threads", "CPU thread parity", PASS, f"not applicable: JAX ran on {r.backend}", None)
    cores = r.env.get("cpu_affinity") or r.env.get("cpu_count_logical")
    blas = [b for b in r.env.get("blas", []) if b.get("user_api") == "blas"]
    if not blas or not cores:
        return Check("threads", "CPU thread parity", WARN, "NumPy's BLAS thread count is unknown", None)
    threads = blas[0].get("num_threads")
    if threads != cores:
        return Check("threads", "CPU thread parity", WARN,
                     f"NumPy's BLAS uses {threads} thread(s), XLA may use {cores} core(s)", None)
    return Check("threads", "CPU thread parity", PASS,
                 f"NumPy's BLAS and XLA both use {cores} core(s); NumPy's non-BLAS code is single-threaded",
                 None)


def check_tf32(r: Result) -> Check:
    if r.backend != "gpu":
        return Check("tf32", "TF32 on GPU", PASS, f"not applicable on {r.backend}", "tf32")
    if r.dtype != "float32":
        return Check("tf32", "TF32 on GPU", PASS, "float64 is never computed in TF32", "tf32")
    if r.protocol.get("matmul_precision") == "highest":
        return Check("tf32", "TF32 on GPU", PASS, "matmul precision set to 'highest'", "tf32")
    return Check("tf32", "TF32 on GPU", WARN,
                 "float32 matmuls on this GPU may use TF32 (about 10 mantissa bits); "
                 f"agreement error {r.agreement['max_rel_err']:.2g}", "tf32")


CHECKS = (check_workload, check_precision, check_blocked, check_compile_excluded, check_on_device,
          check_agreement, check_stability, check_speedup_steady, check_sample_count, check_threads,
          check_tf32)


def checklist(result: Result) -> list[Check]:
    """Every check for ``result``, in a fixed order."""
    return [check(result) for check in CHECKS]


def overall(checks: list[Check]) -> str:
    statuses = {c.status for c in checks}
    return FAIL if FAIL in statuses else WARN if WARN in statuses else PASS
