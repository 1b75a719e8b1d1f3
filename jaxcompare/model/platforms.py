"""What a JAX platform is, in one table: how many processes may hold one of its devices, what a
float32 matrix product runs at by default, and what it does in float64. The runner, the
agreement, the checklist, the pitfalls and the pages read these facts here.

Standard library only: this module sits in the model layer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..i18n import N_

__all__ = ["PLATFORMS", "Platform", "ProductPrecision", "PRODUCT_PRECISIONS", "platform", "backend_error_line"]


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
    # (text in XLA's error, what is missing): float64 operations XLA does not implement here.
    float64_missing: tuple[tuple[str, str], ...] = ()

    @property
    def single_holder(self) -> bool:
        """One process at a time: switching precision hands the device from one worker to the other,
        and pitfall 7's fresh processes take turns with the worker."""
        return self.holders == 1


PLATFORMS = {p.name: p for p in (
    Platform("cpu", "CPU", None, "float32", frozenset(), "native"),
    Platform("gpu", "GPU", None, "tensorfloat32", frozenset({"highest", "float32"}), "native"),
    # Recorded on a TPU v5e with JAX 0.10.2 (tests/data/tpu/README.md): float64 LU and FFT fail to compile.
    Platform("tpu", "TPU", 1, "bfloat16", frozenset({"highest", "float32", "high", "bfloat16_3x", "tensorfloat32"}),
             "emulated", (
        ("LuDecomposition", N_("float64 LU decomposition")),
        ("Unexpected operand type for FFT", N_("float64 FFTs")),
    )),
)}


def platform(name: str | None) -> Platform | None:
    """The table's entry for a platform name ('cuda' and 'rocm' are GPUs); None when unknown."""
    if name is None:
        return None
    name = name.lower()
    return PLATFORMS.get("gpu" if name in ("cuda", "rocm") else name)


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
