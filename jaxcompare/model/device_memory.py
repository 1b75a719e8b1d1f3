"""An accelerator's memory as JAX's allocator reports it (``device.memory_stats()``): the one
place that turns those numbers into free, total and in use, for the memory guard and the pages.

GPUs (XLA's BFC allocator) report ``bytes_limit`` (what this process may hold: a fraction of
the device, 75% unless XLA_CLIENT_MEM_FRACTION says otherwise), ``bytes_in_use``,
``pool_bytes`` (what it has taken from the driver so far) and ``largest_free_block_bytes``
always 0: BFC does not compute it. TPUs report ``bytes_limit`` (the chip's usable HBM),
``bytes_reservable_limit`` and a real ``largest_free_block_bytes``. Free is therefore
``bytes_limit - bytes_in_use`` on both; the largest free block is never read as "nothing free".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# The environment's names for a device's memory (engine/worker/environment.jax_info; saved with every result).
LIMIT_KEY, IN_USE_KEY = "memory_limit_bytes", "memory_in_use_bytes"


def _bytes(value: Any) -> int | None:
    """A byte count, or None: a missing field, a non-number, or a plugin's -1 "not set"."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        return None
    return int(value)


@dataclass(frozen=True)
class DeviceMemory:
    """What this process's allocator may use on a device (``total``) and holds (``in_use``)."""

    total: int
    in_use: int

    @property
    def free(self) -> int:
        return max(self.total - self.in_use, 0)

    @classmethod
    def from_stats(cls, stats: Mapping[str, Any] | None) -> DeviceMemory | None:
        """From a ``memory_stats()`` dict; None where it has no limit (CPU devices return None)."""
        if not isinstance(stats, Mapping):
            return None
        total = _bytes(stats.get("bytes_limit"))
        if total is None:
            return None
        return cls(total, _bytes(stats.get("bytes_in_use")) or 0)

    @classmethod
    def from_env(cls, device: Mapping[str, Any]) -> DeviceMemory | None:
        """From a device entry of the environment fingerprint (``env_fields`` wrote it)."""
        return cls.from_stats({"bytes_limit": device.get(LIMIT_KEY), "bytes_in_use": device.get(IN_USE_KEY)})

    def env_fields(self) -> dict[str, int]:
        return {LIMIT_KEY: self.total, IN_USE_KEY: self.in_use}
