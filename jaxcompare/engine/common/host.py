"""What is known of the host without importing JAX: its CPU, cores, memory, the environment variables
and package versions that change a measurement, and NumPy's BLAS. Both halves read it: the server's
estimates and the Environment page here, every result's fingerprint in the worker (environment.collect).
"""

from __future__ import annotations

import os
import platform
import socket
import sys
from importlib import metadata
from typing import Any

ENV_VARS = (
    "JAX_ENABLE_X64", "JAX_PLATFORMS", "JAX_PLATFORM_NAME", "XLA_FLAGS",
    "XLA_PYTHON_CLIENT_PREALLOCATE", "XLA_CLIENT_MEM_FRACTION", "XLA_PYTHON_CLIENT_MEM_FRACTION",
    "XLA_PYTHON_CLIENT_ALLOCATOR", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
    "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "CUDA_VISIBLE_DEVICES", "TF_CPP_MIN_LOG_LEVEL",
    "JAXCOMPARE_MODE", "JAXCOMPARE_WORKER_DEVICE",
)
PACKAGES = ("jax", "jaxlib", "numpy", "scipy", "streamlit", "altair")


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def versions(*extra: str) -> dict[str, str | None]:
    """Python's and each package's version (PACKAGES, then ``extra``); None if not installed."""
    found: dict[str, str | None] = {"python": platform.python_version()}
    for name in PACKAGES + extra:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    return found


def host_info() -> dict[str, Any]:
    """What can be known without importing JAX (safe in the app process)."""
    try:
        affinity = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        affinity = os.cpu_count()
    try:
        import psutil

        mem_total = psutil.virtual_memory().total
        mem_available = psutil.virtual_memory().available
        physical = psutil.cpu_count(logical=False)
    except Exception:
        mem_total = mem_available = physical = None
    return {
        "hostname": socket.gethostname(),
        "platform": platform.platform(),
        "python_executable": sys.executable,
        "cpu_model": cpu_model(),
        "cpu_count_logical": os.cpu_count(),
        "cpu_count_physical": physical,
        "cpu_affinity": affinity,
        "memory_total_bytes": mem_total,
        "memory_available_bytes": mem_available,
        "env_vars": {k: os.environ[k] for k in ENV_VARS if k in os.environ},
        "versions": versions(),
    }


def blas_info() -> list[dict[str, Any]]:
    """NumPy's BLAS/OpenMP libraries and their thread counts (threadpoolctl)."""
    try:
        import numpy  # noqa: F401  (loads its BLAS so threadpoolctl can see it)
        from threadpoolctl import threadpool_info

        keep = ("user_api", "internal_api", "num_threads", "version", "threading_layer", "architecture")
        return [{k: info.get(k) for k in keep} for info in threadpool_info()]
    except Exception:
        return []
