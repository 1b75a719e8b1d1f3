"""Chart specs from real results: marks, encodings, log scales and data, plus PNG export."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import pytest
from chart_support import mark_type

from jaxcompare import Spec, TimingConfig
from jaxcompare.app import charts
from jaxcompare.model.phases import PHASE_LABELS

SHAPES = [(10, 10), (20, 20), (40, 40)]


@pytest.fixture(scope="module")
def sweep_results(runner):
    """A small real sweep: three sizes at both precisions, quick timing."""
    results = []
    for shape in SHAPES:
        for precision in ("x32", "x64"):
            results.append(runner.run(Spec("matmul", shape, precision=precision, timing=TimingConfig.quick())))
    return results


@pytest.fixture(scope="module")
def result(sweep_results):
    return sweep_results[0]


def units(spec: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every single-view spec inside a (possibly layered, concatenated or faceted) spec."""
    if "mark" in spec:
        yield spec
    for key in ("layer", "vconcat", "hconcat", "concat"):
        for child in spec.get(key, []):
            yield from units(child)
    if "spec" in spec:
        yield from units(spec["spec"])


def data_values(spec: dict[str, Any], unit: dict[str, Any]) -> list[dict[str, Any]]:
    data = unit.get("data") or spec.get("data")
    if "values" in data:
        return data["values"]
    return spec["datasets"][data["name"]]


def no_log_bars(spec: dict[str, Any]) -> None:
    """Altair 6: a stacked bar on a log axis renders blank; none of ours may do that."""
    for unit in units(spec):
        if mark_type(unit) in ("bar", "area"):
            for channel in ("x", "y"):
                enc = unit.get("encoding", {}).get(channel, {})
                if enc.get("scale", {}).get("type") == "log":
                    assert enc.get("stack", "missing") is None


def test_phase_breakdown_lollipops_on_a_log_axis(result):
    spec = charts.phase_breakdown_chart(result).to_dict()
    layers = list(units(spec))
    assert [mark_type(u) for u in layers] == ["rule", "rule", "circle", "text"]
    stem, _, dot, text = layers
    assert stem["encoding"]["x"]["scale"]["type"] == "log"
    assert stem["encoding"]["x2"]["field"] == "median_s"
    assert dot["encoding"]["x"]["field"] == "median_s" and text["encoding"]["text"]["field"] == "text"
    y_domain = stem["encoding"]["y"]["scale"]["domain"]
    for label in ("Transfer host→device", "Compile: trace", "Compile: lower", "Compile: XLA compile",
                  "JAX runtime (blocked)", "NumPy runtime", "Dispatch only (unblocked)", "Fetch device→host"):
        assert label in y_domain
    assert y_domain.index(PHASE_LABELS["compile"]) < y_domain.index(PHASE_LABELS["runtime"])
    rows = {r["phase"]: r for r in data_values(spec, stem)}
    assert set(rows) == {"transfer", "trace", "lower", "compile", "runtime", "numpy", "dispatch", "fetch"}
    assert rows["compile"]["median_s"] == pytest.approx(result.jax.compile.median_s)
    assert rows["numpy"]["side"] == "NumPy" and rows["runtime"]["side"] == "JAX"
    # the baseline sits below every value, so no lollipop has zero length
    lo, hi = stem["encoding"]["x"]["scale"]["domain"]
    assert all(lo < r["median_s"] < hi for r in rows.values())
    # compile is ~1000x the runtime and both are on the axis
    assert rows["compile"]["median_s"] > 10 * rows["runtime"]["median_s"]
    no_log_bars(spec)


def test_samples_chart_shows_every_sample_of_both_sides(result):
    spec = charts.samples_chart(result).to_dict()
    layers = list(units(spec))
    assert [mark_type(u) for u in layers] == ["bar", "tick", "tick"]
    ticks = data_values(spec, layers[1])
    assert len(ticks) == result.numpy_runtime.n + result.jax.runtime.n
    assert {t["side"] for t in ticks} == {"NumPy", "JAX"}
    numpy_ticks = sorted(t["time_s"] for t in ticks if t["side"] == "NumPy")
    assert numpy_ticks == sorted(result.numpy_runtime.samples_s)
    assert layers[1]["encoding"]["x"]["field"] == "deviation"


