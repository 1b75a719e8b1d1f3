"""Worker processes per precision, the device queue, deadlines and worker faults."""

from __future__ import annotations

import os
import textwrap
import threading
from pathlib import Path

import pytest
from support import quick_spec

from jaxcompare import BadInput, DeviceUnavailable, JobFailed, Runner
from jaxcompare.engine.server.runner import Job

pytestmark = pytest.mark.slow  # 20 s or more: collected first, so parallel workers end together


def test_precisions_never_leak_between_runs(runner):
    # Each hand-over both ways, twice (x32 -> x64 and x64 -> x32), on one Runner's workers.
    for precision in ("x32", "x64", "x32", "x64", "x32"):
        result = runner.run(quick_spec(precision=precision))
        want = "float64" if precision == "x64" else "float32"
        assert result.jax.agreement["numpy_dtype"] == want, (precision, result.jax.agreement)
        assert result.jax.agreement["jax_dtype"] == want, (precision, result.jax.agreement)
        assert result.env["jax"]["x64_enabled"] is (precision == "x64")
        assert (result.env["runner"], result.env["node"]) == ("local", None)  # not a Ray node's


def test_a_finished_job_is_handed_to_each_listener_once_and_a_failing_one_harms_nothing(runner):
    seen: list[tuple[str, str]] = []

    def failing(job: Job) -> None:
        raise RuntimeError("a listener's own bug")

    runner.on_finished.extend([failing, lambda job: seen.append((job.id, job.status))])
    try:
        job = runner.submit(quick_spec())
        assert job.wait(240).case == "matmul"
        assert runner.wait_idle(timeout=60)  # the lane is freed after its listeners ran
        assert seen == [(job.id, "done")]
    finally:
        del runner.on_finished[-2:]


def test_missing_device_names_the_present_ones(runner):
    with pytest.raises(DeviceUnavailable, match=r"no (GPU|TPU).*present: .*cpu"):
        runner.run(quick_spec(device="gpu" if "gpu" not in _platforms(runner) else "tpu"))


def _platforms(runner: Runner) -> set[str]:
    return {d["platform"] for d in runner.environment("x32")["jax"]["devices"]}


def test_bad_shape_for_case_is_a_clear_error(runner):
    with pytest.raises(BadInput, match="square"):
        runner.run(quick_spec(shape=(10, 20)))


def test_custom_cases_file(runner, tmp_path):
    path = tmp_path / "my_cases.py"
    path.write_text(textwrap.dedent("""
        import numpy as np
        import jax.numpy as jnp
        from jaxcompare import Case

        def make(shape, dtype, rng):
            return (rng.standard_normal(shape).astype(dtype),)

        CASES = [Case(name="softplus", numpy_fn=lambda x: np.logaddexp(0, x),
                      jax_fn=lambda x: jnp.logaddexp(0, x), make_inputs=make,
                      small_shape=(10,), large_shape=(100000,))]
    """))
    result = runner.run(quick_spec(case="softplus", shape=(1000,), cases_file=str(path)))
    assert result.jax.agreement["ok"]
    assert result.case_info["source"] == str(path)


def test_broken_custom_case_is_reported_not_crashed(runner, tmp_path):
    path = tmp_path / "broken.py"
    path.write_text(textwrap.dedent("""
        import numpy as np
        from jaxcompare import Case
        def boom(x):
            raise ValueError("this port is broken")
        CASES = [Case(name="broken", numpy_fn=np.sin, jax_fn=boom,
                      make_inputs=lambda s, d, r: (r.random(s).astype(d),))]
    """))
    with pytest.raises(BadInput, match="this port is broken"):
        runner.run(quick_spec(case="broken", shape=(10,), cases_file=str(path)))
    assert runner.run(quick_spec()).jax.agreement["ok"]


@pytest.fixture
def faulty_cases(tmp_path) -> str:
    """A cases file whose NumPy functions fail the way a worker can: by dying or hanging.
    numpy_fn first runs in the worker (the parent's preflight only calls make_inputs)."""
    path = tmp_path / "faulty_cases.py"
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    path.write_text(textwrap.dedent(f"""
        import os
        import time

        import jax.numpy as jnp
        import numpy as np
        from jaxcompare import Case

        def die(x):
            os._exit(13)

        def hang(x):
            while True:
                time.sleep(0.05)

        opened = []

        def gated(x):  # the first call waits until the test opens the gate (a FIFO) for writing
            if not opened:
                with open({str(gate)!r}) as fifo:
                    fifo.read()
                opened.append(True)
            return np.sin(x)

        def make(shape, dtype, rng):
            return (rng.random(shape).astype(dtype),)

        CASES = [Case(name="dies", numpy_fn=die, jax_fn=np.sin, make_inputs=make),
                 Case(name="hangs", numpy_fn=hang, jax_fn=np.sin, make_inputs=make),
                 Case(name="gated", numpy_fn=gated, jax_fn=jnp.sin, make_inputs=make)]
    """))
    return str(path)


