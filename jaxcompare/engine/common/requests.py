"""What crosses the queue to a worker besides a Spec: the typed arguments of a step, made in the
server and read in the worker, so neither half imports the other for them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...model.spec import Spec


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


@dataclass(frozen=True)
class MeasureRequest:
    """A measurement step: the Spec to measure (its case looked up once, in the server) and its options."""

    spec: Spec
    options: MeasureOptions = MeasureOptions()


@dataclass(frozen=True)
class PitfallsRequest:
    """The pitfalls lab's step: which sections, and pitfall 7's fresh processes where the runner ran
    them (common/fresh.FreshProcesses.to_dict(); None: the worker starts them itself)."""

    spec: Spec
    sections: tuple[str, ...]
    fresh: dict[str, Any] | None = None


@dataclass(frozen=True)
class SpecRequest:
    """A step that needs nothing but its Spec (pitfall 3's fair float64 side)."""

    spec: Spec


@dataclass(frozen=True)
class SelfCheckRequest:
    """Agreement of the named cases (None: all) of the catalog or of a cases file."""

    names: tuple[str, ...] | None = None
    cases_file: str | None = None


@dataclass(frozen=True)
class ListCasesRequest:
    """A user's cases file, loaded in a worker (it is code) and described; ``stamp`` (mtime in ns, size)
    names the version of it the listing is kept under."""

    cases_file: str
    stamp: tuple[int, int] = (0, 0)


@dataclass(frozen=True)
class NoRequest:
    """A step that takes no arguments (the worker's environment)."""
