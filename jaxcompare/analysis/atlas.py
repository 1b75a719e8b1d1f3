"""The speedup atlas: every case at a small, a middle and a large shape, in float32 and float64, on each
device, as one file (``jaxcompare atlas`` writes it a cell at a time; the Atlas page draws it).

Pure: no JAX, no Streamlit. A cell holds its whole Result (``Result.to_dict``), so the checklist is
read again whenever an atlas is shown (``trust``, ``direction``): a cell set aside keeps its doubt,
whatever version of the rules recorded it. A cell the device cannot run (float64 LU on a TPU) holds
its one plain line instead, never a failure. The file keeps its plan too (every cell a run set out to
measure), so an atlas stopped partway reads as partial, its missing cells named, never as a smaller whole.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import gzip
import json
import math
import os
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..i18n import N_
from ..model.cases import Case
from ..model.errors import BadInput, json_reason
from ..model.reruns import rerun_ratio_range
from ..model.result import Result
from .sweep import crossover, ladder
from .trust import JAX_FASTER, NUMPY_FASTER, TRUSTED_SPREAD, Direction, direction, trust

SCHEMA = "jaxcompare.atlas/1"
SIZES = ("small", "middle", "large")
# Which speedup the atlas colours: JAX's blocked call (the headline), or calls back to back (a loop's).
MEASURES = ("blocked", "back_to_back")
MEASURED, UNMEASURABLE = "measured", "unmeasurable"
# How a cell reads: a trusted speedup, a doubtful one (set aside by the checklist), a cell the device
# cannot run, or a figure not measured (calls back to back in a result saved before they were timed).
TRUSTED, DOUBTFUL, MISSING = "trusted", "doubtful", "missing"
# A cell of the plan the atlas does not hold: the run stopped before it (Ctrl-C, the device's time ran
# out), or it failed and was not tried again. Neither a figure nor a device's refusal.
NOT_MEASURED = "not_measured"
ENV_VAR = "JAXCOMPARE_ATLAS"
SIZE_LABELS = {"small": N_("small"), "middle": N_("middle"), "large": N_("large")}


@dataclass(frozen=True, order=True)
class CellKey:
    """One cell's place: a catalog case, a size (SIZES), a precision and a device (a JAX platform name)."""

    case: str
    size: str
    precision: str
    device: str

    @property
    def id(self) -> str:
        return f"{self.case}/{self.size}/{self.precision}/{self.device}"

    @classmethod
    def parse(cls, text: str) -> CellKey:
        parts = str(text).split("/")
        if len(parts) != 4 or parts[1] not in SIZES:
            raise BadInput(N_("not an atlas cell: {text!r}").format(text=text))
        return cls(*parts)


@dataclass(frozen=True)
class Cell:
    """A finished cell: its Result, or (UNMEASURABLE) the one line saying why the device cannot run it."""

    key: CellKey
    shape: tuple[int, ...]
    status: str
    result: Result | None = None
    reason: str = ""  # English, as the worker said it: shown with translate_text
    # An UNMEASURABLE cell that outlasted its job's deadline: a run with a longer one measures it again.
    deadline_s: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key.id, "shape": list(self.shape), "status": self.status,
                **({"result": self.result.to_dict()} if self.result is not None else {}),
                **({"reason": self.reason} if self.reason else {}),
                **({"deadline_s": self.deadline_s} if self.deadline_s is not None else {})}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Cell:
        try:
            status = str(data["status"])
            if status not in (MEASURED, UNMEASURABLE):
                raise ValueError(f"status {status!r}")
            result = Result.from_dict(data["result"]) if status == MEASURED else None
            deadline = data.get("deadline_s")
            return cls(CellKey.parse(data["key"]), tuple(int(n) for n in data["shape"]), status, result,
                       str(data.get("reason") or ""), None if deadline is None else float(deadline))
        except (KeyError, TypeError, ValueError) as exc:
            raise BadInput(N_("malformed atlas cell: {error}").format(error=exc)) from None


