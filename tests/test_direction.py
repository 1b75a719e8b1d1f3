"""Direction verdicts and tiles that carry their doubt (issue #44), on Results built from recorded
figures: which results set aside still say which side is faster, what the Speedup and Break-even
tiles show when a result is not trusted, and a sweep's verdict from such points."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from _results import by_id, make_result, stats, with_jax

from jaxcompare import Result, Stats
from jaxcompare.analysis import summary
from jaxcompare.analysis.checks import PASS
from jaxcompare.analysis.sweep import crossover, sweep_document
from jaxcompare.analysis.trust import BUSY_SLOWDOWN, JAX_FASTER, NUMPY_FASTER, Direction, direction, trust
from jaxcompare.app import views

DATA = Path(__file__).parent / "data"

def _samples(median_s: float, spread: float) -> Stats:
    """Seven samples around ``median_s`` whose median's 95% range spans about ``spread`` times."""
    return Stats.from_samples([median_s * spread ** ((i - 3) / 6) for i in range(7)], loops=10)


def _scaled(stats: Stats, factor: float) -> Stats:
    """``stats`` with every time ``factor`` times longer."""
    return Stats.from_samples([x * factor for x in stats.samples_s], loops=stats.loops)


def _wide(numpy_s: float, jax_s: float, shape=(10, 10)) -> Result:
    """A result set aside for its range alone: each side's CI about 3x wide."""
    r = make_result(shape=shape, numpy_s=numpy_s, jax_s=jax_s)
    return with_jax(dataclasses.replace(r, numpy_runtime=_samples(numpy_s, 3.0)), runtime=_samples(jax_s, 3.0))


def _busy(r: Result, parallel: list[str] | None) -> Result:
    """``r`` measured while others took 1.3 of 2 cores; ``parallel``: the sides that ran on more
    than one core in the first blocks, as the recheck records them (None: not recorded)."""
    load = {"cores": 2, "phases": {p: {"wall_s": 1.0, "others_cpu_s": 1.3} for p in ("numpy", "runtime")}}
    if parallel is not None:
        load["recheck"] = {"why": "busy", "kept": "first", "pinned": False, "parallel": parallel,
                           "equal": not parallel}
    return dataclasses.replace(r, load=load)


def _tile(r: Result, label: str) -> summary.Figure:
    return next(f for f in summary.headline(r) if f.label == label)


def test_a_range_wholly_on_one_side_is_a_direction_unless_a_check_failed():
    wide_slow, wide_fast = _wide(1e-4, 2e-3), _wide(2e-3, 1e-4)
    assert trust(wide_slow).why == "range" and direction(wide_slow).side == NUMPY_FASTER
    assert direction(wide_fast).side == JAX_FASTER
    assert "below 1x" in direction(wide_slow).reason()
    # Outputs that disagree say nothing about either side, however far the range lies from 1x.
    wrong = with_jax(wide_slow, agreement=wide_slow.jax.agreement | {"ok": False, "max_rel_err": 0.5})
    assert trust(wrong).why == "fail" and direction(wrong).side is None
    assert direction(wrong).doubt() == "wholly below 1x, but a check failed"
    # A range that holds 1x, or none at all, is no direction.
    assert direction(_wide(1e-3, 1e-3)).side is None
    few = with_jax(make_result(numpy_s=1e-4, jax_s=1e-3), runtime=Stats.from_samples([1e-3] * 5))
    assert direction(few).side is None


