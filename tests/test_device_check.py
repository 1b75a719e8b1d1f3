"""`make device-check` at its small size on the CPU (as on any machine without a GPU), so the
script never rots: it says no accelerator was found, writes DEVICE.md with the docs' Colab
column beside this machine's numbers, and a JSON file a fresh History imports."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from jaxcompare.history.store import Store

pytestmark = pytest.mark.slow  # 20 s or more: collected first, so parallel workers end together

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def device_check(tmp_path_factory):
    out = tmp_path_factory.mktemp("device-check")
    env = dict(os.environ, JAX_PLATFORMS="cpu", JAXCOMPARE_DB=str(out / "db" / "results.sqlite3"))
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "device_check.py"), "--small", "--out", str(out)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return out, proc.stdout


def test_it_says_no_accelerator_was_found(device_check):
    out, stdout = device_check
    assert "no accelerator was found" in stdout
    md = (out / "DEVICE.md").read_text()
    assert "**No accelerator was found**" in md
    assert "Both workers (x32 pid" in md and "served every job from the start" in md


def test_device_md_has_the_docs_colab_column_beside_this_machine(device_check):
    out, _ = device_check
    md = (out / "DEVICE.md").read_text()
    lines = md.splitlines()
    header = next(line for line in lines if line.startswith("| phase ("))
    assert header.endswith("| this machine | JAX docs (Colab GPU) |")
    rows = {line.split(" | ")[0].lstrip("| "): line for line in lines[lines.index(header):][2:8]}
    for label, colab in (("NumPy runtime", "16.2 ms"), ("Transfer host→device", "1.26 ms"),
                         ("Compile (trace+lower+XLA)", "193 ms"), ("JAX runtime (blocked)", "485 µs")):
        assert rows[label].endswith(f"| {colab} |"), rows[label]
    for heading in ("## Devices", "## Self-check", "## Pitfalls", "## Matmul size sweep", "## Environment"):
        assert heading in md
    # NVML reads NVIDIA GPUs only: without one, no table of dashes (the H200's report has it).
    assert "## GPU clocks" not in md
    assert "6. Reduced precision: does not apply on the CPU" in md  # the pitfalls lab, pitfall 6 included
    assert "7. Restarts" not in md and "--sections cache" in md  # left out at the small size, and said so
    assert "of this cpu's measured float32 matmul rate" in md.lower()  # the fraction of peak


def test_the_json_imports_into_a_fresh_history(device_check, tmp_path):
    out, _ = device_check
    doc = json.loads((out / "device-check.json").read_text())
    assert doc["schema"] == "jaxcompare.export/1" and doc["device_check"]["accelerator"] is False
    store = Store(tmp_path / "fresh.sqlite3")
    added, skipped = store.import_file(out / "device-check.json")
    assert added == doc["count"] == 3 and skipped == 0  # the docs' example and two sweep sizes
    cases = sorted(r.case for r in store.load(store.all_ids()))
    assert cases == ["centered_gram", "matmul", "matmul"]


def device_check_module():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import device_check

    return device_check


def test_the_tpu_check_leaves_out_at_x64_only_what_was_recorded_too_slow_there():
    slow_at_x64 = device_check_module().slow_at_x64
    names = ["cumsum", "svd", "eigh", "matmul"]
    # Float64 compiles on a TPU v5e (tests/data/tpu/selfcheck-x64.jsonl): cumsum 148 s, svd 40 s; eigh's 5 s is run.
    assert slow_at_x64("tpu", names) == {"cumsum": 147.65, "svd": 39.6}
    assert slow_at_x64("gpu", names) == {} and slow_at_x64(None, names) == {}


def recorded_tpu_runs() -> list[dict[str, float]]:
    """Each part's seconds in the two full runs on a TPU v5e: the JSON's, and DEVICE-TPU.md's line."""
    saved = json.loads((ROOT / "tests" / "data" / "tpu" / "device-check.json").read_text())["device_check"]
    line = next(x for x in (ROOT / "benchmarks" / "DEVICE-TPU.md").read_text().splitlines()
                if x.startswith("Stage durations: "))
    written = {name: float(seconds) for name, seconds in
               re.findall(r"(?:, |: )([^,]+?) (\d+(?:\.\d+)?) s", line)}
    parts = {"devices": "devices", "self-check": "self-check", "JAX docs' example": "docs", "pitfalls": "pitfalls",
             "matmul sweep": "sweep", "pitfall 7": "restarts", "workers at the end": "end"}

    def by_part(durations: dict[str, float]) -> dict[str, float]:
        return {next(part for name, part in parts.items() if stage.startswith(name)): seconds
                for stage, seconds in durations.items()}

    return [by_part(durations) for durations in (saved["durations_s"], written)]


