"""What the Pitfalls page shows, as plain data (no Streamlit here): its configuration and URL,
section anchors and links, the code each side runs before anything is measured, and the
verdict and "how wrong" sentences for a measured pitfall (see pitfalls.py)."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar
from urllib.parse import urlencode

from .. import i18n
from ..analysis import lab_checks
from ..analysis.checks import WARN, Check
from ..analysis.consistency import finding_title, pitfalls_findings
from ..analysis.summary import timing_name
from ..analysis.text import lab_numpy_speeds_lines
from ..engine import CODE_COMMENTS, DOCS, EFFECTS, PITFALLS, SECTIONS, Estimate, pitfall_title, side_roles, side_text
from ..history.exchange import parse_json
from ..i18n import N_, _, sentences, translate_text
from ..model.cases import Case, format_shape
from ..model.errors import BadInput
from ..model.formatting import (
    code_text,
    faster_or_slower,
    format_time,
    format_time_range,
    same_speed,
    utc_minute,
    with_detail,
)
from ..model.platforms import interpreted_here, is_host, platform, platform_label
from ..model.result import Result
from ..model.spec import DEVICES
from . import estimates, navigation
from .controls import DEFAULT_CASE, CompareConfig, compare_config_from_query, ordered_cases

ROLES = ("naive", "correct", "also")
DOC_TITLES = {
    DOCS["benchmarking"]: N_("Benchmarking JAX code"),
    DOCS["async"]: N_("Asynchronous dispatch"),
    DOCS["jit"]: N_("Just-in-time compilation"),
    DOCS["x64"]: N_("Default dtypes and the X64 flag"),
    DOCS["faq_transfer"]: N_("FAQ: benchmarking JAX code"),
    DOCS["precision"]: "jax.default_matmul_precision",
    DOCS["cache"]: N_("Persistent compilation cache"),
    DOCS["control_flow"]: N_("Control flow and logical operators with JIT"),
}
CLOSE_ENOUGH = 1.15  # a report without ranges: naive and correct speedups within 15% are the noise


def anchor(pitfall_id: str) -> str:
    """The HTML id of a pitfall's section heading: /Pitfalls#pitfall-jit."""
    return f"pitfall-{pitfall_id}"


def meta(pitfall_id: str) -> dict[str, str]:
    return next(p for p in PITFALLS if p["id"] == pitfall_id)


def title_text(pitfall_id: str, backend: str | None = None) -> str:
    """A pitfall's title in the reader's language; pitfall 6's names ``backend``'s reduced precision."""
    return _(pitfall_title(pitfall_id, backend))


def explanation_text(pitfall_id: str) -> str:
    """A pitfall's explanation in the reader's language."""
    return _(meta(pitfall_id)["explanation"])


def side_label(side: Mapping[str, Any]) -> str:
    """A side's label (from the engine's report or a preview) in the reader's language."""
    return translate_text(side["label"])


def short_title(pitfall_id: str) -> str:
    """'1. JIT' from '1. JIT: the first call includes compilation' (in the reader's language)."""
    return re.split("[:：]", title_text(pitfall_id), maxsplit=1)[0]


def doc_title(url: str) -> str:
    title = DOC_TITLES.get(url)
    return _(title) if title else url


# --- configuration and URL --------------------------------------------------------------------
@dataclass(frozen=True)
class PitfallsConfig(CompareConfig):
    """The Pitfalls page's controls; defaults as Compare's: the JAX docs' example at its large size."""

    KEY_PREFIX: ClassVar[str] = "pf_"
    # The lab traces nothing, and pitfall 6 sets the matmul precision itself (default against highest).
    NOT_CONTROLS: ClassVar[frozenset[str]] = frozenset({"profile", "matmul_precision", "ports"})
    # Every section is a ratio of several runtimes; thorough would make the lab take minutes.
    TIMING_PRESETS: ClassVar[tuple[str, ...]] = ("quick", "careful")


def default_case(cases: Sequence[Case]) -> Case:
    ordered = ordered_cases(cases)
    return next((c for c in ordered if c.name == DEFAULT_CASE), ordered[0])


def config_from_query(query: Mapping[str, Any], cases: Sequence[Case]) -> tuple[PitfallsConfig, list[str]]:
    """Read the page's URL; every bad value becomes a warning and its default."""
    return compare_config_from_query(query, cases, PitfallsConfig)  # type: ignore[return-value]


