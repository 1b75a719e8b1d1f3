"""Do NumPy and JAX compute the same thing? Normwise errors with a dtype-aware tolerance.
Runs in the worker (and the selfcheck process) on outputs already on the host; no JAX.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..model.cases import Arrays, Case

# Normwise relative tolerance per dtype: loose enough for reordered summation and
# LAPACK-vs-XLA algorithm differences, tight enough to catch a wrong port.
BASE_RTOL = {"float32": 1e-4, "float64": 1e-10}


def tolerance(case: Case, dtype: str) -> tuple[float, float]:
    """(rtol, atol) for ``case`` at ``dtype``; atol guards outputs that are ~0."""
    rtol = BASE_RTOL.get(dtype, 1e-4) * case.tolerance
    atol = rtol * 1e-3
    return rtol, atol


def normwise_errors(reference: Arrays, test: Arrays) -> tuple[float, float]:
    """Largest absolute error and largest error relative to each output's largest value."""
    if len(reference) != len(test):
        return float("inf"), float("inf")
    max_abs = 0.0
    max_rel = 0.0
    for ref, got in zip(reference, test, strict=True):
        ref = np.asarray(ref, dtype=np.float64) if not np.iscomplexobj(ref) else np.asarray(ref)
        got = np.asarray(got, dtype=ref.dtype)
        if ref.shape != got.shape:
            return float("inf"), float("inf")
        if ref.size == 0:
            continue
        diff = np.abs(ref - got)
        if not np.all(np.isfinite(diff)):
            # equal infinities (e.g. logpdf of far tails) are agreement, anything else is not
            same = (ref == got) | (np.isnan(ref) & np.isnan(got))
            if not np.all(same | np.isfinite(diff)):
                return float("inf"), float("inf")
            diff = np.where(np.isfinite(diff), diff, 0.0)
        abs_err = float(diff.max())
        finite = np.abs(ref[np.isfinite(ref)])
        scale = float(finite.max()) if finite.size else 0.0
        rel_err = abs_err / scale if scale > 0 else abs_err
        max_abs = max(max_abs, abs_err)
        max_rel = max(max_rel, rel_err)
    return max_abs, max_rel


def compare_outputs(
    case: Case,
    dtype: str,
    inputs: Arrays,
    numpy_out: Arrays,
    jax_out: Arrays,
    reference64_out: Arrays | None = None,
) -> dict[str, Any]:
    """Agreement record: JAX vs NumPy at the same precision, and both vs float64."""
    rtol, atol = tolerance(case, dtype)
    canon_np = case.canonical(numpy_out, inputs)
    canon_jax = case.canonical(jax_out, inputs)
    max_abs, max_rel = normwise_errors(canon_np, canon_jax)
    record: dict[str, Any] = {
        "ok": bool(max_rel <= rtol or max_abs <= atol),
        "max_abs_err": max_abs,
        "max_rel_err": max_rel,
        "rtol": rtol,
        "atol": atol,
        "method": case.compared_by,
        "numpy_dtype": str(numpy_out[0].dtype) if numpy_out else None,
        "jax_dtype": str(jax_out[0].dtype) if jax_out else None,
    }
    if reference64_out is not None:
        inputs64 = tuple(np.asarray(a, dtype=np.float64) if a.dtype.kind == "f" else a for a in inputs)
        canon_ref = case.canonical(reference64_out, inputs64)
        np_abs, np_rel = normwise_errors(canon_ref, canon_np)
        jax_abs, jax_rel = normwise_errors(canon_ref, canon_jax)
        record["vs_float64"] = {
            "numpy_max_abs_err": np_abs,
            "numpy_max_rel_err": np_rel,
            "jax_max_abs_err": jax_abs,
            "jax_max_rel_err": jax_rel,
        }
    return record
