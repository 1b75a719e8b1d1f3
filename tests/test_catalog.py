"""The built-in catalog: static sanity of every case, and real NumPy-vs-JAX agreement.

Agreement runs ``python -m jaxcompare.engine.worker.selfcheck`` once per precision in a subprocess,
because JAX's x64 flag is process-wide (and this test process never imports JAX).
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from jaxcompare.catalog import CatalogError, builtin_cases, get_case
from jaxcompare.engine.worker.agreement import compare_outputs
from jaxcompare.model.cases import Case, any_shape, as_tuple
from jaxcompare.model.errors import BadInput

CASES = builtin_cases()
NAMES = [c.name for c in CASES]
REQUIRED = [
    "centered_gram",
    "matmul",
    "einsum",
    "elementwise",
    "reduction",
    "sort",
    "cumsum",
    "fft",
    "fft2",
    "rfft",
    "solve",
    "inv",
    "cholesky",
    "qr",
    "svd",
    "eigh",
    "det",
    "slogdet",
    "expm",
    "lu",
    "solve_triangular",
    "fftconvolve",
    "convolve2d",
    "logsumexp",
    "erf",
    "gammaln",
    "norm_logpdf",
    "trapezoid",
    "cdist",
]
COMPLEX_OUTPUT = {"fft", "fft2", "rfft"}
OUTPUT_DTYPES = {
    "x32": {"real": "float32", "complex": "complex64"},
    "x64": {"real": "float64", "complex": "complex128"},
}
DTYPES = {"x32": np.float32, "x64": np.float64}


def test_catalog_is_large_with_unique_names() -> None:
    assert len(CASES) >= 24
    assert len(NAMES) == len(set(NAMES))
    assert not set(REQUIRED) - set(NAMES), f"missing: {sorted(set(REQUIRED) - set(NAMES))}"
    assert NAMES[0] == "centered_gram"


def test_duplicate_built_in_names_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from jaxcompare.catalog import scipy_cases

    matmul = get_case("matmul")
    builtin_cases.cache_clear()
    monkeypatch.setattr(scipy_cases, "CASES", [*scipy_cases.CASES, matmul])
    try:
        with pytest.raises(CatalogError, match="duplicate built-in case names: matmul"):
            builtin_cases()
    finally:
        builtin_cases.cache_clear()


def test_catalog_import_does_not_import_jax() -> None:
    code = "import sys, jaxcompare.catalog as c; c.builtin_cases(); print('jax' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("name", NAMES)
def test_case_metadata(name: str) -> None:
    case = get_case(name)
    assert case.group in ("numpy", "scipy")
    assert case.title and case.description
    assert "numpy" in case.numpy_name or "scipy" in case.numpy_name
    assert "jax" in case.jax_name
    assert case.tolerance >= 1.0
    assert name.isidentifier() and name == name.lower()


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("name", NAMES)
def test_make_inputs_exact_dtype_finite_and_seeded(name: str, dtype: type) -> None:
    case = get_case(name)
    first = case.make_inputs(case.small_shape, np.dtype(dtype), np.random.default_rng(0))
    again = case.make_inputs(case.small_shape, np.dtype(dtype), np.random.default_rng(0))
    assert isinstance(first, tuple) and first
    for a, b in zip(first, again, strict=True):
        assert isinstance(a, np.ndarray)
        assert a.dtype == np.dtype(dtype), f"{name}: input dtype {a.dtype}, wanted {dtype}"
        assert np.all(np.isfinite(a))
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name", NAMES)
def test_shape_rules(name: str) -> None:
    case = get_case(name)
    assert case.shape_rule(case.small_shape) is None
    assert case.shape_rule(case.large_shape) is None, f"{name}: large_shape rejected"
    message = case.shape_rule(())
    assert isinstance(message, str) and message
    if case.shape_rule is not any_shape:
        wrong_rank = case.small_shape + (3,)
        message = case.shape_rule(wrong_rank)
        assert isinstance(message, str) and message, f"{name} accepted {wrong_rank}"
        with pytest.raises(BadInput, match=name):
            case.check_shape(wrong_rank)


def _one_input(shape: tuple[int, ...], dtype: np.dtype, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    return (rng.random(shape).astype(dtype),)


def test_static_argnums_is_refused_not_ignored(tmp_path: Path) -> None:
    # Every input is a NumPy array traced by jax.jit, so a static argument could never work.
    with pytest.raises(TypeError, match="static_argnums"):
        Case(name="scaled", numpy_fn=np.sin, jax_fn=np.sin, make_inputs=_one_input,  # type: ignore[call-arg]
             static_argnums=(0,))
    path = tmp_path / "static_cases.py"
    path.write_text(textwrap.dedent("""
        import numpy as np
        from jaxcompare import Case

        CASES = [Case(name="scaled", numpy_fn=np.sin, jax_fn=np.sin,
                      make_inputs=lambda s, d, r: (r.random(s).astype(d),), static_argnums=(0,))]
    """))
    with pytest.raises(BadInput) as refused:
        get_case("scaled", str(path))
    message = str(refused.value)
    assert "\n" not in message and str(path) in message
    assert "TypeError" in message and "unexpected keyword argument 'static_argnums'" in message, message


def test_flop_counts_of_known_workloads() -> None:
    """Worked out by hand: an n x n matmul is 2n^3; the centered Gram matrix x.T @ (x - mean) of an
    n x m input is a 2nm^2 product plus 2nm for the mean and the subtraction."""
    assert get_case("matmul").flop_count((100, 100)) == 2e6
    assert get_case("centered_gram").flop_count((1000, 1000)) == 2e9 + 2e6


@pytest.mark.parametrize("name", [c.name for c in builtin_cases() if c.flops is not None])
def test_flops_positive_where_defined(name: str) -> None:
    case = get_case(name)
    for shape in (case.small_shape, case.large_shape):
        assert case.flop_count(shape) and case.flop_count(shape) > 0
    assert case.flop_count(case.large_shape) > case.flop_count(case.small_shape)


@pytest.fixture(scope="module", params=["x32", "x64"])
def selfcheck(request: pytest.FixtureRequest) -> tuple[str, dict[str, dict[str, Any]]]:
    """One subprocess per precision checks every case at its small shape."""
    precision = request.param
    env = {
        **os.environ,
        "JAX_ENABLE_X64": "1" if precision == "x64" else "0",
        "JAX_PLATFORMS": "cpu",
    }
    proc = subprocess.run(
        [sys.executable, "-m", "jaxcompare.engine.worker.selfcheck", "--precision", precision],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode in (0, 1), f"selfcheck crashed:\n{proc.stderr[-3000:]}"
    records = json.loads(proc.stdout)
    return precision, {r["case"]: r for r in records}


@pytest.mark.parametrize("name", NAMES)
def test_jax_agrees_with_numpy(selfcheck: tuple[str, dict[str, dict[str, Any]]], name: str) -> None:
    precision, records = selfcheck
    record = records[name]
    assert "error" not in record, f"{name} ({precision}) raised: {record['error']}"
    assert record["ok"], (
        f"{name} ({precision}, shape {record['shape']}): max_rel_err {record['max_rel_err']:.3g}"
        f" > rtol {record['rtol']:.3g} and max_abs_err {record['max_abs_err']:.3g}"
        f" > atol {record['atol']:.3g} (method {record['method']})"
    )
    # docs/protocol.md: 1e-4 for float32, 1e-10 for float64, times the case's own factor
    assert record["rtol"] == pytest.approx({"x32": 1e-4, "x64": 1e-10}[precision] * get_case(name).tolerance)
    kind = "complex" if name in COMPLEX_OUTPUT else "real"
    assert record["jax_dtype"] == OUTPUT_DTYPES[precision][kind]
    vs64 = record["vs_float64"]
    assert float(vs64["jax_max_rel_err"]) <= record["rtol"] * 10


def test_selfcheck_refuses_mismatched_precision() -> None:
    env = {**os.environ, "JAX_ENABLE_X64": "1", "JAX_PLATFORMS": "cpu"}
    cmd = [sys.executable, "-m", "jaxcompare.engine.worker.selfcheck", "--precision", "x32", "--cases", "sort"]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert "RuntimeError" in proc.stderr and "JAX_ENABLE_X64=0" in proc.stderr


def _outputs(case: Case, dtype: type = np.float32) -> tuple[tuple, tuple]:
    inputs = case.make_inputs(case.small_shape, np.dtype(dtype), np.random.default_rng(0))
    return inputs, as_tuple(case.numpy_fn(*inputs))


@pytest.mark.parametrize("name", ["elementwise", "matmul", "svd", "qr", "eigh", "lu", "cdist"])
def test_sabotaged_port_is_caught(name: str) -> None:
    case = get_case(name)
    inputs, good = _outputs(case)
    sabotaged = dataclasses.replace(case, jax_fn=lambda *args: None)
    wrong = tuple(np.asarray(o * 1.01, dtype=o.dtype) for o in good)
    record = compare_outputs(sabotaged, "float32", inputs, good, wrong)
    assert not record["ok"], record
    assert record["max_rel_err"] > record["rtol"]


@pytest.mark.parametrize("name", ["elementwise", "matmul", "svd", "cdist"])
def test_a_float32_port_passed_off_as_float64_is_caught(name: str) -> None:
    """An x64 comparison whose JAX side secretly computed in float32 (error ~1e-7) must fail."""
    case = get_case(name)
    inputs, good = _outputs(case, np.float64)
    in32 = tuple(a.astype(np.float32) for a in inputs)
    secretly32 = tuple(np.asarray(o, dtype=np.float64) for o in as_tuple(case.numpy_fn(*in32)))
    assert not compare_outputs(case, "float64", inputs, good, secretly32)["ok"]


def test_wrong_shape_or_count_is_caught() -> None:
    case = get_case("sort")
    inputs, good = _outputs(case)
    assert not compare_outputs(case, "float32", inputs, good, (good[0][:-1],))["ok"]
    assert not compare_outputs(case, "float32", inputs, good, good + good)["ok"]
    assert not compare_outputs(case, "float32", inputs, good, (good[0][::-1],))["ok"]


def _flip(columns: np.ndarray, signs: np.ndarray) -> np.ndarray:
    return (columns * signs).astype(columns.dtype)


def test_invariants_ignore_legitimate_sign_flips() -> None:
    signs = np.where(np.arange(10) % 3 == 0, -1.0, 1.0)
    qr, svd, eigh = get_case("qr"), get_case("svd"), get_case("eigh")

    inputs, (q, r) = _outputs(qr)
    flipped = (_flip(q, signs), _flip(r.T, signs).T)
    assert compare_outputs(qr, "float32", inputs, (q, r), flipped)["ok"]

    inputs, (u, s, vh) = _outputs(svd)
    flipped = (_flip(u, signs), s, _flip(vh.T, signs).T)
    assert compare_outputs(svd, "float32", inputs, (u, s, vh), flipped)["ok"]
    assert not compare_outputs(svd, "float32", inputs, (u, s, vh), (u, s[::-1], vh))["ok"]

    inputs, (w, v) = _outputs(eigh)
    assert compare_outputs(eigh, "float32", inputs, (w, v), (w, _flip(v, signs)))["ok"]


def _lu_without_pivoting(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Doolittle LU with no row exchanges (fine for the small, generic matrices here)."""
    n = len(a)
    lower, upper = np.eye(n), a.astype(np.float64).copy()
    for k in range(n - 1):
        lower[k + 1 :, k] = upper[k + 1 :, k] / upper[k, k]
        upper[k + 1 :] -= np.outer(lower[k + 1 :, k], upper[k])
    return lower, np.triu(upper)


