"""Jobs on a real Ray cluster (engine/server/cluster.py): two nodes on this machine, each declaring one
GPU (their workers measure on JAX's CPU backend). Six jobs from three threads, Stop and the
deadline, a node lost before its job began measuring (retried elsewhere) and one lost while it
measured (a clear failure, nothing else lost). One cluster for the module; tiny shapes, quick timing."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest
from browser_support import IDLE, MAIN, POLL_MS, assert_no_error, main_text, open_page, streamlit_run
from support import ROOT, cli

from jaxcompare import BadInput, JobFailed, Runner, Spec, TimingConfig
from jaxcompare.engine.server.process import Cancelled
from jaxcompare.engine.server.runner import Job
from jaxcompare.engine.server.settings import Settings

try:
    from ray.cluster_utils import Cluster
except ImportError:  # make test installs it: a missing Ray must fail, not skip
    pytest.fail("Ray is not installed: pip install -e '.[cluster]' (make test installs it)", pytrace=False)

pytestmark = pytest.mark.slow  # about two minutes: collected first, so parallel workers end together

NODE_ARGS = {"num_cpus": 1, "num_gpus": 1, "resources": {"jaxcompare_cpu": 1}}
# The control store's health checks: a killed node found dead after about 3 s, not Ray's default 15 s
# (3 s x 5 misses), which the node tests waited on; a live node still has 5 s to answer each check.
HEALTH_CHECKS = {"health_check_period_ms": 1000, "health_check_failure_threshold": 3, "health_check_timeout_ms": 5000}
# Shorter than the quick preset: these tests are about where jobs run, not their numbers.
TINY = TimingConfig(target_sample_s=0.001, min_samples=3, max_samples=6, phase_budget_s=0.03, rel_ci=0.5,
                    compile_samples=1, warmup_s=0.001, first_call_processes=0)
# Ray reports no usage from the tests' clusters (and the CLI's): nothing outside is reached.
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")


def tiny_spec(case: str = "matmul", shape: tuple[int, ...] = (8, 8), **kw) -> Spec:
    return Spec(case, shape, timing=TINY, **kw)


def _ray_processes_of(pid: int) -> list[psutil.Process]:
    """Ray's processes for the session a driver of pid ``pid`` started (its folder ends in _PID)."""
    session = re.compile(rf"session_[^/]*_{pid}(/|$)")
    return [proc for proc in psutil.process_iter(["cmdline"])
            if any(session.search(arg) for arg in proc.info["cmdline"] or ())]


def test_ray_is_imported_only_when_asked_for_and_its_absence_is_one_line():
    """Without JAXCOMPARE_RAY_ADDRESS a Runner never imports Ray; with it and no Ray installed (an
    import that fails), or with nothing listening at the address, the message is one clear line."""
    probe = textwrap.dedent("""
        import sys
        from jaxcompare import Runner
        from jaxcompare.engine.server.settings import Settings
        Runner().close()
        print("ray" in sys.modules)
        sys.modules["ray"] = None  # as if it were not installed
        try:
            Runner(settings=Settings(ray_address="local"))
        except Exception as exc:
            print(type(exc).__name__, exc)
    """)
    env = {k: v for k, v in os.environ.items() if k != "JAXCOMPARE_RAY_ADDRESS"}
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, cwd=ROOT,
                         timeout=120).stdout.splitlines()
    assert out == ["False", "BadInput JAXCOMPARE_RAY_ADDRESS is set but Ray is not installed here: "
                            "pip install 'jaxcompare[cluster]'"]
    with socket.socket() as closed:  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{closed.getsockname()[1]}"
        run = cli("run", "--case", "matmul", "--shape", "8x8", "--quick", env={"JAXCOMPARE_RAY_ADDRESS": address})
    assert run.returncode == 2
    assert run.stderr.strip().splitlines()[-1].startswith(
        f"jaxcompare: error: cannot reach the Ray cluster at {address} (JAXCOMPARE_RAY_ADDRESS)")
    assert "Traceback" not in run.stderr


