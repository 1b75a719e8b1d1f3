"""The Compare page's roofline chart: its data from a real memory-bound measurement on the CPU,
a GPU run's three sides (a recorded result given an H200's ceilings) with a roof each, and old
results without a roofline. Every value on the chart's log axes is positive."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from _results import stats, with_jax
from chart_support import layer_marks
from support import QUICK, zh

from jaxcompare import Spec, i18n
from jaxcompare.app import charts_roofline, views
from jaxcompare.app.charts import chart_png_bytes
from jaxcompare.engine.worker.measure import measure
from jaxcompare.model.result import Result
from jaxcompare.model.roofline import Roofline, RooflineSide

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="module")
def column_sums():
    return measure(Spec("reduction", (4000, 4000), device="cpu", timing=QUICK))


def recorded() -> Result:
    return Result.from_dict(json.loads((DATA / "result-v1-third-side.json").read_text()))


def on_an_h200() -> Result:
    """The recorded result as a GPU run: JAX on an H200 (its published TF32 peak and 4.8 TB/s),
    NumPy and JAX on the CPU under this CPU's (recorded) ceilings, a 4096x4096 matmul's counts."""
    base = recorded()
    n = 4096
    cpu = RooflineSide(1.6, 1.0e11, "measured", 2.0e10, "measured", 2e-6)
    roofline = Roofline(flops=2.0 * n**3, bytes=3.0 * n * n * 4, transcendentals=0.0,
                        numpy=dataclasses.replace(cpu, runtime_s=3.0), jax_cpu=cpu,
                        jax=RooflineSide(4e-4, 494.5e12, "table", 4.8e12, "table", 8e-6))
    gpu = with_jax(base, device="cuda:0", device_kind="NVIDIA H200", runtime=stats(4e-4))
    return dataclasses.replace(gpu, backend="gpu", roofline=roofline)


def positive(rows, *fields):
    return all(row[f] > 0 for row in rows for f in fields)


def test_a_memory_bound_call_sits_under_the_shared_slope(column_sums):
    data = charts_roofline.roofline_rows(column_sums)
    r = column_sums.roofline
    # NumPy and JAX ran on this CPU under the same measured ceilings: one roof holds both.
    assert [row["roof"] for row in data["ridges"]] == ["NumPy, JAX"]
    (ridge,) = data["ridges"]
    assert ridge["intensity"] == pytest.approx(r.jax.peak_flops_per_s / r.jax.bandwidth_bytes_per_s)
    assert ridge["flops_per_s"] == r.jax.peak_flops_per_s
    points = {p["side"]: p for p in data["points"]}
    assert set(points) == {"NumPy", "JAX"}
    for side, point in zip(("numpy", "jax"), (points["NumPy"], points["JAX"]), strict=True):
        # Left of the ridge: the slope's side (NumPy's by the catalog's count, JAX's by XLA's).
        assert point["intensity"] == r.side_intensity(side) < ridge["intensity"]
        assert point["flops_per_s"] == pytest.approx(r.flops_per_s(side))
        assert point["limit"] == "memory-bound" and point["fraction"].endswith("%")
        # Under its roof (within the bandwidth measurement's own noise, as test_roofline allows).
        assert point["flops_per_s"] <= 1.15 * r.side_intensity(side) * r.side(side).bandwidth_bytes_per_s
    domain = data["domain"][0]
    xs = [row["intensity"] for key in ("points", "roofs", "ridges") for row in data[key]]
    ys = [row["flops_per_s"] for key in ("points", "roofs", "ridges") for row in data[key]]
    assert domain["x"][0] <= min(xs) and max(xs) <= domain["x"][1]
    assert domain["y"][0] <= min(ys) and max(ys) <= domain["y"][1]
    for key in ("points", "roofs", "ridges", "labels"):  # a log axis has no place for zero or None
        assert positive(data[key], "intensity", "flops_per_s"), key


def test_the_chart_layers_and_its_tooltips(column_sums):
    spec = charts_roofline.roofline_chart(column_sums).to_dict()
    marks = layer_marks(spec)
    assert marks[0] == "line" and marks.count("point") == 2 and "text" in marks  # roof; ridge and sides
    for layer in spec["layer"]:
        assert layer["encoding"]["x"]["scale"]["type"] == "log" and layer["encoding"]["y"]["scale"]["type"] == "log"
    sides = next(layer for layer in spec["layer"] if layer["encoding"].get("color", {}).get("field") == "legend"
                 and layer["mark"]["type"] == "point")
    assert {t["field"] for t in sides["encoding"]["tooltip"]} >= {"side", "limit", "fraction", "bound"}
    assert len(chart_png_bytes(charts_roofline.roofline_chart(column_sums))) > 10_000  # it draws


def test_a_gpu_run_has_a_roof_per_device_and_a_dot_per_side():
    r = on_an_h200()
    data = charts_roofline.roofline_rows(r)
    assert {p["side"] for p in data["points"]} == {"NumPy", "JAX", "JAX on CPU"}
    # The CPU's roof holds NumPy and JAX on the CPU; the H200's its own, far above.
    assert sorted(row["roof"] for row in data["ridges"]) == ["JAX", "NumPy, JAX on CPU"]
    gpu = next(row for row in data["ridges"] if row["roof"] == "JAX")
    assert gpu["intensity"] == pytest.approx(494.5e12 / 4.8e12) and gpu["peak"] == "494 TFLOP/s"
    points = {p["side"]: p for p in data["points"]}
    assert points["JAX"]["limit"] == "compute-bound" and points["JAX"]["flops_per_s"] > points["NumPy"]["flops_per_s"]
    for key in ("points", "roofs", "ridges", "labels"):
        assert positive(data[key], "intensity", "flops_per_s"), key


def test_a_dot_on_a_power_of_ten_is_drawn_inside_the_axis():
    # The lowest dot at exactly 1e9 FLOP/s put the axis's end at 1e9, the dot on it and half cut off.
    base = on_an_h200()
    jax = dataclasses.replace(base.roofline.jax, runtime_s=base.roofline.flops / 1e9)
    result = dataclasses.replace(base, roofline=dataclasses.replace(base.roofline, jax=jax))
    data = charts_roofline.roofline_rows(result)
    (domain,) = data["domain"]
    lo, hi = domain["y"]
    assert any(p["flops_per_s"] == pytest.approx(1e9) for p in data["points"])
    for point in data["points"]:
        assert lo * charts_roofline.DOT_PAD <= point["flops_per_s"] * (1 + 1e-9)
        assert point["flops_per_s"] * charts_roofline.DOT_PAD <= hi * (1 + 1e-9)


def test_a_roof_with_one_ceiling_known_is_a_single_line():
    r = on_an_h200()
    bandwidth_only = dataclasses.replace(r.roofline.jax, peak_flops_per_s=None, peak_source=None)
    data = charts_roofline.roofline_rows(dataclasses.replace(r, roofline=dataclasses.replace(
        r.roofline, jax=bandwidth_only)))
    slope = [row for row in data["roofs"] if row["roof"] == "JAX"]
    assert len(slope) == 2 and slope[1]["flops_per_s"] / slope[0]["flops_per_s"] == pytest.approx(
        slope[1]["intensity"] / slope[0]["intensity"])  # bandwidth x intensity, end to end
    assert "JAX" not in {row["roof"] for row in data["ridges"]}  # no ridge without a peak


def test_an_old_result_has_no_chart_and_says_not_recorded():
    old = recorded()
    assert old.roofline is None and charts_roofline.roofline_chart(old) is None
    assert "not recorded" in views.roofline_missing_text(old)
    unknown = dataclasses.replace(old, roofline=Roofline(flops=None, bytes=None, transcendentals=None))
    assert charts_roofline.roofline_chart(unknown) is None and "not known" in views.roofline_missing_text(unknown)


def test_the_chart_in_chinese(column_sums):
    with i18n.using("zh"):
        spec = charts_roofline.roofline_chart(column_sums).to_dict()
        data = charts_roofline.roofline_rows(column_sums)
    assert spec["title"]["text"] == zh("Roofline: what holds each side back")
    assert spec["layer"][0]["encoding"]["x"]["title"] == zh("arithmetic intensity (FLOP per byte)")
    assert {p["limit"] for p in data["points"]} == {zh("memory-bound")}


def test_two_roofs_close_together_get_labels_a_line_apart(column_sums):
    # NumPy's and JAX's CPU ceilings, measured apart, can differ by a few percent: two roofs, two labels.
    r = column_sums.roofline
    numpy = dataclasses.replace(r.numpy, bandwidth_bytes_per_s=r.numpy.bandwidth_bytes_per_s * 1.02)
    data = charts_roofline.roofline_rows(dataclasses.replace(column_sums, roofline=dataclasses.replace(
        r, numpy=numpy)))
    assert sorted(label["roof"] for label in data["labels"]) == ["JAX", "NumPy"]
    assert sorted(label["lift_px"] for label in data["labels"]) == [0, charts_roofline.LABEL_LINE_PX]
    gpu = charts_roofline.roofline_rows(on_an_h200())  # roofs decades apart: nothing lifted
    assert [label["lift_px"] for label in gpu["labels"]] == [0, 0]


def test_a_transcendental_bound_call_gets_the_roof_of_its_mix():
    # 1e7 transcendentals at 1e9/s (10 ms) bound this call, not its FLOPs at the 1e11 peak: the
    # flat roof is its work over 10 ms, and the dot, at 20 ms, sits half way under it.
    side = RooflineSide(0.02, 1e11, "measured", 1e10, "measured", 1e-6, 1e9, "measured")
    roofline = Roofline(flops=1e7, bytes=1e7, transcendentals=1e7, numpy=side, jax=side)
    rows = charts_roofline.roofline_rows(dataclasses.replace(recorded(), roofline=roofline))
    flat = max(row["flops_per_s"] for row in rows["roofs"])
    assert flat == pytest.approx(2e7 / 1e-2) and flat < side.peak_flops_per_s
    assert [p["flops_per_s"] for p in rows["points"]] == pytest.approx([flat / 2, flat / 2])


# --- Size sweep ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def matmul_sweep():
    """A real small sweep on the CPU: a matmul's intensity grows with n, so its path runs right."""
    return [measure(Spec("matmul", (n, n), device="cpu", timing=QUICK)) for n in (8, 64, 256)]