def test_lu_invariants_accept_a_different_pivot_order() -> None:
    """A valid factorisation with other pivots (rows reversed, no pivoting) still agrees."""
    lu = get_case("lu")
    inputs, (p, lower, upper) = _outputs(lu, np.float64)
    a = inputs[0]
    perm = np.eye(len(a))[::-1]
    l2, u2 = _lu_without_pivoting(perm @ a)
    other = (perm.T, l2, u2)
    assert not np.allclose(other[0], p)
    np.testing.assert_allclose(perm.T @ l2 @ u2, a, atol=1e-10)
    assert compare_outputs(lu, "float32", inputs, (p, lower, upper), other)["ok"]
    broken = (perm.T, l2, u2 * 1.01)
    assert not compare_outputs(lu, "float32", inputs, (p, lower, upper), broken)["ok"]


def test_json_safe_writes_strict_json() -> None:
    from jaxcompare.engine.worker.selfcheck import json_safe

    record = {"a": float("inf"), "b": [np.float32(np.nan), np.float64(1.5)], "c": np.int64(3)}
    text = json.dumps(json_safe(record), allow_nan=False)
    assert json.loads(text) == {"a": "inf", "b": ["nan", 1.5], "c": 3}


def test_one_set_of_invariants_serves_batches_and_full_matrices() -> None:
    """The catalog's and a notebook's decompositions share model/invariants: batched inputs and
    full_matrices=True compare by their invariants, and a wrong factor still fails."""
    from jaxcompare.model.invariants import qr_invariants, svd_invariants

    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 6, 6))
    signs = np.where(np.arange(6) % 2 == 0, -1.0, 1.0)
    u, s, vh = np.linalg.svd(a, full_matrices=True)
    flipped = (u * signs, s, (vh.swapaxes(-1, -2) * signs).swapaxes(-1, -2))
    for got, want in zip(svd_invariants(flipped, (a,)), svd_invariants((u, s, vh), (a,)), strict=True):
        np.testing.assert_allclose(got, want, atol=1e-10)
    q, r = np.linalg.qr(a)
    flipped_qr = (q * signs, signs[:, None] * r)
    for got, want in zip(qr_invariants(flipped_qr, (a,)), qr_invariants((q, r), (a,)), strict=True):
        np.testing.assert_allclose(got, want, atol=1e-10)
    assert not np.allclose(qr_invariants((q, r * 1.01), (a,))[0], qr_invariants((q, r), (a,))[0])


def test_a_case_says_how_it_is_compared() -> None:
    assert get_case("svd").compared_by == "invariants"
    assert get_case("lu").compared_by == "invariants"
    assert get_case("matmul").compared_by == "direct"
