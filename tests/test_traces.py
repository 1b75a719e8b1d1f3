"""The profile summary on profiler traces that real GPUs recorded (tests/data/RECORDED.md),
converted by jaxlib's own exporter, and ``jaxcompare trace`` on them and on a trace captured
here with jax.profiler. Every expected figure is worked out from the file itself."""

from __future__ import annotations

import glob
import gzip
import json
import os
import subprocess
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from support import cli

from jaxcompare.cli import main
from jaxcompare.engine.worker.profile import CALL_MARK, is_copy, summarize, summarize_file
from jaxcompare.engine.worker.trace_file import read_trace, xplane_to_trace
from jaxcompare.model.formatting import gap_sentence
from jaxcompare.model.profile import Profile

DATA = Path(__file__).parent / "data"
MI300X = DATA / "mi300x-jax-conv.xplane.pb"
GFX950 = DATA / "gfx950-jax-fused-attn.xplane.pb"
RECORDED = {"mi300x": MI300X, "gfx950": GFX950}


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> dict[str, Path]:
    """Each recorded file through jaxlib's exporter, as the profiler writes it beside a capture."""
    import jax
    from jax._src.lib import _profiler

    out = {}
    for name, path in RECORDED.items():
        folder = tmp_path_factory.mktemp(name)
        session = _profiler.ProfilerSession(jax.profiler.ProfileOptions())
        try:
            session.export(path.read_bytes(), str(folder))
        finally:
            session.stop()
        (out[name],) = glob.glob(str(folder / "plugins" / "profile" / "*" / "*.trace.json.gz"))
    return {name: Path(p) for name, p in out.items()}


@pytest.fixture(scope="module")
def traces(exported) -> dict[str, dict]:
    with_gzip = {}
    for name, path in exported.items():
        with gzip.open(path, "rt") as fh:
            with_gzip[name] = json.load(fh)
    return with_gzip


@pytest.fixture(scope="module")
def profiles() -> dict[str, Profile]:
    return {name: summarize_file(path) for name, path in RECORDED.items()}


# --- what the files hold, worked out here without the summary's code -----------------------------
def _processes(trace: dict) -> tuple[dict, dict]:
    meta = [e for e in trace["traceEvents"] if e.get("ph") == "M"]
    processes = {e["pid"]: e["args"]["name"] for e in meta if e["name"] == "process_name"}
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in meta if e["name"] == "thread_name"}
    return processes, threads


def _stream_events(trace: dict) -> list[dict]:
    processes, threads = _processes(trace)
    return [e for e in trace["traceEvents"] if e.get("ph") == "X"
            and processes.get(e["pid"], "").startswith("/device:GPU:")
            and threads.get((e["pid"], e["tid"]), "").startswith("Stream #")]


def _merged_length(spans: list[tuple[float, float]]) -> float:
    total, reach = 0.0, float("-inf")
    for start, end in sorted(spans):
        if end > reach:
            total += end - max(start, reach)
            reach = end
    return total


def test_the_package_converts_an_xplane_exactly_as_jaxlib_does(traces):
    for name, path in RECORDED.items():
        assert xplane_to_trace(path.read_bytes()) == traces[name]
        assert read_trace(path) == traces[name]
    processes, threads = _processes(traces["mi300x"])
    assert {f"/device:GPU:{k}" for k in range(8)} | {"/host:CPU"} == set(processes.values())
    assert any(name.startswith("Stream #") and "(Kernel)" in name for name in threads.values())


def test_the_top_ops_are_xlas_own_names_with_the_files_durations(traces, profiles):
    for name in RECORDED:
        events = [e for e in _stream_events(traces[name]) if not is_copy(e)]
        devices = {e["pid"] for e in events}
        by_op = defaultdict(float)
        for e in events:
            by_op[e["args"].get("hlo_op") or e["name"]] += e["dur"]
        profile = profiles[name]
        assert profile.ok and profile.whole_window and len(profile.devices) == len(devices)
        ranked = sorted(by_op, key=lambda op: -by_op[op])
        assert [op.name for op in profile.ops] == ranked[:len(profile.ops)]
        # An op's time is its kernels' durations, per device, less any overlap between kernels
        # (a device's streams run one kernel at a time but for the timestamps' jitter).
        overlap = sum(e["dur"] for e in events) - sum(
            _merged_length([(e["ts"], e["ts"] + e["dur"]) for e in events if e["pid"] == pid]) for pid in devices)
        assert 0 <= overlap < 1e-3 * sum(e["dur"] for e in events)
        for op in profile.ops:
            expected = by_op[op.name] / len(devices) * 1e-6
            assert expected - overlap / len(devices) * 1e-6 - 1e-12 <= op.time_s <= expected + 1e-12
            assert op.share == pytest.approx(op.time_s / profile.wall_s)
    hlo_ops = {e["args"]["hlo_op"] for e in _stream_events(traces["mi300x"]) if "hlo_op" in e["args"]}
    top = profiles["mi300x"].ops
    assert {top[0].name, top[1].name} == {"cudnn-conv.1", "input_transpose_fusion"}
    assert top[0].name in hlo_ops and top[1].name in hlo_ops and top[0].kind == "op"


