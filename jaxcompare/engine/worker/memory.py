"""Memory as the worker sees it: glibc told to keep freed memory for reuse, a job's outputs sized by
``jax.eval_shape`` (the rest of its footprint is common/footprint.py's), and a device's free memory.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from ...model.cases import Case
from ...model.device_memory import DeviceMemory
from ..common import footprint
from ..common.footprint import MemoryEstimate

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


def output_bytes(case: Case, shapes: tuple[tuple[int, ...], ...], dtype: str) -> int | None:
    """Exact output size from ``jax.eval_shape`` (worker only: imports JAX)."""
    try:
        import jax

        structs = [jax.ShapeDtypeStruct(s, np.dtype(dtype)) for s in shapes]
        out = jax.eval_shape(case.jax_fn, *structs)
        return int(sum(math.prod(x.shape) * np.dtype(x.dtype).itemsize for x in jax.tree_util.tree_leaves(out)))
    except Exception:
        return None


def estimate(case: Case, shape: tuple[int, ...], dtype: str, backend: str = "cpu") -> MemoryEstimate:
    """The job's footprint (common/footprint.estimate) with its outputs sized by ``jax.eval_shape``."""
    return footprint.estimate(case, shape, dtype, backend, outputs_of=output_bytes)


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