@dataclass
class Atlas:
    """The cells done so far, and each device's environment (from its first measured cell). ``planned``:
    every cell the runs that wrote it set out to measure, by id, with its shape (empty in a file written
    before plans were kept: its cells are then its whole plan)."""

    timing: str = "quick"
    created: str = ""
    cells: dict[str, Cell] = field(default_factory=dict)
    environments: dict[str, dict[str, Any]] = field(default_factory=dict)
    planned: dict[str, tuple[int, ...]] = field(default_factory=dict)
    # Every cell's view by measure, and the crossovers: a page run reads them six or seven times (trust and
    # direction for each of 174 cells each time); add() and add_plan() forget them.
    _memo: dict[Any, Any] = field(default_factory=dict, repr=False, compare=False)

    def add(self, cell: Cell) -> None:
        self._memo.clear()
        self.cells[cell.key.id] = cell
        if cell.result is not None and cell.key.device not in self.environments:
            self.environments[cell.key.device] = environment_of(cell.result)

    def add_plan(self, planned: Iterable[tuple[CellKey, tuple[int, ...]]]) -> None:
        """Add a run's plan to the file's: a later run with other cases widens it, never narrows it."""
        self._memo.clear()
        for key, shape in planned:
            self.planned.setdefault(key.id, tuple(shape))

    def plan(self) -> list[tuple[CellKey, tuple[int, ...]]]:
        """Every planned cell, held or not, in the plan's order (the cells held first where no plan was kept)."""
        cells = {cell_id: cell.shape for cell_id, cell in self.cells.items()}
        ordered = {**self.planned, **{k: v for k, v in cells.items() if k not in self.planned}}
        return [(CellKey.parse(cell_id), shape) for cell_id, shape in ordered.items()]

    def not_measured(self) -> list[tuple[CellKey, tuple[int, ...]]]:
        """The planned cells the atlas does not hold, in the plan's order."""
        return [(key, shape) for key, shape in self.plan() if key.id not in self.cells]

    def done(self) -> set[CellKey]:
        return {cell.key for cell in self.cells.values()}

    def results(self) -> list[Result]:
        return [cell.result for cell in self.cells.values() if cell.result is not None]

    def devices(self) -> list[str]:
        return sorted({cell.key.device for cell in self.cells.values()}, key=_device_order)

    def precisions(self) -> list[str]:
        return sorted({cell.key.precision for cell in self.cells.values()})

    def cases(self) -> list[str]:
        """The cases in the order they were measured (the catalog's, for an atlas of it)."""
        return list(dict.fromkeys(cell.key.case for cell in self.cells.values()))

    def to_dict(self) -> dict[str, Any]:
        return {"schema": SCHEMA, "created": self.created, "timing": self.timing,
                "environments": self.environments,
                **({"planned": {k: list(v) for k, v in self.planned.items()}} if self.planned else {}),
                "cells": [cell.to_dict() for cell in self.cells.values()]}

    @classmethod
    def from_dict(cls, data: Any) -> Atlas:
        if not isinstance(data, dict) or data.get("schema") != SCHEMA:
            found = data.get("schema") if isinstance(data, dict) else type(data).__name__
            raise BadInput(N_("not a jaxcompare atlas (schema {found!r}, expected {expected!r})").format(
                found=found, expected=SCHEMA))
        atlas = cls(timing=str(data.get("timing") or "quick"), created=str(data.get("created") or ""),
                    environments={str(k): dict(v) for k, v in (data.get("environments") or {}).items()})
        try:
            atlas.add_plan((CellKey.parse(k), tuple(int(n) for n in v)) for k, v in (data.get("planned") or {}).items())
        except (AttributeError, TypeError, ValueError) as exc:
            raise BadInput(N_("malformed atlas plan: {error}").format(error=exc)) from None
        for item in data.get("cells") or ():
            atlas.add(Cell.from_dict(item))
        return atlas


def _device_order(device: str) -> tuple[int, str]:
    """Accelerators first, then JAX on their host's CPU."""
    return (device == "cpu", device)


def default_location() -> Path:
    """Where ``jaxcompare atlas`` keeps the reader's atlas and the Atlas page looks for it:
    ``$JAXCOMPARE_ATLAS``, else ``~/.jaxcompare/atlas.json`` (beside the default results database)."""
    return Path(os.environ.get(ENV_VAR, "").strip() or "~/.jaxcompare/atlas.json").expanduser()


