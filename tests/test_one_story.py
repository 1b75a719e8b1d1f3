"""One story on every page (issue 49): no headline, tile or advice states a side, a break-even, a
crossover or a share that the result's own range or checks deny, and figures that cannot both be true
withhold what they would feed. The words and rules, without a browser (test_browser_one_story.py shows
them on the pages)."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

from _pitfalls import timed
from _results import by_id, make_result, stats, with_jax

from jaxcompare import Result, Stats, TimingConfig, i18n
from jaxcompare.analysis import summary
from jaxcompare.analysis.advice import advice
from jaxcompare.analysis.checks import PASS, WARN
from jaxcompare.analysis.consistency import busy_above_call, finding_title, pitfalls_findings, repeat_checks
from jaxcompare.analysis.sweep import crossover, crossover_bracket
from jaxcompare.analysis.trust import JAX_FASTER, NUMPY_FASTER, direction, trust, trusted
from jaxcompare.analysis.versions import first_call_text
from jaxcompare.app import estimates, navigation, versions_view, views
from jaxcompare.app import history_view as hv
from jaxcompare.cli.versions import version_line
from jaxcompare.engine.common.lessons import PITFALLS, _pitfall, _side
from jaxcompare.engine.server.durations import Estimate

DATA = Path(__file__).parent / "data"


def samples(median_s: float, width: float, n: int = 9) -> Stats:
    """``n`` samples whose median's 95% range spans about ``width`` times."""
    return Stats.from_samples([median_s * width ** ((i - n // 2) / (n - 1)) for i in range(n)], loops=10)


def close_call(preset: str = "quick") -> Result:
    """Trusted, NumPy 3% slower than JAX, the range across 1x (the issue's 1.03x, 0.99x-1.10x)."""
    r = make_result(numpy_s=1.03e-3, jax_s=1e-3)
    r = with_jax(dataclasses.replace(r, numpy_runtime=samples(1.03e-3, 1.12)), runtime=samples(1e-3, 1.12))
    return dataclasses.replace(r, spec=dataclasses.replace(r.spec, timing=TimingConfig.preset(preset)))


# --- a range across 1x --------------------------------------------------------------------------------
def test_a_trusted_range_across_1x_states_no_side_and_no_break_even():
    r = close_call()
    low, high = r.speedup_range
    assert trusted(r) and low < 1 < high and direction(r).side is None
    text = summary.verdict(r)
    assert text.startswith("**No winner at this size: this run cannot tell JAX and NumPy apart.**")
    assert "faster**" not in text and "paid back" not in text and "calls" not in text
    assert summary.break_even_tile(r) == ("not known", "range holds 1x")
    help_text = next(f.help for f in summary.headline(r) if f.label == "Break-even")
    assert "Not known here" in help_text and "calls." not in help_text
    # The break-even is large (1 ms of compile over 30 µs a call), yet no advice quotes its share.
    assert r.break_even_calls is not None and r.break_even_calls > 10 and advice(r) == []
    # Its twin, wholly above 1x, says both.
    clear = make_result(numpy_s=3e-3, jax_s=1e-3, compile_s=0.5)
    assert summary.verdict(clear).startswith("JAX is **3.00x faster** per call")
    assert summary.break_even_tile(clear)[0].endswith("calls") and [a.rule for a in advice(clear)] == ["compile"]


def test_what_would_settle_a_run_is_a_longer_preset_than_the_one_it_ran():
    assert "A longer timing preset (Careful, Thorough)" in summary.verdict(close_call("quick"))
    careful = summary.verdict(close_call("careful"))
    assert "Thorough timing narrows the range" in careful and "Careful, Thorough" not in careful
    assert "even thorough timing can tell" in summary.verdict(close_call("thorough"))
    wide = with_jax(close_call("careful"), runtime=dataclasses.replace(close_call().jax.runtime, ci_low_s=0.5e-3,
                                                                        ci_high_s=2e-3))
    assert trust(wide).why == "range"
    assert "Thorough timing narrows the range." in summary.verdict(wide)
    assert "Careful, Thorough" not in summary.verdict(wide)


def test_advice_quotes_no_one_off_share_for_a_run_with_no_side():
    """The issue's svd x64: no verdict, its range across 1x, and 'the cold compile (150 ms) is 100% of the
    150 ms JAX pays before it is faster'."""
    r = make_result(numpy_s=1e-2, jax_s=1e-4, transfer_s=1e-6, compile_s=0.15)
    unsure = with_jax(dataclasses.replace(r, numpy_runtime=samples(1e-4, 40.0)), runtime=samples(1e-4, 3.0))
    assert not trusted(unsure) and direction(unsure).side is None and advice(unsure) == []
    assert [a.rule for a in advice(r)] == ["compile"]


# --- figures that cannot both be true -------------------------------------------------------------------
def test_dispatch_above_the_blocked_call_sets_the_result_aside_and_names_both():
    """The issue's 10x10: dispatch alone 67.8 µs above 22.4 µs blocked, and a headline 'NumPy is faster'."""
    r = make_result(numpy_s=10e-6, jax_s=22.4e-6)
    contradicted = with_jax(r, dispatch=stats(67.8e-6))
    check = by_id(contradicted)["blocked"]
    assert check.status == WARN and "22.4 µs" in check.reason and "67.8 µs" in check.reason
    assert trust(contradicted).why == "disagree" and direction(contradicted).side is None
    assert direction(contradicted).doubt() == ("wholly below 1x, but JAX's dispatch alone took longer than its "
                                               "blocked call")
    text = summary.verdict(contradicted)
    assert text.startswith("**No verdict from this run: JAX's dispatch alone took longer than its blocked call.**")
    assert "67.8 µs" in text and "22.4 µs" in text and "NumPy is **" not in text
    assert summary.break_even_tile(contradicted) == ("not known", "doubtful")
    # Nor a fraction of peak read from the runtime in doubt: the recorded 64x64 matmul has one, until its
    # dispatch alone outlasts its blocked call.
    recorded = dataclasses.replace(Result.from_dict(json.loads((DATA / "result-v1-third-side.json").read_text())),
                                   load={}, jax_cpu=None)
    assert any(line.startswith("**Fraction of peak.**") for line in summary.verdict_lines(recorded))
    doubted = with_jax(recorded, dispatch=Stats.from_samples([3 * x for x in recorded.jax.runtime.samples_s]))
    assert trust(doubted).why == "disagree"
    assert not any(line.startswith("**Fraction of peak.**") for line in summary.verdict_lines(doubted))
    # Within their ranges the two may meet (a call no longer than its launch): no doubt.
    near = with_jax(r, dispatch=stats(22.4e-6))
    assert by_id(near)["blocked"].status == PASS and trusted(near)


def test_a_profile_busy_longer_than_its_call_withholds_its_split():
    """Pitfall 5 of the issue: 'JAX 17.8 ms' beside 'the device was busy 35.2 ms of 35.8 ms per call'."""
    from jaxcompare.app.charts_profile import size_gap_rows
    from jaxcompare.app.profile_view import side_gap_text

    lab = json.loads((DATA / "tpu" / "device-check.json").read_text())["device_check"]["pitfalls"]
    size = next(p for p in lab["pitfalls"] if p["id"] == "size")
    large = size["correct"]
    assert not busy_above_call(large["profile"]["device_busy_s"], large["range"])  # as the TPU recorded it
    assert side_gap_text(large).startswith("Profiled: the device was busy") and size_gap_rows(size)
    large["profile"] |= {"device_busy_s": large["seconds"] * 35.2 / 17.8, "wall_s": large["seconds"] * 35.8 / 17.8}
    assert busy_above_call(large["profile"]["device_busy_s"], large["range"])
    assert side_gap_text(large).startswith("Profiled, but not as timed: the device was busy **1.05 ms**")
    assert size_gap_rows(size) == []
    found = [c for c in pitfalls_findings(lab) if c.reason.startswith("pitfall 5's profile")]
    assert len(found) == 1 and "1.05 ms" in found[0].reason and "531 µs" in found[0].reason
    assert finding_title(found[0]) == "Figures that disagree"


def test_the_lab_holds_every_showing_of_the_proper_comparison_together():
    """The TPU's run re-timed JAX's proper figure in each section: 537 µs (532-544) in one, 515 µs (510-534)
    and 520 µs (512-529) in others; the check now reads JAX's every showing of it, not NumPy's only."""
    lab = json.loads((DATA / "tpu" / "device-check.json").read_text())["device_check"]["pitfalls"]
    [found] = pitfalls_findings(lab)
    for place in ("1. JIT", "2. Async dispatch", "4. Transfer", "6. Reduced precision", "5. Workload size"):
        assert place in found.reason, place
    assert found.reason.startswith("JAX's runtime at 1000x1000 (float32)")
    # Read as one figure everywhere (this lab's report), nothing disagrees.
    sections = {p["id"]: p for p in lab["pitfalls"]}
    baseline = sections["dtype"]["correct"]
    for pid in ("jit", "async", "transfer", "size"):
        sections[pid]["correct"].update({k: baseline[k] for k in ("seconds", "range")})
    sections["tf32"]["naive"].update({k: baseline[k] for k in ("seconds", "range")})
    assert pitfalls_findings(lab) == []


def test_a_pitfall_reads_the_one_proper_figure_and_its_effect_spans_the_drift():
    """The correct side is the lab's baseline; the call timed again beside the naive side widens the effect's
    range where the machine drifted between them, so a drift alone teaches no lesson."""
    numpy, baseline = timed(4e-4), timed(1e-3)
    naive = timed(1.1e-3)
    same = _pitfall("transfer", _side("n", "n()", naive, numpy), _side("c", "c()", baseline, numpy),
                    ((naive, numpy), (baseline, numpy)), again=(baseline, timed(1e-3)))
    assert same["effect"] == "hurts" and same["proper_again"]["seconds"] == 1e-3
    drifted = _pitfall("transfer", _side("n", "n()", naive, numpy), _side("c", "c()", baseline, numpy),
                       ((naive, numpy), (baseline, numpy)), again=(baseline, timed(1.12e-3)))
    assert drifted["effect"] == "within_noise"
    assert drifted["correct"]["seconds"] == 1e-3  # the shown figure is the baseline's, drift or not
    low, high = drifted["effect_range"]
    assert low <= drifted["effect_factor"] <= high


# --- sweeps ----------------------------------------------------------------------------------------------
def _point(n: int, numpy_s: float, jax_s: float, width: float = 1.1) -> Result:
    r = make_result(shape=(n, n), numpy_s=numpy_s, jax_s=jax_s)
    return with_jax(dataclasses.replace(r, numpy_runtime=samples(numpy_s, width)), runtime=samples(jax_s, width))


def test_a_crossover_comes_only_from_trusted_points_whose_ranges_exclude_1x():
    """English: 'JAX starts to win between 158x158 and 398x398' on a set-aside 398x398; Chinese: '≈ 955x955'
    from a trusted 1000x1000 at 1.03x whose range holds 1x."""
    numpy_up_to_158 = [_point(63, 0.03e-3, 0.1e-3), _point(158, 0.4e-3, 0.8e-3)]
    aside = _point(398, 10.9e-3, 2e-3, width=3.0)
    straddles = _point(1000, 13.5e-3, 14e-3, width=1.2)
    english = [*numpy_up_to_158, aside, straddles]
    assert [trusted(p) for p in english] == [True, True, False, True]
    assert direction(aside).side == JAX_FASTER and direction(straddles).side is None
    assert crossover(english) is None and crossover_bracket(english) == ((158, 158), None)
    text = summary.sweep_verdict(english, None)
    assert "JAX starts to win" not in text
    assert text.startswith("NumPy is faster up to 158x158 and JAX at 398x398, but no crossover is placed between "
                           "158x158 and 398x398: a size set aside never places it.")
    assert views.crossover_figure("x32", None, 2, True, True, english).value == "above 158x158"
    chinese = [*numpy_up_to_158, _point(398, 0.6e-3, 1e-3), _point(1000, 1.03e-3, 1e-3, width=1.2)]
    assert trusted(chinese[-1]) and direction(chinese[-1]).side is None and crossover(chinese) is None
    assert views.crossover_figure("x32", None, 2, True, True, chinese).value == "above 398x398"
    # Trusted points whose ranges exclude 1x still place it, interpolated.
    firm = [*numpy_up_to_158, _point(398, 12e-3, 6e-3), _point(1000, 0.18, 0.06)]
    assert 158**2 < crossover(firm) < 398**2
    assert summary.sweep_verdict(firm, crossover(firm)).startswith("JAX starts to win at ≈")
    # No trusted size with a side: no tile figure, and none claiming "none here".
    level = [_point(100, 1e-3, 1.01e-3, width=1.2), _point(200, 2e-3, 1.99e-3, width=1.2)]
    assert views.crossover_figure("x32", crossover(level), 2, True, True, level).value == "—"


def test_no_crossover_is_placed_on_the_wrong_side_of_a_size_whose_range_says_the_other():
    """The TPU atlas's qr at x32 read 'about 6.43e+03 elements' beside a set-aside 100x100 at 0.76x whose
    range, 0.59-0.98x, said NumPy: the firm sizes either side placed it, and the size between denied it."""
    numpy_at_63, jax_at_1000 = _point(63, 0.3e-3, 1e-3), _point(1000, 3e-3, 1e-3)
    at = crossover([numpy_at_63, jax_at_1000])
    assert 158**2 < at < 398**2  # log-log between 0.3x at 63x63 and 3x at 1000x1000
    denies = _point(398, 2e-3, 10e-3, width=3.0)  # NumPy faster by its whole range, above the point
    agrees = _point(158, 2e-3, 10e-3, width=3.0)  # the same, below it
    assert not trusted(denies) and direction(denies).side == direction(agrees).side == NUMPY_FASTER
    assert crossover([numpy_at_63, agrees, jax_at_1000]) == at
    assert crossover([numpy_at_63, denies, jax_at_1000]) is None
    assert crossover_bracket([numpy_at_63, denies, jax_at_1000]) == ((63, 63), (1000, 1000))
    # The same the other way round (JAX faster below, NumPy above).
    flipped = [_point(63, 3e-3, 1e-3), _point(158, 10e-3, 2e-3, width=3.0), _point(1000, 0.3e-3, 1e-3)]
    assert direction(flipped[1]).side == JAX_FASTER and crossover(flipped) is not None
    flipped[1] = _point(398, 10e-3, 2e-3, width=3.0)
    assert crossover(flipped) is None


# --- small items ------------------------------------------------------------------------------------------
def test_history_shows_set_aside_not_none_in_the_speedup_column(tmp_path):
    from jaxcompare.history.exchange import summary as row_of
    from jaxcompare.history.store import Store

    store = Store(tmp_path / "results.sqlite3")
    fine, busy = make_result(), dataclasses.replace(make_result(numpy_s=1e-3, jax_s=0.99e-3), id="busy", load={
        "cores": 2, "phases": {p: {"wall_s": 1.0, "others_cpu_s": 1.3} for p in ("numpy", "runtime")}})
    for r in (fine, busy):
        store.save(r)
    rows = hv.table_rows([row_of(fine), row_of(busy)], doubts=hv.set_aside(store, [fine.id, busy.id]))
    assert [row["Speedup"] for row in rows] == ["5.00x", "set aside"]
    with i18n.using("zh"):
        assert hv.table_rows([row_of(busy)], doubts={busy.id: "x"})[0][i18n.gettext("Speedup")] == \
            i18n.gettext("set aside")


def test_homes_pitfalls_card_counts_the_pages_sections():
    blurb = navigation.BLURBS[navigation.PITFALLS]
    listed = blurb.split(" — ")[1].split(", ")
    assert len(listed) == len(PITFALLS) == 8 and blurb.startswith("Eight"), listed


def test_a_run_past_the_job_limit_is_warned_of_before_it_starts():
    """40000x40000 was accepted with 'Takes about 1542 min' and no warning."""
    huge = Estimate(92_520.0, 46_260.0, 185_040.0)
    text = estimates.past_limit_text(huge, 600.0)
    assert text is not None and "stopped at 10 min with no result" in text and "smaller shape" in text
    assert estimates.past_limit_text(Estimate(900.0, 450.0, 1800.0), 600.0) is None  # may finish: no warning


def test_versions_warnings_are_titled_as_warnings_and_a_first_call_below_its_compile_says_so():
    a = make_result(jax_s=1e-4)
    b = with_jax(a, runtime=stats(3e-4))  # the same measurement, its runtime range apart
    lines = repeat_checks([a, b])
    assert lines and lines[0].title == "Repeated measurement agrees"
    [shown] = versions_view.findings_markdown({"0.10.2": lines[:1]})
    assert "**Figures that disagree**" in shown and "Repeated measurement agrees" not in shown
    below = with_jax(a, first_call=stats(0.0385), trace=stats(0.004), lower=stats(0.0066), compile=stats(0.03))
    assert math.isclose(below.jax.compile_total_s, 0.0406)
    assert first_call_text(below) == "38.5 ms (below its compile, 40.6 ms)"
    assert first_call_text(a) == "20.1 ms"  # above its compile: the figure alone
    # The CLI's versions line says it alike.
    assert "first call 38.5 ms (below its compile, 40.6 ms)" in version_line(below)


def test_machine_quiet_is_not_its_title_where_the_machine_was_busy_and_timed_again():
    r = make_result()
    load = {"cores": 2, "phases": {p: {"wall_s": 1.0, "others_cpu_s": 1.3} for p in ("numpy", "runtime")},
            "recheck": {"why": "busy", "kept": "recheck", "pinned": True, "cores": 1, "equal": True}}
    check = by_id(dataclasses.replace(r, load=load))["busy"]
    assert (check.status, check.title) == (PASS, "Machine busy, timed again")
    assert by_id(r)["busy"].title == "Machine quiet"