def pitfall_link(pitfall_id: str, case: Case, shape: Sequence[int], precision: str = "x32",
                 device: str = "auto", also: Mapping[str, str] | None = None) -> str:
    """A relative link (works under any base URL path) to a pitfall's section, measured for
    ``case``; a shape at or below the small preset links to the large preset instead, where
    the pitfalls show (the size pitfall compares against the small preset). ``also``: more URL
    parameters (the reader's language)."""
    shape = tuple(shape)
    if shape == case.large_shape or math.prod(shape) <= math.prod(case.small_shape):
        size, custom = "large", format_shape(case.large_shape)
    else:
        size, custom = "custom", format_shape(shape)
    config = PitfallsConfig(case=case.name, size=size, custom_shape=custom, precision=precision,
                            device=device if device in DEVICES else "auto")
    return f"{navigation.PITFALLS.url_path}?{urlencode({**config.query(), **(also or {})})}#{anchor(pitfall_id)}"


def result_link(pitfall_id: str | None, result: Result, cases: Sequence[Case],
                also: Mapping[str, str] | None = None) -> str | None:
    """The link from a Compare result's checklist item to the pitfall that explains it, measured
    for the result's case and precision (None when the item has no pitfall)."""
    case = next((c for c in cases if c.name == result.case), None)
    if pitfall_id not in SECTIONS or case is None:
        return None
    return pitfall_link(pitfall_id, case, result.shape, result.precision, result.spec.device, also)


def result_link_markdown(pitfall_id: str | None, result: Result, cases: Sequence[Case],
                         also: Mapping[str, str] | None = None) -> str | None:
    """result_link as a Markdown link named by the pitfall ('[JIT](Pitfalls?...#pitfall-jit)')."""
    url = result_link(pitfall_id, result, cases, also)
    if url is None or pitfall_id is None:
        return None
    return f"[{short_title(pitfall_id).split('. ', 1)[-1]}]({url})"


def code_in_language(code: str) -> str:
    """A side's code with its comments (the engine's CODE_COMMENTS) in the reader's language; the rest, and a
    comment it does not know (a port's name), as written. A lab's recorded code reads the same way."""
    def line(text: str) -> str:
        head, mark, comment = text.partition("# ")
        return f"{head}# {_(comment)}" if mark and comment in CODE_COMMENTS else text

    return "\n".join(line(text) for text in code.split("\n"))


# --- before a run: what each side will run ---------------------------------------------------------
def preview(pitfall_id: str, case: Case, shape: Sequence[int], precision: str,
            backend: str | None = None) -> dict[str, list[dict[str, str]]]:
    """The labels and code of each side, from the engine's own table (SIDE_TEXT, engine/common/lessons.py),
    so a section shows its code before anything has run. The labels are the engine's English:
    show them with side_label(), as a measured side's. ``backend``: where pitfall 8's ports will run."""
    naive, correct, also = side_roles(pitfall_id, precision)
    shapes = {"small": format_shape(case.small_shape), "large": format_shape(shape)}

    def one(name: str, port: str = "", code_name: str = "") -> dict[str, str]:
        label, code = side_text(name, shapes.get(name, ""), port, code_name)
        return {"label": label, "code": code}

    if pitfall_id == "ports":  # the case's own ports: the first, the race of those that run here, each other one
        first = case.all_ports[0]
        others = [port for port in case.all_ports[1:] if port.name in other_ports_here(case, backend)]
        return {"naive": [one(naive, first.name, first.jax_name)],
                "correct": [one("port_race", ", ".join([first.name, *(port.name for port in others)]))],
                "also": [one(also[0], port.name, port.jax_name) for port in others]}
    return {"naive": [one(naive)], "correct": [one(correct)], "also": [one(name) for name in also]}


