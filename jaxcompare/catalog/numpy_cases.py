"""Built-in NumPy cases and their JAX ports (numpy.linalg lives in linalg_cases)."""

from __future__ import annotations

import math

import numpy as np

from ..i18n import N_
from ..model.cases import Case, Port, Shape, any_shape, format_shape, matrix, square, vector
from . import pallas_kernels
from ._lazy import LazyModule, jnp
from .linalg_cases import CASES as LINALG_CASES


def _normal(shape: Shape, dtype: np.dtype, rng: np.random.Generator) -> np.ndarray:
    return rng.standard_normal(shape).astype(dtype)


def _one_matrix(shape: Shape, dtype: np.dtype, rng: np.random.Generator) -> tuple[np.ndarray]:
    return (_normal(shape, dtype, rng),)


def _one_array(shape: Shape, dtype: np.dtype, rng: np.random.Generator) -> tuple[np.ndarray]:
    return (_normal(shape, dtype, rng),)


def _two_matrices(shape: Shape, dtype: np.dtype, rng: np.random.Generator):
    return (_normal(shape, dtype, rng), _normal(shape, dtype, rng))


def _batch_of_squares(shape: Shape) -> str | None:
    """Shape rule for einsum: a batch of n x n matrices."""
    if len(shape) != 3 or shape[1] != shape[2]:
        return N_("needs a 3-D shape batch x n x n like 8x100x100, got {shape}").format(shape=format_shape(shape))
    return None


def _fft_flops(shape: Shape) -> float:
    """Cooley-Tukey convention: 5 N log2 N for a complex transform of N points."""
    n = math.prod(shape)
    return 5.0 * n * math.log2(n) if n > 1 else 0.0


def centered_gram_np(x):
    return x.T @ (x - x.mean(axis=0))


def centered_gram_jax(x):
    return x.T @ (x - x.mean(axis=0))


def _matmul_jax(a, b):
    return jnp.matmul(a, b)


_EINSUM = "bij,bjk->bik"


def _einsum_np(a, b):
    return np.einsum(_EINSUM, a, b)


def _einsum_jax(a, b):
    return jnp.einsum(_EINSUM, a, b)


def _elementwise_np(x):
    return np.sin(x) * np.exp(-(x**2)) + np.tanh(x)


def _elementwise_jax(x):
    return jnp.sin(x) * jnp.exp(-(x**2)) + jnp.tanh(x)


def _column_sums_np(x):
    return x.sum(axis=0)


def _column_sums_jax(x):
    return x.sum(axis=0)


def _sort_jax(x):
    return jnp.sort(x)


def _cumsum_jax(x):
    return jnp.cumsum(x)


lax = LazyModule("jax.lax")


def _cumsum_associative(x):
    return lax.associative_scan(jnp.add, x)


def _cumsum_scan(x):
    def step(total, value):
        total = total + value
        return total, total

    return lax.scan(step, jnp.zeros((), x.dtype), x)[1]


def _fft_jax(x):
    return jnp.fft.fft(x)


def _fft2_jax(x):
    return jnp.fft.fft2(x)


def _rfft_jax(x):
    return jnp.fft.rfft(x)


