"""Free, total and in use from `memory_stats()` as GPUs and TPUs return it (tests/data/memory-stats):
the memory guard, the Environment page and DEVICE.md read them through one helper, and none
reads a GPU's largest_free_block_bytes (always 0 there) or its pool as memory taken."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from jaxcompare.app import environment_view
from jaxcompare.engine.common.footprint import MemoryEstimate, check_fits
from jaxcompare.engine.worker.memory import device_memory
from jaxcompare.model.device_memory import DeviceMemory
from jaxcompare.model.errors import TooLarge
from jaxcompare.model.formatting import format_bytes

DATA = Path(__file__).parent / "data" / "memory-stats"
RECORDS = {path.stem: json.loads(path.read_text()) for path in sorted(DATA.glob("*.json"))}


def test_the_fixtures_have_each_allocators_own_keys():
    gpu, tpu = RECORDS["gpu-h200"]["memory_stats"], RECORDS["tpu-v4"]["memory_stats"]
    assert {"pool_bytes", "peak_pool_bytes"} <= set(gpu) and "bytes_reservable_limit" not in gpu
    assert gpu["largest_free_block_bytes"] == 0
    assert "bytes_reservable_limit" in tpu and "pool_bytes" not in tpu and tpu["largest_free_block_bytes"] > 0


@pytest.mark.parametrize("name", sorted(RECORDS))
def test_free_total_and_in_use_on_each_device(name):
    stats = RECORDS[name]["memory_stats"]
    memory = DeviceMemory.from_stats(stats)
    assert memory.total == stats["bytes_limit"] and memory.in_use == stats["bytes_in_use"]
    assert memory.free == stats["bytes_limit"] - stats["bytes_in_use"] > 0.99 * stats["bytes_limit"]
    # The engine reads a device's dictionary the same way: (free, total).
    assert device_memory(SimpleNamespace(memory_stats=lambda: stats)) == (memory.free, memory.total)
    # The environment records the figures and the dictionary whole; the page shows them.
    entry = {"platform": RECORDS[name]["platform"], "kind": RECORDS[name]["device_kind"], **memory.env_fields(),
             "memory_stats": stats}
    assert DeviceMemory.from_env(entry) == memory
    assert environment_view.device_memory_text(entry) == {
        "Memory free": format_bytes(memory.free), "Memory limit": format_bytes(memory.total),
        "Memory in use": format_bytes(memory.in_use)}
    banner = environment_view.device_banner({"jax": {"devices": [entry]}})
    assert f"{format_bytes(memory.free)} of {format_bytes(memory.total)} memory free" in banner.text


def test_the_recorded_h200_reports_its_pool_as_it_fills():
    """JAX 0.11.2's own dictionaries on an H200 with the default preallocation (tools/record_hardware.py):
    idle, nothing taken and largest_free_block_bytes 0; holding a 1000x1000 float32 array, the whole
    limit taken as the pool and nearly all of it one free block. Neither is "nothing free"."""
    idle = RECORDS["gpu-h200-recorded-idle"]["memory_stats"]
    holding = RECORDS["gpu-h200-recorded-holding"]["memory_stats"]
    assert idle["largest_free_block_bytes"] == 0 and idle["pool_bytes"] == 0
    assert holding["pool_bytes"] == holding["bytes_limit"] and holding["largest_free_block_bytes"] > 0
    for stats, in_use in ((idle, 0), (holding, 8_000_000)):
        memory = DeviceMemory.from_stats(stats)
        assert (memory.total, memory.in_use, memory.free) == (112583507968, in_use, 112583507968 - in_use)


@pytest.mark.parametrize("name", ["gpu-h200", "gpu-h100-preallocated", "gpu-h200-recorded-idle",
                                  "gpu-h200-recorded-holding"])
def test_the_memory_guard_lets_a_job_that_fits_run_on_a_gpu(name):
    """largest_free_block_bytes is 0 (idle) and a preallocated pool is the whole limit: neither is
    "nothing free". What this process may still allocate is bytes_limit - bytes_in_use."""
    free, total = device_memory(SimpleNamespace(memory_stats=lambda: RECORDS[name]["memory_stats"]))
    fits = MemoryEstimate(((10_000, 10_000),), 400_000_000, 400_000_000, 10**9, 16 * 10**8, "probe")
    check_fits(fits, "matmul", (10_000, 10_000), host_free=None, device_free_bytes=free, device_total_bytes=total)
    too_large = MemoryEstimate(((10**6,),), 0, 0, 0, total, "probe")
    with pytest.raises(TooLarge, match=rf"of {format_bytes(free)} free of {format_bytes(total)}\)"):
        check_fits(too_large, "matmul", (10**6,), host_free=None, device_free_bytes=free, device_total_bytes=total)


@pytest.mark.parametrize("stats", [None, {}, {"bytes_in_use": 10}, {"bytes_limit": -1, "bytes_in_use": 0},
                                   {"bytes_limit": "16 GiB"}])
def test_no_limit_means_not_reported_never_zero_free(stats):
    """CPU devices return None; a plugin may leave a field out or at -1 ("not set")."""
    assert DeviceMemory.from_stats(stats) is None
    assert device_memory(SimpleNamespace(memory_stats=lambda: stats)) is None
    entry = {"platform": "gpu", **({"memory_limit_bytes": stats.get("bytes_limit")} if stats else {})}
    assert environment_view.device_memory_text(entry)["Memory free"] == "not reported"


def test_the_cpu_device_reports_no_memory_and_the_environment_says_host_memory():
    import jax

    from jaxcompare.engine.worker.environment import jax_info

    assert device_memory(jax.devices("cpu")[0]) is None
    cpu = jax_info()["devices"][0]
    assert cpu["platform"] == "cpu" and "memory_stats" not in cpu
    assert environment_view.device_memory_text(cpu)["Memory free"] == "n/a (host memory)"
