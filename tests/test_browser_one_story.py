"""One story on every page (issue 49), in Chromium, in English and Chinese: given recorded figures
of the kinds that once read two ways on one page, each page says only what its own ranges and checks
allow, and still says the rest where they allow it.

- Compare: a trusted speedup whose range holds 1x names no side and no break-even (its twin, wholly
  above 1x, names both); a dispatch alone above the blocked call gives no verdict and quotes both.
- Size sweep: a set-aside point and a range across 1x never place the crossover (x32); trusted
  points whose ranges exclude 1x do (x64, on the same page).
- Pitfalls: a lab whose sections re-timed the proper comparison apart, and whose profile had the
  device busy longer than the call, says which figures disagree and withholds the split; the same
  run read as this lab reports it (one proper figure, a profile inside its call) says neither.

The figures are recorded (tests/data: a 64x64 matmul on this CPU, the TPU v5e's pitfalls run),
shifted only where a defect needs it; one server (tests/recorded_pages.py) serves every scenario.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest
from browser_support import IDLE, POLL_MS, assert_no_error, main_text, open_page
from recorded_pages import page_url, recorded_app
from support import zh
from test_browser_doubt import tile

from jaxcompare import Result, Spec, Stats, TimingConfig
from jaxcompare.analysis.advice import COMPILE
from jaxcompare.analysis.consistency import pitfalls_findings
from jaxcompare.analysis.sweep import crossover
from jaxcompare.analysis.trust import JAX_FASTER, NUMPY_FASTER, direction, trust, trusted
from jaxcompare.app import navigation
from jaxcompare.app import pitfalls_view as pv
from jaxcompare.app.controls import SweepRun
from jaxcompare.model.formatting import format_time

pytestmark = pytest.mark.browser
DATA = Path(__file__).parent / "data"
# matmul 64x64 x32 on this CPU, quick timing (its NumPy 29 µs against JAX 135 µs, dispatch 123 µs).
RECORDED = Result.from_dict(json.loads((DATA / "result-v1-third-side.json").read_text()))
QUIET = dataclasses.replace(RECORDED, load={}, jax_cpu=None)  # measured quiet: only the shifted figure doubts it
TPU_LAB = json.loads((DATA / "tpu" / "device-check.json").read_text())["device_check"]["pitfalls"]


def scaled(stats: Stats, factor: float) -> Stats:
    """The same samples, each ``factor`` times as long: the recorded spread at another median."""
    return Stats.from_samples([x * factor for x in stats.samples_s], loops=stats.loops)


def narrowed(stats: Stats, power: float) -> Stats:
    """The same samples drawn towards their median (each one's log distance times ``power``)."""
    m = stats.median_s
    return Stats.from_samples([m * (x / m) ** power for x in stats.samples_s], loops=stats.loops)


def spread(median_s: float, factor: float, n: int = 9) -> Stats:
    """``n`` samples whose median's 95% range spans about ``factor`` times."""
    return Stats.from_samples([median_s * factor ** ((i - n // 2) / (n - 1)) for i in range(n)], loops=10)


# --- Compare ------------------------------------------------------------------------------------------
def compare_results() -> dict[str, Result]:
    careful = dataclasses.replace(QUIET.spec, timing=TimingConfig.preset("careful"))
    # The recorded spread, a little narrower: with a rerun's drift (model/reruns.py) the recorded one
    # alone makes a range just over TRUSTED_SPREAD, and these scenarios are about trusted ranges.
    runtime = narrowed(QUIET.jax.runtime, 0.6)
    quiet = dataclasses.replace(QUIET, jax=dataclasses.replace(QUIET.jax, runtime=runtime))
    return {
        # NumPy 3% slower than JAX, with that spread: 1.03x, its range across 1x.
        "straddles": dataclasses.replace(quiet, id="story-straddles", spec=careful,
                                         numpy_runtime=scaled(runtime, 1.03)),
        # JAX 3x faster, the same spread: its range wholly above 1x.
        "jax_faster": dataclasses.replace(quiet, id="story-jax-faster", numpy_runtime=scaled(runtime, 3.0)),
        # The issue's 10x10: dispatch alone 67.8 µs above 22.4 µs blocked, as 3x the recorded blocked call.
        "dispatch_above": dataclasses.replace(QUIET, id="story-dispatch", jax=dataclasses.replace(
            QUIET.jax, dispatch=scaled(runtime, 3.0))),
    }


# The sentences the pages word (their English source: a change there fails here, in both languages).
NO_WINNER = ("**No winner at this size: this run cannot tell JAX and NumPy apart.** It measured a speedup of "
             "{speedup} ({numpy} vs {jax}), a range that holds 1x, so neither side is faster for sure and JAX's "
             "one-off costs ({one_off}) have no break-even to quote.")
JAX_WINS = ("JAX is **{factor} faster** per call ({numpy} → {jax}); its one-off costs ({one_off}) are paid back "
            "after **{calls}**.")
NUMPY_WINS = ("NumPy is **{factor} faster** per call at this size ({numpy} vs {jax}), so JAX never pays back its "
              "{one_off} of one-off costs.")
THOROUGH = "Thorough timing narrows the range; a gap this small may stay within it."
LONGER = "A longer timing preset (Careful, Thorough) narrows the range; a gap this small may stay within it."
DISAGREE_WHY = "JAX's dispatch alone took longer than its blocked call"
DISAGREE = ("JAX's dispatch alone took {dispatch} ({dispatch_range}) and its blocked call {blocked} "
            "({blocked_range}): a blocked call dispatches too, so the two cannot both be true (see *Blocked "
            "timing* below).")
PEAK = "**Fraction of peak.** {text}"
BETWEEN = "NumPy is faster {numpy} and JAX {jax}, so JAX starts to win between {last} and {first}."
NOT_PLACED = ("NumPy is faster {numpy} and JAX {jax}, but no crossover is placed between {last} and {first}: "
              "a size set aside never places it.")
PLACED = "JAX starts to win at {where}."
RETIMED = ("{library}'s runtime at {shape} ({dtype}) was timed in more than one section of this run, and their 95% "
           "ranges do not all overlap: {figures}. The machine's speed changed between those timings, so the "
           "speedups built on them disagree: rerun when the machine is quieter")
PROFILE_APART = ("pitfall 5's profile at {shape}: the device was busy {busy} per traced call, longer than the whole "
                 "timed call, {seconds} ({range}): the device's work is inside the call, so the traced calls ran at "
                 "another speed than the timed ones, and their split into device time and host overhead is not "
                 "shown")
PROFILED_APART = ("Profiled, but not as timed: the device was busy **{busy}** per traced call, longer than the whole "
                  "timed call ({seconds}, {range}), so the traced calls ran at another speed and their split into "
                  "device time and host overhead is withheld.")
GAP_CHART = "Why tiny inputs lose: the device is idle for most of a tiny call"


def literal(template: str, lang: str) -> str:
    """The longest stretch of ``template`` (English source) without a field or Markdown, as ``lang`` shows it."""
    text = zh(template) if lang == "zh" else template
    return max(re.split(r"\{[^}]*\}|\*\*|\*", text), key=len).strip()


def say(text: str, lang: str) -> str:
    return zh(text) if lang == "zh" else text


# --- Size sweep --------------------------------------------------------------------------------------
def point(shape: int, precision: str, numpy_s: float, jax_s: float, width: float) -> Result:
    """A sweep point: the recorded result at ``shape`` with these medians, each range ``width`` wide."""
    spec = dataclasses.replace(QUIET.spec, shape=(shape, shape), precision=precision)
    dtype = "float64" if precision == "x64" else "float32"
    agreement = QUIET.jax.agreement | {"numpy_dtype": dtype, "jax_dtype": dtype}
    return dataclasses.replace(
        QUIET, id=f"story-{precision}-{shape}", spec=spec, dtype=dtype, flops=2.0 * shape**3,
        numpy_runtime=spread(numpy_s, width), jax=dataclasses.replace(
            QUIET.jax, runtime=spread(jax_s, width), dispatch=spread(jax_s / 20, 1.05), agreement=agreement))


def sweeps() -> tuple[list[Result], list[Result]]:
    """x32: the issue's English sweep (NumPy faster up to 158x158, a 398x398 set aside for a range too wide
    yet wholly above 1x, a trusted 1000x1000 at 0.96x whose range holds 1x). x64: every point trusted, the
    ranges each wholly on one side of 1x, crossing between 158x158 and 398x398."""
    x32 = [point(63, "x32", 0.03e-3, 0.10e-3, 1.1), point(158, "x32", 0.4e-3, 0.8e-3, 1.1),
           point(398, "x32", 10.9e-3, 2.0e-3, 3.0), point(1000, "x32", 13.5e-3, 14.0e-3, 1.2)]
    x64 = [point(63, "x64", 0.05e-3, 0.15e-3, 1.1), point(158, "x64", 0.8e-3, 1.2e-3, 1.1),
           point(398, "x64", 12e-3, 6e-3, 1.1), point(1000, "x64", 180e-3, 60e-3, 1.1)]
    return x32, x64


def sweep_run(results: list[Result]) -> SweepRun:
    """A finished sweep of ``results`` as the Size sweep page keeps it."""
    base = Spec("matmul", (63, 63), timing=QUIET.spec.timing)
    points = [(r.shape, r.precision) for r in results]
    return SweepRun(base=base, points=points, results=list(results), next_index=len(points))


# --- Pitfalls -------------------------------------------------------------------------------------------
PROPER = ("jit", "async", "transfer", "size")  # sections whose correct side is the proper comparison


def lab_as_recorded() -> dict:
    """The TPU's run, as the lab wrote it then: each section's own timing of the proper comparison
    (536-540 µs in two sections, 515-520 µs in two others, ranges apart); its 1000x1000 profile made the
    CPU's pitfall 5 of the issue (the device busy 35.2 ms of 35.8 ms per traced call, the call 17.8 ms)."""
    lab = json.loads(json.dumps(TPU_LAB))
    large = next(p for p in lab["pitfalls"] if p["id"] == "size")["correct"]
    large["profile"] |= {"device_busy_s": large["seconds"] * 35.2 / 17.8, "wall_s": large["seconds"] * 35.8 / 17.8}
    return lab


def lab_as_one_story() -> dict:
    """The same run as this lab reports it: every section shows the one proper comparison (pitfall 3's
    row at the run's dtype, the baseline), and the profile inside its call (as the TPU recorded it)."""
    lab = json.loads(json.dumps(TPU_LAB))
    sections = {p["id"]: p for p in lab["pitfalls"]}
    baseline = sections["dtype"]["correct"]
    for pid in PROPER:
        side = sections[pid]["correct"]
        side.update({key: baseline[key] for key in ("seconds", "range", "numpy_seconds", "numpy_range")})
    sections["tf32"]["naive"].update({key: baseline[key] for key in ("seconds", "range")})
    return lab


# The summary table's rows (PITFALLS' order) whose "Measured properly" is the proper comparison.
SHOWS_PROPER = (0, 1, 2, 3, 4)


def summary_column(page, column: str) -> list[str]:
    """The Pitfalls summary table's cells in ``column``, a row per pitfall."""
    return page.locator("[data-testid='stMain'] table").first.evaluate("""(t, column) => {
        const head = Array.from(t.querySelectorAll('thead th')).map(c => c.innerText.trim());
        const at = head.indexOf(column);
        return Array.from(t.querySelectorAll('tbody tr')).map(r => r.querySelectorAll('td')[at].innerText.trim());
    }""", column)


def page_svg_text(page) -> str:
    """Every chart's drawn text (titles, axes) on the page."""
    page.wait_for_selector("[data-testid='stVegaLiteChart'] svg.marks", timeout=30_000)
    return page.evaluate("() => Array.from(document.querySelectorAll(\"[data-testid='stVegaLiteChart'] svg.marks\"))"
                         ".map(s => s.textContent).join('\\n')")


def lab_state(report: dict, run: str) -> dict:
    return {"pitfalls_results": pv.section_entries(report, "careful", run=run)}


# --- the server ------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def story(tmp_path_factory):
    results = compare_results()
    x32, x64 = sweeps()
    scenarios = {name: {"compare_result": r} for name, r in results.items()}
    scenarios["sweep"] = {"sweep_run": sweep_run(x32 + x64)}
    scenarios["lab_recorded"] = lab_state(lab_as_recorded(), "recorded")
    scenarios["lab_one_story"] = lab_state(lab_as_one_story(), "one-story")
    with recorded_app(tmp_path_factory.mktemp("story"), scenarios) as url:
        yield url


def opened(browser, url: str, ready: str, height: int = 2000):
    """``url``'s page once it is idle with nothing stale on it (the device banner's own rerun can follow the
    first idle moment) and ``ready`` (a JavaScript condition) holds."""
    page = open_page(browser, url, height=height)
    page.wait_for_function(f"""() => document.querySelector("{IDLE}")
        && !document.querySelector("[data-stale='true']") && ({ready})""", polling=POLL_MS, timeout=60_000)
    return page


METRICS = "document.querySelectorAll(\"[data-testid='stMetric']\").length"
CHARTS = "document.querySelectorAll(\"[data-testid='stVegaLiteChart'] svg.marks\").length"
COMPARE_DRAWN = (f"{METRICS} >= 6 && {CHARTS} >= 2 "
                 "&& document.querySelector(\"[data-testid='stMain'] [data-testid='stTable']\")")


def shot(page, tmp_path, name: str) -> None:
    path = tmp_path / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 20_000, name


def test_the_recorded_figures_are_the_kinds_the_issue_saw():
    """Each scenario is what its test says it is, by the rules the pages use (so a test below that passes
    is not a scenario that missed its defect)."""
    r = compare_results()
    low, high = r["straddles"].speedup_range
    assert trusted(r["straddles"]) and low < 1 < high, r["straddles"].speedup_range
    assert trusted(r["jax_faster"]) and direction(r["jax_faster"]).side == JAX_FASTER
    disagree = r["dispatch_above"]
    assert trust(disagree).why == "disagree" and disagree.speedup_range[1] < 1  # NumPy faster, by its range
    x32, x64 = sweeps()
    assert [trusted(p) for p in x32] == [True, True, False, True]
    assert [direction(p).side for p in x32] == [NUMPY_FASTER, NUMPY_FASTER, JAX_FASTER, None]
    assert crossover(x32) is None and crossover(x64) is not None and all(trusted(p) for p in x64)
    recorded, one_story = pitfalls_findings(lab_as_recorded()), pitfalls_findings(lab_as_one_story())
    assert sorted(c.reason.split(" ", 1)[0] for c in recorded) == ["JAX's", "pitfall"], recorded
    assert one_story == []


_JAX_FASTER: dict[tuple[str, str], tuple[str, tuple[str, str]]] = {}


def jax_faster_compare(story, browser, tmp_path, lang: str) -> tuple[str, tuple[str, str]]:
    """The Compare page of the trusted run wholly above 1x, where neither defect fires: its main text and
    Break-even tile, read once a language. Both Compare tests below check their rule's quiet side on it,
    where each opened the same page again."""
    if (story, lang) not in _JAX_FASTER:
        page = opened(browser, page_url(story, navigation.COMPARE, "jax_faster", lang), COMPARE_DRAWN)
        assert_no_error(page)
        shot(page, tmp_path, f"compare_jax_faster_{lang}")
        _JAX_FASTER[story, lang] = main_text(page), tile(page, say("Break-even", lang))
        page.close()
    return _JAX_FASTER[story, lang]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_compare_states_no_side_its_range_denies(story, browser, tmp_path, lang):
    page = opened(browser, page_url(story, navigation.COMPARE, "straddles", lang), COMPARE_DRAWN)
    assert_no_error(page)
    shot(page, tmp_path, f"compare_straddles_{lang}")
    text = main_text(page)
    # Fires: no side, no break-even, no advice on a one-off cost "JAX pays before it is faster".
    assert literal(NO_WINNER, lang) in text
    assert tile(page, say("Break-even", lang)) == (say("not known", lang), say("range holds 1x", lang))
    assert literal(JAX_WINS, lang) not in text and literal(NUMPY_WINS, lang) not in text
    assert literal(COMPILE, lang) not in text  # no share of what "JAX pays before it is faster"
    # Careful timing: what would settle it is a longer preset than the one it ran.
    assert literal(THOROUGH, lang) in text and literal(LONGER, lang) not in text
    page.close()

    # Does not fire: the same spread wholly above 1x says the side and the calls.
    text, (value, detail) = jax_faster_compare(story, browser, tmp_path, lang)
    assert literal(JAX_WINS, lang) in text and literal(COMPILE, lang) in text
    assert re.search(r"\d", value) and detail == "", (value, detail)
    assert literal(NO_WINNER, lang) not in text


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_compare_gives_no_verdict_where_dispatch_outlasts_the_blocked_call(story, browser, tmp_path, lang):
    page = opened(browser, page_url(story, navigation.COMPARE, "dispatch_above", lang), COMPARE_DRAWN)
    assert_no_error(page)
    shot(page, tmp_path, f"compare_dispatch_{lang}")
    text = main_text(page)
    result = compare_results()["dispatch_above"]
    # Fires: no verdict, and the two figures that cannot both be true are named, in the verdict and
    # in the checklist's Blocked timing line.
    assert say(DISAGREE_WHY, lang) in text and literal(DISAGREE, lang) in text
    assert literal(NUMPY_WINS, lang) not in text and literal(PEAK, lang) not in text  # no rate from it either
    value, _detail = tile(page, say("Speedup", lang))
    assert f"{result.speedup:.2f}x" not in value  # no bare figure from a run set aside
    dispatch, blocked = format_time(result.jax.dispatch.median_s), format_time(result.jax.runtime.median_s)
    assert dispatch in text and blocked in text, (dispatch, blocked)
    page.close()
    # Does not fire: the recorded dispatch, below its blocked call, leaves the checklist's line passing.
    text, _ = jax_faster_compare(story, browser, tmp_path, lang)
    assert say(DISAGREE_WHY, lang) not in text and literal(PEAK, lang) in text
    assert say("every timed JAX call ends in block_until_ready()", lang) in text


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_sweep_places_a_crossover_only_from_trusted_ranges_that_exclude_1x(story, browser, tmp_path, lang):
    page = opened(browser, page_url(story, navigation.SIZE_SWEEP, "sweep", lang), f"{METRICS} >= 3 && {CHARTS} >= 3",
                  height=3200)
    assert_no_error(page)
    shot(page, tmp_path, f"sweep_{lang}")
    text = main_text(page)
    # Fires (x32): the set-aside 398x398 names its side but places no crossover; the tile brackets it
    # by the trusted sizes alone.
    assert literal(BETWEEN, lang) not in text and literal(NOT_PLACED, lang) in text
    value, _ = tile(page, say("Crossover ({precision})", lang).format(precision="x32"))
    assert value == say("above {shape}", lang).format(shape="158x158"), value
    # Does not fire (x64): trusted points whose ranges exclude 1x place it, interpolated.
    value, _ = tile(page, say("Crossover ({precision})", lang).format(precision="x64"))
    assert value.startswith("≈ "), value
    assert literal(PLACED, lang) in text
    page.close()


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_lab_says_which_figures_disagree_and_withholds_what_they_feed(story, browser, tmp_path, lang):
    disagree = say("Figures that disagree", lang)
    page = opened(browser, page_url(story, navigation.PITFALLS, "lab_recorded", lang), f"{CHARTS} >= 7", height=6000)
    assert_no_error(page)
    shot(page, tmp_path, f"lab_recorded_{lang}")
    text = main_text(page)
    # Fires: JAX's proper figure, re-timed in the sections, and pitfall 5's profile against its call.
    assert text.count(disagree) == 2, text[:3000]
    assert literal(RETIMED, lang) in text and "537 µs" in text and "515 µs" in text
    assert literal(PROFILE_APART, lang) in text and literal(PROFILED_APART, lang) in text
    # The device/overhead split it would feed is withheld: the chart of both shapes' bars is not drawn.
    assert say(GAP_CHART, lang) not in page_svg_text(page)
    page.close()

    page = opened(browser, page_url(story, navigation.PITFALLS, "lab_one_story", lang), f"{CHARTS} >= 8",
                  height=6000)
    shot(page, tmp_path, f"lab_one_story_{lang}")
    text = main_text(page)
    # Does not fire: one proper figure in every section, and the profile inside its call.
    assert disagree not in text and literal(PROFILED_APART, lang) not in text
    assert say(GAP_CHART, lang) in page_svg_text(page)
    # The summary table reads the one proper comparison in every section that shows it.
    proper = summary_column(page, say("Measured properly", lang))
    assert len({proper[i] for i in SHOWS_PROPER}) == 1, proper
    page.close()
