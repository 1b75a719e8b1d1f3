"""The Pitfalls page's chart: one row per measurement, JAX and NumPy dots on a log time axis."""

from __future__ import annotations

import math

import pytest
from _pitfalls import made_pitfall, timed

from jaxcompare.app.charts import chart_png_bytes
from jaxcompare.app.charts_pitfalls import SEP, dot_rows, pitfall_chart, pitfall_rows
from jaxcompare.engine.common.lessons import _pitfall, _side
from jaxcompare.model.palette import JAX_COLOR, NUMPY_COLOR


def jit_pitfall():
    return made_pitfall("jit", (0.174, 0.0519), (0.043, 0.0519), extra=((0.0407, 0.0519),),
                        labels=("First call (%time f(x))", "Steady state after warm-up"))


def size_pitfall():
    return made_pitfall("size", (64e-6, 20e-6), (0.043, 0.0519),
                        labels=("Only a tiny input (10x10)", "The workload you care about (1000x1000)"))


def layers(spec: dict) -> list[dict]:
    return spec["layer"]


def test_rows_carry_both_times_the_role_and_a_two_line_label():
    rows = pitfall_rows(jit_pitfall())
    assert [r["role"] for r in rows] == ["naive", "correct", "also"]
    naive = rows[0]
    assert naive["jax_s"] == pytest.approx(0.174) and naive["numpy_s"] == pytest.approx(0.0519)
    assert naive["lo_s"] == pytest.approx(0.0519) and naive["hi_s"] == pytest.approx(0.174)
    first, second = naive["row"].split(SEP)
    assert first == "NAIVE · First call (%time f(x))"
    assert second == "JAX 174 ms · 3.35x slower than NumPy"
    assert rows[1]["row"].startswith("CORRECT · ") and "1.21x faster than NumPy" in rows[1]["row"]
    assert rows[2]["row"].startswith("ALSO · ")


def test_dots_are_one_jax_and_one_numpy_per_row():
    dots = dot_rows(pitfall_rows(jit_pitfall()))
    assert [d["side"] for d in dots] == ["JAX", "NumPy"] * 3
    assert {d["seconds"] for d in dots if d["side"] == "NumPy"} == {0.0519}


def test_chart_is_dots_and_gaps_on_a_log_axis_that_holds_every_value():
    spec = pitfall_chart(size_pitfall()).to_dict()
    gap, whiskers, dots = layers(spec)
    # Each dot's whisker spans its median's 95% range, on the same axis.
    assert whiskers["mark"]["type"] == "rule" and whiskers["encoding"]["x2"]["field"] == "hi_s"
    ranges = {(d["side"], d["seconds"]): (d["lo_s"], d["hi_s"]) for d in whiskers["data"]["values"]}
    assert ranges[("JAX", 0.043)] == pytest.approx((0.043 * 0.98, 0.043 * 1.02))
    assert gap["mark"]["type"] == "rule" and dots["mark"]["type"] == "point"
    x = gap["encoding"]["x"]
    assert x["scale"]["type"] == "log" and gap["encoding"]["x2"]["field"] == "hi_s"
    lo, hi = x["scale"]["domain"]
    values = [d["seconds"] for d in dots["data"]["values"]]
    assert lo < min(values) and hi > max(values)
    assert math.log10(hi / lo) >= 1.5
    ticks = x["axis"]["values"]
    assert all(lo <= t <= hi for t in ticks) and len(ticks) >= 3
    assert dots["encoding"]["color"]["scale"]["range"] == [JAX_COLOR, NUMPY_COLOR]
    assert dots["encoding"]["shape"]["scale"]["range"] == ["circle", "diamond"]
    y = gap["encoding"]["y"]
    assert [label.split(SEP)[0] for label in y["scale"]["domain"]] == [
        "NAIVE · Only a tiny input (10x10)", "CORRECT · The workload you care about (1000x1000)"]
    assert "split(datum.value" in y["axis"]["labelExpr"]  # two lines: what and what it concludes
    assert "NAIVE" in y["axis"]["labelColor"]["expr"] and "CORRECT" in y["axis"]["labelColor"]["expr"]
    assert spec["height"] == 2 * 56


def test_the_chart_says_which_dot_is_jax_and_which_numpy():
    """One legend for the dots' colour and shape, drawn: a layer whose legend was None hid it, and a class saw
    blue diamonds and orange dots unnamed."""
    import vl_convert

    svg = vl_convert.vegalite_to_svg(pitfall_chart(jit_pitfall()).to_dict())
    assert 'aria-label="Symbol legend for shape, fill color and stroke color with 2 values: JAX, NumPy"' in svg
    assert svg.count('aria-roledescription="legend"') == 1


def test_tf32_rows_show_the_error_and_a_missing_numpy_time_is_no_dot():
    numpy = timed(0.05)
    pitfall = _pitfall("tf32", _side("Default matmul precision", "f(x)", timed(0.04), numpy, rel_error=3e-4,
                                     conclusion="x"),
                       _side("precision='highest'", "f(x)", timed(0.05), None, rel_error=3e-7, conclusion="y"),
                       ((timed(0.04), numpy), (timed(0.05), numpy)), applicable=True)
    rows = pitfall_rows(pitfall)
    assert rows[0]["text"].endswith("error 0.0003") and rows[1]["numpy_s"] is None
    assert [d["side"] for d in dot_rows(rows)] == ["JAX", "NumPy", "JAX"]
    pitfall_chart(pitfall).to_dict()  # builds without a NumPy reference on one row


def test_zero_times_stay_on_the_log_axis():
    pitfall = made_pitfall("async", (0.0, 1e-3), (2e-3, 1e-3))
    spec = pitfall_chart(pitfall).to_dict()
    lo, _ = layers(spec)[0]["encoding"]["x"]["scale"]["domain"]
    assert lo > 0


def test_chart_renders_to_png():
    png = chart_png_bytes(pitfall_chart(jit_pitfall()))
    assert png.startswith(b"\x89PNG") and len(png) > 10_000


def test_cache_rows_name_the_compile_step_and_the_process_start_has_no_numpy_dot():
    numpy = timed(0.006)
    cold, hit = timed(0.31), timed(0.15)
    pitfall = _pitfall(
        "cache", _side("Restarted process, no cache", "f(x)", cold, numpy, compile_seconds=0.103, cache_hits=0),
        _side("Restarted process, persistent cache hit", "f(x)", hit, numpy, compile_seconds=0.0073, cache_hits=2),
        ((cold, numpy), (hit, numpy)),
        [_side("Process start: Python, import jax, backend up", "python", timed(1.5), None, conclusion="paid")])
    rows = pitfall_rows(pitfall)
    assert rows[0]["text"] == "JAX 310 ms · 51.7x slower than NumPy · compiling 103 ms"
    assert rows[1]["text"].endswith("· read from the cache in 7.3 ms")
    assert rows[2]["numpy_s"] is None and rows[2]["text"] == "JAX 1.5 s"
    assert [d["side"] for d in dot_rows(rows)] == ["JAX", "NumPy", "JAX", "NumPy", "JAX"]
    spec = pitfall_chart(pitfall).to_dict()
    lo, hi = layers(spec)[0]["encoding"]["x"]["scale"]["domain"]
    assert lo < 0.006 and hi > 1.5