def sides(pitfall: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """(role, side) pairs in display order: naive, correct, then the extra measurements."""
    return [("naive", pitfall["naive"]), ("correct", pitfall["correct"])] + [("also", s) for s in pitfall["extra"]]


# --- after a run: numbers and sentences --------------------------------------------------------------
def factor_number(factor: float) -> str:
    """'3.35', '660', '1,500': a factor's number, three significant figures without exponents."""
    return f"{factor:.3g}" if factor < 1000 else f"{factor:,.0f}"


def times(factor: float) -> str:
    """'3.35x', '660x', '1,500x': three significant figures without exponents."""
    return f"{factor_number(factor)}x"


def speedup(side: Mapping[str, Any]) -> float | None:
    """NumPy time / JAX time for one side (above 1: JAX faster)."""
    jax_s, numpy_s = side.get("seconds"), side.get("numpy_seconds")
    if not jax_s or not numpy_s or jax_s <= 0 or numpy_s <= 0:
        return None
    return numpy_s / jax_s


def speed_text(numpy_s: float | None, jax_s: float | None, *, subject: bool = True) -> str:
    """'JAX 37x faster than NumPy' / 'JAX 3.2x slower than NumPy' / 'no comparison'; without the
    ``subject`` ('37x faster than NumPy') where JAX was just named (a chart row's 'JAX 43 ms · ...')."""
    if not numpy_s or not jax_s or numpy_s <= 0 or jax_s <= 0:
        return _("no comparison")
    if same_speed(numpy_s / jax_s):  # "1x faster" would claim a winner
        return _("JAX as fast as NumPy") if subject else _("as fast as NumPy")
    word, factor = faster_or_slower(numpy_s / jax_s)
    if word == "faster":
        template = _("JAX {factor}x faster than NumPy") if subject else _("{factor}x faster than NumPy")
    else:
        template = _("JAX {factor}x slower than NumPy") if subject else _("{factor}x slower than NumPy")
    return template.format(factor=factor_number(factor))


def short_speed(side: Mapping[str, Any]) -> str:
    """'JAX 37x faster than NumPy' (no times)."""
    return speed_text(side.get("numpy_seconds"), side.get("seconds"))


def range_text(bounds: Sequence[float] | None) -> str:
    """'41–46 ms': a median's 95% range, '' when there is none (a report from before ranges)."""
    if not bounds or len(bounds) != 2 or not all(isinstance(b, int | float) and math.isfinite(b) for b in bounds):
        return ""
    return format_time_range(bounds[0], bounds[1])


def side_figures(side: Mapping[str, Any]) -> str:
    """'JAX **43 ms** (41–46 ms) · NumPy 51.9 ms (50.2–53 ms) → JAX 1.21x faster than NumPy' (markdown)."""
    text = with_detail(f"JAX **{format_time(side.get('seconds'))}**", range_text(side.get("range")))
    if side.get("numpy_seconds"):
        text += " · " + with_detail(f"NumPy {format_time(side['numpy_seconds'])}", range_text(side.get("numpy_range")))
        text += f" → {short_speed(side)}"
    if side.get("rel_error") is not None:
        text += " · " + _("error vs float64 {error:.2g}").format(error=side["rel_error"])
    if compile_text(side):
        text += f" · {compile_text(side)}"
    return text


def compile_text(side: Mapping[str, Any]) -> str | None:
    """Pitfall 7's compile step within a first call: 'compiling 103 ms', or on a cache hit
    'read from the cache in 7.3 ms' (None for a side that did not time it)."""
    seconds = side.get("compile_seconds")
    if seconds is None:
        return None
    if side.get("cache_hits"):
        return _("read from the cache in {time}").format(time=format_time(seconds))
    return _("compiling {time}").format(time=format_time(seconds))


def verdict_text(pitfall: Mapping[str, Any], backend: str | None = None) -> str:
    """'naive: JAX 123x faster than NumPy; measured properly: JAX 1.25x faster than NumPy'."""
    naive, correct = short_speed(pitfall["naive"]), short_speed(pitfall["correct"])
    if lab_checks.one_port(pitfall):
        return _("naive: {naive}; measured properly: {correct} (not applicable: one port runs here)").format(
            naive=naive, correct=correct)
    if backend is not None and not_applicable_text(pitfall["id"], backend):
        return _("naive: {naive}; measured properly: {correct} (not applicable on {backend}: no TF32 here)").format(
            naive=naive, correct=correct, backend=platform_label(backend))
    return _("naive: {naive}; measured properly: {correct}").format(naive=naive, correct=correct)


def wrong_factor(pitfall: Mapping[str, Any]) -> float | None:
    """Naive speedup / proper speedup: above 1 the naive way flatters JAX, below 1 it undersells it."""
    naive, correct = speedup(pitfall["naive"]), speedup(pitfall["correct"])
    if naive is None or correct is None:
        return None
    return naive / correct


def effect(pitfall: Mapping[str, Any]) -> str | None:
    """'flatters', 'hurts' or 'within_noise', as the engine decided from the ranges; for a
    report from before ranges, from the factor alone (within 15%: the noise)."""
    if pitfall.get("effect") in EFFECTS:
        return pitfall["effect"]
    factor = wrong_factor(pitfall)
    if factor is None:
        return None
    return "within_noise" if 1 / CLOSE_ENOUGH <= factor <= CLOSE_ENOUGH else "flatters" if factor > 1 else "hurts"


def effect_name(pitfall: Mapping[str, Any]) -> str:
    """'flatters JAX', 'hurts JAX', 'within the noise' in the reader's language ('—': no comparison)."""
    found = effect(pitfall)
    return _(EFFECT_NAMES[found]) if found else "—"


def effect_range_text(pitfall: Mapping[str, Any], *, inverted: bool = False) -> str:
    """'1.8–2.5x': the 95% range of naive speedup / proper speedup ('' before ranges);
    ``inverted``: of proper / naive, for a factor worded as how much worse JAX looks."""
    bounds = pitfall.get("effect_range")
    if not bounds or not all(isinstance(b, int | float) and math.isfinite(b) and b > 0 for b in bounds):
        return ""
    low, high = (1 / bounds[1], 1 / bounds[0]) if inverted else bounds
    return _("{low}–{high}x").format(low=factor_number(low), high=factor_number(high))


# English here (stored), in the reader's language where shown.
EFFECT_NAMES = {"flatters": N_("flatters JAX"), "hurts": N_("hurts JAX"), "within_noise": N_("within the noise")}
# Why a pitfall may not show on the host's own backend (the CPU), by pitfall.
HOST_HINTS = {
    "transfer": N_("On the CPU backend JAX can use a suitably aligned NumPy buffer in place instead of "
                   "copying it, so passing host arrays costs little here; on a GPU or TPU every call "
                   "pays a host→device copy."),
    "async": N_("Here the unblocked call took about as long as the work itself (little work, or the CPU "
                "backend running it before returning); on a GPU or TPU it returns in microseconds "
                "whatever the work."),
}


def how_wrong(pitfall: Mapping[str, Any], backend: str = "cpu") -> str:
    """One sentence: how far the naive conclusion is from the proper one, and whether that is
    more than this run's noise (markdown)."""
    factor = wrong_factor(pitfall)
    if factor is None:
        return _("How wrong: no comparison (a time was zero).")
    lesson = lab_checks.ports_lesson(pitfall)  # pitfall 8 with one port, or its first port the fastest
    if lesson:
        return _("How wrong: {lesson}.").format(lesson=lesson)
    if not_applicable_text(pitfall["id"], backend):
        gap = max(factor, 1 / factor)
        return _("How wrong: not applicable on {backend} — both runs do the same float32 work, so the {gap}x gap "
                 "between them is run-to-run noise, not TF32.").format(
            backend=platform_label(backend), gap=factor_number(gap))
    found = effect(pitfall)
    # The range in the sentence's own terms: "4.6x worse (95% range 2.2-5.3x)", never its reciprocal.
    spread = effect_range_text(pitfall, inverted=found == "hurts")
    within = _(" (95% range {range})").format(range=spread) if spread else ""
    if found == "within_noise":
        text = _("How wrong: **within the noise** — on this machine the {name} pitfall did not show: the naive "
                 "speedup is {factor}x the proper one{range}, and the run's noise covers 1x.").format(
            name=short_title(pitfall["id"]).split(". ", 1)[-1], factor=factor_number(factor), range=within)
        hint = HOST_HINTS.get(pitfall["id"]) if is_host(backend) else None
        # no space after a Chinese 。
        return sentences(text, lab_checks.retimed_text(pitfall) or "", _(hint) if hint else "")
    if found == "flatters":
        return _("How wrong: the naive way makes JAX look **{factor}x better** than it is{range}.").format(
            factor=factor_number(factor), range=within)
    return _("How wrong: the naive way makes JAX look **{factor}x worse** than it is{range}.").format(
        factor=factor_number(1 / factor), range=within)


def how_wrong_short(pitfall: Mapping[str, Any], backend: str = "cpu") -> str:
    """The summary table's cell: 'JAX looks 609x worse', 'JAX looks 2x better', 'within the
    noise', 'n/a on CPU'."""
    factor = wrong_factor(pitfall)
    if lab_checks.one_port(pitfall):
        return _("n/a: one port")
    if pitfall["id"] == "ports" and pitfall.get("first_fastest"):
        return _("none: the first port is the fastest")
    if not_applicable_text(pitfall["id"], backend):
        return _("n/a on {backend}").format(backend=platform_label(backend))
    if factor is None:
        return "—"
    found = effect(pitfall)
    if found == "within_noise":
        return _("within the noise")
    if found == "flatters":
        return _("JAX looks {factor}x better").format(factor=factor_number(factor))
    return _("JAX looks {factor}x worse").format(factor=factor_number(1 / factor))


def summary_rows(results: Mapping[str, Mapping[str, Any]], opened: OpenedLab | None = None) -> list[dict[str, str]]:
    """One row per pitfall for the page's overview table; ``results``: id -> {pitfall, context}; ``opened``: the
    saved lab on the page, if any. The keys are the table's column names, in the reader's language."""
    pitfall_col, naive_col, proper_col, wrong_col = _("Pitfall"), _("Naive says"), _("Measured properly"), \
        _("How wrong")
    machine_col = _("Machine")
    absent = _("not in the saved lab") if only_saved(opened, results) else _("not measured yet")
    rows = []
    for p in PITFALLS:
        entry = results.get(p["id"])
        row = {pitfall_col: f"[{short_title(p['id'])}](#{anchor(p['id'])})", naive_col: "—",
               proper_col: "—", wrong_col: absent, machine_col: "—"}
        if entry:
            pitfall, backend = entry["pitfall"], entry["context"]["backend"]
            row.update({naive_col: short_speed(pitfall["naive"]),
                        proper_col: short_speed(pitfall["correct"]),
                        wrong_col: how_wrong_short(pitfall, backend), machine_col: machine_text(pitfall)})
        rows.append(row)
    return rows


def machine_text(pitfall: Mapping[str, Any]) -> str:
    """The summary table's Machine cell: 'busy (1.37 cores)', 'quiet', or '—' where not measured."""
    reading = pitfall.get("load") or {}
    if reading.get("busy"):
        return _("busy ({cores} cores)").format(cores=f"{reading['others_cores']:.2f}")
    return _("quiet") if reading.get("others_cores") is not None else "—"


def busy_check(entry: Mapping[str, Any]) -> Check:
    """A measured section's Machine quiet line (analysis.lab_checks), in the reader's language."""
    source = (entry["context"].get("load") or {}).get("others_source", "cores")
    return lab_checks.busy_check(entry["pitfall"], source)


def busy_note(entry: Mapping[str, Any]) -> str | None:
    """The warning beside a section's lesson when it was timed on a busy machine (None when not)."""
    check = busy_check(entry)
    return _("**Busy machine**: {reason}").format(reason=check.reason) if check.status == WARN else None


def busy_summary(results: Mapping[str, Mapping[str, Any]]) -> str | None:
    """'2 of 5 pitfalls were timed while the machine was busy ...' over the sections shown."""
    return lab_checks.busy_count_text(entry["pitfall"] for entry in results.values())


def run_findings(results: Mapping[str, Mapping[str, Any]]) -> list[Check]:
    """The figures that disagree within each run whose sections are shown (a section measured
    again leaves its old run's figures out: they no longer stand on the page)."""
    runs: dict[str, list[Mapping[str, Any]]] = {}
    for pid in SECTIONS:
        if pid in results:
            runs.setdefault(str(results[pid]["context"].get("run")), []).append(results[pid])
    findings = []
    for entries in runs.values():
        context = entries[0]["context"]
        findings += pitfalls_findings({**context, "pitfalls": [e["pitfall"] for e in entries]})
    return findings


def numpy_speeds_lines(results: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """NumPy's figures in the runs shown, each as `run` gives it: as a plain process runs it, and with freed
    memory kept, where a plain process timed it again (analysis.text.lab_numpy_speeds_lines), once a run."""
    lines: list[str] = []
    seen: set[str] = set()
    for pid in SECTIONS:
        context = results[pid]["context"] if pid in results else None
        if context is not None and str(context.get("run")) not in seen:
            seen.add(str(context.get("run")))
            lines += [line for line in lab_numpy_speeds_lines(context) if line not in lines]
    return lines


def finding_text(check: Check) -> str:
    """A finding of the run as Markdown, led by what it is (consistency.finding_title)."""
    return _("**{title}**: {reason}").format(title=finding_title(check), reason=check.reason)


def markdown_table(rows: Sequence[Mapping[str, str]]) -> str:
    """A small markdown table (keeps in-page #anchor links clickable, unlike a data grid)."""
    head = list(rows[0])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(str(r[h]).replace("|", "\\|") for h in head) + " |" for r in rows]
    return "\n".join(lines)


def not_applicable_text(pitfall_id: str, backend: str) -> str | None:
    """Why a section does not apply on ``backend`` (None when it does)."""
    entry = platform(backend)
    if pitfall_id != "tf32" or (entry is not None and entry.float32_products != "float32"):
        return None  # a GPU's TF32 and a TPU's bfloat16 passes alike: the default is reduced there
    return _("Not applicable on {backend}: no TF32 here. Both sides compute in full float32, so the errors "
             "match and the times differ only by noise; the numbers are shown for reference.").format(
        backend=platform_label(backend))


def other_ports_here(case: Case, backend: str | None) -> list[str]:
    """The names of ``case``'s ports beyond its first that pitfall 8 times on ``backend`` (a Pallas kernel
    only interpreted there is not one)."""
    return [port.name for port in case.all_ports[1:] if not interpreted_here(port.pallas, backend)]


def ports_note(case: Case, backend: str | None, cases: Sequence[Case] = (),
               pitfall: Mapping[str, Any] | None = None) -> str | None:
    """Pitfall 8 before or after a run: why it does not apply (``case`` has no other port that runs on
    ``backend``; ``cases``: those to suggest instead), or None when it does."""
    if (pitfall.get("applicable", True) if pitfall is not None else other_ports_here(case, backend)):
        return None
    several = [c.name for c in cases if c.name != case.name and other_ports_here(c, backend)]
    where = platform_label(backend) if backend else _("this device")
    text = _("Not applicable to {case} here: it has no other port that runs on {backend}.").format(
        case=case.name, backend=where)
    if not several:
        return text
    return sentences(text, _("Pick a case with several ports ({cases}) to see the lesson.").format(
        cases=", ".join(several)))


def has_chart(pitfall: Mapping[str, Any]) -> bool:
    """Whether a measured section draws its chart: pitfall 8 with one port has nothing to set beside it
    (one figure drawn twice)."""
    return not lab_checks.one_port(pitfall)


def tf32_errors(pitfall: Mapping[str, Any]) -> str | None:
    """'Error vs float64: default 3.1e-07, 'highest' 3.1e-07 (1x)' for the TF32 section."""
    a, b = pitfall["naive"].get("rel_error"), pitfall["correct"].get("rel_error")
    if a is None or b is None:
        return None
    if b > 0 and a / b >= 1.5:
        return _("Agreement with float64: default precision error **{default:.2g}**, precision='highest' "
                 "**{highest:.2g}** ({ratio}x larger at default precision).").format(
            default=a, highest=b, ratio=factor_number(a / b))
    return _("Agreement with float64: default precision error **{default:.2g}**, precision='highest' "
             "**{highest:.2g}**.").format(default=a, highest=b)


def measured_caption(context: Mapping[str, Any], timing: str, pitfall: Mapping[str, Any] | None = None) -> str:
    """'Measured: matmul · 64x64 · x32 (float32) · CPU device `cpu:0` · quick timing', and with
    ``pitfall``, what other programs used meanwhile ('· other programs used 0.12 cores ...')."""
    text = _("Measured: {case} · {shape} · {precision} ({dtype}) · {backend} device `{device}` · {timing}").format(
        case=context["case"], shape=format_shape(context["shape"]), precision=context["precision"],
        dtype=context["dtype"], backend=platform_label(context["backend"]),
        device=context["device"], timing=timing_name(timing))
    if pitfall is None:
        return text
    check = busy_check({"pitfall": pitfall, "context": context})
    return f"{text} · {check.reason}" if check.status != WARN else text  # a busy one has its own note


def section_entries(report: Mapping[str, Any], timing: str, run: str | None = None) -> dict[str, dict[str, Any]]:
    """A finished pitfalls job's sections, by pitfall id: each with the run's context (case,
    shape, backend..., and ``run``: the job, whose sections' figures are held against each other)
    and timing preset, so sections measured at different times keep theirs."""
    context = {k: v for k, v in report.items() if k != "pitfalls"} | {"run": run or str(id(report))}
    return {p["id"]: {"pitfall": p, "context": context, "timing": timing} for p in report["pitfalls"]}


LAB_SCHEMA = "jaxcompare.lab/1"


def lab_document(results: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The page's sections as a file to keep: a run each (the sections one job measured), each as
    `pitfalls --json` writes it (lab_checks.judged) with its ``timing``, in English (docs/json.md)."""
    runs: dict[str, dict[str, Any]] = {}
    for pid in SECTIONS:
        entry = results.get(pid)
        if entry is not None:
            context = {k: v for k, v in entry["context"].items() if k != "run"}
            runs.setdefault(entry["context"]["run"], context | {"timing": entry["timing"], "pitfalls": []})[
                "pitfalls"].append(entry["pitfall"])
    with i18n.using(i18n.SOURCE_LANGUAGE):
        return {"schema": LAB_SCHEMA, "runs": [lab_checks.judged(report) for report in runs.values()]}


def lab_json(results: Mapping[str, Mapping[str, Any]]) -> str:
    return json.dumps(lab_document(results), indent=1)


def open_lab(data: bytes | str, source: str,
             also: Callable[[Mapping[str, Any]], Any] | None = None) -> dict[str, dict[str, Any]]:
    """The sections of a saved lab (lab_document's file, or one `pitfalls --json` document) as the page
    holds them, each shown once here in a trial (and given to ``also``: the page's charts), so a file this
    page cannot show is one BadInput line, before anything the page holds is replaced."""
    doc = parse_json(data, source)
    if isinstance(doc, Mapping) and doc.get("schema") == LAB_SCHEMA:
        runs = doc.get("runs")
    elif isinstance(doc, Mapping) and "pitfalls" in doc:
        runs = [doc]
    else:
        raise BadInput(N_("{source}: not a saved pitfalls lab (a download from this page, or `pitfalls --json`)")
                       .format(source=source))
    entries: dict[str, dict[str, Any]] = {}
    for number, report in enumerate(runs if isinstance(runs, list) else [None]):
        where = N_("{source}, run {number}").format(source=source, number=number + 1)
        if not isinstance(report, Mapping) or not isinstance(report.get("pitfalls"), list):
            raise BadInput(N_("{where}: no list of pitfalls").format(where=where))
        for pitfall in report["pitfalls"]:
            if not isinstance(pitfall, Mapping) or pitfall.get("id") not in SECTIONS:
                raise BadInput(N_("{where}: a pitfall that is not one of the lab's sections ({sections})").format(
                    where=where, sections=", ".join(SECTIONS)))
        timing = report.get("timing") if isinstance(report.get("timing"), str) else "custom"
        entries |= section_entries(report, timing, run=f"{source}#{number}")
    if not entries:
        raise BadInput(N_("{source}: the lab holds no measured section").format(source=source))
    for pid, entry in [*entries.items(), (None, None)]:  # each section, then all of them together
        try:
            _trial(entry, also) if entry is not None else _trial_together(entries)
        except Exception as exc:  # the page's own reading of the section decides: a field missing or mistyped
            what = _unreadable(exc)
            raise BadInput(N_("{source}: section {section} is not as jaxcompare writes it ({error})").format(
                source=source, section=pid, error=what) if pid else N_(
                "{source}: its sections are not as jaxcompare writes them ({error})").format(
                source=source, error=what)) from None
    return entries


def _unreadable(exc: Exception) -> str:
    """What the page found wrong in a saved section, in a reader's words rather than Python's exception names."""
    if isinstance(exc, KeyError) and exc.args:
        return N_("no field {field}").format(field=repr(exc.args[0]))
    return N_("a field holds something else: {detail}").format(detail=str(exc)[:160])


@dataclass(frozen=True)
class OpenedLab:
    """A saved lab opened on the page: its file's name, and the runs its sections came from."""

    name: str
    runs: frozenset[str]


def only_saved(opened: OpenedLab | None, results: Mapping[str, Mapping[str, Any]]) -> bool:
    """Whether every section on the page came from the opened lab: a missing one is then missing from the file."""
    return opened is not None and bool(results) and all(
        entry["context"]["run"] in opened.runs for entry in results.values())


def opened_text(opened: OpenedLab | None, results: Mapping[str, Mapping[str, Any]]) -> str | None:
    """What the page says above sections that came from a saved lab (None: none did): that they are the
    file's figures, and which, once some were measured again here."""
    if opened is None:
        return None
    from_file = [pid for pid in SECTIONS if pid in results and results[pid]["context"]["run"] in opened.runs]
    if not from_file:
        return None
    name, when = code_text(opened.name), saved_when([results[pid]["context"] for pid in from_file])
    if len(from_file) == len(results):
        if when:
            return _("These sections are the saved lab `{name}`: measured on {date}, on the device named under "
                     "each, not now.").format(name=name, date=when)
        return _("These sections are the saved lab `{name}`: measured when it was saved, on the device named under "
                 "each, not now.").format(name=name)
    sections = _(", ").join(short_title(pid) for pid in from_file)
    if when:
        return _("Sections {sections} are the saved lab `{name}`, measured on {date} on the device named under "
                 "each; the others were measured here now.").format(sections=sections, name=name, date=when)
    return _("Sections {sections} are the saved lab `{name}`, measured when it was saved on the device named under "
             "each; the others were measured here now.").format(sections=sections, name=name)


def saved_when(contexts: Sequence[Mapping[str, Any]]) -> str | None:
    """When saved runs were measured, from their ``created`` (UTC): '2026-12-07 18:50 UTC', or the first and
    last; None where no run says (a lab saved before runs recorded it)."""
    # A file's own words: only what reads as a date and time is shown.
    times = sorted({when for context in contexts if (when := utc_minute(context.get("created") or ""))})
    if not times:
        return None
    return f"{times[0]} UTC" if len(times) == 1 else f"{times[0]} – {times[-1]} UTC"


def lab_widgets(entries: Mapping[str, Mapping[str, Any]], cases: Sequence[Case]) -> dict[str, Any]:
    """The sidebar's settings for a saved lab (its first section's case, shape, precision and timing), as its
    URL would give them; none where the lab's case is not one of ``cases`` (a user's file not loaded here)."""
    entry = next(entries[pid] for pid in SECTIONS if pid in entries)
    context = entry["context"]
    query = {"case": context["case"], "shape": format_shape(context["shape"]), "precision": context["precision"]}
    if entry["timing"] in ("quick", "careful"):
        query["timing"] = entry["timing"]
    config, warnings = config_from_query(query, cases)
    # The device stays as chosen: the lab's may not be on this machine.
    return {} if warnings else {k: v for k, v in config.widgets().items() if k != config.key("device")}


def _trial(entry: Mapping[str, Any], also: Callable[[Mapping[str, Any]], Any] | None) -> None:
    """What the page reads of a section, read once (the texts, the summary's row, the caption)."""
    pitfall, context = entry["pitfall"], entry["context"]
    backend = context["backend"]
    title_text(pitfall["id"], backend)
    verdict_text(pitfall, backend)
    how_wrong(pitfall, backend)
    tf32_errors(pitfall)
    lab_checks.left_out_lines(pitfall)
    busy_note(entry)
    for _role, side in sides(pitfall):
        side_label(side)
        side_figures(side)
        str(side["code"])
    measured_caption(context, entry["timing"], pitfall)
    file_stem(pitfall["id"], context)
    _trial_together({pitfall["id"]: entry})
    if also is not None:
        also(pitfall)


def _trial_together(results: Mapping[str, Mapping[str, Any]]) -> None:
    summary_rows(results)
    numpy_speeds_lines(results)
    busy_summary(results)
    run_findings(results)


def file_stem(pitfall_id: str, context: Mapping[str, Any]) -> str:
    """'pitfall_jit_matmul_1000x1000_x32': a section's chart download name."""
    return f"pitfall_{pitfall_id}_{context['case']}_{format_shape(context['shape'])}_{context['precision']}"


JOB_PHASE_TEXT = {  # what a pitfalls job reports -> what the progress bar says
    "queued": N_("Waiting in the device queue"),
    "starting worker": N_("Preparing: worker, inputs, NumPy and jitted-JAX baselines"),
    "dtype (float64 worker)": N_("Measuring the fair float64 side in the x64 worker"),
    "size profile": N_("Tracing a few calls at each shape with jax.profiler (workload size)"),
    "done": N_("Done"),
    "cancelled": N_("Stopped"),
    "failed": N_("Failed"),
}


def phase_text(phase: str, sections: Sequence[str] = SECTIONS) -> str:
    """The progress bar's text for a pitfalls job's phase (the phases are pitfall ids)."""
    if phase in JOB_PHASE_TEXT:
        return _(JOB_PHASE_TEXT[phase])
    if phase in sections:
        name = short_title(phase).split(". ", 1)[-1]
        return _("Measuring {number} of {count}: {name}").format(
            number=list(sections).index(phase) + 1, count=len(sections), name=name)
    return phase.replace("_", " ").capitalize()


def progress_text(phase: str, progress: float, elapsed_s: float, sections: Sequence[str] = SECTIONS, *,
                  queued_behind: int | None = None, estimate: Estimate | None = None) -> str:
    """The progress bar's text: the queue while waiting behind others, else phase, share, time and
    the time left by the job's ``estimate`` (estimates.time_left_text, as every running job says it)."""
    if queued_behind is not None:
        return _("Queued behind {count} other measurement(s): one at a time, so they don't spoil each "
                 "other's timings.").format(count=queued_behind)
    return f"{phase_text(phase, sections)} · {progress:.0%} · {estimates.time_left_text(estimate, elapsed_s)}"