def test_cli_runs_on_a_local_ray_cluster_and_stops_it():
    """Issue 28's done-when: the CLI with JAXCOMPARE_RAY_ADDRESS=local measures on Ray, and the
    cluster it started goes with it. Runs before the module's cluster exists."""
    env = {**os.environ, "JAXCOMPARE_RAY_ADDRESS": "local",
           "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "jaxcompare", "run", "--case", "matmul", "--shape", "100x100",
                             "--quick", "--json", "-"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, cwd=ROOT)
    out, err = proc.communicate(timeout=240)
    elapsed = time.monotonic() - started
    assert proc.returncode == 0, err
    document = json.loads(out)  # stdout holds the document alone: Ray's messages go elsewhere
    assert document["env"]["runner"] == "ray" and document["env"]["node"]
    assert document["spec"]["shape"] == [100, 100]
    assert _ray_processes_of(proc.pid) == []
    print(f"CLI on a local Ray cluster: {elapsed:.1f} s")


class TwoNodes:
    """The module's cluster: the head node and one more, which the node tests kill and replace."""

    def __init__(self) -> None:
        self.cluster = Cluster(initialize_head=True, head_node_args={**NODE_ARGS, "include_dashboard": False,
                                                                 "_system_config": HEALTH_CHECKS})
        try:
            self.head = self.cluster.head_node.node_id
            self.other = self.cluster.add_node(**NODE_ARGS)
            self.cluster.wait_for_nodes()
        except BaseException:  # no Ray process outlives the tests, even a half-made cluster's
            self.cluster.shutdown()
            raise

    def kill_other(self) -> str:
        node = self.other
        self.cluster.remove_node(node, allow_graceful=False)
        return node.node_id

    def replace_other(self) -> None:
        self.other = self.cluster.add_node(**NODE_ARGS)
        self.cluster.wait_for_nodes()


@pytest.fixture(scope="module")
def nodes():
    started = time.monotonic()
    two = TwoNodes()
    print(f"two-node cluster up in {time.monotonic() - started:.1f} s")
    try:
        yield two
    finally:
        two.cluster.shutdown()


@pytest.fixture(scope="module")
def ray_runner(nodes):
    started = time.monotonic()
    runner = Runner(settings=Settings(ray_address=nodes.cluster.address), timeout_s=120)
    print(f"Runner connected (ray.init) in {time.monotonic() - started:.1f} s")
    try:
        yield runner
    finally:
        runner.close()


def _until(condition: Callable[[], bool], job: Job | None = None, timeout: float = 120.0) -> None:
    """Wait until ``condition()`` holds (what the runner has been told), waking on ``job``'s end."""
    deadline = time.monotonic() + timeout
    tick = threading.Event()
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting for the cluster"
        if job is not None and job.finished_within(0.05):
            assert condition(), (job.status, job.error)
        elif job is None:
            tick.wait(0.05)


def _gated_cases(folder: Path, name: str, *, at_import: bool) -> tuple[str, Path]:
    """A cases file with one case, ``name``, held at a gate (a FIFO) until the test opens it: at
    the file's import (before the job reports any progress) or at NumPy's first call (after the
    job began measuring). Returns the file and its gate."""
    gate = folder / f"{name}.gate"
    os.mkfifo(gate)
    wait = f"open({str(gate)!r}).read()"
    path = folder / f"{name}.py"
    path.write_text(textwrap.dedent(f"""
        import numpy as np
        import jax.numpy as jnp
        from jaxcompare import Case

        {wait if at_import else ""}
        held = []

        def numpy_sin(x):
            if {not at_import} and not held:
                held.append({wait})
            return np.sin(x)

        CASES = [Case(name={name!r}, numpy_fn=numpy_sin, jax_fn=jnp.sin,
                      make_inputs=lambda shape, dtype, rng: (rng.random(shape).astype(dtype),))]
    """))
    return str(path), gate


