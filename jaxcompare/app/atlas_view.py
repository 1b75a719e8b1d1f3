"""What the Atlas page shows, as plain data: the atlases it can open (the reader's own, those recorded with
the project), each cell's row for the heatmap with its link to the result, the crossovers and the cells set
aside. No Streamlit: the page reads these, the tests call them."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from ..analysis import atlas as atlas_mod
from ..analysis.atlas_text import (
    cell_detail,
    cell_label,
    crossover_text,
    device_label,
    facet_label,
    recorded_line,
)
from ..catalog import builtin_cases
from ..i18n import _
from ..model.cases import format_shape
from ..model.errors import JaxCompareError
from . import navigation

# The atlases recorded with the project (tests/data/atlas): what the page shows beside the reader's own.
# Compare's URL parameter naming a saved result to open (history_view.RESULT_PARAM, a sibling this layer
# may not import; tests/test_atlas_page.py holds the two equal).
RESULT_PARAM = "result"
RECORDED_DIR = Path(__file__).resolve().parents[2] / "tests" / "data" / "atlas"


@dataclass(frozen=True)
class Source:
    """An atlas the page can open: the reader's own (``own``) or one recorded with the project."""

    path: Path
    own: bool

    @property
    def key(self) -> str:
        return str(self.path)


def sources(own_path: Path | None = None, recorded_dir: Path = RECORDED_DIR) -> list[Source]:
    """The reader's atlas first where it exists (``jaxcompare atlas`` writes it), then the recorded ones."""
    own = own_path if own_path is not None else atlas_mod.default_location()
    found = [Source(own, True)] if own.exists() else []
    if recorded_dir.is_dir():
        found += [Source(p, False) for p in sorted(recorded_dir.glob("*.json*"))]
    return found


def source_label(source: Source, atlas: atlas_mod.Atlas | None) -> str:
    line = recorded_line(atlas) if atlas is not None and atlas.cells else source.path.name
    if atlas is not None and atlas.cells and atlas_mod.partial(atlas):  # never a smaller grid as if whole
        line += " " + _("(partial: {held} of {planned} cells)").format(held=len(atlas.cells),
                                                                      planned=len(atlas.plan()))
    if source.own:
        return _("Yours: {line}").format(line=line)
    # A recorded atlas's line already says "recorded on ...": "Recorded: recorded on" said it twice.
    return line[:1].upper() + line[1:] if atlas is not None and atlas.cells else _("Recorded: {line}").format(line=line)


def load_source(source: Source) -> tuple[atlas_mod.Atlas | None, str | None]:
    """(the atlas, None), or (None, why it could not be read) — a damaged file is named, never a traceback."""
    try:
        return atlas_mod.load(source.path), None
    except JaxCompareError as exc:
        return None, str(exc)


def case_groups(atlas: atlas_mod.Atlas) -> dict[str, str]:
    """Each case's group (numpy, scipy; a case the catalog no longer has: its result's, else custom), the
    planned cases not measured yet included."""
    catalog = {case.name: case.group for case in builtin_cases()}
    info = {cell.key.case: cell.result.case_info for cell in atlas.cells.values() if cell.result is not None}
    groups = {}
    for key, _shape in atlas.plan():
        groups[key.case] = catalog.get(key.case) or str((info.get(key.case) or {}).get("group") or "custom")
    return groups


def result_url(result_id: str | None, also: dict[str, str] | None = None) -> str | None:
    """The Compare page opening a saved result (History's "Open in Compare"), relative to the server's root."""
    if not result_id:
        return None
    return f"{navigation.COMPARE.url_path}?{urlencode({RESULT_PARAM: result_id, **(also or {})})}"


def heatmap_rows(atlas: atlas_mod.Atlas, measure: str = "blocked", cases: Sequence[str] | None = None,
                 link_ids: set[str] | None = None, also: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """A row per cell for the heatmap: where it sits (facet, case, size), its colour (``speedup`` only
    for a trusted cell: a set-aside one is greyed), its label and detail, and its link. ``link_ids``:
    the result ids History holds (a recorded atlas's cells link once its results are added). A partial
    atlas's planned cells not measured are rows too (status NOT_MEASURED), so its grid is never smaller."""
    rows = []
    for v in atlas_mod.grid(atlas, measure, cases):
        url = result_url(v.result_id, also) if v.result_id and (link_ids is None or v.result_id in link_ids) else None
        rows.append({
            "facet": facet_label(atlas, v.key.device, v.key.precision),
            "device": device_label(atlas, v.key.device), "precision": v.key.precision,
            "case": v.key.case, "size": _(atlas_mod.SIZE_LABELS[v.key.size]), "shape": format_shape(v.shape),
            "status": v.status, "speedup": v.speedup if v.status == atlas_mod.TRUSTED else None,
            "label": cell_label(v),
            "detail": cell_detail(v), "result_id": (v.result_id or "")[:8], "url": url,
        })
    return rows


def crossover_rows(atlas: atlas_mod.Atlas, cases: Sequence[str] | None = None) -> list[dict[str, str]]:
    """Where each case's speedup crosses 1x between its firm sizes, per device and precision."""
    wanted = set(cases) if cases is not None else None
    rows = []
    for (case, precision, device), elements in atlas_mod.crossovers(atlas).items():
        if wanted is None or case in wanted:
            rows.append({_("Case"): case, _("Device and precision"): facet_label(atlas, device, precision),
                         _("Crossover"): crossover_text(elements)})
    return rows


def set_aside_rows(atlas: atlas_mod.Atlas, measure: str = "blocked",
                   cases: Sequence[str] | None = None) -> list[dict[str, str]]:
    """The cells with a doubt or no figure, each with its one line: what a reader must not read as a speedup."""
    rows = []
    for v in atlas_mod.views(atlas, measure, cases):
        if v.status == atlas_mod.TRUSTED:
            continue
        rows.append({_("Case"): v.key.case, _("Shape"): format_shape(v.shape),
                     _("Device and precision"): facet_label(atlas, v.key.device, v.key.precision),
                     _("Why"): cell_detail(v)})
    return rows


def speedup_extent(rows: Sequence[dict[str, Any]]) -> float:
    """How far from 1x the colour scale reaches: the largest trusted factor either way, at least 10x."""
    factors = [max(r["speedup"], 1 / r["speedup"]) for r in rows
               if r["speedup"] is not None and math.isfinite(r["speedup"]) and r["speedup"] > 0]
    return max([10.0, *factors])