def test_the_sweep_is_a_path_per_side_in_size_order(matmul_sweep):
    data = charts_roofline.sweep_roofline_rows(matmul_sweep)
    for side in ("NumPy", "JAX"):
        path = [p for p in data["points"] if p["side"] == side]
        assert [p["shape"] for p in path] == ["8x8", "64x64", "256x256"]
        assert [p["order"] for p in path] == sorted(p["order"] for p in path)
        intensities = [p["intensity"] for p in path]
        assert intensities == sorted(intensities) and intensities[0] < intensities[-1]  # ~n/6 FLOP/byte
        assert [p["end_label"] for p in path] == ["8x8", "", "256x256"]
        assert path[0]["limit"] == "overhead-bound"  # 8x8: the fixed cost of a call
    # The CPU's ceilings hold both sides at every size: one roof, the Compare chart's (same geometry).
    assert [row["roof"] for row in data["ridges"]] == ["NumPy, JAX"]
    largest = charts_roofline.roofline_rows(matmul_sweep[-1])
    assert data["ridges"][0]["intensity"] == pytest.approx(largest["ridges"][0]["intensity"])
    domain = data["domain"][0]
    for key in ("points", "roofs", "ridges", "labels"):
        assert positive(data[key], "intensity", "flops_per_s"), key
        assert all(domain["x"][0] <= row["intensity"] <= domain["x"][1] for row in data[key])
        assert all(domain["y"][0] <= row["flops_per_s"] <= domain["y"][1] for row in data[key])
    spec = charts_roofline.sweep_roofline_chart(matmul_sweep).to_dict()
    assert layer_marks(spec).count("line") == 2 and "text" in layer_marks(spec)  # the roof and the paths
    assert len(chart_png_bytes(charts_roofline.sweep_roofline_chart(matmul_sweep))) > 10_000


def test_sizes_without_a_roofline_are_left_out(matmul_sweep):
    old = dataclasses.replace(matmul_sweep[1], roofline=None)
    unknown = dataclasses.replace(matmul_sweep[2], roofline=Roofline(flops=None, bytes=None, transcendentals=None))
    data = charts_roofline.sweep_roofline_rows([matmul_sweep[0], old, unknown])
    assert {p["shape"] for p in data["points"]} == {"8x8"}
    assert charts_roofline.sweep_roofline_chart([old, unknown]) is None


def test_the_sweep_chart_in_chinese(matmul_sweep):
    with i18n.using("zh"):
        spec = charts_roofline.sweep_roofline_chart(matmul_sweep).to_dict()
    assert spec["title"]["text"] == zh("Roofline by size: how close each size gets to the roof")
