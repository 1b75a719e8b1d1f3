"""Where the time goes inside one JAX call: the summary of a profiler trace of a few
steady-state calls (engine/worker/profile.py makes it). Times are seconds per call; for a trace
without ``jaxcompare call`` annotations (``calls`` 0), over the trace's whole window."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..i18n import N_
from .errors import BadInput


@dataclass(frozen=True)
class OpTime:
    """One XLA op's device time per call. ``share`` is ``time_s`` over the host's wall time
    per call, so the shares of all ops add up to device_busy_s / wall_s (at most 1).
    ``kind``: the HLO opcode (``dot``, ``fusion``, ``custom-call``, ...), or ``kernel`` for a
    device kernel no HLO instruction names (``name`` is then the kernel's own name, never an
    invented op name), ``op`` for an HLO op whose opcode is not known. ``holds``: for a fusion, the heavy ops inside it
    (``dot``, ``reduce``, ...); for a custom call, its target (``lapack_sgesdd_ffi``)."""

    name: str
    kind: str
    time_s: float
    share: float
    holds: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "time_s": self.time_s, "share": self.share,
                "holds": list(self.holds)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> OpTime:
        return cls(name=str(data["name"]), kind=str(data["kind"]), time_s=float(data["time_s"]),
                   share=float(data["share"]), holds=tuple(str(h) for h in data.get("holds") or ()))


@dataclass(frozen=True)
class DeviceTime:
    """One device's part of a trace: its compute busy time (the union of its ops' intervals)
    and its copy time (memcpy events and copy kernels, while none of its ops ran), per call;
    ``copies``: how many copy events it ran in all the summarised calls."""

    name: str  # the trace's process name: /device:GPU:0, /host:CPU
    busy_s: float
    copy_s: float = 0.0
    copies: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "busy_s": self.busy_s, "copy_s": self.copy_s, "copies": self.copies}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DeviceTime:
        return cls(name=str(data["name"]), busy_s=float(data["busy_s"]), copy_s=float(data.get("copy_s") or 0.0),
                   copies=int(data.get("copies") or 0))


@dataclass(frozen=True)
class Profile:
    """A profiler trace's summary, or ``error`` (one line) when the profiler could not run;
    the comparison's timings never depend on it."""

    trace_file: str | None = None
    ops: tuple[OpTime, ...] = ()
    device_busy_s: float | None = None
    wall_s: float | None = None
    calls: int = 0
    other_ops_s: float = 0.0  # device time of the ops past the top ones listed in ``ops``
    where: str = ""  # which trace events were counted as device ops (CPU thunks, GPU streams)
    error: str | None = None
    # Transfer, not compute: copies while no op ran (not in device_busy_s), and each device's part.
    copy_s: float = 0.0
    devices: tuple[DeviceTime, ...] = ()

    @property
    def whole_window(self) -> bool:
        """No ``jaxcompare call`` in the trace: its whole window was summarised as one."""
        return self.ok and self.calls == 0

    @property
    def copies(self) -> int:
        return sum(d.copies for d in self.devices)

    @property
    def ok(self) -> bool:
        return self.error is None and self.wall_s is not None and self.device_busy_s is not None

    @property
    def gap_s(self) -> float | None:
        """Host wall time per call minus the device's busy and copy time: dispatch, launch and
        sync overhead (over a whole window: the time no device did anything)."""
        if not self.ok:
            return None
        return max(self.wall_s - self.device_busy_s - self.copy_s, 0.0)  # type: ignore[operator]

    @property
    def gap_share(self) -> float | None:
        """The gap as a share of the wall time per call (0 to 1): near 1, the call is all overhead."""
        if not self.ok or not self.wall_s or self.wall_s <= 0:
            return None
        return min(max(self.gap_s / self.wall_s, 0.0), 1.0)  # type: ignore[operator]

    @property
    def busy_share(self) -> float | None:
        """The ops' busy time as a share of the wall time (copies are not in it)."""
        if not self.ok or not self.wall_s or self.wall_s <= 0:
            return None
        return min(max(self.device_busy_s / self.wall_s, 0.0), 1.0)  # type: ignore[operator]

    @property
    def copy_share(self) -> float | None:
        if not self.ok or not self.wall_s or self.wall_s <= 0:
            return None
        return min(max(self.copy_s / self.wall_s, 0.0), 1.0)

    def to_dict(self) -> dict[str, Any]:
        if self.error is not None:
            return {"error": self.error, "trace_file": self.trace_file}
        return {"trace_file": self.trace_file, "ops": [op.to_dict() for op in self.ops],
                "device_busy_s": self.device_busy_s, "wall_s": self.wall_s, "gap_s": self.gap_s,
                "gap_share": self.gap_share, "other_ops_s": self.other_ops_s, "calls": self.calls,
                "whole_window": self.whole_window, "where": self.where, "copy_s": self.copy_s,
                "copies": self.copies, "devices": [d.to_dict() for d in self.devices]}

    @classmethod
    def failed(cls, message: str, trace_file: str | None = None) -> Profile:
        return cls(trace_file=trace_file, error=message)

    @classmethod
    def from_dict(cls, data: Any) -> Profile | None:
        """None for a result without a profile; BadInput names what is wrong."""
        if data is None:
            return None
        if not isinstance(data, dict):
            raise BadInput(N_("profile must be a JSON object or null"))
        if data.get("error") is not None:
            return cls.failed(str(data["error"]), data.get("trace_file"))
        try:
            busy, wall = data.get("device_busy_s"), data.get("wall_s")
            return cls(trace_file=data.get("trace_file"), ops=tuple(OpTime.from_dict(o) for o in data.get("ops") or ()),
                       device_busy_s=None if busy is None else float(busy),
                       wall_s=None if wall is None else float(wall), calls=int(data.get("calls") or 0),
                       other_ops_s=float(data.get("other_ops_s") or 0.0), where=str(data.get("where") or ""),
                       copy_s=float(data.get("copy_s") or 0.0),
                       devices=tuple(DeviceTime.from_dict(d) for d in data.get("devices") or ()))
        except (KeyError, TypeError, ValueError) as exc:
            raise BadInput(N_("malformed profile: {kind}: {error}").format(
                kind=type(exc).__name__, error=exc)) from None

