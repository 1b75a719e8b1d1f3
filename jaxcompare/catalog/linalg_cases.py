"""Built-in numpy.linalg cases and their jax.numpy.linalg ports.

Inputs are built in float64 with a known conditioning and then cast, so a float32 run
tests the port rather than an ill-conditioned matrix. Factorisations whose outputs are
unique only up to signs (QR, SVD, eigh) are compared through invariants.
"""

from __future__ import annotations

import numpy as np

from ..i18n import N_
from ..model.cases import Arrays, Case, Shape, square
from ..model.invariants import eigh_invariants, qr_invariants, svd_invariants
from ._lazy import jnp


def _std_normal(n: int, rng: np.random.Generator) -> np.ndarray:
    return rng.standard_normal((n, n))


def _well_conditioned(n: int, rng: np.random.Generator) -> np.ndarray:
    """2I + R/(2 sqrt n): singular values of R/(2 sqrt n) lie below ~1, so cond(A) <~ 3."""
    return 2.0 * np.eye(n) + _std_normal(n, rng) / (2.0 * np.sqrt(n))


def _spd(n: int, rng: np.random.Generator) -> np.ndarray:
    """R R^T / n + I: symmetric positive definite with eigenvalues in about [1, 5]."""
    r = _std_normal(n, rng)
    a = r @ r.T / n + np.eye(n)
    return (a + a.T) / 2.0


def _solve_inputs(shape: Shape, dtype: np.dtype, rng: np.random.Generator) -> Arrays:
    n = shape[0]
    a = _well_conditioned(n, rng)
    b = rng.standard_normal(n)
    return (a.astype(dtype), b.astype(dtype))


def _well_conditioned_inputs(shape: Shape, dtype: np.dtype, rng: np.random.Generator) -> Arrays:
    return (_well_conditioned(shape[0], rng).astype(dtype),)


def _unit_det_inputs(shape: Shape, dtype: np.dtype, rng: np.random.Generator) -> Arrays:
    """I + R/(4 sqrt n): eigenvalues in a disc of radius 1/4 around 1, so det stays O(1)
    at any n (2I + ... would overflow float32 for n > ~128)."""
    n = shape[0]
    return ((np.eye(n) + _std_normal(n, rng) / (4.0 * np.sqrt(n))).astype(dtype),)


def _spd_inputs(shape: Shape, dtype: np.dtype, rng: np.random.Generator) -> Arrays:
    return (_spd(shape[0], rng).astype(dtype),)


def _general_inputs(shape: Shape, dtype: np.dtype, rng: np.random.Generator) -> Arrays:
    return (rng.standard_normal(shape).astype(dtype),)


def _symmetric_inputs(shape: Shape, dtype: np.dtype, rng: np.random.Generator) -> Arrays:
    r = _std_normal(shape[0], rng)
    return (((r + r.T) / 2.0).astype(dtype),)


def _solve_jax(a, b):
    return jnp.linalg.solve(a, b)


def _inv_jax(a):
    return jnp.linalg.inv(a)


def _cholesky_jax(a):
    return jnp.linalg.cholesky(a)


def _qr_jax(a):
    return jnp.linalg.qr(a)


def _svd_np(a):
    return np.linalg.svd(a, full_matrices=False)


def _svd_jax(a):
    return jnp.linalg.svd(a, full_matrices=False)


def _eigh_jax(a):
    return jnp.linalg.eigh(a)


def _det_jax(a):
    return jnp.linalg.det(a)


def _slogdet_jax(a):
    return jnp.linalg.slogdet(a)


