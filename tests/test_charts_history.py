"""History charts from synthetic results with known numbers: marks, encodings, log scales,
data, colours per run, and a PNG that actually draws the runs."""

from __future__ import annotations

import dataclasses
import io
import math

import numpy as np
import pytest
from _results import make_result, with_jax
from chart_support import mark_type

from jaxcompare.app import charts_history
from jaxcompare.app.history_view import lettered_labels


@pytest.fixture(scope="module")
def runs():
    """Three runs: a baseline, a 2x faster JAX of the same case, and a JAX slower than NumPy."""
    a = make_result(jax_s=2e-4)
    b = dataclasses.replace(make_result(jax_s=1e-4), id="run-b", created="2026-01-02T00:00:00+00:00")
    c = dataclasses.replace(make_result(shape=(20, 20), numpy_s=1e-4, jax_s=4e-4), id="run-c",
                            created="2026-01-03T00:00:00+00:00")
    return [a, b, c]


def test_phase_chart_dots_per_run_on_a_log_time_axis(runs):
    labels = lettered_labels(runs)
    spec = charts_history.phase_chart(runs, labels).to_dict()
    layers = spec["layer"]
    assert [mark_type(u) for u in layers] == ["rule", "rule", "circle"]
    for unit in layers:
        enc = unit["encoding"]
        assert enc["x"]["scale"]["type"] == "log"
        assert enc["y"]["field"] == "label" and enc["yOffset"]["field"] == "run"
        assert enc["color"]["field"] == "run" and enc["color"]["scale"]["domain"] == labels
    dot = layers[2]["encoding"]
    assert dot["x"]["field"] == "median_s"
    assert layers[0]["encoding"]["x2"]["field"] == "median_s"  # the stem ends at the dot
    assert layers[1]["encoding"]["x"]["field"] == "low_s" and layers[1]["encoding"]["x2"]["field"] == "high_s"
    assert spec["width"] == "container"
    order = layers[0]["encoding"]["y"]["scale"]["domain"]
    assert order[0] == charts_history.PER_CALL_HEADING and charts_history.ONE_OFF_HEADING in order
    assert {"NumPy runtime", "Transfer host→device", "Compile: trace", "Compile: lower", "Compile: XLA compile",
            "First call (cold, naive)", "JAX runtime (blocked)", "Dispatch only (unblocked)",
            "Fetch device→host"} <= set(order)

    rows = charts_history.phase_rows(runs, labels)
    assert len(rows) == 3 * 9
    by = {(r["run"], r["phase"]): r for r in rows}
    assert by[(labels[1], "runtime")]["median_s"] == pytest.approx(runs[1].jax.runtime.median_s)
    assert by[(labels[0], "numpy")]["median_s"] == pytest.approx(runs[0].numpy_runtime.median_s)
    assert all(r["low_s"] <= r["median_s"] * 1.0001 <= r["high_s"] * 1.0002 for r in rows)
    lo, hi = layers[0]["encoding"]["x"]["scale"]["domain"]
    assert lo < min(r["median_s"] for r in rows) and hi > max(r["high_s"] for r in rows)


def test_speedup_chart_lollipops_from_the_one_x_line(runs):
    labels = lettered_labels(runs)
    spec = charts_history.speedup_chart(runs, labels).to_dict()
    layers = spec["layer"]
    marks = [mark_type(u) for u in layers]
    assert marks[:3] == ["rule", "rule", "circle"] and marks.count("text") == 4
    one, stem, dot = layers[:3]
    assert one["data"]["values"] == [{"x": 1.0}]
    assert stem["encoding"]["x"]["field"] == "one" and stem["encoding"]["x2"]["field"] == "speedup"
    assert dot["encoding"]["x"]["scale"]["type"] == "log"
    assert dot["encoding"]["y"]["field"] == "run" and dot["encoding"]["y"]["scale"]["domain"] == labels
    lo, hi = dot["encoding"]["x"]["scale"]["domain"]
    speedups = {r["run"]: r["speedup"] for r in charts_history.speedup_rows(runs, labels)}
    assert speedups == {label: pytest.approx(r.speedup) for label, r in zip(labels, runs, strict=True)}
    assert lo < min(speedups.values()) < 1 < max(speedups.values()) < hi
    texts = {r["run"]: r["text"] for r in charts_history.speedup_rows(runs, labels)}
    assert texts[labels[0]] == "5.00x" and texts[labels[2]] == "0.25x"


def test_default_labels_and_colours_are_shared(runs):
    phase = charts_history.phase_chart(runs).to_dict()["layer"][2]["encoding"]["color"]["scale"]
    speed = charts_history.speedup_chart(runs).to_dict()["layer"][2]["encoding"]["color"]["scale"]
    assert phase == speed
    assert phase["domain"][0].startswith("A · matmul 10x10 x32 · cpu")
    with pytest.raises(ValueError):
        charts_history.phase_chart(runs, ["just one label"])


def test_infinite_speedup_is_left_out_not_drawn_at_infinity(runs):
    zero = dataclasses.replace(with_jax(runs[0], runtime=dataclasses.replace(runs[0].jax.runtime, median_s=0.0)),
                               id="zero")
    rows = charts_history.speedup_rows([zero, runs[1]])
    assert len(rows) == 1 and math.isfinite(rows[0]["speedup"])
    charts_history.speedup_chart([zero, runs[1]]).to_dict()


def test_charts_draw_every_run_in_png(runs):
    """vl-convert renders what a browser would: each run's colour must appear (not a blank chart)."""
    from PIL import Image

    from jaxcompare.app.charts import chart_png_bytes

    for chart in (charts_history.phase_chart(runs), charts_history.speedup_chart(runs)):
        pixels = np.asarray(Image.open(io.BytesIO(chart_png_bytes(chart, scale=1.0))).convert("RGB"), dtype=int)
        for colour in charts_history.RUN_COLORS[:3]:
            rgb = np.array([int(colour[i:i + 2], 16) for i in (1, 3, 5)])
            near = int((np.abs(pixels - rgb).sum(axis=-1) < 40).sum())
            assert near > 30, f"{colour} barely drawn ({near} pixels)"


def test_a_run_set_aside_is_marked_and_faded_in_the_speedup_chart(runs):
    """B's set-aside 0.49x was drawn exactly as a trusted 0.75x (the banner above warned): its label is marked
    ?, its dot faded, its reason in the tooltip."""
    from _results import stats

    from jaxcompare.analysis.trust import trust

    wide = dataclasses.replace(runs[0], id="wide", numpy_runtime=stats(runs[0].numpy_runtime.median_s, spread=0.9))
    assert not trust(wide).trusted and trust(runs[0]).trusted
    rows = charts_history.speedup_rows([runs[0], wide], ["A", "B"])
    assert (rows[0]["text"], rows[0]["set_aside"]) == ("5.00x", "")
    assert rows[1]["text"] == "5.00x?" and rows[1]["set_aside"] == "the speedup's range is too wide"
    dot = charts_history.speedup_chart([runs[0], wide], ["A", "B"]).to_dict()["layer"][2]
    assert [c["test"] for c in dot["encoding"]["opacity"]["condition"]] == ["datum.set_aside"]