def test_a_busy_machine_leaves_only_a_direction_beyond_what_contention_can_make():
    slower, faster = make_result(numpy_s=4e-4, jax_s=1e-3), make_result(numpy_s=1e-3, jax_s=1e-4)
    near = make_result(numpy_s=2.5e-4, jax_s=1e-4)  # 2.5x: within what contention slowed a serial side
    assert near.speedup_range[0] < BUSY_SLOWDOWN < faster.speedup_range[0]
    # Contention slowed a serial NumPy 2.59x beside neighbours (RESULTS.md), so a busy "JAX is
    # faster" needs the margin even where only JAX's side wanted more cores; 10x clears it.
    assert direction(_busy(near, ["runtime"])) == Direction(None, "busy_near", JAX_FASTER)
    assert direction(_busy(faster, ["runtime"])) == Direction(JAX_FASTER, "busy_far")
    assert "only a slowdown of NumPy beyond 4.00x" in direction(_busy(faster, ["runtime"])).reason()
    assert "within 4.00x of 1x" in direction(_busy(near, ["runtime"])).doubt()
    # Where NumPy's side may have run in parallel, no margin bounds it (OpenBLAS made 5-70x false speedups).
    for parallel in (["numpy"], ["numpy", "runtime"], None):
        assert direction(_busy(faster, parallel)).side is None
    assert direction(_busy(make_result(numpy_s=1e-2, jax_s=1e-4), None)).side is None  # 100x
    # "JAX is slower" by 0.4x (2.5x) is within contention's reach whichever side wanted the cores.
    for parallel in (["numpy"], ["runtime"], ["numpy", "runtime"], None):
        assert direction(_busy(slower, parallel)) == Direction(None, "busy_near", NUMPY_FASTER)
    # JAX slower by more than contention ever slowed a side (0.1x: a 10x slowdown) stands whatever was parallel.
    far = make_result(numpy_s=1e-4, jax_s=1e-3)
    assert 1 / far.speedup_range[1] > BUSY_SLOWDOWN > 1 / slower.speedup_range[1]
    for parallel in (["numpy"], ["runtime"], ["numpy", "runtime"], None):
        assert direction(_busy(far, parallel)) == Direction(NUMPY_FASTER, "busy_far")
    assert "only a slowdown of JAX beyond 4.00x" in direction(_busy(far, None)).reason()
    # Compare's verdict says the side where it stands, and why not where the range alone would.
    assert "Only the size of the gap is in doubt: **NumPy is faster**" in summary.verdict(_busy(far, ["numpy"]))
    assert "Not even the side is sure" in summary.verdict(_busy(slower, ["numpy"]))
    assert "is faster" not in summary.verdict(_busy(faster, None)).split("**", 2)[2]


def test_a_recheck_pinned_to_fewer_cores_than_the_slower_side_wanted_gives_no_direction():
    """The recorded 64x64 matmul: busy, JAX's side (the parallel one) pinned to 1 of 2 cores, 0.19x-0.24x.
    4.17x beyond 1x clears contention, but not the cores JAX lost to the pinning itself."""
    recorded = Result.from_dict(json.loads((DATA / "result-v1-third-side.json").read_text()))
    recheck = recorded.load["recheck"]
    assert recheck["pinned"] and not recheck["equal"] and recheck["parallel"] == ["runtime"]
    # Its range as a rerun's now reaches 3.8x from 1x: JAX a third slower again puts it beyond BUSY_SLOWDOWN.
    r = with_jax(recorded, runtime=_scaled(recorded.jax.runtime, 1.3))
    assert trust(r).why == "busy" and 1 / r.speedup_range[1] > BUSY_SLOWDOWN
    assert direction(r) == Direction(None, "pinned", NUMPY_FASTER)
    assert "pinned JAX to fewer cores than it wanted" in direction(r).doubt()
    # Had NumPy, the side that looks faster, been the one pinned: that only narrowed the gap.
    numpy_pinned = dataclasses.replace(r, load=r.load | {"recheck": recheck | {"parallel": ["numpy"]}})
    assert direction(numpy_pinned) == Direction(NUMPY_FASTER, "busy_far")


def test_pairs_of_blocks_that_disagree_on_the_side_leave_it_open():
    r = make_result(numpy_s=1e-4, jax_s=1e-3)
    blocks = {"numpy": (1e-4, 1e-4), "jax": (1e-3, 5e-5)}  # the second pair: JAX 2x faster
    moved = with_jax(dataclasses.replace(r, numpy_runtime=dataclasses.replace(
        r.numpy_runtime, block_medians_s=blocks["numpy"])), runtime=dataclasses.replace(
        r.jax.runtime, block_medians_s=blocks["jax"]))
    assert trust(moved).why == "steady" and direction(moved).side is None
    held = with_jax(moved, runtime=dataclasses.replace(r.jax.runtime, block_medians_s=(1e-3, 5e-4)))
    assert trust(held).why == "steady" and direction(held).side == NUMPY_FASTER


