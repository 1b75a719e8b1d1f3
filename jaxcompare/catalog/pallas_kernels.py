"""Pallas kernels for the catalog's ports: a tiled matmul, the elementwise chain fused by hand, and a
row-wise logsumexp. ``jax.experimental.pallas`` is imported only when a kernel is traced (in a worker).

Pallas compiles only for a GPU or TPU (Mosaic on a TPU); on the CPU it runs interpreted
(``interpret=True``), which checks agreement but is no speed figure (each block runs as Python).
Each kernel picks the two at lowering through ``lax.platform_dependent``, so one function serves a
TPU worker and the CPU tests alike; the engine flags a Pallas port measured on the CPU (Result.interpreted).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..model.platforms import PLATFORMS
from ._lazy import LazyModule, jax, jnp

# Imported at a kernel's first use, in a worker: the server lists the catalog without JAX.
pl = LazyModule("jax.experimental.pallas")

# The matmul's preferred blocks: on a TPU v5e at 4096x4096 float32, 1024x1024x512 ran 881 µs beside
# jnp.matmul's 734 µs, 512³ 1.54 ms and 256³ 3.29 ms (docs/ports.md, "Measured").
MATMUL_BLOCKS = (1024, 1024, 512)
# Rows of 128 lanes per block for the elementwise chain and rows per block for logsumexp.
ELEMENTWISE_ROWS = 512
LANES = 128
LOGSUMEXP_ROWS = 256


def block(dim: int, preferred: int, smallest: int = 8) -> int:
    """The largest power-of-two block from ``preferred`` down to ``smallest`` that divides ``dim``, else
    the whole dimension (a block equal to the array's dimension is always a legal block shape)."""
    size = preferred
    while size >= smallest:
        if dim % size == 0:
            return size
        size //= 2
    return dim


def _either(compiled: Callable[..., Any], *args: Any) -> Any:
    """``compiled(*args, interpret=False)`` on a GPU or TPU, ``interpret=True`` where the platform table says
    Pallas does not compile (the CPU), chosen when the jitted function is lowered for its platform (only that
    branch is lowered)."""
    interpreted = {name: lambda *a: compiled(*a, interpret=True)
                   for name, found in PLATFORMS.items() if not found.pallas_compiles}
    return jax.lax.platform_dependent(*args, **interpreted, default=lambda *a: compiled(*a, interpret=False))


def _matmul_kernel(a_ref: Any, b_ref: Any, o_ref: Any) -> None:

    # The output block stays in on-chip memory across K's steps: zeroed at the first, accumulated after.
    @pl.when(pl.program_id(2) == 0)
    def _zero() -> None:
        o_ref[...] = jnp.zeros_like(o_ref)

    o_ref[...] += jnp.dot(a_ref[...], b_ref[...], preferred_element_type=o_ref.dtype)


def _matmul(a: Any, b: Any, *, interpret: bool) -> Any:

    (m, k), n = a.shape, b.shape[1]
    # Blocks below 128 would starve the matrix unit (and make a long grid): the whole dimension instead.
    bm, bn, bk = (block(d, p, smallest=128) for d, p in zip((m, n, k), MATMUL_BLOCKS, strict=True))
    return pl.pallas_call(
        _matmul_kernel, out_shape=jax.ShapeDtypeStruct((m, n), a.dtype), grid=(m // bm, n // bn, k // bk),
        in_specs=[pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)), pl.BlockSpec((bk, bn), lambda i, j, kk: (kk, j))],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j)), interpret=interpret)(a, b)


def matmul(a: Any, b: Any) -> Any:
    """A @ B as a Pallas kernel over (M, N, K) blocks of up to MATMUL_BLOCKS."""
    return _either(_matmul, a, b)


def _elementwise_kernel(x_ref: Any, o_ref: Any) -> None:
    x = x_ref[...]
    o_ref[...] = jnp.sin(x) * jnp.exp(-(x * x)) + jnp.tanh(x)


def _elementwise(x: Any, *, interpret: bool) -> Any:

    flat = x.reshape(-1)
    if flat.size % LANES:  # not a whole number of 128-lane rows: one block of the whole vector
        out = pl.pallas_call(_elementwise_kernel, out_shape=jax.ShapeDtypeStruct(flat.shape, x.dtype),
                             interpret=interpret)(flat)
        return out.reshape(x.shape)
    rows = flat.size // LANES
    br = block(rows, ELEMENTWISE_ROWS)
    spec = pl.BlockSpec((br, LANES), lambda i: (i, 0))
    out = pl.pallas_call(_elementwise_kernel, out_shape=jax.ShapeDtypeStruct((rows, LANES), x.dtype),
                         grid=(rows // br,), in_specs=[spec], out_specs=spec,
                         interpret=interpret)(flat.reshape(rows, LANES))
    return out.reshape(x.shape)


def elementwise(x: Any) -> Any:
    """sin(x)*exp(-x**2) + tanh(x) as one Pallas kernel over blocks of 128-lane rows."""
    return _either(_elementwise, x)


def _logsumexp_kernel(x_ref: Any, o_ref: Any) -> None:
    x = x_ref[...]
    top = jnp.max(x, axis=1, keepdims=True)
    o_ref[...] = top + jnp.log(jnp.sum(jnp.exp(x - top), axis=1, keepdims=True))


def _logsumexp(x: Any, *, interpret: bool) -> Any:

    m, n = x.shape
    bm = block(m, LOGSUMEXP_ROWS)
    out = pl.pallas_call(_logsumexp_kernel, out_shape=jax.ShapeDtypeStruct((m, 1), x.dtype), grid=(m // bm,),
                         in_specs=[pl.BlockSpec((bm, n), lambda i: (i, 0))],
                         out_specs=pl.BlockSpec((bm, 1), lambda i: (i, 0)), interpret=interpret)(x)
    return out[:, 0]


def logsumexp_rows(x: Any) -> Any:
    """Row-wise logsumexp as a Pallas kernel: each block of whole rows in one pass (max, exp, sum, log)."""
    return _either(_logsumexp, x)
