"""Figures of one run that cannot all be true: the one place that looks across a whole result, a
sweep, a pitfalls run or a versions run, and names each contradiction as a checklist line that
quotes both figures.

A single figure is judged by checks.py; here two figures that measure the same thing, or that
bound each other (a first call pays at least its compile), are held against each other with
their 95% ranges, so the noise of a shared machine alone never fires a finding. A result's own
lines join its checklist (checks.checklist); they doubt the figures they name, which are never
the speedup's two runtimes, so they warn without setting the speedup aside (analysis/trust.py).
docs/protocol.md, "Figures that must agree", lists every check.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ..i18n import N_, _, translate_text
from ..model.cases import format_shape
from ..model.formatting import format_time, format_time_range, transfer_rate_text
from ..model.platforms import platform
from ..model.result import Result
from ..model.sides import JaxSide
from ..model.stats import Stats
from .checkline import NA, PASS, WARN, Check

# A first call under this share of its fastest trace + lower + compile: a cache answered it.
FIRST_CALL_SHARE = 0.5
# Each line's title by its id; Check.title is it in the language in force when the line is made.
TITLES = {
    "first_call": N_("First call includes its compile"),
    "recompile": N_("Recompile between compile and first call"),
    "repeat": N_("Repeated measurement agrees"),
    "transfer_alike": N_("Transfer judged alike"),
    "pitfalls_agree": N_("Figures of the run agree"),
    "device_time": N_("Device time within the call"),
}


def busy_above_call(busy_s: float | None, call_range: Sequence[float] | None) -> bool:
    """A profile whose device was busy longer per traced call than the whole timed call, beyond that
    call's 95% range: the two cannot both be true (the device's work is inside the call), so the traced
    calls ran at another speed than the timed ones (pitfall 5 once read 35.2 ms busy beside 17.8 ms)."""
    return bool(busy_s and call_range and len(call_range) == 2 and busy_s > call_range[1])



def disjoint(a: Stats, b: Stats) -> bool:
    """Whether two measurements of the same thing have 95% ranges that do not overlap (their
    samples' spans where a range is unknown): beyond the noise, one of them measured something else."""
    return _apart(a.range_s, b.range_s)


def _apart(a: tuple[float, float], b: tuple[float, float]) -> bool:
    """Whether two ranges (low, high) do not meet."""
    return a[1] < b[0] or b[1] < a[0]


def _line(check_id: str, status: str, reason: str, pitfall: str | None = None) -> Check:
    return Check(check_id, _(TITLES[check_id]), status, reason, pitfall)


def compile_range(side: JaxSide) -> tuple[float, float]:
    """The cold compile's range: its three phases' (trace, lower, compile) ranges added up."""
    phases = (side.trace, side.lower, side.compile)
    return sum(p.range_s[0] for p in phases), sum(p.range_s[1] for p in phases)


# --- a result ---------------------------------------------------------------------------------------
def result_checks(r: Result) -> list[Check]:
    """A result's lines for its checklist (checks.checklist adds them), in a fixed order; the profile's
    line only where a profile was taken."""
    profiled = r.profile is not None and r.profile.ok
    return [check_first_call(r), check_recompile(r), *([check_device_time(r)] if profiled else [])]


def check_device_time(r: Result) -> Check:
    """The device's busy time per traced call lies inside the timed call: a profile whose device was busy
    longer than the whole blocked call, beyond its range, traced calls that ran at another speed, so its
    split of the call into device time and host overhead does not describe the timed one."""
    profile, runtime = r.profile, r.jax.runtime
    assert profile is not None and profile.device_busy_s is not None  # result_checks: only with a profile
    values = {"busy": format_time(profile.device_busy_s), "call": format_time(runtime.median_s),
              "range": format_time_range(*runtime.range_s)}
    if busy_above_call(profile.device_busy_s, runtime.range_s):
        return _line("device_time", WARN, _(
            "the profile's device was busy {busy} a call, longer than the whole timed call, {call} ({range}): the "
            "two cannot both be true, so the traced calls ran at another speed than the timed ones, and the "
            "profile's split of a call into device time and overhead does not describe them; profile again").format(
            **values))
    return _line("device_time", PASS, _("the profile's device was busy {busy} a call, within the timed call, {call} "
                                        "({range})").format(**values))


def _fresh(r: Result) -> bool:
    """Whether the first call was timed in fresh processes (and the worker's recompile kept beside it)."""
    where = r.jax.protocol.get("first_call")
    return isinstance(where, dict) and where.get("process") == "fresh" and r.jax.first_call_recompile is not None


def check_first_call(r: Result) -> Check:
    """A first call with a cold cache traces, lowers and compiles, so it cannot be shorter than its
    own compile. Under half the fastest compile, a cache answered it (a cache hit is a hundred
    times shorter). Shorter beyond both ranges, it was timed after something had been compiled
    already: it is not what a first %time pays. On a busy machine both wander by ±50% (measured),
    so ranges that overlap pass. Above its compile and one run beyond their ranges, a fresh process's
    first call is explained: the rest is that process's first use of JAX, beside the worker's recompile."""
    side = r.jax
    first, compile_s = side.first_call.median_s, side.compile_total_s
    fastest = sum(p.min_s for p in (side.trace, side.lower, side.compile))
    values = {"first": format_time(first), "compile": format_time(compile_s)}
    if first > 0 and fastest > 0 and first < FIRST_CALL_SHARE * fastest:
        return _line("first_call", WARN, _("the first call ({first}) took less than its own compile ({compile}): "
                                           "a cache answered it, or the clock is wrong").format(**values), "jit")
    first_low, first_high = side.first_call.range_s
    compile_low, compile_high = compile_range(side)
    values |= {"first_low": format_time(first_low), "first_high": format_time(first_high),
               "compile_low": format_time(compile_low), "compile_high": format_time(compile_high)}
    if first > 0 and first < compile_s and first_high < compile_low:
        return _line("first_call", WARN, _(
            "the first call, {first} ({first_low} to {first_high}), took less than its own compile, {compile} "
            "({compile_low} to {compile_high}), beyond both ranges: a first call cheaper than its compile cannot "
            "have paid for it, so it was timed after something was already compiled and does not show what a "
            "user's %time of the first call pays").format(**values), "jit")
    if first < compile_s:
        return _line("first_call", PASS, _(
            "the first call, {first} ({first_low} to {first_high}), is below its compile's median ({compile}) "
            "but within its range ({compile_low} to {compile_high}): the compile's samples wander").format(**values),
            "jit")
    # Above its compile and one run beyond their ranges, a fresh first call paid for more: say what.
    if _fresh(r) and first_low > compile_high + side.runtime.range_s[1]:
        recompile = side.first_call_recompile
        assert recompile is not None  # _fresh
        return _line("first_call", PASS, _(
            "the first call ({first}, in a fresh process) includes its compile ({compile}) and one run ({runtime}); "
            "the other {rest} is what a new process pays on its first call only, as JAX and XLA set themselves "
            "up for their first trace, lowering and compile: the worker's first call after jax.clear_caches() "
            "took {recompile}").format(runtime=format_time(side.runtime.median_s),
                                       rest=format_time(first - compile_s - side.runtime.median_s),
                                       recompile=format_time(recompile.median_s), **values), "jit")
    return _line("first_call", PASS, _("the first call ({first}) includes its compile ({compile})").format(**values),
                 "jit")


def check_recompile(r: Result) -> Check:
    """Where the first call came from fresh processes, the worker's first call after
    jax.clear_caches() (a recompile) lies between the two: it compiles as the compile phase does,
    then runs, so it is not shorter than that compile; and a new process pays at least what a warm
    one does, so the fresh first call is not shorter than the recompile. Each only beyond both ranges."""
    side = r.jax
    recompile = side.first_call_recompile
    if not _fresh(r) or recompile is None:
        return _line("recompile", NA, _("not applicable: the first call was timed in this worker, not in fresh "
                                        "processes"), "jit")
    compile_low, compile_high = compile_range(side)
    values = {"recompile": format_time(recompile.median_s),
              "recompile_range": format_time_range(*recompile.range_s),
              "compile": format_time(side.compile_total_s),
              "compile_range": format_time_range(compile_low, compile_high),
              "first": format_time(side.first_call.median_s),
              "first_range": format_time_range(*side.first_call.range_s)}
    if recompile.range_s[1] < compile_low:
        return _line("recompile", WARN, _(
            "the worker's first call after jax.clear_caches(), {recompile} ({recompile_range}), took less than the "
            "compile alone, {compile} ({compile_range}), beyond both ranges: a cache the clearing missed answered "
            "it, or the machine's speed changed between them").format(**values), "jit")
    if side.first_call.below(recompile):
        return _line("recompile", WARN, _(
            "the first call in a fresh process, {first} ({first_range}), took less than the worker's first call "
            "after jax.clear_caches(), {recompile} ({recompile_range}), beyond both ranges: a new process cannot "
            "start cheaper than a warm one, so the machine's speed changed between them").format(**values), "jit")
    if side.compile_total_s <= recompile.median_s <= side.first_call.median_s:
        return _line("recompile", PASS, _(
            "the worker's first call after jax.clear_caches() ({recompile}) lies between the compile ({compile}) "
            "and the first call in a fresh process ({first})").format(**values), "jit")
    return _line("recompile", PASS, _(
        "the worker's first call after jax.clear_caches(), {recompile} ({recompile_range}), is out of order with "
        "the compile, {compile} ({compile_range}), or the first call in a fresh process, {first} ({first_range}), "
        "but within their ranges: their samples wander").format(**values), "jit")


# --- the same measurement more than once (a versions run's rounds) ---------------------------------
# A sweep never measures a shape twice (its sizes are deduplicated), and sizes that differ may well
# disagree, so a sweep's only lines are each point's own.
# The phases two measurements of one case, shape and precision on one device must agree on, by
# how a finding names them.
REPEATED = {"numpy": N_("NumPy's runtime"), "runtime": N_("JAX's runtime"), "compile": N_("the compile")}


def _key(r: Result) -> tuple[object, ...]:
    """What makes two results the same measurement: case, shape, precision, dtype and device."""
    return r.case, r.shape, r.precision, r.dtype, r.backend, r.jax.device_kind


def _phase_range(r: Result, phase: str) -> tuple[float, float, float]:
    """(median, low, high) of a repeated phase; the compile's range adds up its three phases'."""
    if phase == "compile":
        return (r.jax.compile_total_s, *compile_range(r.jax))
    stats = r.phase(phase)
    return (stats.median_s, *stats.range_s)


def repeat_checks(results: Sequence[Result]) -> list[Check]:
    """Every result measured again among ``results`` (the same case, shape, precision and device)
    held against its first measurement: a phase whose two ranges do not meet, and a transfer
    aliased in one and copied in the other. One line per finding; [] when nothing repeats or all agree."""
    first_seen: dict[tuple[object, ...], Result] = {}
    lines: list[Check] = []
    for r in results:
        earlier = first_seen.setdefault(_key(r), r)
        if earlier is not r:
            lines += _repeat_lines(earlier, r)
    return lines


def _repeat_lines(a: Result, b: Result) -> list[Check]:
    where = _("{case} {shape} {precision}").format(case=a.case, shape=format_shape(a.shape), precision=a.precision)
    lines = []
    for phase, name in REPEATED.items():
        (a_med, a_low, a_high), (b_med, b_low, b_high) = _phase_range(a, phase), _phase_range(b, phase)
        if _apart((a_low, a_high), (b_low, b_high)):
            lines.append(_line("repeat", WARN, _(
                "{phase} of {where}, measured twice: {first} ({first_range}), then {second} ({second_range}), "
                "ranges that do not meet: the machine's speed changed between them, so neither figure alone "
                "stands for this size").format(phase=_(name), where=where, first=format_time(a_med),
                                               first_range=format_time_range(a_low, a_high),
                                               second=format_time(b_med),
                                               second_range=format_time_range(b_low, b_high))))
    if a.jax.transfer_zero_copy != b.jax.transfer_zero_copy:
        aliased, copied = (a, b) if a.jax.transfer_zero_copy else (b, a)
        lines.append(_line("transfer_alike", WARN, _(
            "the transfer of {where}, measured twice: {aliased} ({aliased_text}), and {copied} ({copied_text}): "
            "the same inputs, aliased once and copied once, so the transfer and the break-even differ between "
            "the two for a reason that is not JAX's").format(
            where=where, aliased=format_time(aliased.jax.transfer.median_s), aliased_text=transfer_rate_text(aliased),
            copied=format_time(copied.jax.transfer.median_s), copied_text=transfer_rate_text(copied)), "transfer"))
    return lines


# --- a versions run ---------------------------------------------------------------------------------
def version_checks(rounds: Sequence[Result], pooled: Result) -> list[Check]:
    """One version's findings, those that warn: its rounds held against each other (each round is
    the same measurement), then its pooled result's own lines (its first call against its compile)."""
    return [c for c in (*repeat_checks(rounds), *result_checks(pooled)) if c.status == WARN]


# A pitfalls run -------------------------------------------------------------------------------------
# Figures of one pitfalls run (engine/worker/pitfalls.py's report) that measure the same work: the steady
# runtime at the run's shape and dtype, the proper comparison every section reads, timed beside each
# naive side (pitfalls 1, 2, 4 and 6), as pitfall 5's large side and the dtypes row at the run's dtype
# (the lab's baseline), NumPy's and JAX's alike; pitfall 5's profiles against its timed calls; and
# pitfall 7's two first calls that compile alike, the first process with an empty cache and the
# restarts without one.
def pitfalls_findings(report: Mapping[str, Any]) -> list[Check]:
    """The figures of one pitfalls run that cannot all be true, each a checklist line quoting them
    ([] when they agree, or where nothing was measured twice)."""
    pitfalls = {p["id"]: p for p in report.get("pitfalls") or []}
    findings = [f for library in ("numpy", "jax") for dtype in ("float32", "float64")
                if (f := _runtime_finding(report, pitfalls, library, dtype))]
    restart = _restart_finding(pitfalls.get("cache"))
    return findings + _profile_findings(pitfalls.get("size")) + ([restart] if restart else [])


def _profile_findings(size: Mapping[str, Any] | None) -> list[Check]:
    """Pitfall 5's profiles: a side whose device was busy longer per traced call than its timed call
    (busy_above_call), quoting both; its split into device time and overhead is withheld on the page."""
    from ..model.profile import Profile

    lines = []
    for side in [] if size is None else (size["naive"], size["correct"]):
        try:
            profile = Profile.from_dict(side.get("profile")) if side.get("profile") else None
        except Exception:  # a report from another version: nothing to hold against the timing
            profile = None
        if profile is None or not profile.ok or not busy_above_call(profile.device_busy_s, side.get("range")):
            continue
        lines.append(_line("pitfalls_agree", WARN, _(
            "pitfall 5's profile at {shape}: the device was busy {busy} per traced call, longer than the whole "
            "timed call, {seconds} ({range}): the device's work is inside the call, so the traced calls ran at "
            "another speed than the timed ones, and their split into device time and host overhead is not "
            "shown").format(shape=format_shape(tuple(side.get("shape") or ())), busy=format_time(profile.device_busy_s),
                            seconds=format_time(side["seconds"]), range=format_time_range(*side["range"])), "size"))
    return lines


def _place(pid: str, side: Mapping[str, Any]) -> str:
    """'1. JIT': a section's short title in the reader's language; for pitfall 3, which times
    several rows, with the row's label."""
    from ..engine import PITFALLS

    title = _(next(p["title"] for p in PITFALLS if p["id"] == pid))
    name = title.split("：", 1)[0].split(": ", 1)[0]
    return _("{section} ({side})").format(section=name, side=translate_text(side["label"])) if pid == "dtype" else name


def _same_work_sides(report: Mapping[str, Any], pitfalls: Mapping[str, Any],
                     library: str) -> list[tuple[str, Mapping[str, Any], str]]:
    """(pitfall id, side, dtype) of each side that timed ``library``'s steady runtime at the run's
    shape: pitfalls 1, 2 and 4's correct sides, pitfall 6's default precision (and 'highest' where it
    runs alike), and pitfall 5's large one at the run's dtype, pitfall 3's rows at theirs (its naive
    row: NumPy float64 against JAX float32)."""
    found = []
    dtype_run = report.get("dtype")
    # The proper comparison, re-timed beside each section's naive side: pitfalls 1, 2 and 4's correct
    # sides, pitfall 6's default precision, and its 'highest' where products are never reduced (CPU, float64).
    for pid in ("jit", "async", "transfer"):
        if pid in pitfalls:
            found.append((pid, pitfalls[pid]["correct"], dtype_run))
    tf32 = pitfalls.get("tf32")
    if tf32 is not None:
        found.append(("tf32", tf32["naive"], dtype_run))
        entry = platform(report.get("backend"))
        if dtype_run == "float64" or (entry is not None and entry.float32_products == "float32"):
            found.append(("tf32", tf32["correct"], dtype_run))
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
    return _line("pitfalls_agree", WARN, _(
        "{library}'s runtime at {shape} ({dtype}) was timed in more than one section of this run, and their 95% "
        "ranges do not all overlap: {figures}. The machine's speed changed between those timings, so the "
        "speedups built on them disagree: rerun when the machine is quieter").format(
        library="NumPy" if library == "numpy" else "JAX", shape=format_shape(report.get("shape") or ()),
        dtype=dtype, figures=quoted), None)


# How sure pitfall 7's line must be before it says the machine's speed changed: one first process
# against its restarts is one test among the run's several, so a false alarm is kept near 1 in 100.
SINGLE_SAMPLE_CONFIDENCE = 0.99


def single_sample_range(samples: Sequence[float], confidence: float = SINGLE_SAMPLE_CONFIDENCE) -> tuple[float, float]:
    """Where one more sample from the distribution of ``samples`` (two or more) falls with
    ``confidence``: the prediction interval of a log-normal (times are positive and skewed),
    exp(mean ± t(n-1) · sd · sqrt(1 + 1/n)) of the logs. Not the median's range, which narrows as
    samples are added while a single sample's spread does not."""
    from scipy.stats import t  # lazily: its import is slow, and only this line needs it

    logs = [math.log(max(x, 1e-12)) for x in samples]
    n = len(logs)
    mean = sum(logs) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / (n - 1))
    half = float(t.ppf((1 + confidence) / 2, n - 1)) * sd * math.sqrt(1 + 1 / n)
    return math.exp(mean - half), math.exp(mean + half)