def test_pairs_of_kept_memory_blocks_do_not_judge_the_plain_numpy_range():
    """The pairs are NumPy with freed memory kept over JAX; the range is plain NumPy over JAX."""
    jax_s = 1e-4
    r = with_jax(make_result(numpy_s=3e-4, jax_s=jax_s),
                 runtime=dataclasses.replace(stats(jax_s), block_medians_s=(jax_s, jax_s)))
    kept = dataclasses.replace(stats(8e-5), block_medians_s=(8e-5, 8.1e-5))  # pairs 0.80x, 0.81x: steady
    wide = dataclasses.replace(r, numpy_runtime=_samples(3e-4, 3.0), numpy_kept=kept)
    assert wide.speedup_range[0] > 1 and trust(wide).why == "range" and max(wide.speedup_pairs) < 1
    assert by_id(wide)["steady"].status == PASS
    assert direction(wide) == Direction(JAX_FASTER, "range")
    # Kept pairs that moved: the steady check doubts the run, but says nothing of the plain range's side.
    moved = dataclasses.replace(wide, numpy_runtime=stats(3e-4),
                                numpy_kept=dataclasses.replace(kept, block_medians_s=(8e-5, 1.6e-4)))
    assert trust(moved).why == "steady"
    assert direction(moved) == Direction(None, "steady_kept", JAX_FASTER)
    assert "freed memory kept" in direction(moved).doubt() and "disagree" not in direction(moved).doubt()


def test_untrusted_tiles_show_no_bare_speedup_or_break_even():
    # The svd: 17.31x set aside as busy, its range 0.31x-57.88x holding slowdowns.
    r = _busy(make_result(numpy_s=4e-3, jax_s=1e-3), ["numpy"])
    r = with_jax(dataclasses.replace(r, numpy_runtime=_samples(4e-3, 6.0)), runtime=_samples(1e-3, 6.0))
    assert r.speedup_range[0] < 1 < r.speedup_range[1]
    speedup, be = _tile(r, "Speedup"), _tile(r, "Break-even")
    low, high = map(summary.format_factor, r.speedup_range)
    assert speedup.value == f"{low}–{high}" and summary.format_factor(r.speedup) not in speedup.detail
    assert speedup.detail == "95% range · doubtful" and "Set aside: the machine was busy." in speedup.help
    assert be.value == "not known" and "call" not in be.value
    # Set aside for its range only, wholly above 1x: the calls' range from the runtimes' ranges.
    fast = _wide(2e-3, 1e-4)
    value, detail = summary.break_even_tile(fast)
    low, high = summary.break_even_range(fast)
    assert detail == "95% range" and value.endswith(" calls") and low < fast.break_even_calls < high
    assert summary.speedup_tile(fast)[1] == "95% range · JAX faster"
    # Wholly below 1x: JAX never pays back its one-off costs, whatever the size of the gap.
    assert summary.break_even_tile(_wide(1e-4, 2e-3)) == ("never", "NumPy faster per call")
    # Trusted: the point figures as before.
    ok = make_result(numpy_s=1e-3, jax_s=2e-4)
    assert _tile(ok, "Speedup").value == "5.00x" and _tile(ok, "Break-even").value.endswith("calls")


def test_a_sweep_says_numpy_wins_where_its_small_sizes_lie_wholly_below_1x():
    """The issue's quick matmul sweep: no size trusted, but 25x25 (range too wide) and 63x63 (busy,
    NumPy the parallel side) lie wholly below 1x; the larger sizes straddle it."""
    results = [
        _wide(4e-5, 1e-3, (25, 25)),
        _busy(make_result(shape=(63, 63), numpy_s=1.3e-4, jax_s=1e-3), ["numpy"]),
        _busy(_wide(1e-3, 1e-3, (158, 158)), ["numpy"]),
        _wide(1.1e-3, 1e-3, (398, 398)),
    ]
    assert not any(trust(r).trusted for r in results) and crossover(results) is None
    text = summary.sweep_verdict(results, None)
    assert text.startswith("NumPy is faster up to 63x63; above, no size could be trusted.")
    assert "25x25 (its range is too wide, but lies wholly below 1x)" in text
    assert "63x63 (the machine was busy, but only a slowdown of JAX beyond 4.00x" in text
    assert "4 of 4 sizes set aside" in text
    doc = sweep_document("matmul", "x32", results, None)
    assert [p["direction"] for p in doc["results"]] == [NUMPY_FASTER, NUMPY_FASTER, None, None]
    # Sizes set aside name their side, never the crossover (issue 49): the tile places none.
    assert views.crossover_figure("x32", None, 2, True, False, results).value == "—"
    # Had JAX's side been the parallel one: 0.13x is still a slowdown no contention measured here made,
    # but at 0.4x (2.5x) contention may have put it below 1x, and only 25x25 is used.
    results[1] = _busy(results[1], ["runtime"])
    text = summary.sweep_verdict(results, None)
    assert text.startswith("NumPy is faster up to 63x63") and "only a slowdown of JAX beyond 4.00x" in text
    results[1] = _busy(make_result(shape=(63, 63), numpy_s=4e-4, jax_s=1e-3), ["runtime"])
    text = summary.sweep_verdict(results, None)
    assert text.startswith("NumPy is faster up to 25x25; above, no size")
    assert "Not used: 63x63 (wholly below 1x, but the machine was busy and within 4.00x of 1x" in text
    # JAX faster for sure at the large end too: both sides named, but a crossover between sizes set aside
    # is not placed (issue 49: a busy 398x398 once put one below a 1000x1000 at 0.70x).
    results[3] = _wide(4e-3, 1e-4, (398, 398))
    assert summary.sweep_verdict(results, None).startswith(
        "NumPy is faster up to 25x25 and JAX from 398x398 up, but no crossover is placed between 25x25 and "
        "398x398: a size set aside never places it.")
    assert views.crossover_figure("x32", None, 2, True, False, results).value == "—"
    # Every size trusted: the tile and verdict read the trusted sizes alone, as before.
    quiet = [make_result(shape=(n, n), numpy_s=1e-3 * k, jax_s=1e-3) for n, k in ((10, 0.2), (100, 3.0))]
    assert views.crossover_figure("x32", crossover(quiet), 2, True, True, quiet).value.startswith("≈")
    # Trusted sizes that all lie wholly below 1x: NumPy is faster at every size, the crossover above.
    small = [make_result(shape=(n, n), numpy_s=1e-4, jax_s=1e-3) for n in (10, 20)]
    assert summary.sweep_verdict(small, None).startswith("NumPy is faster at every size; try larger sizes.")
    assert views.crossover_figure("x32", None, 2, True, True, small).value == "above 20x20"


