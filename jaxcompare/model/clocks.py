"""A GPU's clocks and heat around the timed runtime blocks, as NVML read them (engine/worker/gpu_clocks.py).

A GPU idles at a few hundred MHz, boosts under load (an H200 read 345 MHz idle, 1980 MHz just
after a matrix product) and slows when hot or at its power cap, so its timings move with its
clocks. ``GpuClocks`` keeps one reading just before the runtime blocks and one just after the
last JAX block, and says whether the SM clock held and no thermal or power limit was hit.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..i18n import N_
from .errors import BadInput

# NVML's clocks event reasons (nvml.h, nvmlClocksEventReason*, formerly ...ThrottleReason*): bit -> name.
THROTTLE_REASONS = {
    0x1: "GPU_IDLE", 0x2: "APPLICATIONS_CLOCKS_SETTING", 0x4: "SW_POWER_CAP", 0x8: "HW_SLOWDOWN",
    0x10: "SYNC_BOOST", 0x20: "SW_THERMAL_SLOWDOWN", 0x40: "HW_THERMAL_SLOWDOWN",
    0x80: "HW_POWER_BRAKE_SLOWDOWN", 0x100: "DISPLAY_CLOCK_SETTING",
}
# The reasons that mean heat or power held the clocks down. NVML documents HW_SLOWDOWN as engaged
# by high temperature, an external power brake or too high a power draw: it counts too.
HEAT_OR_POWER = frozenset({"SW_POWER_CAP", "HW_SLOWDOWN", "SW_THERMAL_SLOWDOWN", "HW_THERMAL_SLOWDOWN",
                           "HW_POWER_BRAKE_SLOWDOWN"})
# A fall of the SM clock past this share, from before the runtime blocks to after them, warns.
SM_DROP_WARN = 0.10


def _value(data: Mapping[str, Any], key: str, kind: type = int) -> Any:
    """A reading's number, or None (NVML may not support it on a board); anything else is BadInput."""
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value or abs(value) == float("inf"):
        raise BadInput(N_("gpu_clocks: {key} must be a number, got {value!r}").format(key=key, value=value))
    return kind(value)


@dataclass(frozen=True)
class ClockReading:
    """One NVML reading: clocks in MHz, temperature in °C, power in W, the reasons bitmask."""

    sm_mhz: int | None = None
    memory_mhz: int | None = None
    temperature_c: int | None = None
    power_w: float | None = None
    throttle_reasons: int | None = None

    @property
    def reasons(self) -> tuple[str, ...]:
        """The names of the reasons set, in bit order (unknown bits by their value)."""
        mask = self.throttle_reasons or 0
        return tuple(THROTTLE_REASONS.get(1 << bit, hex(1 << bit)) for bit in range(mask.bit_length())
                     if mask >> bit & 1)

    @classmethod
    def from_nvml(cls, raw: Mapping[str, Any]) -> ClockReading:
        """From NVML's own answers: nvmlDeviceGetClockInfo (MHz, SM and MEM), nvmlDeviceGetTemperature
        (°C), nvmlDeviceGetPowerUsage (milliwatts), nvmlDeviceGetCurrentClocksEventReasons (bits)."""
        power_mw = _value(raw, "power_usage_mw", float)
        return cls(sm_mhz=_value(raw, "clock_sm_mhz"), memory_mhz=_value(raw, "clock_mem_mhz"),
                   temperature_c=_value(raw, "temperature_gpu_c"),
                   power_w=None if power_mw is None else power_mw / 1000,
                   throttle_reasons=_value(raw, "clocks_event_reasons"))

    def to_dict(self) -> dict[str, Any]:
        return {"sm_mhz": self.sm_mhz, "memory_mhz": self.memory_mhz, "temperature_c": self.temperature_c,
                "power_w": self.power_w, "throttle_reasons": self.throttle_reasons,
                "throttle_reason_names": list(self.reasons)}

    @classmethod
    def from_dict(cls, data: Any) -> ClockReading | None:
        if not isinstance(data, Mapping):
            return None
        return cls(sm_mhz=_value(data, "sm_mhz"), memory_mhz=_value(data, "memory_mhz"),
                   temperature_c=_value(data, "temperature_c"), power_w=_value(data, "power_w", float),
                   throttle_reasons=_value(data, "throttle_reasons"))


@dataclass(frozen=True)
class GpuClocks:
    """NVML's readings of the GPU JAX ran on, before and after the runtime blocks; or ``error``
    (one line) where NVML could not be read on a GPU. None in a Result: not a GPU, or saved before."""

    device: str | None = None  # NVML's name of the GPU it read (the JAX device's kind, checked)
    before: ClockReading | None = None
    after: ClockReading | None = None
    error: str | None = None

    @property
    def sm_drop(self) -> float | None:
        """How far the SM clock fell, as a share of its reading before (negative: it rose)."""
        if self.before is None or self.after is None or not self.before.sm_mhz or self.after.sm_mhz is None:
            return None
        return (self.before.sm_mhz - self.after.sm_mhz) / self.before.sm_mhz

    @property
    def throttled(self) -> tuple[str, ...]:
        """The heat or power reasons set in either reading, each once."""
        readings = [r for r in (self.before, self.after) if r is not None]
        return tuple(dict.fromkeys(name for r in readings for name in r.reasons if name in HEAT_OR_POWER))

    @property
    def steady(self) -> bool | None:
        """False when the SM clock fell more than SM_DROP_WARN or a heat or power reason was set;
        None when there is no SM clock to judge."""
        drop = self.sm_drop
        if drop is None:
            return None
        return drop <= SM_DROP_WARN and not self.throttled

    def to_dict(self) -> dict[str, Any]:
        """The readings, and beside them for readers what from_dict recomputes (sm_drop, throttled)."""
        return {"device": self.device, "before": None if self.before is None else self.before.to_dict(),
                "after": None if self.after is None else self.after.to_dict(), "error": self.error,
                "sm_drop": self.sm_drop, "throttled": list(self.throttled), "steady": self.steady}

    @classmethod
    def from_dict(cls, data: Any) -> GpuClocks | None:
        """None for a result saved without readings (before they were recorded, or not a GPU)."""
        if not isinstance(data, Mapping):
            return None
        text = {key: data.get(key) for key in ("device", "error")}
        for key, value in text.items():
            if value is not None and not isinstance(value, str):
                raise BadInput(N_("gpu_clocks: {key} must be text, got {value!r}").format(key=key, value=value))
        return cls(device=text["device"], before=ClockReading.from_dict(data.get("before")),
                   after=ClockReading.from_dict(data.get("after")), error=text["error"])
