"""What crosses the queue to a worker besides a Spec: the typed arguments of a step, made in the
server and read in the worker, so neither half imports the other for them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class MeasureOptions:
    """What a measurement job carries besides its Spec, each by name: ``case_bytes``, a Case sent
    with the job (engine/common/shipping.py) and measured instead of the catalog's; ``profile_dir``, an
    absolute folder to trace a few calls into, after the timed phases; ``first_calls``, the fresh
    processes' first calls (common/fresh.FreshCall as dicts) where the runner ran them, on a device one
    process at a time may hold (None: measure() starts them itself)."""

    case_bytes: bytes | None = None
    profile_dir: str | None = None
    first_calls: tuple[dict[str, Any], ...] | None = None