def test_direction_sentences_name_each_side_where_it_holds():
    n, j = NUMPY_FASTER, JAX_FASTER
    assert summary.direction_sentence([((10,), n), ((20,), None), ((30,), n)]) == "NumPy is faster at 10, 30."
    assert summary.direction_sentence([((10,), None), ((20,), j)]) == (
        "JAX is faster from 20 up; below, no size could be trusted.")
    assert summary.direction_sentence([((10,), j), ((20,), n)]).startswith("No single crossover in this range")
    assert summary.direction_sentence([((10,), n), ((20,), n)]) == "NumPy is faster at every size; try larger sizes."
    # Trusted sizes whose ranges hold 1x were trusted: they cannot tell the two apart.
    assert summary.direction_sentence([((10,), n), ((20,), None)], [False, True]) == (
        "NumPy is faster up to 10; above, the trusted sizes cannot tell the two apart.")
    assert summary.direction_sentence([((10,), None), ((20,), j)], [True, False]) == (
        "JAX is faster from 20 up; below, the trusted sizes cannot tell the two apart.")


def test_a_sweep_whose_trusted_sizes_straddle_1x_does_not_say_none_was_trusted():
    """The review's repro: 25x25 set aside but wholly below 1x, then 100x100 and 200x200 trusted at 0.97-1.01x."""
    results = [_wide(4e-5, 1e-3, (25, 25))] + [make_result(shape=(n, n), numpy_s=k * 1e-3, jax_s=1e-3)
                                              for n, k in ((100, 0.985), (200, 0.99))]
    assert [trust(r).trusted for r in results] == [False, True, True]
    assert all(low < 1 < high for low, high in (r.speedup_range for r in results[1:]))
    text = summary.sweep_verdict(results, None)
    assert text.startswith("NumPy is faster up to 25x25; above, the trusted sizes cannot tell the two apart.")
    assert "no size could be trusted" not in text and "Best trusted speedup: 0.99x" in text and "at 200x200" in text


def test_a_pallas_kernel_interpreted_on_the_cpu_leads_nothing_and_names_no_side():
    """Pallas only interprets a kernel on the CPU: its time is how slow the interpreter is. `sweep --ports`
    headlined such a port's 'best trusted speedup', as the Size sweep page would have."""
    fast = make_result(numpy_s=1e-3, jax_s=1e-4)  # a tight 10x, trusted as a compiled port
    assert trust(fast).trusted and direction(fast).side == JAX_FASTER
    kernel = dataclasses.replace(fast, case_info=fast.case_info | {"port_pallas": True})
    assert kernel.interpreted and trust(kernel).why == "interpreted" and direction(kernel).side is None
    assert summary.doubt_text(kernel).endswith("its time is not a speed figure")
    assert "its time is a speed figure" in summary.rerun_text(kernel)  # on a GPU or TPU
    assert summary.best_trusted([fast, kernel]) is fast and crossover([kernel]) is None