def _restart_finding(cache: Mapping[str, Any] | None) -> Check | None:
    """Pitfall 7: the first process (empty cache: it compiles, and writes the cache) and the restarts
    without a cache compile the same function, so the first's one sample falls where one restart
    would (single_sample_range of the restarts' samples). It has no range of its own, so the line
    says how far it lies, never how sure that is."""
    if cache is None:
        return None
    cold = cache["naive"]
    fill = next((s for s in cache["extra"] if "cache_files" in s), None)
    if fill is None or not fill.get("seconds") or not cold.get("seconds"):
        return None
    values = {"first": format_time(fill["seconds"]), "restart": format_time(cold["seconds"])}
    if not cold.get("range"):
        return _line("pitfalls_agree", NA, _(
            "pitfall 7's first process with an empty cache ({first}) and its restarts without a cache ({restart}) "
            "were not compared: a single sample of each has no range").format(**values), "cache")
    if len(cold.get("samples") or ()) < 2:
        return None  # a report from before the lab kept the restarts' samples: the median's range is no yardstick
    low, high = single_sample_range(cold["samples"])
    if low <= fill["seconds"] <= high:
        return None
    values |= {"range": format_time_range(low, high),
               "factor": f"{max(fill['seconds'] / cold['seconds'], cold['seconds'] / fill['seconds']):.3g}"}
    words = (N_("pitfall 7's first process with an empty cache took {first} (one sample: no range of its own), "
                "{factor}x faster than its restarts without a cache, {restart} (one of them falls within {range}), "
                "though both compile the same function: the machine's speed changed between them; one sample "
                "cannot say by how much for sure")
             if fill["seconds"] < low else
             N_("pitfall 7's first process with an empty cache took {first} (one sample: no range of its own), "
                "{factor}x slower than its restarts without a cache, {restart} (one of them falls within {range}), "
                "though both compile the same function and writing the cache costs little: the machine's speed "
                "changed between them; one sample cannot say by how much for sure"))
    return _line("pitfalls_agree", WARN, _(words).format(**values), "cache")


def finding_title(check: Check) -> str:
    """What a finding of this module leads with: a warning is "Figures that disagree" (its check's
    title, "Figures of the run agree", would read as the opposite above it); the page, the CLI's
    pitfalls and its versions all say it so."""
    return _("Figures that disagree") if check.status == WARN else check.title
