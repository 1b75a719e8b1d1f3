"""What a result says at a glance, for the app and the notebook alike: the headline figures,
the verdict and how sure it is (analysis/summary)."""

from __future__ import annotations

import dataclasses
import math

from _results import make_result, stats, with_jax

from jaxcompare.analysis import summary
from jaxcompare.model.formatting import format_break_even, format_calls


def test_break_even_calls_are_counted_in_words():
    assert format_calls(None) == "never"
    assert format_calls(0.2) == "1 call"
    assert format_calls(1234.5) == "1,235 calls"
    assert format_break_even(0.2) == "1 call"  # not "1 calls"
    assert format_break_even(None) == "never (JAX is not faster per call)"


def test_headline_and_verdict():
    result = make_result()
    figures = summary.headline(result)
    assert [f.label for f in figures] == ["NumPy runtime", "JAX runtime", "Speedup", "Compile", "Transfer",
                                         "Break-even"]
    assert all(f.value and f.help for f in figures)
    assert "faster" in summary.verdict(result)


def test_figures_come_in_rows_of_three():
    result = make_result()
    assert summary.figure_rows(result) == [summary.headline(result)[:3], summary.headline(result)[3:]]


def test_the_verdict_points_at_a_sweep_only_where_numpy_wins():
    slower = make_result(numpy_s=1e-4, jax_s=1e-3)
    assert summary.verdict(slower).startswith("NumPy is **10.00x faster** per call at this size")
    assert summary.verdict(slower, "jaxcompare.sweep()").endswith(
        " jaxcompare.sweep() shows whether larger inputs change that.")
    assert "shows whether larger inputs" not in summary.verdict(make_result(), "jaxcompare.sweep()")


def test_verdict_says_when_the_range_cannot_tell_the_two_apart():
    clear = make_result(numpy_s=1e-3, jax_s=2e-4)  # samples within ±1% of each median
    low, high = clear.speedup_range
    assert 1 < low < clear.speedup < high
    assert f"between {low:.2f}x and {high:.2f}x." in summary.verdict(clear)
    close = make_result(numpy_s=1e-3, jax_s=0.99e-3)
    assert "this run cannot tell JAX and NumPy apart" in summary.verdict(close)  # and names no side
    assert "faster**" not in summary.verdict(close)
    assert "cannot tell" not in summary.verdict(clear)


def test_verdict_says_whether_the_speedup_held_through_a_drift():
    r = make_result(numpy_s=1e-3, jax_s=2e-4)
    drifted = dataclasses.replace(r.numpy_runtime, stable=False, unstable_reason="moved by 20% between blocks")

    def timed_in_pairs(numpy_blocks, jax_blocks):
        return dataclasses.replace(
            with_jax(r, runtime=dataclasses.replace(r.jax.runtime, block_medians_s=jax_blocks)),
            numpy_runtime=dataclasses.replace(drifted, block_medians_s=numpy_blocks))

    one_block = dataclasses.replace(r, numpy_runtime=drifted)
    assert "assumes the machine held still" in summary.verdict(one_block)
    held = summary.verdict(timed_in_pairs((1e-3, 1.2e-3), (2e-4, 2.4e-4)))
    assert "speedup held in both pairs" in held and "5.00x to 5.00x" in held and "held still" not in held
    moved = summary.verdict(timed_in_pairs((1e-3, 1e-3), (2e-4, 2.5e-4)))
    assert "moved from one pair of blocks to the next (4.00x to 5.00x)" in moved and "speedup held" not in moved
    assert moved.startswith("**No verdict from this run: the speedup moved between pairs of blocks.**")


def test_verdict_mentions_a_moved_speedup_even_without_a_range():
    r = make_result(numpy_s=1e-3, jax_s=2e-4)
    few = dataclasses.replace(with_jax(r, runtime=dataclasses.replace(r.jax.runtime, block_medians_s=(2e-4, 2.5e-4))),
                              numpy_runtime=dataclasses.replace(stats(1e-3, n=5), block_medians_s=(1e-3, 1e-3)))
    assert all(math.isnan(x) for x in few.speedup_range)
    text = summary.verdict(few)
    assert "95% confidence" not in text and " The speedup moved from one pair of blocks to the next" in text


def test_a_cpu_run_without_a_peak_has_no_third_side_and_no_peak_line():
    """With them (a GPU run), tests/test_accelerator.py checks the lines themselves."""
    result = make_result()
    assert result.jax_cpu is None and result.peak is None
    assert summary.third_side_figures(result) == [] and summary.third_side_text(result) is None
    assert summary.peak_text(result) is None
    assert summary.verdict_lines(result, "X") == [summary.verdict(result, "X")]


def test_a_trusted_range_that_holds_1x_qualifies_its_break_even_and_a_doubt_says_what_would_settle_it():
    from jaxcompare import i18n

    close = make_result(numpy_s=1e-3, jax_s=0.99e-3)  # trusted, its range 0.99x-1.03x
    low, high = close.speedup_range
    assert low < 1 < high and summary.break_even_tile(close)[1] == "range holds 1x"
    assert summary.break_even_tile(make_result())[1] == ""  # 5x, its range wholly above 1x
    busy = dataclasses.replace(close, load={"cores": 2, "phases": {
        p: {"wall_s": 1.0, "others_cpu_s": 1.3} for p in ("numpy", "runtime")}})
    assert "Rerun when the machine is quieter." in summary.verdict(busy)
    wide = with_jax(close, runtime=dataclasses.replace(close.jax.runtime, ci_low_s=0.5e-3, ci_high_s=2e-3))
    assert "A longer timing preset" in summary.verdict(wide) and "quieter" not in summary.verdict(wide)
    with i18n.using("zh"):  # bold closes before the full stop (CommonMark), and no space follows it
        chinese = summary.verdict(busy)
    assert "**。" in chinese and "。 " not in chinese, chinese


def test_numpys_two_speeds_say_which_is_slower_and_the_same_only_where_the_ranges_meet():
    """A kept-memory figure 100x the plain one read "the same within their ranges" (only "faster" was told
    apart): each of the three cases says what the ranges say."""
    from jaxcompare.analysis.text import numpy_speeds_text

    plain = stats(143e-6)
    slower, faster, same = numpy_speeds_text(plain, stats(16e-3)), numpy_speeds_text(plain, stats(50e-6)), \
        numpy_speeds_text(plain, stats(144e-6))
    assert "16 ms with freed memory kept (111.89x slower)" in slower and "the same" not in slower, slower
    assert "faster" in faster and "the same" not in faster, faster
    assert "the same within their ranges" in same and "slower" not in same and "faster" not in same, same


def test_a_sweep_of_two_lines_heads_each_verdict_in_the_readers_punctuation():
    """'jnp x32. 每个规模上…': each line's verdict on the Size sweep page was led by an ASCII full stop."""
    from jaxcompare import i18n
    from jaxcompare.app import views

    results = [make_result("matmul", (n, n), precision, numpy_s=1e-3, jax_s=2e-3)
               for precision in ("x32", "x64") for n in (10, 100)]
    assert views.sweep_verdict(results).startswith("**x32**: ")
    with i18n.using("zh"):
        text = views.sweep_verdict(results)
    assert text.startswith("**x32**：") and "\n\n**x64**：" in text and "." not in text.split("：")[0], text