_BASIC_CASES = [
    Case(
        name="centered_gram",
        title=N_("Centered Gram matrix x.T @ (x - x.mean(0))"),
        group="numpy",
        numpy_fn=centered_gram_np,
        jax_fn=centered_gram_jax,
        numpy_name="x.T @ (x - x.mean(axis=0))  (numpy)",
        jax_name="x.T @ (x - x.mean(axis=0))  (jax.numpy)",
        description=N_("The example from the JAX docs' 'Benchmarking JAX code' page."),
        make_inputs=_one_matrix,
        shape_rule=square,
        flops=lambda s: 2.0 * s[0] * s[1] * s[1] + 2.0 * s[0] * s[1],
    ),
    Case(
        name="matmul",
        title=N_("Matrix product A @ B"),
        group="numpy",
        numpy_fn=np.matmul,
        jax_fn=_matmul_jax,
        numpy_name="numpy.matmul",
        jax_name="jax.numpy.matmul",
        description=N_("Dense matrix product: BLAS gemm on both sides, the compute-bound baseline."),
        make_inputs=_two_matrices,
        shape_rule=square,
        flops=lambda s: 2.0 * s[0] ** 3,
        ports=[Port("pallas", pallas_kernels.matmul, jax_name=pallas_kernels.matmul_name(),
                    why=N_("A Pallas kernel tiling the product by hand: its block sizes decide how near it "
                           "comes to XLA's own."), pallas=True)],
        ports_why=N_("jnp.matmul is XLA's own tuned product; the Pallas kernel tiles it by hand with blocks chosen "
                     "per device (on a TPU each output block sums K's steps on chip; on a GPU each loops over K "
                     "itself), so its block sizes decide how close it comes."),
    ),
    Case(
        name="einsum",
        title=N_("Batched matmul einsum('bij,bjk->bik')"),
        group="numpy",
        numpy_fn=_einsum_np,
        jax_fn=_einsum_jax,
        numpy_name=f"numpy.einsum('{_EINSUM}')",
        jax_name=f"jax.numpy.einsum('{_EINSUM}')",
        description=N_("A batch of matrix products written as einsum (NumPy's default is "
                       "optimize=False; JAX always contracts through dot_general)."),
        make_inputs=_two_matrices,
        shape_rule=_batch_of_squares,
        small_shape=(4, 10, 10),
        large_shape=(32, 256, 256),
        flops=lambda s: 2.0 * s[0] * s[1] ** 3,
    ),
    Case(
        name="elementwise",
        title=N_("Elementwise sin(x)*exp(-x**2) + tanh(x)"),
        group="numpy",
        numpy_fn=_elementwise_np,
        jax_fn=_elementwise_jax,
        numpy_name="np.sin(x)*np.exp(-x**2) + np.tanh(x)  (numpy)",
        jax_name="jnp.sin(x)*jnp.exp(-x**2) + jnp.tanh(x)  (jax.numpy)",
        description=N_("Memory-bound chain of ufuncs: NumPy makes a temporary per step, "
                       "XLA fuses them into one loop."),
        make_inputs=_one_array,
        shape_rule=any_shape,
        small_shape=(1000,),
        large_shape=(1_000_000,),
        ports=[Port("pallas", pallas_kernels.elementwise, jax_name="pallas_call sin(x)*exp(-x*x) + tanh(x)",
                    why=N_("The same chain fused by hand into one Pallas kernel over blocks of 128-lane rows."),
                    pallas=True)],
        ports_why=N_("XLA already fuses the jnp chain into one loop; the Pallas kernel writes that fusion by "
                     "hand, so both read x once and write once and should run alike."),
        numpy_temporaries=3,  # sin(x), x**2 and -(x**2) live at once (benchmarks/RESULTS.md)
    ),
    Case(
        name="reduction",
        title=N_("Column sums x.sum(axis=0)"),
        group="numpy",
        numpy_fn=_column_sums_np,
        jax_fn=_column_sums_jax,
        numpy_name="numpy.ndarray.sum(axis=0)",
        jax_name="jax.Array.sum(axis=0)",
        description=N_("A pure memory-bound reduction over the leading axis."),
        make_inputs=_one_matrix,
        shape_rule=matrix,
        small_shape=(10, 10),
        large_shape=(4000, 4000),
        flops=lambda s: float(s[0] * s[1]),
    ),
    Case(
        name="sort",
        title=N_("Sort a vector"),
        group="numpy",
        numpy_fn=np.sort,
        jax_fn=_sort_jax,
        numpy_name="numpy.sort",
        jax_name="jax.numpy.sort",
        description=N_("Comparison sort of random floats (the sorted output is unique)."),
        make_inputs=_one_array,
        shape_rule=vector,
        small_shape=(1000,),
        large_shape=(1_000_000,),
    ),
    Case(
        name="cumsum",
        title=N_("Cumulative sum of a vector"),
        group="numpy",
        numpy_fn=np.cumsum,
        jax_fn=_cumsum_jax,
        numpy_name="numpy.cumsum",
        jax_name="jax.numpy.cumsum",
        description=N_("A scan: NumPy adds sequentially, XLA in a different order, so "
                       "rounding differs and grows with N."),
        make_inputs=_one_array,
        shape_rule=vector,
        small_shape=(1000,),
        large_shape=(4_000_000,),
        flops=lambda s: float(s[0]),
        # NumPy's sequential float32 running sum drifts ~sqrt(N) eps (3e-5 rel at 4M)
        tolerance=10.0,
        ports=[Port("associative_scan", _cumsum_associative, jax_name="jax.lax.associative_scan(jnp.add, x)",
                    why=N_("A parallel prefix sum: about 2 log2(N) rounds of adds over the whole vector.")),
               Port("scan", _cumsum_scan, jax_name="jax.lax.scan(lambda t, v: (t + v, t + v), 0.0, x)[1]",
                    why=N_("A sequential loop of N steps, as NumPy adds: on a GPU or TPU each step is tiny "
                           "and the loop is slow (over 5 minutes at 2^20 on a TPU v5e)."))],
        ports_why=N_("Three orders of adds: jnp.cumsum is XLA's own scan, lax.associative_scan a parallel "
                     "prefix, lax.scan a sequential loop (2-core CPU, 2^20: 7.7, 2.3 and 5.0 ms)."),
    ),
    Case(
        name="fft",
        title=N_("Complex FFT of a real vector"),
        group="numpy",
        numpy_fn=np.fft.fft,
        jax_fn=_fft_jax,
        numpy_name="numpy.fft.fft",
        jax_name="jax.numpy.fft.fft",
        description=N_("1-D FFT of a power-of-two length (pocketfft vs XLA's DUCC FFT)."),
        make_inputs=_one_array,
        shape_rule=vector,
        small_shape=(1024,),
        large_shape=(1_048_576,),
        flops=_fft_flops,
    ),
    Case(
        name="fft2",
        title=N_("2-D FFT of an image"),
        group="numpy",
        numpy_fn=np.fft.fft2,
        jax_fn=_fft2_jax,
        numpy_name="numpy.fft.fft2",
        jax_name="jax.numpy.fft.fft2",
        description=N_("2-D complex FFT of a real image."),
        make_inputs=_one_matrix,
        shape_rule=matrix,
        small_shape=(64, 64),
        large_shape=(1024, 1024),
        flops=_fft_flops,
    ),
    Case(
        name="rfft",
        title=N_("Real FFT of a vector"),
        group="numpy",
        numpy_fn=np.fft.rfft,
        jax_fn=_rfft_jax,
        numpy_name="numpy.fft.rfft",
        jax_name="jax.numpy.fft.rfft",
        description=N_("1-D real-input FFT (half the spectrum, about half the work of fft)."),
        make_inputs=_one_array,
        shape_rule=vector,
        small_shape=(1024,),
        large_shape=(1_048_576,),
        # a real transform is conventionally counted as half a complex one
        flops=lambda s: 0.5 * _fft_flops(s),
    ),
]

CASES = _BASIC_CASES + LINALG_CASES
