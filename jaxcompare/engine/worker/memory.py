"""How much memory a job will need, known before anything big is allocated: inputs only in
the server/CLI process (preflight), inputs and outputs again in the worker.

Input shapes are found by probing ``make_inputs`` at a tiny shape whose sizes are distinct
primes, then mapping each probe size back to the requested size; output shapes come from
``jax.eval_shape`` on those input shapes (in the worker, no allocation).
"""

from __future__ import annotations

import functools
import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ...i18n import N_
from ...model.cases import Case, format_shape
from ...model.device_memory import DeviceMemory
from ...model.errors import TooLarge
from ...model.formatting import format_bytes

PROBE_SIZES = (13, 17, 19, 23)
# Leave room for the interpreter, XLA's workspace and the other worker.
HOST_FRACTION = 0.7
DEVICE_FRACTION = 0.8


# glibc hands a freed block of 128 KiB or more back to the system (munmap, or a trim of the heap's
# top) depending on the heap's history, and the next call page-faults it in again: NumPy's fft at
# 262144 ran at 3.4 or 8.3 ms, its centered Gram at 400x400 0.71 or 1.25 ms, from one input to the
# next (benchmarks/RESULTS.md, "Two speeds of the same NumPy call"). Kept below this size, every
# call reuses the memory the last one freed, as a long-running program's steady state does. glibc
# before 2.35 takes an mmap threshold of at most 32 MiB (half its largest heap): that, there.
KEEP_FREED_BYTES = 1 << 30
OLD_GLIBC_MMAP_MAX = 32 << 20
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's malloc.h


@functools.cache
def keep_freed_memory() -> bool:
    """Make glibc keep freed memory for reuse (mallopt: no trimming below KEEP_FREED_BYTES free, no
    mmap below KEEP_FREED_BYTES, or 32 MiB on an older glibc), once per process, before anything is
    timed; False where the C library is not glibc or refused."""
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # macOS, musl: no mallopt
        return False
    mapped = mallopt(_M_MMAP_THRESHOLD, KEEP_FREED_BYTES) or mallopt(_M_MMAP_THRESHOLD, OLD_GLIBC_MMAP_MAX)
    trimmed = mallopt(_M_TRIM_THRESHOLD, KEEP_FREED_BYTES)
    return bool(mapped and trimmed)


@dataclass(frozen=True)
class MemoryEstimate:
    input_shapes: tuple[tuple[int, ...], ...]
    input_bytes: int
    output_bytes: int | None
    host_bytes: int
    device_bytes: int
    method: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _probe(case: Case, probe: tuple[int, ...], dtype: np.dtype) -> list[tuple[int, ...]] | None:
    if case.shape_rule(probe):
        return None
    try:
        arrays = case.make_inputs(probe, dtype, np.random.default_rng(0))
    except Exception:
        return None
    arrays = arrays if isinstance(arrays, tuple | list) else (arrays,)
    return [tuple(np.shape(a)) for a in arrays]


def input_shapes(case: Case, shape: tuple[int, ...], dtype: str) -> tuple[tuple[tuple[int, ...], ...], str]:
    """The input shapes ``make_inputs`` would build for ``shape``, without building them."""
    dt = np.dtype(dtype)
    # One distinct prime per distinct size, so equal sizes (square matrices) stay equal and
    # every probe size maps back to exactly one requested size.
    distinct = list(dict.fromkeys(shape))
    if len(distinct) <= len(PROBE_SIZES):
        size_map = dict(zip(PROBE_SIZES, distinct, strict=False))
        probe = tuple(PROBE_SIZES[distinct.index(n)] for n in shape)
        probed = _probe(case, probe, dt)
        if probed is not None:
            mapped = tuple(tuple(size_map.get(d, d) for d in arr_shape) for arr_shape in probed)
            return mapped, "probe"
    # Unknown layout: assume one input of the requested shape.
    return (tuple(shape),), "assumed"


def output_bytes(case: Case, shapes: tuple[tuple[int, ...], ...], dtype: str) -> int | None:
    """Exact output size from ``jax.eval_shape`` (worker only: imports JAX)."""
    try:
        import jax

        structs = [jax.ShapeDtypeStruct(s, np.dtype(dtype)) for s in shapes]
        out = jax.eval_shape(case.jax_fn, *structs)
        return int(sum(math.prod(x.shape) * np.dtype(x.dtype).itemsize for x in jax.tree_util.tree_leaves(out)))
    except Exception:
        return None


def estimate(case: Case, shape: tuple[int, ...], dtype: str, backend: str = "cpu",
             with_outputs: bool = True) -> MemoryEstimate:
    """Peak host and device bytes for one comparison (inputs, outputs, float64 reference)."""
    shapes, method = input_shapes(case, shape, dtype)
    itemsize = np.dtype(dtype).itemsize
    inputs = sum(math.prod(s) for s in shapes) * itemsize
    outputs = output_bytes(case, shapes, dtype) if with_outputs else None
    out = outputs if outputs is not None else inputs
    widen = 8 / itemsize  # the float64 reference copies
    host = inputs + out + (inputs + out) * widen + case.numpy_temporaries * out * widen
    device = 2 * (inputs + out)
    if backend == "cpu":  # the CPU "device" is host memory
        host += device
    return MemoryEstimate(shapes, int(inputs), outputs, int(host), int(device), method)


def host_available() -> int | None:
    try:
        import psutil

        return int(psutil.virtual_memory().available)
    except Exception:
        return None


def device_memory(device: Any) -> tuple[int, int] | None:
    """(free, total) bytes on an accelerator from ``memory_stats()`` (model/device_memory.py: what
    this process's allocator may use and holds). None where the device does not say (CPU devices)."""
    try:
        memory = DeviceMemory.from_stats(device.memory_stats())
    except Exception:
        return None
    return (memory.free, memory.total) if memory else None


def device_free(device: Any) -> int | None:
    """Free bytes on an accelerator, if it says (CPU devices do not)."""
    memory = device_memory(device)
    return memory[0] if memory else None


def check_fits(est: MemoryEstimate, case_name: str, shape: tuple[int, ...], *,
               host_free: int | None, device_free_bytes: int | None,
               device_total_bytes: int | None = None) -> None:
    """Refuse, naming the limit, when the estimate does not fit; allocate nothing."""
    where = {"case": case_name, "shape": format_shape(shape)}
    if host_free is not None and est.host_bytes > HOST_FRACTION * host_free:
        raise TooLarge(N_("{case} at {shape} needs about {needed} of host memory; the limit here is {limit} "
                          "({fraction:.0%} of {available} available)").format(
            **where, needed=format_bytes(est.host_bytes), limit=format_bytes(HOST_FRACTION * host_free),
            fraction=HOST_FRACTION, available=format_bytes(host_free)))
    if device_free_bytes is not None and est.device_bytes > DEVICE_FRACTION * device_free_bytes:
        values = {**where, "needed": format_bytes(est.device_bytes),
                  "limit": format_bytes(DEVICE_FRACTION * device_free_bytes), "fraction": DEVICE_FRACTION,
                  "free": format_bytes(device_free_bytes)}
        if device_total_bytes:
            raise TooLarge(N_("{case} at {shape} needs about {needed} of device memory; the limit here is {limit} "
                              "({fraction:.0%} of {free} free of {total})").format(
                **values, total=format_bytes(device_total_bytes)))
        raise TooLarge(N_("{case} at {shape} needs about {needed} of device memory; the limit here is {limit} "
                          "({fraction:.0%} of {free} free)").format(**values))
