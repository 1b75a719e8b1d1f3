"""The devices a command line asks for, checked before anything is measured or said to be."""

from __future__ import annotations

from typing import Any

from ..model.errors import DeviceUnavailable, JobFailed
from ..model.platforms import platform


def check_devices(runner: Any, asked: list[str], precision: str = "x32") -> None:
    """Each device kind in ``asked`` is here, said in one line before measuring: else a GPU asked for on a
    machine with none fails once a worker tried it, after "measuring ..." (an atlas: every cell of it, one
    worker start at a time). The ``precision`` worker answers: the one the command measures on."""
    asked = [kind for kind in asked if kind != "auto"]
    if not asked:
        return
    try:
        env = runner.environment(precision)
    except JobFailed:  # no worker (another program holds the device): the measurement says so, and stops
        return
    counts: dict[str, int] = {}
    for device in (env.get("jax") or {}).get("devices") or []:
        found = platform(device.get("platform"))
        name = found.name if found is not None else str(device.get("platform"))
        counts[name] = counts.get(name, 0) + 1
    for kind in asked:
        if kind not in counts:
            raise DeviceUnavailable.no_kind(kind, counts)
