"""The Profile tab's chart and texts, and the size pitfall's gap chart, from real traces of
jitted calls on the CPU (traced in this process)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from _results import make_result

from jaxcompare.app import charts_profile, profile_view
from jaxcompare.app.charts import chart_png_bytes
from jaxcompare.engine.worker.profile import profile_jitted, summarize_file
from jaxcompare.model.profile import Profile


def _traced(n: int, folder, runtime_s: float) -> Profile:
    import jax

    x = jax.device_put(np.random.default_rng(0).random((n, n), dtype=np.float32))
    f = jax.jit(lambda a: a.T @ (a - a.mean(axis=0)))
    f(x).block_until_ready()
    profile = profile_jitted(f, (x,), folder, runtime_s=runtime_s)
    assert profile.ok, profile.error
    return profile


@pytest.fixture(scope="module")
def profiles(tmp_path_factory):
    folder = tmp_path_factory.mktemp("chart-traces")
    # Large enough that its ops outlast the waits for a core between them on a busy machine (at
    # 256x256 those waits made the gap 89% of the call, as large a share as 8x8's, in a CI run).
    return {"small": _traced(8, folder / "small", 1e-3), "large": _traced(1024, folder / "large", 0.03)}


def test_the_bars_are_the_ops_then_the_gap_and_add_up_to_the_whole_call(profiles):
    profile = profiles["large"]
    rows = charts_profile.op_share_rows(profile)
    assert [r["label"] for r in rows[:len(profile.ops)]] == [op.name for op in profile.ops]
    assert rows[-1]["role"] == "gap" and rows[-1]["share"] == pytest.approx(profile.gap_share)
    assert sum(r["share"] for r in rows) == pytest.approx(1.0, abs=1e-9)


def test_the_profile_chart_draws_and_exports(profiles):
    result = replace(make_result("centered_gram", (1024, 1024)), profile=profiles["large"])
    spec = charts_profile.profile_chart(result).to_dict()
    bars = spec["layer"][0]
    assert bars["mark"]["type"] == "bar" and bars["encoding"]["x"]["axis"]["format"] == "%"
    drawn = {r["role"] for r in charts_profile.op_share_rows(profiles["large"])}
    assert set(bars["encoding"]["color"]["scale"]["domain"]) == drawn  # no legend entry for what is not drawn
    assert chart_png_bytes(charts_profile.profile_chart(result))[:4] == b"\x89PNG"
    with pytest.raises(ValueError):
        charts_profile.profile_chart(make_result())  # no profile: nothing to draw


def test_the_tab_texts_follow_the_profile(profiles, tmp_path):
    result = replace(make_result("centered_gram", (1024, 1024)), profile=profiles["large"])
    figures = profile_view.gap_figures(result)
    assert [f.label for f in figures] == ["Host wall time per call", "Device busy", "Gap: host overhead"]
    assert profile_view.gap_figures(make_result()) == []
    rows = profile_view.op_rows(profiles["large"])
    assert [r["XLA op"] for r in rows[:len(profiles["large"].ops)]] == [op.name for op in profiles["large"].ops]
    path, line = profile_view.trace_file(profiles["large"])
    assert path is not None and path.read_bytes()[:2] == b"\x1f\x8b"  # gzip: what the download sends
    gone, line = profile_view.trace_file(replace(profiles["large"], trace_file=str(tmp_path / "moved.json.gz")))
    assert gone is None and "not on this machine" in line
    assert profile_view.trace_download_name(result).endswith(".perfetto.json.gz")


def test_the_size_gap_chart_puts_the_small_shape_above_the_large_one(profiles):
    pitfall = {"naive": {"shape": [8, 8], "profile": profiles["small"].to_dict()},
               "correct": {"shape": [1024, 1024], "profile": profiles["large"].to_dict()}}
    rows = charts_profile.size_gap_rows(pitfall)
    assert [r["label"].split(" ")[0] for r in rows] == ["8x8", "8x8", "1024x1024", "1024x1024"]
    for busy, gap in (rows[0:2], rows[2:4]):
        assert busy["end"] == gap["start"] and gap["end"] == 1.0
        assert busy["share"] + gap["share"] == pytest.approx(1.0)
    assert rows[1]["share"] > rows[3]["share"]  # the tiny call is more overhead
    assert chart_png_bytes(charts_profile.size_gap_chart(pitfall))[:4] == b"\x89PNG"
    assert "the gap" in profile_view.side_gap_text(pitfall["naive"])
    no_profile = {"naive": {"shape": [8, 8]}, "correct": {"shape": [1024, 1024]}}
    assert charts_profile.size_gap_chart(no_profile) is None
    failed = {"profile": Profile.failed("the profiler could not start").to_dict()}
    assert profile_view.side_gap_text(failed) == "Not profiled: the profiler could not start"


def test_a_gpu_profile_shows_its_copies_apart_from_the_ops_and_the_gap():
    # Recorded on 8 AMD MI300X GPUs (tests/data/RECORDED.md): ROCm copy kernels on GPU 0.
    profile = summarize_file(Path(__file__).parent / "data" / "mi300x-jax-conv.xplane.pb")
    assert profile.copy_s > 0
    rows = charts_profile.op_share_rows(profile)
    assert [r["role"] for r in rows[-2:]] == ["copying", "gap"]
    assert rows[-2]["share"] == pytest.approx(profile.copy_share)
    assert sum(r["share"] for r in rows) == pytest.approx(1.0, abs=1e-9)
    result = replace(make_result("centered_gram", (1024, 1024)), profile=profile)
    figures = profile_view.gap_figures(result)
    assert [f.label for f in figures] == ["Host wall time per call", "Device busy", "Copying", "Gap: host overhead"]
    assert str(profile.copies) in figures[2].help
    kinds = {r["Kind"] for r in profile_view.op_rows(profile)}
    assert {"HLO op", "kernel name"} <= kinds  # a kernel's own name is marked as such
    assert chart_png_bytes(charts_profile.profile_chart(result))[:4] == b"\x89PNG"
