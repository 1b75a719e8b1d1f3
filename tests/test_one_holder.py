"""One device, one process: a lane whose device one process at a time may hold (a TPU chip; here the
CPU, made single-holder by settings) hands it from worker to worker and to pitfall 7's fresh
processes. tests/one_holder/sitecustomize.py makes each of those processes take the device the way
libtpu takes a chip (an exclusive lock held for its life; a second one fails at once), so an
overlap is a failed job, and its log lists the processes that held it, one after another."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from support import quick_spec

from jaxcompare import JobFailed, Runner
from jaxcompare.engine.server.settings import Settings

pytestmark = pytest.mark.slow

HOLDER = str(Path(__file__).with_name("one_holder"))


def holders(lock: Path) -> list[tuple[int, str, str]]:
    lines = (lock.with_name(lock.name + ".log")).read_text().split("\n")
    return [(int(pid), what, state) for pid, what, state in (line.split() for line in lines if line)]


def test_x32_x64_x32_and_the_restart_pitfall_never_share_the_device(tmp_path, capfd):
    lock = tmp_path / "device.lock"
    env = {"PYTHONPATH": HOLDER, "JAXCOMPARE_TEST_DEVICE_LOCK": str(lock)}
    with Runner(worker_env=env, settings=Settings(device_holders=1)) as runner:
        x32 = runner.submit_environment("x32")
        opened = x32.wait(300)["backend_start"]
        x64 = runner.submit_environment("x64")
        assert x64.wait(300)["jax"]["x64_enabled"] is True
        job = runner.submit_pitfalls(quick_spec(shape=(16, 16), precision="x32"), ("cache",))
        report = job.wait(600)
    # Each hand-over is told to the user (the CLI prints these, the page shows them as the phase).
    assert any(n.startswith("handing the CPU to the x64 worker") for n in x64.notices), x64.notices
    assert any("fresh processes take the CPU in turn" in n for n in job.notices), job.notices
    # The warning JAX's import gives (libtpu's hugepages) is kept in the record, not printed by any worker.
    assert any("Transparent hugepages" in w for w in opened["warnings"]), opened
    assert "Transparent hugepages" not in capfd.readouterr().err
    log = holders(lock)
    assert all(state == "holds" for _, _, state in log), log  # nobody found the device taken
    workers = [pid for pid, what, _ in log if what == "worker"]
    # x32, then x64 (the x32 worker stopped), then x32 again after pitfall 7's processes let go.
    assert len(workers) == 3 and workers[0] == x32.worker_pid and workers[1] == x64.worker_pid, log
    assert workers[2] == job.worker_pid, log
    fresh = [pid for pid, what, _ in log if what == "restart"]
    cache = next(p for p in report["pitfalls"] if p["id"] == "cache")
    assert len(fresh) == 1 + 2 * cache["naive"]["processes"] >= 9, (log, cache)
    # The runner metered them where they ran, and the worker's report carries that reading.
    assert report["load"]["phases"]["cache"]["wall_s"] > 0 and cache["load"]["phases"] == ["baseline", "cache"]
    # They ran between the x64 worker and the x32 worker's return.
    order = [pid for pid, _, _ in log]
    assert order.index(workers[1]) < order.index(fresh[0]) and order.index(fresh[-1]) < order.index(workers[2])


def test_a_measurement_s_first_call_takes_the_device_in_a_fresh_process(tmp_path):
    """The first call as %time pays it is a fresh process's, and that process needs the device: the
    worker lets go of it while the process runs, comes back for the rest, and the result says where
    the first call was timed, with the worker's recompile beside it."""
    lock = tmp_path / "device.lock"
    env = {"PYTHONPATH": HOLDER, "JAXCOMPARE_TEST_DEVICE_LOCK": str(lock)}
    spec = quick_spec(shape=(16, 16))
    spec = dataclasses.replace(spec, timing=dataclasses.replace(spec.timing, first_call_processes=1))
    with Runner(worker_env=env, settings=Settings(device_holders=1)) as runner:
        runner.environment("x32")
        job = runner.submit(spec)
        result = job.wait(300)
    assert any(n.startswith("the first call: a fresh process takes the CPU") for n in job.notices), job.notices
    log = holders(lock)
    assert all(state == "holds" for _, _, state in log), log
    assert [what for _, what, _ in log] == ["worker", "restart", "worker"], log
    assert log[2][0] == job.worker_pid
    assert result.jax.protocol["first_call"] == {"process": "fresh", "processes": 1, "cache_hits": 0,
                                                 "compiled_before": 0}
    assert result.jax.first_call_recompile is not None


def test_a_second_holder_is_refused_in_one_line_without_the_setting(tmp_path):
    # The same device lock with two holders allowed: the x64 worker cannot open it beside the x32 one,
    # and says so in one line (the bug the setting, and a TPU's entry in model/platforms.py, prevent).
    lock = tmp_path / "device.lock"
    env = {"PYTHONPATH": HOLDER, "JAXCOMPARE_TEST_DEVICE_LOCK": str(lock)}
    with Runner(worker_env=env, settings=Settings()) as runner:
        runner.environment("x32")
        with pytest.raises(JobFailed) as failed:
            runner.environment("x64")
    message = str(failed.value)
    assert "x64 worker could not start" in message and "one process at a time can hold a TPU chip" in message
    assert "\n" not in message


def test_an_atlas_whose_device_another_program_holds_stops_at_its_first_cell(tmp_path, monkeypatch, capsys):
    # Every cell would fail alike while another program holds the device: one line and a stop, not one
    # failure a cell (the TPU atlas printed 48 such lines when its own x32 worker held the chip).
    import fcntl
    import os

    from jaxcompare.cli import main

    lock = tmp_path / "device.lock"
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [HOLDER, os.environ.get("PYTHONPATH")])))
    monkeypatch.setenv("JAXCOMPARE_TEST_DEVICE_LOCK", str(lock))
    with open(lock, "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)  # this test is the other program
        code = main(["atlas", "--cases", "matmul", "centered_gram", "--sizes", "small", "--precisions", "x32",
                     "--devices", "cpu", "--out", str(tmp_path / "atlas.json"), "--no-save"])
    err = capsys.readouterr().err
    assert code == 1, err
    assert err.count("failed: the x32 worker could not start: the TPU is in use by another program") == 1, err
    assert "the atlas stops here: run the same command once the device is free" in err
    assert "[2/2]" not in err and "[1/2] matmul 10x10 x32 cpu: failed:" in err  # named as a measured cell is