def test_a_kernel_without_an_hlo_op_is_named_as_a_kernel_never_as_an_op(traces, profiles):
    for name in RECORDED:
        events = _stream_events(traces[name])
        hlo_ops = {e["args"]["hlo_op"] for e in events if "hlo_op" in e["args"]}
        bare = {e["name"] for e in events if "hlo_op" not in e["args"] and not is_copy(e)}
        for op in profiles[name].ops:
            assert (op.name in bare) if op.kind == "kernel" else (op.name in hlo_ops), op
    kernels = [op for op in profiles["mi300x"].ops if op.kind == "kernel"]
    assert kernels and all(op.name.endswith(".kd") for op in kernels)  # ROCm's kernel symbols


def test_copies_are_transfer_not_compute(traces, profiles):
    events = _stream_events(traces["mi300x"])
    copies = [e for e in events if e["name"].startswith("__amd_rocclr_copyBuffer")]
    assert copies and all("hlo_op" not in e["args"] for e in copies)
    profile = profiles["mi300x"]
    assert profile.copies == len(copies)
    assert not any("copyBuffer" in op.name for op in profile.ops)
    for device in profile.devices:
        mine = [e for e in events if _processes(traces["mi300x"])[0][e["pid"]] == device.name]
        assert device.copies == sum(e in copies for e in mine)
        compute = [(e["ts"], e["ts"] + e["dur"]) for e in mine if e not in copies]
        everything = [(e["ts"], e["ts"] + e["dur"]) for e in mine]
        assert device.busy_s == pytest.approx(_merged_length(compute) * 1e-6, rel=1e-9)
        assert device.copy_s == pytest.approx((_merged_length(everything) - _merged_length(compute)) * 1e-6,
                                              rel=1e-9, abs=1e-12)
    assert sum(d.copy_s > 0 for d in profile.devices) == len({e["pid"] for e in copies})
    # A memset inside a custom call (gfx950) is that op's work, not a copy.
    fills = [e for e in _stream_events(traces["gfx950"]) if "fillBuffer" in e["name"]]
    assert fills and all("hlo_op" in e["args"] for e in fills)
    assert profiles["gfx950"].copies == 0 and profiles["gfx950"].copy_s == 0


def test_the_whole_window_is_summarised_and_the_parts_add_up(traces, profiles):
    for name, profile in profiles.items():
        spans = [(e["ts"], e["ts"] + e["dur"]) for e in traces[name]["traceEvents"] if e.get("ph") == "X"]
        assert profile.calls == 0 and profile.whole_window
        assert profile.wall_s == pytest.approx((max(e for _, e in spans) - min(s for s, _ in spans)) * 1e-6)
        assert sum(op.time_s for op in profile.ops) + profile.other_ops_s == pytest.approx(profile.device_busy_s)
        assert profile.device_busy_s == pytest.approx(sum(d.busy_s for d in profile.devices) / len(profile.devices))
        assert profile.device_busy_s + profile.copy_s + profile.gap_s == pytest.approx(profile.wall_s)
        assert "no 'jaxcompare call' annotation" in gap_sentence(profile)
        assert "GPU" in profile.where
        assert Profile.from_dict(json.loads(json.dumps(profile.to_dict()))) == profile


def test_an_annotated_call_on_a_gpu_trace_is_summarised_per_call(traces, profiles):
    trace = json.loads(json.dumps(traces["gfx950"]))
    device = [(e["ts"], e["ts"] + e["dur"]) for e in _stream_events(trace)]
    start, end = min(s for s, _ in device), max(e for _, e in device)
    trace["traceEvents"].append({"ph": "X", "pid": 701, "tid": 1, "ts": start, "dur": end - start,
                                 "name": CALL_MARK, "args": {"call": 0}})
    per_call, whole = summarize(trace), profiles["gfx950"]
    assert per_call.calls == 1 and not per_call.whole_window
    assert per_call.wall_s == pytest.approx((end - start) * 1e-6)
    assert per_call.device_busy_s == pytest.approx(whole.device_busy_s)  # every kernel ran inside the call
    assert [op.name for op in per_call.ops] == [op.name for op in whole.ops]
    assert per_call.gap_share < whole.gap_share


# --- the command -----------------------------------------------------------------------------------
def test_trace_json_on_the_mi300x_file_is_the_summary(profiles, exported, capsys):
    assert main(["trace", str(MI300X), "--json", "-"]) == 0
    doc = json.loads(capsys.readouterr().out)  # one document, nothing else on stdout
    assert doc == json.loads(json.dumps(profiles["mi300x"].to_dict()))
    assert [d["name"] for d in doc["devices"]] == [f"/device:GPU:{k}" for k in range(8)]
    assert doc["whole_window"] is True and doc["copies"] == profiles["mi300x"].copies
    # From the shell, on the .trace.json.gz jaxlib writes beside it: the same summary.
    proc = cli("trace", str(exported["mi300x"]), "--json", "-")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) | {"trace_file": None} == doc | {"trace_file": None}


