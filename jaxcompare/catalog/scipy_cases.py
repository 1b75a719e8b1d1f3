"""Built-in SciPy cases and their jax.scipy (or hand-written JAX) ports.

SciPy submodules are imported lazily too: scipy.stats alone costs about a second, and
the parent process only needs the case list. Two SciPy functions return float64 for
float32 input: scipy.stats.norm.logpdf and scipy.spatial.distance.cdist.
"""

from __future__ import annotations

import numpy as np

from ..i18n import N_
from ..model.cases import Arrays, Case, Port, Shape, any_shape, format_shape, matrix, square, vector
from ..model.invariants import lu_invariants
from . import pallas_kernels
from ._lazy import LazyModule, jax, jnp

scipy_linalg = LazyModule("scipy.linalg")
scipy_signal = LazyModule("scipy.signal")
scipy_special = LazyModule("scipy.special")
scipy_stats = LazyModule("scipy.stats")
scipy_integrate = LazyModule("scipy.integrate")
scipy_distance = LazyModule("scipy.spatial.distance")
jax_linalg = LazyModule("jax.scipy.linalg")
jax_signal = LazyModule("jax.scipy.signal")
jax_special = LazyModule("jax.scipy.special")
jax_norm = LazyModule("jax.scipy.stats.norm")
jax_integrate = LazyModule("jax.scipy.integrate")

KERNEL_2D = 5  # convolve2d kernel side: SciPy convolves directly, cost ~ n*m*KERNEL_2D^2


def _normal(shape: Shape, dtype: np.dtype, rng: np.random.Generator) -> Arrays:
    return (rng.standard_normal(shape).astype(dtype),)


def _expm_inputs(shape: Shape, dtype: np.dtype, rng: np.random.Generator) -> Arrays:
    """R / sqrt(n) has spectral norm ~2, so exp(A) stays modest at every n."""
    n = shape[0]
    return ((rng.standard_normal((n, n)) / np.sqrt(n)).astype(dtype),)


def _triangular_inputs(shape: Shape, dtype: np.dtype, rng: np.random.Generator) -> Arrays:
    """A Cholesky factor of R R^T/n + I: triangular with cond <~ 2.3 (random triangular
    matrices are exponentially ill-conditioned, so they are not drawn directly)."""
    n, k = shape
    r = rng.standard_normal((n, n))
    lower = np.linalg.cholesky(r @ r.T / n + np.eye(n))
    return (lower.astype(dtype), rng.standard_normal((n, k)).astype(dtype))