CASES = [
    Case(
        name="solve",
        title=N_("Solve a linear system A x = b"),
        group="numpy",
        numpy_fn=np.linalg.solve,
        jax_fn=_solve_jax,
        numpy_name="numpy.linalg.solve",
        numpy_computes_in="float64",  # numpy.linalg upcasts real inputs to double
        jax_name="jax.numpy.linalg.solve",
        description=N_("LU with partial pivoting, then two triangular solves; A has cond <~ 3."),
        make_inputs=_solve_inputs,
        shape_rule=square,
        flops=lambda s: 2.0 / 3.0 * s[0] ** 3 + 2.0 * s[0] ** 2,
    ),
    Case(
        name="inv",
        title=N_("Matrix inverse"),
        group="numpy",
        numpy_fn=np.linalg.inv,
        jax_fn=_inv_jax,
        numpy_name="numpy.linalg.inv",
        numpy_computes_in="float64",  # numpy.linalg upcasts real inputs to double
        jax_name="jax.numpy.linalg.inv",
        description=N_("Explicit inverse of a well-conditioned matrix (cond <~ 3)."),
        make_inputs=_well_conditioned_inputs,
        shape_rule=square,
        # LU (2/3 n^3) plus inverting from the factors (4/3 n^3)
        flops=lambda s: 2.0 * s[0] ** 3,
    ),
    Case(
        name="cholesky",
        title=N_("Cholesky factorisation"),
        group="numpy",
        numpy_fn=np.linalg.cholesky,
        jax_fn=_cholesky_jax,
        numpy_name="numpy.linalg.cholesky",
        numpy_computes_in="float64",  # numpy.linalg upcasts real inputs to double
        jax_name="jax.numpy.linalg.cholesky",
        description=N_("Lower Cholesky factor of an SPD matrix R R^T/n + I (unique)."),
        make_inputs=_spd_inputs,
        shape_rule=square,
        flops=lambda s: s[0] ** 3 / 3.0,
    ),
    Case(
        name="qr",
        title=N_("QR factorisation"),
        group="numpy",
        numpy_fn=np.linalg.qr,
        jax_fn=_qr_jax,
        numpy_name="numpy.linalg.qr",
        numpy_computes_in="float64",  # numpy.linalg upcasts real inputs to double
        jax_name="jax.numpy.linalg.qr",
        description=N_("Householder QR of a random matrix; compared via Q R and R with diag(R) >= 0."),
        make_inputs=_general_inputs,
        shape_rule=square,
        # Householder factorisation only (geqrf); forming Q explicitly costs another 4/3 n^3
        flops=lambda s: 4.0 / 3.0 * s[0] ** 3,
        canonical=qr_invariants,
    ),
    Case(
        name="svd",
        title=N_("Singular value decomposition"),
        group="numpy",
        numpy_fn=_svd_np,
        jax_fn=_svd_jax,
        numpy_name="numpy.linalg.svd(full_matrices=False)",
        numpy_computes_in="float64",  # numpy.linalg upcasts real inputs to double
        jax_name="jax.numpy.linalg.svd(full_matrices=False)",
        description=N_("Full SVD with vectors; compared via singular values and U diag(s) Vh."),
        make_inputs=_general_inputs,
        shape_rule=square,
        # Golub-Van Loan's Golub-Reinsch count with U and V, 4m^2n + 8mn^2 + 9n^3 = 21 n^3
        # at m = n, rounded to the customary ~22 n^3; LAPACK's gesdd does less.
        flops=lambda s: 22.0 * s[0] ** 3,
        canonical=svd_invariants,
    ),
    Case(
        name="eigh",
        title=N_("Symmetric eigendecomposition"),
        group="numpy",
        numpy_fn=np.linalg.eigh,
        jax_fn=_eigh_jax,
        numpy_name="numpy.linalg.eigh",
        numpy_computes_in="float64",  # numpy.linalg upcasts real inputs to double
        jax_name="jax.numpy.linalg.eigh",
        description=N_("Eigenvalues and eigenvectors of a symmetric matrix; compared via the "
                       "sorted eigenvalues and V diag(w) V^T."),
        make_inputs=_symmetric_inputs,
        shape_rule=square,
        # Golub-Van Loan's symmetric QR with eigenvectors, ~9 n^3 (divide and conquer differs)
        flops=lambda s: 9.0 * s[0] ** 3,
        canonical=eigh_invariants,
    ),
    Case(
        name="det",
        title=N_("Determinant"),
        group="numpy",
        numpy_fn=np.linalg.det,
        jax_fn=_det_jax,
        numpy_name="numpy.linalg.det",
        numpy_computes_in="float64",  # numpy.linalg upcasts real inputs to double
        jax_name="jax.numpy.linalg.det",
        description=N_("Product of LU pivots of I + R/(4 sqrt n), whose det stays near 1."),
        make_inputs=_unit_det_inputs,
        shape_rule=square,
        flops=lambda s: 2.0 / 3.0 * s[0] ** 3,
    ),
    Case(
        name="slogdet",
        title=N_("Sign and log-determinant"),
        group="numpy",
        numpy_fn=np.linalg.slogdet,
        jax_fn=_slogdet_jax,
        numpy_name="numpy.linalg.slogdet",
        numpy_computes_in="float64",  # numpy.linalg upcasts real inputs to double
        jax_name="jax.numpy.linalg.slogdet",
        description=N_("Sign and log|det| from LU; log|det| ~ n log 2 here, so it never "
                       "overflows where det would."),
        make_inputs=_well_conditioned_inputs,
        shape_rule=square,
        flops=lambda s: 2.0 / 3.0 * s[0] ** 3,
    ),
]
