"""Pallas kernels for the catalog's ports: a tiled matmul, the elementwise chain fused by hand, and a
row-wise logsumexp. ``jax.experimental.pallas`` is imported only when a kernel is traced (in a worker).

Pallas compiles only for a GPU or TPU (Mosaic on a TPU); on the CPU it runs interpreted
(``interpret=True``), which checks agreement but is no speed figure (each block runs as Python).
Each kernel picks the two at lowering through ``lax.platform_dependent``, so one function serves a
TPU worker and the CPU tests alike; the engine flags a Pallas port measured on the CPU (Result.interpreted).
The matmul also picks its kernel and blocks per platform (the platform table's rows): a TPU's grid runs in
sequence, so its kernel sums K's steps into the output block; a GPU's runs in parallel, so each program
loops over K itself.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ..model.platforms import PLATFORMS, Platform
from ._lazy import LazyModule, jax, jnp

# Imported at a kernel's first use, in a worker: the server lists the catalog without JAX.
pl = LazyModule("jax.experimental.pallas")
pltriton = LazyModule("jax.experimental.pallas.triton")

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


def _per_platform(branch: Callable[[Platform], Callable[..., Any] | None], *args: Any,
                  default: Callable[..., Any] | None = None) -> Any:
    """``branch(row)(*args)`` for the platform the jitted function is lowered for (only that branch is
    lowered): one branch per row of the platform table, under each name JAX lowers that platform by; a row
    whose branch is None takes ``default``."""
    branches: dict[str, Callable[..., Any]] = {}
    for found in PLATFORMS.values():
        chosen = branch(found)  # one callable per row: a GPU's 'cuda' and 'rocm' share one traced branch
        if chosen is not None:
            branches.update(dict.fromkeys(found.lowering_names, chosen))
    return jax.lax.platform_dependent(*args, **branches, default=default)


def _either(compiled: Callable[..., Any], *args: Any) -> Any:
    """``compiled(*args, interpret=False)`` on a GPU or TPU, ``interpret=True`` where the platform table says
    Pallas does not compile (the CPU), chosen when the jitted function is lowered for its platform."""
    interpreted = functools.partial(compiled, interpret=True)
    return _per_platform(lambda found: None if found.pallas_compiles else interpreted, *args,
                         default=functools.partial(compiled, interpret=False))


def _sequential_matmul_kernel(a_ref: Any, b_ref: Any, o_ref: Any) -> None:

    # The output block stays in on-chip memory across K's steps: zeroed at the first, accumulated after.
    # Correct only where the grid runs in sequence (a TPU, the interpreter).
    @pl.when(pl.program_id(2) == 0)
    def _zero() -> None:
        o_ref[...] = jnp.zeros_like(o_ref)

    o_ref[...] += jnp.dot(a_ref[...], b_ref[...], preferred_element_type=o_ref.dtype)


def sequential_matmul(a: Any, b: Any, *, blocks: tuple[int, int, int], interpret: bool) -> Any:
    """A @ B over an (M, N, K) grid of blocks up to ``blocks``, K's steps summed into the output block
    (a TPU's kernel: Mosaic runs the grid in sequence)."""
    (m, k), n = a.shape, b.shape[1]
    # Blocks below 128 would starve the matrix unit (and make a long grid): the whole dimension instead.
    bm, bn, bk = (block(d, p, smallest=128) for d, p in zip((m, n, k), blocks, strict=True))
    return pl.pallas_call(
        _sequential_matmul_kernel, out_shape=jax.ShapeDtypeStruct((m, n), a.dtype),
        grid=(m // bm, n // bn, k // bk),
        in_specs=[pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)), pl.BlockSpec((bk, bn), lambda i, j, kk: (kk, j))],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j)), interpret=interpret)(a, b)


# Triton loads only arrays whose size is a power of two (jax/_src/pallas/triton/lowering.py,
# _check_tensor_size), and its dot takes at least 16 a side.
TRITON_SMALLEST = 16


def triton_block(dim: int, preferred: int) -> int:
    """block(), but always a power of two of at least TRITON_SMALLEST: where none divides ``dim``, the
    block a padded ``dim`` takes (the caller pads it to a multiple)."""
    found = block(dim, preferred, TRITON_SMALLEST)
    if found >= TRITON_SMALLEST and found & (found - 1) == 0:
        return found
    return min(preferred, max(TRITON_SMALLEST, 1 << (dim - 1).bit_length()))


def parallel_matmul(a: Any, b: Any, *, blocks: tuple[int, int, int], interpret: bool) -> Any:
    """A @ B over an (M, N) grid of output blocks up to ``blocks``, each program looping over K in steps
    of its third (a GPU's kernel: Triton runs the grid's programs in parallel, so none may add into
    another's output). A dimension no power-of-two block divides is padded with zeros, and the result cut."""
    (m, k), n = a.shape, b.shape[1]
    bm, bn, bk = (triton_block(d, p) for d, p in zip((m, n, k), blocks, strict=True))
    pm, pn, pk = (-(-d // size) * size for d, size in ((m, bm), (n, bn), (k, bk)))
    if (pm, pk) != (m, k):
        a = jnp.pad(a, ((0, pm - m), (0, pk - k)))
    if (pk, pn) != (k, n):
        b = jnp.pad(b, ((0, pk - k), (0, pn - n)))
    # The sum is kept in registers in float32 at least (float64 stays float64), written once at the end.
    acc_dtype = jnp.promote_types(a.dtype, jnp.float32)

    def kernel(a_ref: Any, b_ref: Any, o_ref: Any) -> None:
        def step(kk: Any, acc: Any) -> Any:
            return acc + jnp.dot(a_ref[:, pl.ds(kk * bk, bk)], b_ref[pl.ds(kk * bk, bk), :],
                                 preferred_element_type=acc_dtype)

        o_ref[...] = jax.lax.fori_loop(0, pk // bk, step, jnp.zeros((bm, bn), acc_dtype)).astype(o_ref.dtype)

    out = pl.pallas_call(
        kernel, out_shape=jax.ShapeDtypeStruct((pm, pn), a.dtype), grid=(pm // bm, pn // bn),
        in_specs=[pl.BlockSpec((bm, pk), lambda i, j: (i, 0)), pl.BlockSpec((pk, bn), lambda i, j: (0, j))],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j: (i, j)), interpret=interpret,
        # On CUDA JAX lowers a pallas_call through Mosaic GPU unless asked for Triton
        # (jax_pallas_use_mosaic_gpu defaults on); this kernel is written for Triton.
        compiler_params=pltriton.CompilerParams())(a, b)
    return out if (pm, pn) == (m, n) else out[:m, :n]


def _matmul_branch(found: Platform) -> Callable[..., Any] | None:
    """The platform's matmul kernel with its blocks, interpreted where Pallas does not compile."""
    if found.pallas_matmul_blocks is None:
        return None
    kernel = parallel_matmul if found.pallas_grid_parallel else sequential_matmul
    return functools.partial(kernel, blocks=found.pallas_matmul_blocks, interpret=not found.pallas_compiles)


def matmul(a: Any, b: Any) -> Any:
    """A @ B as a Pallas kernel, its kernel and blocks the platform table's for the platform it is lowered for."""
    return _per_platform(_matmul_branch, a, b)


def matmul_name() -> str:
    """The matmul port's name, with the blocks of each platform that compiles it."""
    blocks = ", ".join(f"{'x'.join(map(str, found.pallas_matmul_blocks))} on a {found.label}"
                       for found in PLATFORMS.values() if found.pallas_compiles and found.pallas_matmul_blocks)
    return f"pallas_call matmul, blocks up to {blocks}"


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
