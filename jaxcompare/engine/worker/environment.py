"""The environment fingerprint saved with every result, so a number explains itself: the host's
facts (common/host.py, safe in the server) with what this worker's JAX sees (``jax_info``), and the
devices a measurement may pick (``resolve_device``). Runs in the worker: it imports JAX.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ...i18n import N_
from ...model.device_memory import DeviceMemory
from ...model.errors import DeviceUnavailable
from ...model.platforms import PREFERRED
from ..common.host import blas_info, host_info


def present_platforms() -> dict[str, list[Any]]:
    """Devices per platform that this process can see (cpu is always there)."""
    import jax

    found: dict[str, list[Any]] = {}
    for name in PREFERRED:
        try:
            devices = jax.devices(name)
        except RuntimeError:
            continue
        if devices:
            found[name] = devices
    return found


# The device this worker measures on when the server runs one worker pair per device
# (JAXCOMPARE_DEVICES): (platform, index), set once by pin_device at start-up.
_pinned: tuple[str, int] | None = None


def pin_device(name: str) -> Any:
    """Pin this process's measurements to ``name`` ('cpu:1', 'gpu:0'); returns the device.
    A spec asking for 'auto' or for that platform then gets this device, not the first."""
    global _pinned
    platform, _, index = name.partition(":")
    platforms = present_platforms()
    devices = platforms.get(platform, [])
    if not index.isdecimal() or int(index) >= len(devices):
        present = ", ".join(f"{p}:0..{len(d) - 1}" for p, d in platforms.items())
        raise DeviceUnavailable(N_("device {name!r} is not here; present: {present}").format(
            name=name, present=present))
    _pinned = (platform, int(index))
    return devices[int(index)]


def resolve_device(kind: str) -> Any:
    """The device of ``kind`` ('auto' = GPU, else TPU, else CPU): this worker's pinned
    device when it has one of that kind, else the first."""
    platforms = present_platforms()
    if _pinned is not None and kind in ("auto", _pinned[0]):
        return platforms[_pinned[0]][_pinned[1]]
    if kind == "auto":
        for name in PREFERRED:
            if name in platforms:
                return platforms[name][0]
    if kind in platforms:
        return platforms[kind][0]
    raise DeviceUnavailable.no_kind(kind, {p: len(d) for p, d in platforms.items()})


def jax_info() -> dict[str, Any]:
    """Backend, devices and flags as this (worker) process sees them."""
    import jax
    import jax.numpy as jnp

    devices = []
    for plat, devs in present_platforms().items():
        for d in devs:
            entry: dict[str, Any] = {"platform": plat, "id": d.id, "kind": getattr(d, "device_kind", plat),
                                     "name": str(d)}
            try:
                stats = d.memory_stats()
            except Exception:
                stats = None
            memory = DeviceMemory.from_stats(stats)
            if memory is not None:
                # What the allocator said, whole (a GPU's and a TPU's keys differ), beside the figures read from it.
                entry["memory_stats"] = {k: v for k, v in stats.items() if isinstance(v, int)}
                entry.update(memory.env_fields())
            devices.append(entry)
    import jaxlib

    return {
        # The modules this process imported (env.versions reads the installed metadata): the
        # versions that really ran, whatever a request asked for.
        "version": jax.__version__,
        "jaxlib_version": getattr(jaxlib, "__version__", None) or jaxlib.version.__version__,
        "default_backend": jax.default_backend(),
        "x64_enabled": bool(jax.config.jax_enable_x64),
        "default_float": str(jnp.zeros(1, dtype=float).dtype),
        "devices": devices,
        "compilation_cache": bool(jax.config.jax_enable_compilation_cache),
    }


# What the backend said while this process opened it (libtpu warns at every start that transparent
# hugepages are off), and how long the opening took: kept for the Environment data, not printed.
_backend_start: dict[str, Any] = {"warnings": [], "seconds": None}


@contextmanager
def quiet_backend_start() -> Iterator[None]:
    """Around importing JAX and opening its devices: the warnings they give (libtpu's, from JAX's
    import) are kept in this process's environment record instead of printed into every CLI run."""
    started = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    seen = {f"{w.category.__name__}: {' '.join(str(w.message).split())}" for w in caught}
    _backend_start.update(warnings=sorted(seen), seconds=time.perf_counter() - started)


def backend_start() -> dict[str, Any]:
    """The warnings the backend gave when this process opened it, and the seconds it took."""
    return dict(_backend_start)


# Who started this worker: the runner's own processes ('local') or a Ray cluster ('ray', on that node).
_runner: dict[str, str | None] = {"runner": "local", "node": None}


def mark_runner(runner: str, node: str | None) -> None:
    """Called in a Ray task before it measures: every result from this process names the node."""
    _runner.update(runner=runner, node=node)


def collect() -> dict[str, Any]:
    """Full fingerprint (call in a worker: it imports JAX)."""
    return {**host_info(), **_runner, "jax": jax_info(), "blas": blas_info(), "backend_start": backend_start()}