def _open(gate: Path) -> None:
    """Let a gated job go on: blocks until its worker waits at the gate (in a thread, bounded)."""
    def release() -> None:
        with open(gate, "w") as fifo:
            fifo.write("go")

    opener = threading.Thread(target=release, daemon=True)
    opener.start()
    opener.join(120)
    assert not opener.is_alive(), f"no worker came to the gate {gate.name}"


def _gated_spec(path: str, name: str) -> Spec:
    return tiny_spec(case=name, shape=(8,), cases_file=path)


def test_six_jobs_from_three_threads_one_measurement_per_node_at_a_time(nodes, ray_runner):
    assert ray_runner.cluster()["slots"] == 2
    precisions = ("x32", "x64")
    jobs: list[Job] = []
    lock = threading.Lock()

    def visitor(index: int) -> None:
        mine = [ray_runner.submit(tiny_spec(precision=precisions[(index + k) % 2]), owner=f"visitor-{index}")
                for k in range(2)]
        with lock:
            jobs.extend(mine)
        for job in mine:
            job.finished_within(240)

    threads = [threading.Thread(target=visitor, args=(i,)) for i in range(3)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(300)
    elapsed = time.monotonic() - started
    assert len(jobs) == 6
    results = [job.wait(60) for job in jobs]  # every one back, or its error raised here
    windows: dict[str, list[tuple[float, float]]] = {}
    for job, result in zip(jobs, results, strict=True):
        assert result.env["runner"] == "ray"
        assert result.env["node"] == job.node
        assert result.env["jax"]["x64_enabled"] is (job.spec.precision == "x64")
        # Ray would limit NumPy to the task's one CPU: the worker undoes it, as a local worker has none.
        assert result.env["env_vars"].get("OMP_NUM_THREADS") == os.environ.get("OMP_NUM_THREADS")
        windows.setdefault(job.node, []).append(job.window)
    assert set(windows) == {nodes.head, nodes.other.node_id}, windows
    for node, spans in windows.items():
        spans.sort()
        for (_, end), (start, _) in zip(spans, spans[1:], strict=False):
            assert end <= start, f"two measurements overlapped on node {node}: {spans}"
    print(f"six jobs on two nodes: {elapsed:.1f} s ({elapsed / 3:.1f} s a job per node)")


def test_a_cpu_slot_hides_the_gpus(nodes, ray_runner):
    """CPU-only hosts' slot resource: the job's JAX may not touch a GPU of the host."""
    with Runner(settings=Settings(ray_address=nodes.cluster.address, ray_resource="cpu")) as runner:
        assert runner.cluster()["resource"] == "jaxcompare_cpu"
        result = runner.run(tiny_spec())
    assert result.env["env_vars"]["JAX_PLATFORMS"] == "cpu"
    assert result.env["env_vars"]["CUDA_VISIBLE_DEVICES"] == ""
    assert len(ray_runner.cluster()["nodes"]) == 2  # the connection the two runners shared outlived this one
    with pytest.raises(BadInput, match="JAX versions run measures in environments prepared on this machine"):
        ray_runner.submit(tiny_spec(), jax="0.4.35")  # prepared here, not on the nodes


@pytest.mark.browser
def test_environment_page_shows_the_cluster(tmp_path, nodes, browser):
    """The app on the module's cluster: the Environment page lists both nodes, their slots, alive."""
    with streamlit_run(tmp_path, env={"JAXCOMPARE_RAY_ADDRESS": nodes.cluster.address}) as server:
        page = open_page(browser, f"{server}/Environment", height=1600)
        page.get_by_text("Jobs go to the Ray cluster at").wait_for(timeout=60_000)
        page.wait_for_function(f"""() => !document.querySelector("{MAIN}").innerText.includes(
            "Asking the x32 and x64 workers")""", polling=POLL_MS, timeout=120_000)
        page.wait_for_selector(IDLE, timeout=30_000)
        assert_no_error(page)
        page.screenshot(path=str(tmp_path / "environment_cluster.png"), full_page=True)
        text = main_text(page)
        with page.expect_download() as download:
            page.get_by_role("button", name="Environment (JSON)").click()
        cluster = json.loads(download.value.path().read_text())["cluster"]
    assert "2 slot(s)" in text and "could not report" not in text
    assert cluster["address"] == nodes.cluster.address and cluster["resource"] == "GPU"
    assert {node["id"]: (node["alive"], node["slots"]) for node in cluster["nodes"]} == {
        nodes.head: (True, 1), nodes.other.node_id: (True, 1)}


def test_node_lost_before_measuring_is_retried_elsewhere(tmp_path, nodes, ray_runner):
    gated = [_gated_cases(tmp_path, f"early{i}", at_import=True) for i in range(2)]
    jobs = [ray_runner.submit(_gated_spec(path, f"early{i}")) for i, (path, _) in enumerate(gated)]
    _until(lambda: all(job.node for job in jobs), jobs[0])
    assert {job.node for job in jobs} == {nodes.head, nodes.other.node_id}
    victim = next(i for i, job in enumerate(jobs) if job.node == nodes.other.node_id)
    survivor = 1 - victim
    lost = nodes.kill_other()
    try:
        _open(gated[survivor][1])
        assert jobs[survivor].wait(120).env["node"] == nodes.head
        _open(gated[victim][1])  # its second try, on the node that is left
        result = jobs[victim].wait(120)
    finally:
        nodes.replace_other()
    assert result.env["node"] == nodes.head != lost
    assert result.jax.agreement["ok"]


def test_node_lost_while_measuring_fails_clearly_and_loses_nothing(tmp_path, nodes, ray_runner):
    gated = [_gated_cases(tmp_path, f"late{i}", at_import=False) for i in range(2)]
    jobs = [ray_runner.submit(_gated_spec(path, f"late{i}")) for i, (path, _) in enumerate(gated)]
    _until(lambda: all(job.phase == "inputs" for job in jobs), jobs[0])  # both measuring, one per node
    queued = ray_runner.submit(tiny_spec())
    assert ray_runner.position(queued) == 1 and ray_runner.jobs_ahead(queued) == 1
    assert ray_runner.estimate_wait_s(queued) > 0
    view = {node["id"]: node for node in ray_runner.cluster()["nodes"]}
    for job in jobs:
        assert [j.id for j in view[job.node]["jobs"]] == [job.id]
    victim = next(i for i, job in enumerate(jobs) if job.node == nodes.other.node_id)
    lost = nodes.kill_other()
    with pytest.raises(JobFailed, match=r"died or left the cluster while this job was measuring.*not run again"):
        jobs[victim].wait(120)
    assert jobs[victim].status == "failed"
    _open(gated[1 - victim][1])
    assert jobs[1 - victim].wait(120).jax.agreement["ok"]
    assert queued.wait(120).env["node"] == nodes.head  # the job behind them ran on the node that is left
    # Ray's control store marks the node dead once its health checks fail: seconds, not at once.
    _until(lambda: not {node["id"]: node for node in ray_runner.cluster()["nodes"]}[lost]["alive"], timeout=60)
    assert {node["id"]: node["alive"] for node in ray_runner.cluster()["nodes"]}[nodes.head]


# Last: its cancelled tasks' slots, however slowly Ray frees them, are then no other test's wait.
def test_stop_and_deadline_kill_the_task_and_free_its_slot(tmp_path, ray_runner):
    path, _ = _gated_cases(tmp_path, "held", at_import=False)  # never opened: both wait there until stopped
    stopped = ray_runner.submit(_gated_spec(path, "held"))
    expired = ray_runner.submit(_gated_spec(path, "held"), timeout_s=2)  # waits at the gate past its deadline
    _until(lambda: stopped.phase == "inputs", stopped)
    stopped.cancel()
    with pytest.raises(Cancelled, match="cancelled while running"):
        stopped.wait(60)
    with pytest.raises(JobFailed, match="2 s deadline"):
        expired.wait(120)
    # Every slot free again, by Ray's own count: a slot still held after a cancel starves later jobs.
    import ray

    _until(lambda: ray.available_resources().get("GPU", 0) == ray.cluster_resources().get("GPU", -1), timeout=60)