def _signal_and_kernel(shape: Shape, dtype: np.dtype, rng: np.random.Generator) -> Arrays:
    """A signal of length N and a kernel a tenth as long: the regime where FFTs pay."""
    n = shape[0]
    signal = rng.standard_normal(n).astype(dtype)
    kernel = rng.standard_normal(max(1, n // 10)).astype(dtype)
    return (signal, kernel)


def _image_and_kernel(shape: Shape, dtype: np.dtype, rng: np.random.Generator) -> Arrays:
    image = rng.standard_normal(shape).astype(dtype)
    kernel = rng.standard_normal((KERNEL_2D, KERNEL_2D)).astype(dtype)
    return (image, kernel)


def _scaled_normal(shape: Shape, dtype: np.dtype, rng: np.random.Generator) -> Arrays:
    """Spread over [-6, 6] so erf saturates in the tails as well as varying in the middle."""
    return ((2.0 * rng.standard_normal(shape)).astype(dtype),)


def _gamma_args(shape: Shape, dtype: np.dtype, rng: np.random.Generator) -> Arrays:
    return (rng.uniform(0.01, 50.0, shape).astype(dtype),)


def _logpdf_inputs(shape: Shape, dtype: np.dtype, rng: np.random.Generator) -> Arrays:
    """x, loc and scale; loc and scale are 0-d arrays so JAX traces them too."""
    x = (3.0 * rng.standard_normal(shape)).astype(dtype)
    loc = np.asarray(rng.uniform(-1.0, 1.0), dtype=dtype)
    scale = np.asarray(rng.uniform(0.5, 2.0), dtype=dtype)
    return (x, loc, scale)


def _trapezoid_inputs(shape: Shape, dtype: np.dtype, rng: np.random.Generator) -> Arrays:
    """Noisy samples y around 1 at sorted, unevenly spaced points x in [0, 10]."""
    x = np.sort(rng.uniform(0.0, 10.0, shape[0]))
    y = 1.0 + 0.5 * rng.standard_normal(shape[0])
    return (y.astype(dtype), x.astype(dtype))


def _two_point_sets(shape: Shape, dtype: np.dtype, rng: np.random.Generator) -> Arrays:
    return (rng.standard_normal(shape).astype(dtype), rng.standard_normal(shape).astype(dtype))


def _image(shape: Shape) -> str | None:
    """Shape rule: a 2-D image at least as large as the convolution kernel."""
    if len(shape) != 2 or min(shape) < KERNEL_2D:
        return N_("needs a 2-D image of at least {kernel} like 256x256, got {shape}").format(
            kernel=format_shape((KERNEL_2D, KERNEL_2D)), shape=format_shape(shape))
    return None


def _expm_np(a):
    return scipy_linalg.expm(a)


def _expm_jax(a):
    return jax_linalg.expm(a)


def _lu_np(a):
    return scipy_linalg.lu(a)


def _lu_jax(a):
    return jax_linalg.lu(a)


def _solve_triangular_np(lower, b):
    return scipy_linalg.solve_triangular(lower, b, lower=True)


def _solve_triangular_jax(lower, b):
    return jax_linalg.solve_triangular(lower, b, lower=True)


def _fftconvolve_np(x, k):
    return scipy_signal.fftconvolve(x, k)


def _fftconvolve_jax(x, k):
    return jax_signal.fftconvolve(x, k)


def _convolve2d_np(image, kernel):
    return scipy_signal.convolve2d(image, kernel, mode="same")


def _convolve2d_jax(image, kernel):
    return jax_signal.convolve2d(image, kernel, mode="same")


def _logsumexp_np(x):
    return scipy_special.logsumexp(x, axis=-1)


def _logsumexp_jax(x):
    return jax_special.logsumexp(x, axis=-1)


def _logsumexp_by_hand(x):
    top = jnp.max(x, axis=-1, keepdims=True)
    return (top + jnp.log(jnp.sum(jnp.exp(x - top), axis=-1, keepdims=True)))[..., 0]


def _erf_np(x):
    return scipy_special.erf(x)


def _erf_jax(x):
    return jax_special.erf(x)


def _gammaln_np(x):
    return scipy_special.gammaln(x)


def _gammaln_jax(x):
    return jax_special.gammaln(x)


def _norm_logpdf_np(x, loc, scale):
    return scipy_stats.norm.logpdf(x, loc, scale)


def _norm_logpdf_jax(x, loc, scale):
    return jax_norm.logpdf(x, loc, scale)


def _trapezoid_np(y, x):
    return scipy_integrate.trapezoid(y, x)


def _trapezoid_jax(y, x):
    return jax_integrate.trapezoid(y, x)


def _cdist_np(xa, xb):
    return scipy_distance.cdist(xa, xb, "euclidean")


def cdist_jax(xa, xb):
    """Euclidean cdist by explicit differences, like SciPy. The faster Gram-matrix form
    sqrt(|a|^2 + |b|^2 - 2 a.b) cancels badly for nearby points in float32."""
    diff = xa[:, None, :] - xb[None, :, :]
    return jnp.sqrt(jnp.sum(diff * diff, axis=-1))


def _cdist_vmap(xa, xb):
    def row(a):
        diff = a[None, :] - xb
        return jnp.sqrt(jnp.sum(diff * diff, axis=-1))

    return jax.vmap(row)(xa)


def _cdist_matmul(xa, xb):
    squared = jnp.sum(xa * xa, axis=1)[:, None] + jnp.sum(xb * xb, axis=1)[None, :] - 2.0 * (xa @ xb.T)
    return jnp.sqrt(jnp.maximum(squared, 0.0))  # rounding can leave a tiny negative for near points


CASES = [
    Case(
        name="expm",
        title=N_("Matrix exponential"),
        group="scipy",
        numpy_fn=_expm_np,
        jax_fn=_expm_jax,
        numpy_name="scipy.linalg.expm",
        jax_name="jax.scipy.linalg.expm",
        description=N_("Scaling-and-squaring Pade approximant of R/sqrt(n) (norm ~2)."),
        make_inputs=_expm_inputs,
        shape_rule=square,
        # no flops: the Pade degree and the number of squarings depend on the values
    ),
    Case(
        name="lu",
        title=N_("LU factorisation with partial pivoting"),
        group="scipy",
        numpy_fn=_lu_np,
        jax_fn=_lu_jax,
        numpy_name="scipy.linalg.lu",
        jax_name="jax.scipy.linalg.lu",
        description=N_("P, L, U of a random matrix; compared via P L U and log|det A|."),
        make_inputs=_normal,
        shape_rule=square,
        flops=lambda s: 2.0 / 3.0 * s[0] ** 3,
        canonical=lu_invariants,
    ),
    Case(
        name="solve_triangular",
        title=N_("Triangular solve L X = B"),
        group="scipy",
        numpy_fn=_solve_triangular_np,
        jax_fn=_solve_triangular_jax,
        numpy_name="scipy.linalg.solve_triangular(lower=True)",
        jax_name="jax.scipy.linalg.solve_triangular(lower=True)",
        description=N_("Forward substitution for k right-hand sides; shape n x k means L is "
                       "n x n and B is n x k."),
        make_inputs=_triangular_inputs,
        shape_rule=matrix,
        flops=lambda s: float(s[0]) ** 2 * s[1],
    ),
    Case(
        name="fftconvolve",
        title=N_("FFT convolution of a signal"),
        group="scipy",
        numpy_fn=_fftconvolve_np,
        jax_fn=_fftconvolve_jax,
        numpy_name="scipy.signal.fftconvolve",
        jax_name="jax.scipy.signal.fftconvolve",
        description=N_("Full convolution of a length-N signal with a length-N/10 kernel."),
        make_inputs=_signal_and_kernel,
        shape_rule=vector,
        small_shape=(1000,),
        large_shape=(1_000_000,),
        # no flops: each library pads to its own fast FFT length
    ),
    Case(
        name="convolve2d",
        title=N_("Direct 2-D convolution with a {kernel} kernel").format(kernel=format_shape((KERNEL_2D, KERNEL_2D))),
        group="scipy",
        numpy_fn=_convolve2d_np,
        jax_fn=_convolve2d_jax,
        numpy_name="scipy.signal.convolve2d(mode='same')",
        jax_name="jax.scipy.signal.convolve2d(mode='same')",
        description=N_("Image filtering by direct convolution (no FFT), zero-padded borders."),
        make_inputs=_image_and_kernel,
        shape_rule=_image,
        small_shape=(64, 64),
        large_shape=(1024, 1024),
        flops=lambda s: 2.0 * s[0] * s[1] * KERNEL_2D**2,
    ),
    Case(
        name="logsumexp",
        title=N_("Row-wise logsumexp"),
        group="scipy",
        numpy_fn=_logsumexp_np,
        jax_fn=_logsumexp_jax,
        numpy_name="scipy.special.logsumexp(axis=-1)",
        jax_name="jax.scipy.special.logsumexp(axis=-1)",
        description=N_("The stable softmax normaliser: max, exp, sum and log per row."),
        make_inputs=_normal,
        shape_rule=matrix,
        small_shape=(10, 10),
        large_shape=(2000, 2000),
        default_port="jax.scipy",
        ports=[Port("jnp", _logsumexp_by_hand, jax_name="max + log(sum(exp(x - max)))  (by hand, jax.numpy)",
                    why=N_("By hand in jax.numpy: the same steps without jax.scipy's guards for infinities.")),
               Port("pallas", pallas_kernels.logsumexp_rows, jax_name="pallas_call logsumexp, blocks of whole rows",
                    why=N_("A Pallas kernel doing each block of rows in one pass in on-chip memory."),
                    pallas=True)],
        ports_why=N_("jax.scipy's logsumexp guards against infinities and takes weights; by hand in jnp skips "
                     "the guards; the Pallas kernel reads each row once, in on-chip memory."),
    ),
    Case(
        name="erf",
        title=N_("Error function"),
        group="scipy",
        numpy_fn=_erf_np,
        jax_fn=_erf_jax,
        numpy_name="scipy.special.erf",
        jax_name="jax.scipy.special.erf",
        description=N_("A special-function ufunc evaluated elementwise."),
        make_inputs=_scaled_normal,
        shape_rule=any_shape,
        small_shape=(1000,),
        large_shape=(1_000_000,),
    ),
    Case(
        name="gammaln",
        title=N_("Log-gamma function"),
        group="scipy",
        numpy_fn=_gammaln_np,
        jax_fn=_gammaln_jax,
        numpy_name="scipy.special.gammaln",
        jax_name="jax.scipy.special.gammaln",
        description=N_("log|Gamma(x)| for x in (0.01, 50), elementwise."),
        make_inputs=_gamma_args,
        shape_rule=any_shape,
        small_shape=(1000,),
        large_shape=(1_000_000,),
    ),
    Case(
        name="norm_logpdf",
        title=N_("Normal log-density"),
        group="scipy",
        numpy_fn=_norm_logpdf_np,
        jax_fn=_norm_logpdf_jax,
        numpy_name="scipy.stats.norm.logpdf",
        jax_name="jax.scipy.stats.norm.logpdf",
        description=N_("log N(x; loc, scale) elementwise; SciPy returns float64 even for "
                       "float32 input, and its distribution machinery adds fixed per-call overhead."),
        make_inputs=_logpdf_inputs,
        shape_rule=any_shape,
        small_shape=(1000,),
        large_shape=(1_000_000,),
    ),
    Case(
        name="trapezoid",
        title=N_("Trapezoidal integration"),
        group="scipy",
        numpy_fn=_trapezoid_np,
        jax_fn=_trapezoid_jax,
        numpy_name="scipy.integrate.trapezoid",
        jax_name="jax.scipy.integrate.trapezoid",
        description=N_("Integral of samples y over unevenly spaced points x (a scalar)."),
        make_inputs=_trapezoid_inputs,
        shape_rule=vector,
        small_shape=(1000,),
        large_shape=(4_000_000,),
        flops=lambda s: 4.0 * s[0],
    ),
    Case(
        name="cdist",
        title=N_("Pairwise Euclidean distances"),
        group="scipy",
        numpy_fn=_cdist_np,
        jax_fn=cdist_jax,
        numpy_name="scipy.spatial.distance.cdist(metric='euclidean')",
        # Code only, shown as code in either language; that it is written by hand is in the description.
        jax_name="jax.numpy: sqrt(sum((a[:, None] - b[None]) ** 2, -1))",
        description=N_("Distances between two sets of n points in d dimensions (shape n x d). "
                       "JAX has no cdist: its port is written by hand in jax.numpy. SciPy returns float64 even "
                       "for float32 input."),
        make_inputs=_two_point_sets,
        shape_rule=matrix,
        small_shape=(10, 10),
        large_shape=(1000, 64),
        flops=lambda s: 3.0 * s[0] ** 2 * s[1],
        default_port="broadcast",
        ports=[Port("vmap", _cdist_vmap, jax_name="jax.vmap over the rows of a",
                    why=N_("One row's distances written alone, mapped over the rows by jax.vmap.")),
               Port("matmul", _cdist_matmul, jax_name="sqrt(|a|^2 + |b|^2 - 2 a @ b.T)  (jax.numpy)",
                    why=N_("The matmul identity: the work becomes a matrix product, but it cancels for "
                           "nearby points."))],
        ports_why=N_("Broadcasting forms every difference (n x n x d values); vmap writes one row and lets XLA "
                     "batch it back; the matmul identity runs on the matrix unit but cancels for nearby points."),
    ),
]
