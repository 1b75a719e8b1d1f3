"""What a pitfalls run says about its own measuring: each pitfall's *Machine quiet* line, by the
checklist's rule (engine.common.load.is_busy on the busiest phase its figures were timed in), how many
pitfalls were timed while the machine was busy, and the run's figures that disagree
(consistency.pitfalls_findings). The CLI, its JSON and the Pitfalls page all read them here."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..i18n import N_, _, translate_text
from ..model.formatting import format_time, format_time_range
from .checks import NA, PASS, TITLES, WARN, Check, format_cores
from .consistency import pitfalls_findings
from .text import STATUS_WORDS


def retimed_text(pitfall: Mapping[str, Any]) -> str | None:
    """Where the effect is within the noise because the proper call, timed again in turns with the naive side
    (``proper_again``), lies outside the range of the lab's baseline figure the section shows: that figure, so
    that the verdict does not contradict the two times shown (406 against 231 µs read "costs little here");
    None otherwise."""
    again = pitfall.get("proper_again")
    if pitfall.get("effect") != "within_noise" or not again or not again.get("range"):
        return None
    shown = pitfall.get(again.get("side") or ("naive" if pitfall.get("id") == "ports" else "correct")) or {}
    if not shown.get("range"):
        return None
    (again_low, again_high), (low, high) = again["range"], shown["range"]
    if again_low <= high and low <= again_high:  # the ranges meet: the baseline held
        return None
    return _("The proper call, timed again in turns with the naive side, took {again} ({range}), not the {shown} "
             "shown: the machine's speed moved between the two timings, and the effect's range spans both.").format(
        again=format_time(again["seconds"]), range=format_time_range(again_low, again_high),
        shown=format_time(shown["seconds"]))


def busy_check(pitfall: Mapping[str, Any], others_source: str | None = "cores") -> Check:
    """Was the machine busy while this pitfall's naive and correct figures were timed?
    ``others_source``: the run's ``load.others_source`` (None: this system reports no CPU time)."""
    reading = pitfall.get("load")
    if not reading:
        return Check("busy", _(TITLES["busy"]), NA, _(
            "not checked: this run was measured before the pitfalls lab recorded the machine's load"), pitfall["id"])
    cores = reading.get("others_cores")
    if reading.get("busy"):
        return Check("busy", _(TITLES["busy"]), WARN, _(
            "other programs used {cores} cores while this pitfall was timed: contention slows NumPy's BLAS far "
            "more than XLA and can stretch a short call to a whole scheduler tick, so this lesson may be off; "
            "rerun it when the machine is quieter").format(cores=format_cores(cores)), pitfall["id"])
    if cores is None:
        words = (N_("not measured here: this system reports no CPU time") if others_source is None else
                 N_("not measured: a phase of this pitfall has no reading of the other programs' CPU time"))
        return Check("busy", _(TITLES["busy"]), NA, _(words), pitfall["id"])
    return Check("busy", _(TITLES["busy"]), PASS, _("other programs used {cores} cores while this pitfall was "
                                                    "timed").format(cores=format_cores(cores)), pitfall["id"])


def check_line(check: Check, title: str | None = None) -> str:
    """'[warn] Machine quiet: other programs used 1.02 cores ...': one of the lab's checklist lines, as
    text; ``title``: what leads it, where not the check's own (a finding's: consistency.finding_title)."""
    return f"[{_(STATUS_WORDS[check.status])}] " + _("{title}: {reason}").format(title=title or check.title,
                                                                                 reason=check.reason)


def is_busy_pitfall(pitfall: Mapping[str, Any]) -> bool:
    return bool((pitfall.get("load") or {}).get("busy"))


def busy_count_text(pitfalls: Iterable[Mapping[str, Any]]) -> str | None:
    """'2 of 5 pitfalls were timed while the machine was busy: ...', None when none was."""
    pitfalls = list(pitfalls)
    busy = sum(map(is_busy_pitfall, pitfalls))
    if not busy:
        return None
    return _("{busy} of {count} pitfalls were timed while the machine was busy (other programs used half a core "
             "or more): their lessons may be off; rerun them when the machine is quieter").format(
        busy=busy, count=len(pitfalls))


def judged(report: Mapping[str, Any]) -> dict[str, Any]:
    """The report with what it says about itself, as the CLI's JSON carries it: each pitfall's
    ``checks`` (its *Machine quiet* line), the run's ``busy_pitfalls`` (how many were busy) and
    ``consistency`` (its figures that disagree), each check a dict as in a result's checklist."""
    source = (report.get("load") or {}).get("others_source", "cores")
    pitfalls = [dict(p, checks=[busy_check(p, source).to_dict()]) for p in report["pitfalls"]]
    return {**report, "pitfalls": pitfalls, "busy_pitfalls": sum(map(is_busy_pitfall, pitfalls)),
            "consistency": [c.to_dict() for c in pitfalls_findings(report)]}


def one_port(pitfall: Mapping[str, Any]) -> bool:
    """Pitfall 8 with no other port that ran here: not applicable, nothing to set beside the first."""
    return pitfall.get("id") == "ports" and not pitfall.get("applicable", True)


def left_out_lines(pitfall: Mapping[str, Any]) -> list[str]:
    """Pitfall 8's ports not timed here, a line each: 'Not timed: pallas — a Pallas kernel runs only
    interpreted here...'. The page's list and the CLI's lines."""
    return [_("Not timed: {port} — {why}").format(port=entry["port"], why=translate_text(entry["why"]))
            for entry in pitfall.get("left_out") or ()]


def ports_lesson(pitfall: Mapping[str, Any]) -> str | None:
    """Pitfall 8's own sentence where the noise words would mislead: one port alone ('not applicable'), or the
    port written first also the fastest, with how much longer the next one took (both timed in the same
    turns); None otherwise, and for any other pitfall. The CLI's effect line and the page's "how wrong"."""
    if pitfall.get("id") != "ports":
        return None
    if one_port(pitfall):
        return _("not applicable: no other port of this case runs here, so there is nothing to set beside it")
    if not pitfall.get("first_fastest") or not pitfall.get("extra"):
        return None
    first_s = (pitfall.get("proper_again") or {}).get("seconds") or pitfall["naive"]["seconds"]
    nxt = pitfall["extra"][0]
    return _("none here: the port written first, {first}, is also the fastest; the next, {port}, took {factor}x "
             "as long").format(first=pitfall["naive"]["port"], port=nxt["port"],
                               factor=f"{nxt['seconds'] / first_s:.3g}")