def test_sweep_runtime_chart_is_log_log_with_both_sides_and_precisions(sweep_results):
    spec = charts.sweep_runtime_chart(sweep_results).to_dict()
    layers = list(units(spec))
    assert [mark_type(u) for u in layers] == ["rule", "line", "point"]
    line = layers[1]
    assert line["encoding"]["x"]["scale"]["type"] == "log"
    assert line["encoding"]["y"]["scale"]["type"] == "log"
    assert line["encoding"]["strokeDash"]["field"] == "precision"
    rows = data_values(spec, line)
    assert len(rows) == 2 * len(sweep_results)
    assert {r["series"] for r in rows} == {"NumPy x32", "JAX x32", "NumPy x64", "JAX x64"}
    assert sorted({r["elements"] for r in rows}) == [math.prod(s) for s in SHAPES]


def test_sweep_speedup_chart_marks_one_x_and_the_crossover(sweep_results):
    from dataclasses import replace

    from _results import stats, with_jax

    spec = charts.sweep_speedup_chart(sweep_results).to_dict()
    layers = list(units(spec))
    one = next(u for u in layers if mark_type(u) == "rule")
    assert data_values(spec, one) == [{"y": 1.0}]
    line = next(u for u in layers if mark_type(u) == "line")
    assert line["encoding"]["y"]["scale"]["type"] == "log"
    assert line["encoding"]["x"]["scale"]["type"] == "log"
    lo, hi = line["encoding"]["y"]["scale"]["domain"]
    assert lo < 1 < hi
    # Force a crossover: JAX slower at the small size, faster at the largest.
    # Quiet by construction (load={}): the measured results' own load could set every point aside.
    forced = [replace(with_jax(r, runtime=stats(1e-3 * (4 if i < 2 else 0.25))), numpy_runtime=stats(1e-3), load={})
              for i, r in enumerate(sweep_results)]
    spec = charts.sweep_speedup_chart(forced).to_dict()
    rules = [u for u in units(spec) if mark_type(u) == "rule" and "transform" not in u]
    assert len(rules) == 2  # the 1x line and the crossover verticals (the doubtful points' ranges are filtered)
    cross = data_values(spec, rules[1])
    assert {c["precision"] for c in cross} == {"x32", "x64"}
    assert all(100 < c["elements"] < 1600 for c in cross)
    texts = [u for u in units(spec) if mark_type(u) == "text"]
    assert any("crossover" in v["text"] for t in texts for v in data_values(spec, t))


def test_a_one_precision_sweep_has_no_legend_entry_for_the_other(sweep_results):
    x32 = [r for r in sweep_results if r.precision == "x32"]
    for chart in (charts.sweep_runtime_chart(x32), charts.sweep_speedup_chart(x32)):
        domains = [enc["scale"]["domain"] for u in units(chart.to_dict()) for name, enc in u["encoding"].items()
                   if name in ("color", "strokeDash", "shape") and enc.get("field") == "precision"]
        assert domains and all(d == ["x32"] for d in domains), domains


def test_sweep_share_chart_normalised_bars_per_precision(sweep_results):
    spec = charts.sweep_share_chart(sweep_results).to_dict()
    assert spec["facet"]["column"]["field"] == "precision"
    (bar,) = list(units(spec))
    assert mark_type(bar) == "bar"
    assert bar["encoding"]["y"]["stack"] == "normalize"
    assert bar["encoding"]["y"].get("scale", {}).get("type") != "log"
    rows = data_values(spec, bar)
    assert len(rows) == 5 * len(sweep_results)
    one = [r for r in rows if r["shape"] == "10x10" and r["precision"] == "x32"]
    assert sum(r["share"] for r in one) == pytest.approx(1.0)
    single = charts.sweep_share_chart([r for r in sweep_results if r.precision == "x32"]).to_dict()
    assert "facet" not in single and single["width"] == "container"
    no_log_bars(spec)


def test_every_chart_exports_png(result, sweep_results):
    for chart in (charts.phase_breakdown_chart(result), charts.samples_chart(result),
                  charts.sweep_runtime_chart(sweep_results), charts.sweep_speedup_chart(sweep_results),
                  charts.sweep_share_chart(sweep_results)):
        png = charts.chart_png_bytes(chart, scale=1.0)
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000
