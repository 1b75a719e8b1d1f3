"""benchmarks/accuracy.py runs end to end and writes the documented JSON (structure only:
timings on a shared machine are the benchmark's business, not a test's)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # 20 s or more: collected first, so parallel workers end together

ROOT = Path(__file__).resolve().parent.parent
TOOLS = {"jaxcompare", "timeit", "ipython"}



@pytest.fixture(scope="module")
def run():
    cmd = [sys.executable, str(ROOT / "benchmarks" / "accuracy.py"), "--quick", "--cases", "matmul",
           "--sizes", "small", "--timing", "quick", "--overhead-rounds", "1", "--showcase-repeats", "2",
           "--showcase-shape", "64x64",
           "--showcase-timings", "quick", "careful",  # two presets, as the default's two; thorough alone took 21 s
           "--reference-repeats", "2", "--reference-loops", "50", "--json", "-"]
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout), proc.stderr


def _positive(x) -> bool:
    return isinstance(x, float) and math.isfinite(x) and x > 0


def test_one_json_document_with_machine_and_load(run):
    report, _ = run
    assert report["schema"] == "jaxcompare.accuracy/1"
    assert report["machine"]["cpu_count"] >= 1
    for load in (report["load"], *report["loads"].values()):
        assert {"busy_cores", "own_cores", "other_cores", "wall_s"} <= set(load)
    assert set(report["loads"]) == {"x32", "x64"}


def test_rows_cover_both_phases_in_both_precisions(run):
    report, _ = run
    rows = report["rows"]
    assert {(r["precision"], r["phase"]) for r in rows} == {(p, ph) for p in ("x32", "x64") for ph in ("numpy", "jax")}
    for row in rows:
        assert row["case"] == "matmul" and row["shape"] == [10, 10] and row["statement"]
        assert set(row["tools"]) == TOOLS  # pyperf is off in --quick
        for tool in row["tools"].values():
            assert _positive(tool["median_s"]) and _positive(tool["wall_s"]) and tool["runs"] >= 1
        assert set(row["ratios"]) == {"timeit", "ipython"}
        assert _positive(row["ratios"]["timeit"]) and _positive(row["references_ratio"])
        assert row["tools"]["jaxcompare"]["runs"] == 3  # brackets each of the two references
        assert isinstance(row["references_agree"], bool) and isinstance(row["within_tolerance"], bool)


def test_overhead_and_showcase(run):
    report, _ = run
    variants = {(o["precision"], o["variant"]) for o in report["overhead"]}
    assert len(variants) == 6
    for o in report["overhead"]:
        assert _positive(o["engine_s"]) and _positive(o["bare_s"]) and _positive(o["ratio"])
    show = report["showcase"]
    assert show["precision"] == "x32" and show["shape"] == [64, 64]
    assert show["tools"] == ["jaxcompare_quick", "jaxcompare", "ipython"]  # quick, careful, IPython
    for tool in show["tools"]:
        assert len(show[tool]["speedups"]) == 2 and all(_positive(s) for s in show[tool]["speedups"])
        assert _positive(show[tool]["wall_median_s"]) and _positive(show[tool]["first_call_s"])
        # jaxcompare says which of its runs it would not trust; the IPython protocol cannot.
        assert ("flagged" in show[tool]) == (tool != "ipython")


def test_targets_and_table(run):
    report, table = run
    assert [t["id"] for t in report["targets"]] == ["medians", "context", "overhead", "speedup_spread",
                                                    "full_comparison"]
    assert all(isinstance(t["met"], bool) == (t["id"] != "context") and t["reached"] for t in report["targets"])
    assert "| x32  | matmul | 10x10 | numpy |" in table
    assert "Targets" in table and "IPython protocol" in table and "quick timing" in table


def test_a_saved_result_can_be_summarized_again(run, tmp_path):
    report, table = run
    saved = tmp_path / "accuracy.json"
    saved.write_text(json.dumps(report))
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "accuracy.py"), "--from-json", str(saved)],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() and table.strip().endswith(proc.stdout.strip())


def test_the_hand_protocols_witness_imports_nothing_of_jaxcompare():
    # A witness that built its inputs or timed with jaxcompare's code would agree with it by construction.
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import hand_protocol
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    for case in hand_protocol.FUNCTIONS:
        typed = hand_protocol.witness(case, "32x32", "x32", numpy_only=True)
        assert typed["imported"] == [] and typed["numpy_s"] > 0, (case, typed)