def test_trace_prints_the_top_ops_each_device_and_the_copies(profiles, capsys):
    assert main(["trace", str(MI300X), "--top", "3"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert "no 'jaxcompare call' annotation" in out and "8 devices" in out
    for op in profiles["mi300x"].ops[:3]:
        assert any(line.strip().startswith(op.name) for line in lines), op.name
    assert profiles["mi300x"].ops[3].name not in out
    assert "(all other ops)" in out
    for k in range(8):
        assert any(line.strip().startswith(f"/device:GPU:{k}") for line in lines)
    gpu0 = next(line for line in lines if line.strip().startswith("/device:GPU:0"))
    assert gpu0.split()[-1] == str(profiles["mi300x"].devices[0].copies)


def test_trace_reads_a_users_own_jax_profiler_capture(tmp_path, capsys):
    import jax
    import jax.numpy as jnp

    f = jax.jit(lambda a: jnp.tanh(a @ a))
    x = jax.device_put(np.ones((32, 32), np.float32))
    f(x).block_until_ready()
    with jax.profiler.trace(str(tmp_path)):
        for _ in range(3):
            f(x).block_until_ready()
    (json_gz,) = glob.glob(str(tmp_path / "plugins" / "profile" / "*" / "*.trace.json.gz"))
    (xplane,) = glob.glob(str(tmp_path / "plugins" / "profile" / "*" / "*.xplane.pb"))
    assert main(["trace", json_gz, "--json", str(tmp_path / "summary.json")]) == 0
    assert "XLA:CPU" in capsys.readouterr().out
    doc = json.loads((tmp_path / "summary.json").read_text())
    ops = {e["args"]["hlo_op"] for e in read_trace(json_gz)["traceEvents"]
           if e.get("ph") == "X" and "hlo_op" in e.get("args", {})}
    assert doc["ops"] and {op["name"] for op in doc["ops"]} <= ops
    assert doc["whole_window"] and 0 < doc["device_busy_s"] < doc["wall_s"]
    assert doc["devices"] == [{"name": "/host:CPU", "busy_s": doc["device_busy_s"], "copy_s": 0.0, "copies": 0}]
    # Its .xplane.pb, converted here, holds the same trace.
    assert summarize_file(xplane).to_dict() | {"trace_file": None} == doc | {"trace_file": None}


def _bad_files(tmp_path: Path) -> dict[str, Path]:
    files = {"missing": tmp_path / "nope.trace.json.gz", "folder": tmp_path}
    for name, content in {"text.json": b"hello", "object.json": b'{"a": 1}', "empty.json": b'{"traceEvents": []}',
                          "broken.trace.json.gz": gzip.compress(b'{"traceEvents": [')[:-4],
                          "garbage.xplane.pb": b"not an XSpace \xff\xfe", "empty.xplane.pb": b""}.items():
        (tmp_path / name).write_bytes(content)
        files[name] = tmp_path / name
    return files


def test_a_bad_or_missing_file_is_one_line_and_exit_2(tmp_path, capsys):
    for name, path in _bad_files(tmp_path).items():
        assert main(["trace", str(path)]) == 2, name
        captured = capsys.readouterr()
        assert captured.out == "", name
        assert captured.err.startswith("jaxcompare: error: ") and captured.err.count("\n") == 1, (name, captured.err)
        assert str(path) in captured.err, (name, captured.err)
    assert main(["trace", str(MI300X), "--top", "0"]) == 2
    assert "--top" in capsys.readouterr().err


def test_a_missing_file_from_the_shell_is_one_line_and_no_traceback(tmp_path):
    proc = cli("trace", str(tmp_path / "nope.xplane.pb"))
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr and "nope.xplane.pb" in proc.stderr


def test_an_older_jaxlib_converts_the_same_way(traces):
    """jax 0.4.35 keeps the exporter in xla_client.profiler: the same summary comes out. Runs
    where that release's environment exists (tests/test_versions.py installs it)."""
    python = Path("~/.cache/jaxcompare/envs-test/jax-0.4.35-py3.11-cpu/bin/python").expanduser()
    if not python.is_file():
        pytest.skip("no jax 0.4.35 environment on this machine")
    code = ("import json, sys; from jaxcompare.engine.worker.profile import summarize_file; "
            "print(json.dumps(summarize_file(sys.argv[1]).to_dict()))")
    proc = subprocess.run([str(python), "-c", code, str(MI300X)], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1]), "JAX_PLATFORMS": "cpu"})
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.splitlines()[-1]) == json.loads(json.dumps(summarize_file(MI300X).to_dict()))