def load(path: str | os.PathLike[str]) -> Atlas:
    """An atlas file (``.json``, or ``.json.gz`` as the recorded ones are kept); BadInput names what is wrong."""
    path = Path(path).expanduser()
    try:
        raw = path.read_bytes()
        text = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
        return Atlas.from_dict(json.loads(text))
    except FileNotFoundError:
        raise BadInput(N_("no atlas at {path}").format(path=path)) from None
    except json.JSONDecodeError as exc:  # json's own words apart, so that the catalog translates them
        raise BadInput(N_("cannot read the atlas {path}: not valid JSON: {reason} at line {line} column {column}")
                       .format(path=path, reason=json_reason(exc), line=exc.lineno, column=exc.colno)) from None
    except (OSError, ValueError, EOFError) as exc:
        error = exc.strerror or exc if isinstance(exc, OSError) else exc
        raise BadInput(N_("cannot read the atlas {path}: {error}").format(path=path, error=error)) from None


def save(atlas: Atlas, path: str | os.PathLike[str]) -> None:
    """Write the whole atlas, atomically: a process killed mid-write leaves the previous file whole,
    so the next run resumes from the cells it holds."""
    path = Path(path).expanduser()
    path.parent.mkdir(parents=True, exist_ok=True)
    data = json.dumps(atlas.to_dict(), separators=(",", ":"), allow_nan=False).encode()
    if path.suffix == ".gz":
        data = gzip.compress(data, mtime=0)
    # mkstemp makes the file private (0600); an atlas is shared like any export: keep the file's mode, else 0644.
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o644
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def new_atlas(timing: str) -> Atlas:
    return Atlas(timing=timing, created=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"))


def environment_of(result: Result) -> dict[str, Any]:
    """What a reader needs to place a device's cells: JAX's version, the device kind, the host's cores
    and CPU, and when (no host name: a recorded atlas is shared)."""
    env = result.env
    jax = env.get("jax") or {}
    return {"jax_version": jax.get("version") or (env.get("versions") or {}).get("jax"),
            "backend": result.backend, "device_kind": result.jax.device_kind,
            "host_cores": env.get("cpu_count_logical"), "cpu_affinity": env.get("cpu_affinity"),
            "cpu_model": env.get("cpu_model"), "platform": env.get("platform"), "date": result.created[:10]}


# --- what to measure ------------------------------------------------------------------------
def size_shape(case: Case, size: str) -> tuple[int, ...]:
    """The case's small or large preset, or between them the middle of a three-step ladder (geometric)."""
    if size == "small":
        return tuple(case.small_shape)
    if size == "large":
        return tuple(case.large_shape)
    shapes = ladder(case, 3)
    return shapes[len(shapes) // 2] if len(shapes) == 3 else tuple(case.large_shape)


def plan(cases: Sequence[Case], sizes: Sequence[str] = SIZES, precisions: Sequence[str] = ("x32", "x64"),
         devices: Sequence[str] = ("cpu",)) -> list[tuple[CellKey, tuple[int, ...]]]:
    """Every cell in the order measured: device by device (a device's workers stay warm), then precision
    (one worker per precision), then case and size, so an interrupted atlas has whole rows."""
    cells = []
    for device in devices:
        for precision in precisions:
            for case in cases:
                for size in sizes:
                    cells.append((CellKey(case.name, size, precision, device), size_shape(case, size)))
    return cells


def todo(atlas: Atlas, planned: Iterable[tuple[CellKey, tuple[int, ...]]],
         timeout_s: float | None = None) -> list[tuple[CellKey, tuple[int, ...]]]:
    """The planned cells the atlas does not hold yet: what a resumed run measures; with ``timeout_s``, also
    those that outlasted a shorter deadline than it."""
    done = {cell.key for cell in atlas.cells.values()
            if timeout_s is None or cell.deadline_s is None or cell.deadline_s >= timeout_s}
    return [(key, shape) for key, shape in planned if key not in done]


# --- how a cell reads -----------------------------------------------------------------------
@dataclass(frozen=True)
class CellView:
    """A cell as every front end shows it: which speedup (``measure``), its rerun range, and whether it
    may lead (TRUSTED) or carries its doubt (DOUBTFUL: ``why`` a trust.WHY key, or "range" for a back-to-back
    range too wide); UNMEASURABLE carries ``reason``."""

    key: CellKey
    shape: tuple[int, ...]
    status: str
    speedup: float | None = None
    low: float | None = None
    high: float | None = None
    why: str | None = None
    side: str | None = None  # trust.JAX_FASTER / NUMPY_FASTER where the direction stands
    direction: Direction | None = None
    result_id: str | None = None
    reason: str = ""
    deadline_s: float | None = None  # UNMEASURABLE only because its run outlasted this deadline


def measure_of(result: Result, measure: str) -> tuple[float | None, tuple[float, float] | None]:
    """(speedup, rerun range) of ``measure``: the blocked call's, or calls back to back (None where not timed)."""
    if measure == "back_to_back":
        pipelined = result.jax.back_to_back
        if pipelined is None or pipelined.median_s <= 0:
            return None, None
        return result.speedup_back_to_back, rerun_ratio_range(result.numpy_runtime, pipelined)
    return result.speedup, result.speedup_range


def view(cell: Cell, measure: str = "blocked") -> CellView:
    """How ``cell`` reads under ``measure``: a set-aside result is DOUBTFUL with its reason, never a bare speedup."""
    if cell.result is None:
        return CellView(cell.key, cell.shape, UNMEASURABLE, reason=cell.reason, deadline_s=cell.deadline_s)
    result = cell.result
    speedup, found = measure_of(result, measure)
    if speedup is None or found is None or not math.isfinite(speedup):
        return CellView(cell.key, cell.shape, MISSING, result_id=result.id)
    low, high = found
    if not (math.isfinite(low) and math.isfinite(high) and low > 0):
        low = high = None  # too few samples for a range (trust's "no_range"), or a side that failed
    verdict = trust(result)
    why = verdict.why
    narrow = low is not None and high is not None and high / low <= TRUSTED_SPREAD
    if verdict.trusted and measure != "blocked" and not narrow:
        # The blocked result holds, but this figure's own range is too wide to lead, or it has none.
        why = "range" if low is not None else "no_range"
    status = TRUSTED if why is None else DOUBTFUL
    # The side stands only from the blocked figures' checklist; back to back, from its own range beside it.
    found_direction = direction(result)
    side = found_direction.side
    if measure != "blocked":
        side = side_of(low, high) if status == TRUSTED else None
    return CellView(cell.key, cell.shape, status, speedup, low, high, why, side, found_direction, result.id)


def side_of(low: float | None, high: float | None) -> str | None:
    """The side a range names where it lies wholly above or below 1x."""
    if low is None or high is None or not (low > 0 and math.isfinite(high)):
        return None
    return JAX_FASTER if low > 1 else NUMPY_FASTER if high < 1 else None


def views(atlas: Atlas, measure: str = "blocked", cases: Sequence[str] | None = None) -> list[CellView]:
    """Every cell's view, in the atlas's order; ``cases``: only these."""
    every = atlas._memo.get(("views", measure))
    if every is None:
        every = atlas._memo[("views", measure)] = [view(cell, measure) for cell in atlas.cells.values()]
    wanted = set(cases) if cases is not None else None
    return [v for v in every if wanted is None or v.key.case in wanted]


def grid(atlas: Atlas, measure: str = "blocked", cases: Sequence[str] | None = None) -> list[CellView]:
    """What a picture of the atlas draws: each device and precision holding a cell, with every planned cell
    of it in the plan's order, one not held reading NOT_MEASURED; ``cases``: only these. A device or precision
    with no cell at all is not drawn: ``partial`` names it."""
    held = {v.key.id: v for v in views(atlas, measure, cases)}
    facets = {(v.key.device, v.key.precision) for v in held.values()}
    wanted = set(cases) if cases is not None else None
    out = []
    for key, shape in atlas.plan():
        if key.id in held:
            out.append(held.pop(key.id))
        elif (key.device, key.precision) in facets and (wanted is None or key.case in wanted):
            out.append(CellView(key, shape, NOT_MEASURED))
    return out + list(held.values())


@dataclass(frozen=True)
class Gap:
    """The planned cells of one device and precision that an atlas does not hold: all of them (``whole``),
    or these cases (each with the sizes missing, empty where the case has none)."""

    device: str
    precision: str
    planned: int
    missing: int
    cases: tuple[tuple[str, tuple[str, ...]], ...]

    @property
    def whole(self) -> bool:
        return self.missing == self.planned


def partial(atlas: Atlas) -> list[Gap]:
    """Where the atlas falls short of its plan, a device and precision at a time (empty: it is whole)."""
    facets: dict[tuple[str, str], list[tuple[CellKey, bool]]] = {}
    for key, _shape in atlas.plan():
        facets.setdefault((key.device, key.precision), []).append((key, key.id in atlas.cells))
    gaps = []
    for (device, precision), cells in facets.items():
        missing = [key for key, held in cells if not held]
        if not missing:
            continue
        by_case: dict[str, list[str]] = {}
        for key in missing:
            by_case.setdefault(key.case, []).append(key.size)
        planned_sizes = {}
        for key, _held in cells:
            planned_sizes.setdefault(key.case, []).append(key.size)
        listed = tuple((case, () if len(sizes) == len(planned_sizes[case]) else tuple(sizes))
                       for case, sizes in by_case.items())
        gaps.append(Gap(device, precision, len(cells), len(missing), listed))
    return gaps


def crossovers(atlas: Atlas) -> dict[tuple[str, str, str], float]:
    """(case, precision, device) -> the element count where the blocked speedup crosses 1x between the
    firm sizes (analysis/sweep.crossover: trusted, ranges clear of 1x); absent where the sizes find none."""
    if "crossovers" in atlas._memo:
        return dict(atlas._memo["crossovers"])
    groups: dict[tuple[str, str, str], list[Result]] = {}
    for cell in atlas.cells.values():
        if cell.result is not None:
            groups.setdefault((cell.key.case, cell.key.precision, cell.key.device), []).append(cell.result)
    found = {key: crossover(results) for key, results in groups.items() if len(results) > 1}
    atlas._memo["crossovers"] = {key: value for key, value in found.items() if value is not None}
    return dict(atlas._memo["crossovers"])


# --- two atlases ----------------------------------------------------------------------------
A_ONLY, B_ONLY, B_FASTER, B_SLOWER, OVERLAP = "a_only", "b_only", "b_faster", "b_slower", "overlap"
NO_RANGE = "no_range"  # in both, but one has no speedup to compare (a device cannot run it, or not timed)


@dataclass(frozen=True)
class CellDiff:
    """One cell in two atlases: ``verdict`` B_FASTER / B_SLOWER only where the two ranges do not overlap
    (a rerun of either would not close the gap); OVERLAP otherwise; A_ONLY / B_ONLY where one lacks it;
    NO_RANGE where one cannot say (unmeasurable there, or the figure not timed).
    ``doubt``: where the ranges are apart but a side was set aside, its trust.WHY key (the gap stands as
    measured, but the doubt travels with it)."""

    key: CellKey
    a: CellView | None
    b: CellView | None
    verdict: str
    doubt: str | None = None

    @property
    def ratio(self) -> float | None:
        """B's speedup over A's."""
        if self.a is None or self.b is None or not self.a.speedup or self.b.speedup is None:
            return None
        return self.b.speedup / self.a.speedup


def diff(a: Atlas, b: Atlas, measure: str = "blocked") -> list[CellDiff]:
    """Every cell of either atlas, A's order first: where B's speedup is beyond A's range and A's beyond B's.
    Two atlases of one device each, different ones (a CPU's and a TPU's), meet cell by cell on case, size
    and precision: each row's views keep their own device."""
    views_a = {v.key: v for v in views(a, measure)}
    views_b = {v.key: v for v in views(b, measure)}
    devices_a, devices_b = {k.device for k in views_a}, {k.device for k in views_b}
    if len(devices_a) == len(devices_b) == 1 and devices_a != devices_b:
        (device,) = devices_a
        views_b = {replace(key, device=device): v for key, v in views_b.items()}
    rows = []
    for key in list(views_a) + [k for k in views_b if k not in views_a]:
        va, vb = views_a.get(key), views_b.get(key)
        if va is None or vb is None:
            rows.append(CellDiff(key, va, vb, B_ONLY if va is None else A_ONLY))
            continue
        if va.low is None or va.high is None or vb.low is None or vb.high is None:
            rows.append(CellDiff(key, va, vb, NO_RANGE))
            continue
        if vb.low > va.high:
            verdict = B_FASTER
        elif vb.high < va.low:
            verdict = B_SLOWER
        else:
            verdict = OVERLAP
        doubt = None
        if verdict != OVERLAP:
            doubt = next((v.why for v in (va, vb) if v.status == DOUBTFUL), None)
        rows.append(CellDiff(key, va, vb, verdict, doubt))
    return rows
