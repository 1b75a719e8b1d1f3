"""The GPU's clocks and heat through NVML (`nvidia-ml-py`, module `pynvml`, installed with the
CUDA build): read just before the timed runtime blocks and after each JAX block (model/clocks.py).

Off NVIDIA GPUs nothing is read. On a GPU without NVML (the bindings or the driver's library
missing) the readings say why in one line; the timings never depend on them.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any

from ...model.clocks import ClockReading, GpuClocks
from ...model.platforms import platform


@functools.cache
def _nvml() -> tuple[Any, str | None]:
    """The initialised pynvml module, or None and why not. Once per process: NVML stays open
    for the worker's life (nvmlInit is counted, and costs a few ms each time)."""
    try:
        import pynvml
    except ImportError:
        return None, "NVML's Python bindings are not installed (pip install nvidia-ml-py)"
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        return None, f"NVML could not start: {exc}"
    return pynvml, None


def nvml_target(device: Any) -> int | str:
    """NVML's index (or UUID) of a JAX GPU device. JAX numbers the GPUs CUDA_VISIBLE_DEVICES
    shows; NVML numbers every GPU in PCI order, which CUDA's order matches on a machine of one
    GPU model (the name is checked against the device's kind after)."""
    ordinal = getattr(device, "local_hardware_id", None)
    ordinal = device.id if ordinal is None else ordinal
    visible = [v.strip() for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
    if ordinal < len(visible):
        entry = visible[ordinal]
        return int(entry) if entry.isdigit() else entry
    return ordinal


def _number(call: Callable[[], Any], nvml: Any) -> int | None:
    try:
        return int(call())
    except nvml.NVMLError:  # not supported on this board (or a MIG slice): that reading is unknown
        return None


def nvml_values(nvml: Any, handle: Any) -> dict[str, int | None]:
    """One reading of a GPU as NVML's calls return it (the keys and units of ClockReading.from_nvml;
    None for a value the board does not report)."""
    reasons = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
        nvml.nvmlDeviceGetCurrentClocksThrottleReasons  # the name before driver R535
    return {
        "clock_sm_mhz": _number(lambda: nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM), nvml),
        "clock_mem_mhz": _number(lambda: nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_MEM), nvml),
        "temperature_gpu_c": _number(lambda: nvml.nvmlDeviceGetTemperature(handle, nvml.NVML_TEMPERATURE_GPU), nvml),
        "power_usage_mw": _number(lambda: nvml.nvmlDeviceGetPowerUsage(handle), nvml),
        "clocks_event_reasons": _number(lambda: reasons(handle), nvml),
    }


class ClockWatch:
    """Reads a GPU's clocks before the runtime blocks and after each JAX block; ``result()`` is
    the GpuClocks for the Result (None off GPUs)."""

    def __init__(self, device: Any) -> None:
        self._handle: Any = None
        self._nvml: Any = None
        self._before: ClockReading | None = None
        self._after: ClockReading | None = None
        found = platform(getattr(device, "platform", None))
        self.applicable = found is not None and found.clocks == "nvml"
        self.name: str | None = None
        self.error: str | None = None
        if self.applicable:
            self._open(device)

    def _open(self, device: Any) -> None:
        nvml, self.error = _nvml()
        if nvml is None:
            return
        target = nvml_target(device)
        try:
            if isinstance(target, int):
                handle = nvml.nvmlDeviceGetHandleByIndex(target)
            else:
                handle = nvml.nvmlDeviceGetHandleByUUID(target)
            name = nvml.nvmlDeviceGetName(handle)
        except nvml.NVMLError as exc:
            self.error = f"NVML has no GPU {target}: {exc}"
            return
        name = name.decode() if isinstance(name, bytes) else str(name)
        kind = getattr(device, "device_kind", "")
        if kind and name != kind:
            self.error = f"NVML's GPU {target} is {name}, not {kind}, the GPU JAX ran on"
            return
        self._nvml, self._handle, self.name = nvml, handle, name

    def read(self) -> ClockReading | None:
        """One reading now; None where nothing can be read."""
        if self._handle is None:
            return None
        return ClockReading.from_nvml(nvml_values(self._nvml, self._handle))

    def before(self) -> None:
        self._before = self.read()

    def after(self) -> None:
        """After a JAX runtime block: the last call wins, so it is the reading after the last one."""
        self._after = self.read()

    def result(self) -> GpuClocks | None:
        if not self.applicable:
            return None
        return GpuClocks(device=self.name, before=self._before, after=self._after, error=self.error)
