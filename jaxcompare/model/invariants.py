"""What must agree when outputs legitimately differ: the invariants of factorisations that are
unique only up to signs (SVD, eigh, QR) or pivots (LU). One definition for the catalog's cases
and a notebook's own functions; each works on batched inputs too (leading dimensions)."""

from __future__ import annotations

import numpy as np

from .cases import Arrays


def _f64(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, dtype=np.float64)


def svd_invariants(outputs: Arrays, inputs: Arrays) -> Arrays:
    """Singular vectors carry arbitrary signs; the singular values and U diag(s) Vh do not
    (also with full_matrices=True, and as they are with compute_uv=False)."""
    if len(outputs) != 3:
        return outputs
    u, s, vh = (_f64(o) for o in outputs)
    k = s.shape[-1]
    return (s, (u[..., :, :k] * s[..., None, :]) @ vh[..., :k, :])


def eigh_invariants(outputs: Arrays, inputs: Arrays) -> Arrays:
    """Eigenvectors carry arbitrary signs; the sorted eigenvalues and V diag(w) V^T do not."""
    if len(outputs) != 2:
        return outputs
    w, v = (_f64(o) for o in outputs)
    return (w, (v * w[..., None, :]) @ np.swapaxes(v, -1, -2))


def qr_invariants(outputs: Arrays, inputs: Arrays) -> Arrays:
    """Q R, and R with diag(R) >= 0 (unique then). Q itself is not compared: its trailing
    columns are as sensitive as A is ill-conditioned (float32 error ~ n^2 eps). R alone
    (mode='r') is compared as it is."""
    if len(outputs) != 2:
        return outputs
    q, r = (_f64(o) for o in outputs)
    signs = np.sign(np.diagonal(r, axis1=-2, axis2=-1)).copy()
    signs[signs == 0] = 1.0
    return (q @ r, signs[..., :, None] * r)


def lu_invariants(outputs: Arrays, inputs: Arrays) -> Arrays:
    """Near-tied pivots may be chosen differently; P L U and log|det| = sum log|U_ii| agree
    whichever is chosen."""
    p, lower, upper = (_f64(o) for o in outputs)
    diagonal = np.diagonal(upper, axis1=-2, axis2=-1)
    return (p @ lower @ upper, np.sum(np.log(np.abs(diagonal)), axis=-1, keepdims=True))