def test_the_full_plan_fits_a_tpu_with_room():
    # The full plan took 402 s and 445 s there against its 390 s budget; one run at 380 s skipped the
    # sweep and exited 1. Now svd leaves the float64 self-check (40 s) and pitfall 7 (nine processes,
    # each opening the chip) is a part of its own, last, left out where it would not fit.
    dc = device_check_module()
    plan = dc.Plan(small=False)
    plan.platform = "tpu"
    for run in recorded_tpu_runs():  # each part's estimate holds what the runs recorded
        assert plan.expected_s("self-check") + 39.6 >= run["self-check"]
        if "restarts" not in run:  # recorded before pitfall 7 was a part of its own
            assert plan.expected_s("pitfalls") + plan.expected_s("restarts") >= run["pitfalls"]
        for part in ("devices", "docs", "sweep", "end", *(("pitfalls", "restarts") if "restarts" in run else ())):
            assert plan.expected_s(part) >= run[part], (part, run)
    seconds, left_out = plan.forecast(390)
    assert seconds <= 0.85 * 390 and left_out == ["restarts"]
    assert plan.forecast(seconds + plan.expected_s("restarts")) == (seconds + plan.expected_s("restarts"), [])
    small = dc.Plan(small=True)
    small.platform = "tpu"
    assert small.forecast(390) == (0.0, [])  # the small plan runs until its deadline, whatever the platform


def test_a_part_that_would_not_end_by_the_deadline_is_left_out_before_it_starts():
    dc = device_check_module()
    report = {"deadline": time.perf_counter() + 30, "left_out": [], "failures": [], "durations_s": {},
              "budget_s": 390.0}
    ran = []
    # The TPU's sweep (41 s recorded) with 30 s left: left out, not started, not failed.
    assert dc.stage("matmul sweep", report, lambda: ran.append("sweep"), expected_s=41) is None
    # A part that fits runs, unless the closing check's time is kept for it too.
    assert dc.stage("docs", report, lambda: ran.append("docs") or "done", expected_s=10) == "done"
    assert dc.stage("pitfalls", report, lambda: ran.append("pitfalls"), expected_s=10, reserve_s=25) is None
    assert ran == ["docs"] and report["failures"] == []
    assert [i["part"] for i in report["left_out"]] == ["matmul sweep", "pitfalls"]
    assert 25 < report["left_out"][0]["left_s"] <= 30 and report["left_out"][0]["expected_s"] == 41
    assert dc.left_out_text(41, 29.6, 390) == "about 41 s here, where 30 s were left of the 390 s budget"


def test_parts_left_out_for_time_are_listed_and_the_run_passes(tmp_path):
    env = dict(os.environ, JAX_PLATFORMS="cpu", JAXCOMPARE_DB=str(tmp_path / "db" / "results.sqlite3"))
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "device_check.py"), "--small", "--budget", "0",
                           "--out", str(tmp_path)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    parts = ["self-check", "JAX docs' example (centered_gram 200x200)", "pitfalls", "matmul sweep"]
    assert f"left out for time: {', '.join(parts)}" in proc.stdout
    md = (tmp_path / "DEVICE.md").read_text()
    assert "## Left out for time" in md and "## Failures" not in md
    assert all(f"- {part}: the 0 s budget was spent" in md for part in parts)
    assert "## Devices" in md and "served every job from the start" in md  # the devices and the closing check
    check = json.loads((tmp_path / "device-check.json").read_text())["device_check"]
    assert [i["part"] for i in check["left_out"]] == parts and check["failures"] == [] and check["budget_s"] == 0
