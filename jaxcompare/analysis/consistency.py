"""Figures of one run that cannot all be true: the one place that looks across a whole result, a
sweep, a pitfalls run or a versions run, and names each contradiction as a checklist line that
quotes both figures.

A single figure is judged by checks.py; here two figures that measure the same thing, or that
bound each other (a first call pays at least its compile), are held against each other with
their 95% ranges, so the noise of a shared machine alone never fires a finding.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ..i18n import N_, _, translate_text
from ..model.cases import format_shape
from ..model.formatting import format_time, format_time_range
from ..model.stats import Stats
from .checks import NA, WARN, Check


def disjoint(a: Stats, b: Stats) -> bool:
    """Whether two measurements of the same thing have 95% ranges that do not overlap (their
    samples' spans where a range is unknown): beyond the noise, one of them measured something else."""
    a_low, a_high = _span(a)
    b_low, b_high = _span(b)
    return a_high < b_low or b_high < a_low


def _span(s: Stats) -> tuple[float, float]:
    low = s.ci_low_s if math.isfinite(s.ci_low_s) else s.min_s
    high = s.ci_high_s if math.isfinite(s.ci_high_s) else max(s.samples_s, default=s.median_s)
    return low, high


# A pitfalls run -------------------------------------------------------------------------------------
# Figures of one pitfalls run (engine/pitfalls.py's report) that measure the same work: the steady
# runtime at the run's shape and dtype, timed as pitfall 1's correct side, pitfall 5's large side
# and the dtypes row at the run's dtype (the lab's baseline); and pitfall 7's two first calls that
# compile alike, the first process with an empty cache and the restarts without one.
PITFALLS_TITLE = N_("Figures of the run agree")


def pitfalls_findings(report: Mapping[str, Any]) -> list[Check]:
    """The figures of one pitfalls run that cannot all be true, each a checklist line quoting them
    ([] when they agree, or where nothing was measured twice)."""
    pitfalls = {p["id"]: p for p in report.get("pitfalls") or []}
    findings = [f for library in ("numpy", "jax") for dtype in ("float32", "float64")
                if (f := _runtime_finding(report, pitfalls, library, dtype))]
    restart = _restart_finding(pitfalls.get("cache"))
    return findings + ([restart] if restart else [])


def _place(pid: str, side: Mapping[str, Any]) -> str:
    """'1. JIT': a section's short title in the reader's language; for pitfall 3, which times
    several rows, with the row's label."""
    from ..engine.pitfalls import PITFALLS

    title = _(next(p["title"] for p in PITFALLS if p["id"] == pid))
    name = title.split("：", 1)[0].split(": ", 1)[0]
    return _("{section} ({side})").format(section=name, side=translate_text(side["label"])) if pid == "dtype" else name


def _same_work_sides(report: Mapping[str, Any], pitfalls: Mapping[str, Any],
                     library: str) -> list[tuple[str, Mapping[str, Any], str]]:
    """(pitfall id, side, dtype) of each side that timed ``library``'s steady runtime at the run's
    shape: pitfall 1's correct side and pitfall 5's large one at the run's dtype, pitfall 3's rows
    at theirs (its naive row: NumPy float64 against JAX float32)."""
    found = []
    if "jit" in pitfalls:
        found.append(("jit", pitfalls["jit"]["correct"], report.get("dtype")))
    size = pitfalls.get("size")
    if size is not None and list(size["correct"].get("shape") or []) == list(report.get("shape") or []):
        found.append(("size", size["correct"], report.get("dtype")))
    dtype = pitfalls.get("dtype")
    if dtype is not None:
        for side in [dtype["naive"], dtype["correct"], *dtype["extra"]]:
            row = side.get("dtype")
            if row == "mixed":
                row = "float64" if library == "numpy" else "float32"
            found.append(("dtype", side, row))
    return found


def _as_stats(seconds: float, bounds: Sequence[float]) -> Stats:
    """A figure as a report keeps it: its median and its 95% range (no samples)."""
    return Stats(median_s=seconds, min_s=bounds[0], mean_s=seconds, std_s=0.0, iqr_s=0.0, n=0, loops=1,
                 samples_s=(), ci_low_s=bounds[0], ci_high_s=bounds[1])


def _runtime_finding(report: Mapping[str, Any], pitfalls: Mapping[str, Any], library: str,
                     dtype: str) -> Check | None:
    """NumPy's (or JAX's) steady runtime at ``dtype`` timed in several sections: one timing shared
    by sections (the lab's baseline) counts once; ranges that do not all overlap are a finding
    quoting each figure and where it was timed."""
    seconds_key, range_key = ("numpy_seconds", "numpy_range") if library == "numpy" else ("seconds", "range")
    figures: dict[tuple[float, tuple[float, ...]], list[str]] = {}
    for pid, side, row in _same_work_sides(report, pitfalls, library):
        seconds, bounds = side.get(seconds_key), side.get(range_key)
        if row != dtype or not seconds or not bounds:
            continue  # other work, no reference, or a single sample: no range to hold against another
        places = figures.setdefault((seconds, tuple(bounds)), [])
        if _place(pid, side) not in places:
            places.append(_place(pid, side))
    stats = [_as_stats(seconds, bounds) for seconds, bounds in figures]
    if not any(disjoint(a, b) for i, a in enumerate(stats) for b in stats[i + 1:]):
        return None
    quoted = _("; ").join(_("{time} ({range}) in {places}").format(
        time=format_time(seconds), range=format_time_range(*bounds), places=_(", ").join(places))
        for (seconds, bounds), places in figures.items())
    return Check("pitfalls_agree", _(PITFALLS_TITLE), WARN, _(
        "{library}'s runtime at {shape} ({dtype}) was timed in more than one section of this run, and their 95% "
        "ranges do not all overlap: {figures}. The machine's speed changed between those timings, so the "
        "speedups built on them disagree: rerun when the machine is quieter").format(
        library="NumPy" if library == "numpy" else "JAX", shape=format_shape(report.get("shape") or ()),
        dtype=dtype, figures=quoted), None)


def _restart_finding(cache: Mapping[str, Any] | None) -> Check | None:
    """Pitfall 7: the first process (empty cache: it compiles, and writes the cache) and the restarts
    without a cache compile the same function, so the first's one sample lies within the restarts'
    range. It has no range of its own, so the line says how far it lies, never how sure that is."""
    if cache is None:
        return None
    cold = cache["naive"]
    fill = next((s for s in cache["extra"] if "cache_files" in s), None)
    if fill is None or not fill.get("seconds") or not cold.get("seconds"):
        return None
    values = {"first": format_time(fill["seconds"]), "restart": format_time(cold["seconds"])}
    if not cold.get("range"):
        return Check("pitfalls_agree", _(PITFALLS_TITLE), NA, _(
            "pitfall 7's first process with an empty cache ({first}) and its restarts without a cache ({restart}) "
            "were not compared: a single sample of each has no range").format(**values), "cache")
    low, high = cold["range"]
    if low <= fill["seconds"] <= high:
        return None
    values |= {"range": format_time_range(low, high),
               "factor": f"{max(fill['seconds'] / cold['seconds'], cold['seconds'] / fill['seconds']):.3g}"}
    words = (N_("pitfall 7's first process with an empty cache took {first} (one sample: no range of its own), "
                "{factor}x faster than its restarts without a cache, {restart} ({range}), though both compile "
                "the same function: the machine's speed changed between them; one sample cannot say by how much "
                "for sure")
             if fill["seconds"] < low else
             N_("pitfall 7's first process with an empty cache took {first} (one sample: no range of its own), "
                "{factor}x slower than its restarts without a cache, {restart} ({range}), though both compile "
                "the same function and writing the cache costs little: the machine's speed changed between them; "
                "one sample cannot say by how much for sure"))
    return Check("pitfalls_agree", _(PITFALLS_TITLE), WARN, _(words).format(**values), "cache")
