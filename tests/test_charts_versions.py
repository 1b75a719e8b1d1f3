"""The Versions chart's data and spec, from made-up Results (no JAX): release order, one runtime
and one compile row per version, the runtime's 95% range, a log time axis drawn with dots."""

from __future__ import annotations

from _results import make_result

from jaxcompare.app import charts_versions


def pooled():
    # Given out of release order: 0.10.2 is newer than 0.4.35 although "0.10" < "0.4" as text.
    return [("0.10.2", make_result("centered_gram", (64, 64), jax_s=2e-4, compile_s=0.02)),
            ("0.4.35", make_result("centered_gram", (64, 64), jax_s=3e-4, compile_s=0.05))]


def test_rows_per_version_in_release_order():
    rows = charts_versions.versions_rows(pooled())
    assert [(r["version"], r["metric"]) for r in rows] == [
        ("0.4.35", "runtime"), ("0.4.35", "compile"), ("0.10.2", "runtime"), ("0.10.2", "compile")]
    runtime = rows[0]
    assert runtime["low_s"] <= runtime["median_s"] == 3e-4 <= runtime["high_s"]
    assert rows[1]["median_s"] == rows[1]["low_s"] == rows[1]["high_s"]
    assert rows[3]["median_s"] < rows[1]["median_s"]  # compile totals carried through


def test_chart_is_log_time_with_dots_and_range_rules():
    spec = charts_versions.versions_chart(pooled()).to_dict()
    marks = [layer["mark"]["type"] for layer in spec["layer"]]
    assert marks == ["line", "rule", "point"]  # no bars on a log axis (DESIGN)
    assert spec["layer"][2]["encoding"]["y"]["scale"]["type"] == "log"
    assert spec["layer"][2]["encoding"]["x"]["sort"] == ["0.4.35", "0.10.2"]
    assert spec["layer"][1]["encoding"]["y2"]["field"] == "high_s"
