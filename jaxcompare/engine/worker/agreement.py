"""Do NumPy and JAX compute the same thing? Normwise errors with a dtype-aware tolerance.
Runs in the worker (and the selfcheck process) on outputs already on the host; no JAX.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np

from ...model.cases import Arrays, Case
from ...model.platforms import BASE_RTOL, PRODUCT_PRECISIONS, TF32_RTOL, may_reduce_products, may_use_tf32

__all__ = ["BASE_RTOL", "TF32_RTOL", "may_reduce_products", "may_use_tf32"]  # the platform table's, read here too

# A matrix product or convolution in a lowered program (StableHLO, or HLO text), and its precision.
_DOT = re.compile(r"\b(?:stablehlo|mhlo)\.(?:dot_general|dot|convolution)\b[^\n]*"
                  r"|=\s*\S+\s+(?:dot|convolution)\([^\n]*")
_PRECISION = re.compile(r"precision\s*=\s*\[([^\]]*)\]|operand_precision=\{([^}]*)\}")


def program_has_dot(program_text: str) -> bool:
    """Whether a lowered program has a matrix product or convolution that a GPU or TPU may run at
    reduced precision: one whose operands are not all at HIGHEST precision."""
    for match in _DOT.finditer(program_text):
        found = _PRECISION.search(match.group(0))
        names = [n.strip().lower() for n in (found.group(1) or found.group(2)).split(",")] if found else []
        if not names or any(n != "highest" for n in names):
            return True
    return False


def kernel_has_dot(jaxpr: Any) -> bool:
    """Whether a Pallas kernel in ``jaxpr`` (the traced program) has a matrix product or convolution
    below HIGHEST precision. The lowered program shows a kernel as one opaque custom call, yet a TPU ran
    the matmul port's kernel at one bfloat16 pass (tests/data/tpu/ports: relative error 2.4e-3)."""

    def walk(inner: Any, in_kernel: bool) -> bool:
        for eqn in inner.eqns:
            name = eqn.primitive.name
            if in_kernel and name in ("dot_general", "conv_general_dilated"):
                precision = eqn.params.get("precision")
                names = [getattr(p, "name", str(p)) for p in precision] if isinstance(precision, tuple) else [
                    getattr(precision, "name", str(precision))]
                if precision is None or any(n != "HIGHEST" for n in names):
                    return True
            for value in eqn.params.values():
                for sub in value if isinstance(value, (tuple, list)) else (value,):
                    sub = getattr(sub, "jaxpr", sub)  # a ClosedJaxpr holds its Jaxpr
                    if hasattr(sub, "eqns") and walk(sub, in_kernel or name == "pallas_call"):
                        return True
        return False

    return walk(getattr(jaxpr, "jaxpr", jaxpr), False)


def program_products(case: Case, dtype: str, platform: str, matmul_precision: str, jitted: Callable[..., Any],
                     args: tuple[Any, ...]) -> str | None:
    """reduced_products of ``jitted`` at ``args``: its lowered program, and its traced kernels where the
    case's JAX side is a Pallas kernel (the measurement's and the self-check's one way to ask)."""
    return reduced_products(dtype, platform, matmul_precision, lambda: jitted.lower(*args).as_text(),
                            kernels=traced(jitted, args) if case.pallas else None)


def traced(jitted: Callable[..., Any], args: tuple[Any, ...]) -> Callable[[], Any]:
    """``jitted``'s traced program at ``args``, made only when asked (JAX imported then, in the worker)."""

    def trace() -> Any:
        import jax

        return jax.make_jaxpr(jitted)(*args)

    return trace


def reduced_products(dtype: str, platform: str, matmul_precision: str, program_text: Callable[[], str],
                     kernels: Callable[[], Any] | None = None) -> str | None:
    """The reduced precision this program's float32 products may have run at: may_reduce_products, with
    a dot or convolution in the program. ``program_text`` (the lowered program) and ``kernels`` (the
    traced program, for a port with Pallas kernels: kernel_has_dot) are only asked for when the rest holds."""
    reduced = may_reduce_products(dtype, platform, matmul_precision)
    if reduced is None:
        return None
    found = program_has_dot(program_text()) or (kernels is not None and kernel_has_dot(kernels()))
    return reduced if found else None


def uses_tf32(dtype: str, platform: str, matmul_precision: str, program_text: Callable[[], str]) -> bool:
    """Whether the GPU may have computed this program's float32 products in TF32 (reduced_products)."""
    return may_use_tf32(dtype, platform, matmul_precision) and program_has_dot(program_text())


def tolerance(case: Case, dtype: str, *, tf32: bool = False, products: str | None = None) -> tuple[float, float]:
    """(rtol, atol) for ``case`` at ``dtype``; atol guards outputs that are ~0. ``products``: the
    reduced precision the products ran at (reduced_products; ``tf32``: TF32), whose rtol float32 takes."""
    products = products or ("tensorfloat32" if tf32 else None)
    reduced = PRODUCT_PRECISIONS[products].rtol if products and dtype == "float32" else None
    base = reduced or BASE_RTOL.get(dtype, 1e-4)
    rtol = base * case.tolerance
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


def _all_nan(outputs: Arrays) -> bool:
    """Every element of every output NaN (and at least one element)."""
    arrays = [np.asarray(o) for o in outputs]
    return (any(a.size for a in arrays)
            and all(a.dtype.kind in "fc" and bool(np.isnan(a).all()) for a in arrays if a.size))


def compare_outputs(
    case: Case,
    dtype: str,
    inputs: Arrays,
    numpy_out: Arrays,
    jax_out: Arrays,
    reference64_out: Arrays | None = None,
    *,
    tf32: bool = False,
    products: str | None = None,
) -> dict[str, Any]:
    """Agreement record: JAX vs NumPy at the same precision, and both vs float64. ``products``: the
    reduced precision the JAX side's products ran at (reduced_products; ``tf32``: TF32); the record
    names it, with its rtol."""
    products = (products or ("tensorfloat32" if tf32 else None)) if dtype == "float32" else None
    tf32 = products == "tensorfloat32"
    rtol, atol = tolerance(case, dtype, products=products)
    canon_np = case.canonical(numpy_out, inputs)
    canon_jax = case.canonical(jax_out, inputs)
    max_abs, max_rel = normwise_errors(canon_np, canon_jax)
    record: dict[str, Any] = {
        "ok": bool(max_rel <= rtol or max_abs <= atol),
        "max_abs_err": max_abs,
        "max_rel_err": max_rel,
        "rtol": rtol,
        "atol": atol,
        "tf32": tf32,
        "products": products,
        "method": case.compared_by,
        "numpy_dtype": str(numpy_out[0].dtype) if numpy_out else None,
        "jax_dtype": str(jax_out[0].dtype) if jax_out else None,
    }
    if _all_nan(numpy_out) and _all_nan(jax_out):  # NaN against NaN agrees, and compares nothing
        record["all_nan"] = True
    numpy_shapes, jax_shapes = ([list(np.shape(o)) for o in out] for out in (numpy_out, jax_out))
    if numpy_shapes != jax_shapes:  # a port that returns other outputs: said as such, not only as an infinite error
        record["shapes"] = {"numpy": numpy_shapes, "jax": jax_shapes}
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