def _open_gate(faulty_cases: str) -> None:
    """Let the gated job go on (blocks until its worker waits at the gate)."""
    with open(Path(faulty_cases).with_name("gate"), "w") as fifo:
        fifo.write("go")


def _fault(runner: Runner, faulty_cases: str, how: str, timeout_s: float) -> Job:
    return runner.submit(quick_spec(case=how, shape=(4,), cases_file=faulty_cases), timeout_s=timeout_s)


def test_worker_killed_mid_job_is_restarted(runner, faulty_cases):
    first = runner.submit(quick_spec())
    first.wait(120)
    crash = _fault(runner, faulty_cases, "dies", timeout_s=30)
    with pytest.raises(JobFailed, match=r"died \(exit code 13"):
        crash.wait(120)
    after = runner.submit(quick_spec())
    assert after.wait(120).jax.agreement["ok"]
    assert after.worker_pid != first.worker_pid and after.status == "done"


def test_job_past_its_deadline_is_stopped_and_next_runs(runner, faulty_cases):
    # The job never ends by itself, so a short deadline is as sure to stop it as a long one.
    hung = _fault(runner, faulty_cases, "hangs", timeout_s=1)
    nxt = runner.submit(quick_spec())
    with pytest.raises(JobFailed, match="stopped after its 1 s deadline"):
        hung.wait(120)
    assert nxt.wait(120).jax.agreement["ok"]


def test_a_lane_learns_its_device_from_a_worker_whose_step_failed(faulty_cases):
    # A lane hands a one-holder device (a TPU chip) from worker to worker only once it knows the device:
    # learnt from a successful step alone, a TPU atlas whose first cells passed their deadline started its
    # x64 worker beside the x32 one, and every later cell failed with "the TPU is in use".
    with Runner() as fresh:
        with pytest.raises(JobFailed, match="stopped after its 1 s deadline"):
            _fault(fresh, faulty_cases, "hangs", timeout_s=1).wait(120)
        lane = fresh._q.lanes[0]
        assert lane.platform is not None and lane.platform.name == "cpu", lane.platform


def test_concurrent_submitters_never_overlap(runner):
    jobs = []
    lock = threading.Lock()

    def submit(precision: str) -> None:
        job = runner.submit(quick_spec(precision=precision, shape=(24, 24)))
        with lock:
            jobs.append(job)

    threads = [threading.Thread(target=submit, args=(p,)) for p in ("x32", "x64") * 3]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for job in jobs:
        job.wait(240)
    windows = sorted(job.window for job in jobs)
    assert len(windows) == 6
    for (_, end), (start, _) in zip(windows, windows[1:], strict=False):
        assert end <= start, windows


def test_cancel_a_queued_job(runner, faulty_cases):
    blocker = _fault(runner, faulty_cases, "gated", timeout_s=240)  # cannot finish before the gate opens
    queued = runner.submit(quick_spec())
    assert runner.position(queued) >= 1
    queued.cancel()
    _open_gate(faulty_cases)
    blocker.wait(240)
    with pytest.raises(JobFailed, match="cancelled"):
        queued.wait(240)
    assert queued.status == "cancelled"


def test_workers_never_rerun_the_parents_main_script(tmp_path):
    # Streamlit runs each page as __main__; a spawned worker must not execute it again.
    script = tmp_path / "page.py"
    script.write_text(textwrap.dedent("""
        from jaxcompare import Runner, Spec, TimingConfig
        print("page ran", flush=True)
        runner = Runner()
        print(runner.run(Spec("matmul", (8, 8), timing=TimingConfig.quick())).dtype, flush=True)
        runner.close()
    """))
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["page", "ran", "float32"]


def test_queue_position_and_wait_estimate(runner, faulty_cases):
    done = runner.submit(quick_spec())
    done.wait(240)
    blocker = _fault(runner, faulty_cases, "gated", timeout_s=240)  # cannot finish before the gate opens
    first = runner.submit(quick_spec())
    second = runner.submit(quick_spec())
    assert runner.position(second) > runner.position(first) >= 1
    assert runner.estimate_wait_s(second) > runner.estimate_wait_s(first)
    _open_gate(faulty_cases)
    for job in (blocker, first, second):
        job.wait(240)
    assert runner.position(second) == -1


def test_close_while_a_job_runs_cancels_it_and_returns(faulty_cases):
    runner = Runner(timeout_s=120)
    hung = _fault(runner, faulty_cases, "hangs", timeout_s=120)
    queued = runner.submit(quick_spec())
    while hung.status != "running" and not hung.done:
        hung._done.wait(0.05)  # wait for the dispatcher to pick it up (an event, not a sleep)
    runner.close()
    assert hung.done and hung.status == "cancelled"
    assert queued.done and queued.status == "cancelled"
    with pytest.raises(JobFailed, match="shut down"):
        runner.submit(quick_spec())
