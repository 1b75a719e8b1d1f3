"""`make device-check` at its small size on the CPU (as on any machine without a GPU), so the
script never rots: it says no accelerator was found, writes DEVICE.md with the docs' Colab
column beside this machine's numbers, and a JSON file a fresh History imports."""

from __future__ import annotations

import json
import os
import subprocess
import sys
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


def test_the_tpu_check_leaves_out_at_x64_only_what_was_recorded_too_slow_there():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from device_check import slow_at_x64

    names = ["cumsum", "svd", "matmul"]
    # cumsum's float64 compile took 148 s on a TPU v5e (tests/data/tpu/selfcheck-x64.jsonl); svd's 40 s is run.
    assert slow_at_x64("tpu", names) == {"cumsum": 147.65}
    assert slow_at_x64("gpu", names) == {} and slow_at_x64(None, names) == {}
