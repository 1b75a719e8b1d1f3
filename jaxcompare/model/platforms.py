"""What a JAX platform is, in one table: how many processes may hold one of its devices, what a
float32 matrix product runs at by default, and what it does in float64 (which operations are
missing, which catalog cases hit them); whether it is the host, how a worker is shown only its
device, where its clocks are read, the Ray resource a cluster job holds, its JAX builds, what a
copy to it crosses, whether Pallas compiles there, whether a Pallas grid runs in parallel, the Pallas
matmul's blocks and the names JAX lowers it by. The runner, the cluster, the environments,
the agreement, the checklist, the advice, the pitfalls, the self-check, the CLI's list and the
pages read these facts here rather than test a platform's name (tests/test_layout.py holds them
to it): a new platform is one row.

Standard library only: this module sits in the model layer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..i18n import N_

__all__ = ["is_accelerator", "platform_label", "BASE_RTOL", "BUILDS", "Build", "HOST", "PLATFORMS", "PREFERRED",
           "TF32_RTOL", "may_reduce_products", "may_use_tf32", "Float64Gap", "Platform", "ProductPrecision",
           "PRODUCT_PRECISIONS", "platform", "reduced_precision", "is_host", "backend_error_line", "error_first_line",
           "float64_line", "float64_note", "gap_line", "unsupported_label"]


@dataclass(frozen=True)
class ProductPrecision:
    """A precision a float32 matrix product or convolution can run at: its name as XLA and JAX spell
    it, what a reader is told, and the agreement's relative tolerance for it (None: float32's own)."""

    name: str
    label: str
    rtol: float | None


PRODUCT_PRECISIONS = {p.name: p for p in (
    ProductPrecision("float32", N_("full float32"), None),
    # TF32 keeps 10 of float32's 23 mantissa bits (unit roundoff 2^-11 = 4.9e-4); an H200 gave 1.4e-4 to
    # 3.9e-4 on float32 matmuls (tests/data/device-check-h200.json), so 4 units leave room, and a wrong
    # port errs by ~1.
    ProductPrecision("tensorfloat32", N_("TF32 (10-bit mantissa)"), 2e-3),
    # One bfloat16 pass keeps 8 bits (unit roundoff 2^-8 = 3.9e-3); a TPU v5e gave 4.0e-4 on the centered
    # Gram at 1000x1000 (DESIGN notes in benchmarks/RESULTS.md), so 2.5 units leave room.
    ProductPrecision("bfloat16", N_("one bfloat16 pass (8-bit mantissa)"), 1e-2),
)}


# Normwise relative tolerance per dtype (the agreement's, engine/worker/agreement.py): loose enough for
# reordered summation and LAPACK-vs-XLA algorithm differences, tight enough to catch a wrong port.
BASE_RTOL = {"float32": 1e-4, "float64": 1e-10}
TF32_RTOL = PRODUCT_PRECISIONS["tensorfloat32"].rtol


def reduced_precision(name: str | None) -> ProductPrecision | None:
    """The reduced precision ``name`` names (TF32, a bfloat16 pass), None for full float32 or none."""
    found = PRODUCT_PRECISIONS.get(name or "")
    return found if found is not None and found.rtol is not None else None


@dataclass(frozen=True)
class Float64Gap:
    """A float64 operation XLA does not implement on a platform: text its error always carries, what
    a reader is told is missing, and the catalog cases a recorded run saw fail on it (so the catalog
    can be marked without the device)."""

    pattern: str
    missing: str
    cases: frozenset[str]


@dataclass(frozen=True)
class Build:
    """A JAX build for a platform as pip installs it: ``jax[name]``, or plain ``jax`` where ``plugin`` is None
    (the CPU build), and the package that build adds beside jax (how a host's build is recognised)."""

    name: str
    plugin: str | None


@dataclass(frozen=True)
class Platform:
    """One JAX platform (``jax.default_backend()``'s name)."""

    name: str
    label: str
    # Processes that may hold one device at once; None: any number. libtpu locks a TPU chip for the
    # life of the process that opened it, and a second process fails instead of falling back.
    holders: int | None
    # What a float32 dot/convolution runs at under JAX's default matmul precision (PRODUCT_PRECISIONS).
    float32_products: str
    # jax_default_matmul_precision values under which float32 products keep float32's accuracy: on a
    # TPU 'high' is three bfloat16 passes (1.2e-5 against float64 on the centered Gram, within float32's
    # tolerance), 'highest' six (1.7e-7).
    full_products_at: frozenset[str]
    # "native", or "emulated" where the hardware has no float64 units (XLA builds it from float32 pairs).
    float64: str
    # float64 operations XLA does not implement here.
    float64_missing: tuple[Float64Gap, ...] = ()
    # (case, seconds): catalog cases whose float64 self-check at the small shape took far longer than
    # float32's (about a second), nearly all of it compiling the emulated program.
    float64_slow: tuple[tuple[str, float], ...] = ()
    # The host itself (the CPU): its device's memory is the host's, it has no third side (JAX on the CPU
    # beside it), and its ceilings are measured here rather than published.
    host: bool = False
    # The environment variable that shows a worker process only some of the host's devices (None: the
    # worker is pinned by index instead, every device visible).
    visible_devices: str | None = None
    # Where its clocks and heat are read while it runs ("nvml"; None: not read).
    clocks: str | None = None
    # How long a NumPy timing that follows this platform's calls warms up first: the runtime's host
    # threads stay busy after its work. On the CPU NumPy ran 8-12% slow for 10-50 ms after XLA's work
    # (benchmarks/RESULTS.md); on a TPU v5e host a layernorm's NumPy read 8.95 ms at once, 8.70 after
    # 0.05 s, 8.14 after 0.5 s (tests/data/tpu/kept-probe.json).
    numpy_settle_s: float = 0.05
    # The Ray resource a cluster job holds one of to measure here (engine/server/cluster.py): Ray's own GPUs,
    # else a slot a host declares (a TPU host's chips, which JAX takes together; a CPU-only host).
    ray_resource: str | None = None
    # Its JAX builds (engine/server/envs.py), the one to prefer first where a host has several.
    builds: tuple[Build, ...] = ()
    # What a host->device copy crosses, by device_kind token, where not PCIe (sides.link_name); the host
    # copies host memory to host memory and crosses none.
    links: tuple[tuple[str, str], ...] = ()
    # Whether Pallas compiles a kernel here; where not, it only interprets it (interpret=True), and the
    # kernel's time says how slow the interpreter is (Result.interpreted).
    pallas_compiles: bool = True
    # Whether a Pallas grid's programs run in parallel here (a GPU: Triton launches one per grid point)
    # rather than one after another (a TPU's Mosaic; the interpreter): only where they run in sequence may a
    # kernel accumulate into its output block across a grid axis.
    pallas_grid_parallel: bool = False
    # The Pallas matmul kernel's preferred (M, N, K) blocks here (catalog/pallas_kernels.py); None: that
    # kernel has no branch for this platform.
    pallas_matmul_blocks: tuple[int, int, int] | None = None
    # The names JAX lowers for this platform (lax.platform_dependent's keywords), where not its own name.
    lowered_as: tuple[str, ...] = ()

    @property
    def lowering_names(self) -> tuple[str, ...]:
        """The platform names a lowering for it carries ('cuda' or 'rocm' for a GPU; else its own name)."""
        return self.lowered_as or (self.name,)

    def float64_gap(self, error_text: str) -> Float64Gap | None:
        """The missing float64 operation an XLA error names, None for any other error."""
        return next((gap for gap in self.float64_missing if gap.pattern in error_text), None)

    def float64_gap_of(self, case: str) -> Float64Gap | None:
        """The missing float64 operation a catalog case was recorded failing on here, if any."""
        return next((gap for gap in self.float64_missing if case in gap.cases), None)

    def float64_seconds(self, case: str) -> float | None:
        """How long a catalog case's float64 self-check was recorded taking here, when extreme."""
        return dict(self.float64_slow).get(case)

    @property
    def single_holder(self) -> bool:
        """One process at a time: switching precision hands the device from one worker to the other,
        and pitfall 7's fresh processes take turns with the worker."""
        return self.holders == 1


PLATFORMS = {p.name: p for p in (
    Platform("cpu", "CPU", None, "float32", frozenset(), "native", host=True, ray_resource="jaxcompare_cpu",
             # Interpreted, so no speed figure: the TPU's kernel and blocks, the fewest steps to interpret.
             builds=(Build("cpu", None),), pallas_compiles=False, pallas_matmul_blocks=(1024, 1024, 512)),
    Platform("gpu", "GPU", None, "tensorfloat32", frozenset({"highest", "float32"}), "native",
             visible_devices="CUDA_VISIBLE_DEVICES", clocks="nvml", ray_resource="GPU",
             builds=(Build("cuda13", "jax-cuda13-plugin"), Build("cuda12", "jax-cuda12-plugin")),
             # A Grace Hopper or Grace Blackwell superchip: its CPU and GPU share one package.
             links=(("GH200", "NVLink-C2C"), ("GB200", "NVLink-C2C")),
             # JAX's own Triton matmul test (tests/pallas/pallas_test.py, test_matmul_block_spec) runs 64 or 128
             # by 64 or 128 output blocks with K steps of 32; its largest, not measured here.
             pallas_grid_parallel=True, pallas_matmul_blocks=(128, 128, 32), lowered_as=("cuda", "rocm")),
    Platform("tpu", "TPU", 1, "bfloat16", frozenset({"highest", "float32", "high", "bfloat16_3x", "tensorfloat32"}),
             "emulated", numpy_settle_s=0.5, ray_resource="jaxcompare_tpu", builds=(Build("tpu", "libtpu"),),
             # On a TPU v5e at 4096x4096 float32, 1024x1024x512 ran 881 µs beside jnp.matmul's 734 µs, 512³
             # 1.54 ms and 256³ 3.29 ms (docs/ports.md, "Measured").
             pallas_matmul_blocks=(1024, 1024, 512),
             float64_missing=(
                 # tests/data/tpu/selfcheck-x64.jsonl (TPU v5e, JAX 0.10.2): "UNIMPLEMENTED: Only F32 and C64 types
                 # are implemented in LuDecomposition; got shape f64[10,10]" for every case that factors a matrix.
                 Float64Gap("LuDecomposition", N_("float64 LU decomposition (XLA implements it in float32 only)"),
                            frozenset({"solve", "inv", "det", "slogdet", "expm", "lu"})),
                 # tests/data/tpu/selfcheck-x64.jsonl: "INVALID_ARGUMENT: ... Unexpected operand type for FFT:
                 # c128[1024]" (f64[1024] for the real transform).
                 Float64Gap("Unexpected operand type for FFT", N_("float64 FFTs (XLA implements them in float32 only)"),
                            frozenset({"fft", "fft2", "rfft", "fftconvolve"})),
             ),
             # tests/data/tpu/selfcheck-x64.jsonl: cumsum at 1000 elements 148 s (0.66 s at x32), svd at 10x10 40 s
             # (1.2 s at x32); that run stopped at 250 s, before gammaln, norm_logpdf, trapezoid and cdist.
             float64_slow=(("cumsum", 147.65), ("svd", 39.6))),
)}


# The platform a worker measures on when its device is not named: an accelerator before the host.
PREFERRED = tuple(sorted(PLATFORMS, key=lambda name: PLATFORMS[name].host))
# The host's own platform (the CPU): JAX on the host, and the third side.
HOST = next(found for found in PLATFORMS.values() if found.host)
# Every platform's JAX builds by name (cpu, cuda13, cuda12, tpu).
BUILDS = {build.name: build for found in PLATFORMS.values() for build in found.builds}


def platform(name: str | None) -> Platform | None:
    """The table's entry for a platform name ('cuda' and 'rocm' are GPUs); None when unknown."""
    if name is None:
        return None
    name = name.lower()
    return PLATFORMS.get(name) or next((p for p in PLATFORMS.values() if name in p.lowered_as), None)


def interpreted_here(pallas: bool, name: str | None) -> bool:
    """Whether a port (a Pallas kernel when ``pallas``) runs only interpreted on platform ``name``
    (interpret=True where the table says Pallas does not compile): its times are then no speed figure."""
    found = platform(name)
    return pallas and found is not None and not found.pallas_compiles


def may_reduce_products(dtype: str, platform_name: str, matmul_precision: str) -> str | None:
    """The reduced precision float32 products may run at here ('tensorfloat32' on a GPU, 'bfloat16' on
    a TPU), or None: not float32, or a platform or matmul precision that keeps it."""
    entry = platform(platform_name)
    if dtype != "float32" or entry is None or entry.float32_products == "float32":
        return None
    return None if matmul_precision.lower() in entry.full_products_at else entry.float32_products


def may_use_tf32(dtype: str, platform: str, matmul_precision: str) -> bool:
    """Whether a GPU may compute float32 products in TF32 here: float32, on a GPU, at a default
    matmul precision that does not keep full float32."""
    return may_reduce_products(dtype, platform, matmul_precision) == "tensorfloat32"


def is_host(name: str | None) -> bool:
    """Whether a platform name is the host's own (the CPU): an unknown one counts as an accelerator."""
    found = platform(name)
    return found is not None and found.host


def is_accelerator(name: str | None) -> bool:
    """Whether a platform name is a known accelerator (a GPU, a TPU): neither the host nor unknown."""
    found = platform(name)
    return found is not None and not found.host


def platform_label(name: str) -> str:
    """A platform as a reader is told it ('GPU'), or its name as given where the table lacks it."""
    found = platform(name)
    return found.label if found is not None else name


_LOCKFILE = re.compile(r"libtpu multi-process lockfile|TPU is already in use by process with pid (\d+)")
_PID = re.compile(r"in use by process with pid (\d+)")


def backend_error_line(text: str) -> str | None:
    """One line for an error that says a device is held by another process, else None."""
    if not _LOCKFILE.search(text):
        return None
    pid = _PID.search(text)
    holder = N_("process {pid}").format(pid=pid.group(1)) if pid else N_("another program")
    return N_("the TPU is in use by {holder}: one process at a time can hold a TPU chip, so stop that program "
              "(or wait for it to finish) and try again").format(holder=holder)


# XLA appends the C++ stack to some errors, one "@ 0x7ee8eb8f2ea2  xla::..." frame after another,
# starting on the message's own line: addresses that mean nothing off that build.
_FRAMES = re.compile(r"\s+@\s+0x[0-9a-fA-F]+.*", re.DOTALL)


def error_first_line(text: str) -> str:
    """An error's first line without XLA's stack addresses: what an operator keeps of it."""
    line = next((part.strip() for part in text.splitlines() if part.strip()), "")
    return _FRAMES.sub("", line).rstrip(" :")


def gap_line(found: Platform, gap: Float64Gap) -> str:
    """What the platform lacks and what to do instead, worded for the CLI and the app alike."""
    return N_("this {platform} has no {missing}: choose x32, or the CPU device").format(
        platform=found.label, missing=gap.missing)


def float64_emulated(platform_name: str | None, precision: str) -> bool:
    """Whether a run at ``precision`` on platform ``platform_name`` computes in float64 the platform only
    emulates (x64 on a TPU)."""
    found = platform(platform_name)
    return found is not None and precision == "x64" and found.float64 == "emulated"


def float64_note(platform_name: str | None, precision: str) -> str | None:
    """What a result measured in float64 must say where the platform only emulates it; None elsewhere."""
    if platform_name is None or not float64_emulated(platform_name, precision):
        return None
    return N_("float64 on a {platform} is emulated in software by XLA (from float32 pairs): slower than float32 "
              "and, for iterative algorithms, less accurate").format(platform=platform_label(platform_name))


def unsupported_label(found: Platform) -> str:
    """A case's status where the platform lacks a float64 operation it needs."""
    return N_("not on {platform} at x64").format(platform=found.label)


def float64_line(platform_name: str | None, precision: str, error_text: str) -> str | None:
    """One plain line for an error XLA raised because the platform lacks a float64 operation;
    None for any other error, platform or precision (the caller shows the error as it is)."""
    found = platform(platform_name)
    if found is None or precision != "x64":
        return None
    gap = found.float64_gap(error_text)
    return None if gap is None else gap_line(found, gap)
