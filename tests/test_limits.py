"""Memory estimates and operator limits: impossible requests are refused before allocation."""

from __future__ import annotations

import math

import pytest
from support import QUICK

from jaxcompare import BadInput, Runner, Spec, TooLarge
from jaxcompare.catalog import get_case
from jaxcompare.engine.common.footprint import input_shapes
from jaxcompare.engine.server.settings import RateLimiter, Settings
from jaxcompare.engine.worker.memory import estimate


@pytest.mark.parametrize("case, shape, expected", [
    ("matmul", (300, 300), ((300, 300), (300, 300))),
    ("einsum", (8, 64, 64), ((8, 64, 64), (8, 64, 64))),
    ("cdist", (500, 7), ((500, 7), (500, 7))),
    ("solve_triangular", (50, 30), ((50, 50), (50, 30))),
])
def test_input_shapes_are_found_without_building_them(case, shape, expected):
    shapes, method = input_shapes(get_case(case), shape, "float32")
    assert shapes == expected and method == "probe"


def test_estimate_counts_inputs_outputs_and_the_float64_reference():
    import jax  # noqa: F401  (eval_shape for the outputs; no allocation)

    est = estimate(get_case("matmul"), (1000, 1000), "float32", backend="gpu")
    assert est.input_bytes == 2 * 1000 * 1000 * 4
    assert est.output_bytes == 1000 * 1000 * 4
    assert est.host_bytes == est.input_bytes + est.output_bytes + 2 * (est.input_bytes + est.output_bytes)
    assert est.device_bytes == 2 * (est.input_bytes + est.output_bytes)


def test_oversized_requests_are_refused_at_submit():
    with Runner() as runner:
        with pytest.raises(TooLarge, match=r"GiB of host memory; the limit here is"):
            runner.submit(Spec("matmul", (40000, 40000), precision="x64", timing=QUICK))
        with pytest.raises(BadInput, match="elements"):
            runner.submit(Spec("matmul", (200000, 200000), timing=QUICK))
        assert runner.queue_length() == 0


def test_a_160_gb_output_is_refused_by_the_worker_before_allocating(runner):
    # cdist of 200,000 points: 1.2 MB of inputs, but a 200,000^2 float32 output (160 GB).
    first = runner.submit(Spec("matmul", (16, 16), timing=QUICK))
    first.wait(240)
    job = runner.submit(Spec("cdist", (200_000, 3), timing=QUICK))
    with pytest.raises(TooLarge, match=r"cdist at 200000x3 needs about \d+ GiB of host memory"):
        job.wait(240)
    after = runner.submit(Spec("matmul", (16, 16), timing=QUICK))
    after.wait(240)
    assert after.worker_pid == first.worker_pid  # the worker was never killed for memory


def test_settings_defaults_and_hosted_mode():
    local = Settings.from_env({})
    assert local.mode == "local" and local.max_elements is None and local.max_queue is None
    assert local.allow_cases_file is None  # the CLI may load them; an app server decides by its address
    hosted = Settings.from_env({"JAXCOMPARE_MODE": "hosted"})
    assert hosted.allow_cases_file is False and hosted.max_elements and hosted.max_jobs_per_minute
    assert hosted.max_queue == 20 and hosted.devices == ()
    tuned = Settings.from_env({"JAXCOMPARE_MODE": "hosted", "JAXCOMPARE_MAX_ELEMENTS": "1000",
                               "JAXCOMPARE_MAX_QUEUE": "3", "JAXCOMPARE_DEVICES": "gpu:0, gpu:1",
                               "JAXCOMPARE_TRUSTED_PROXY_HEADER": "X-Forwarded-For"})
    assert (tuned.max_elements, tuned.max_queue, tuned.devices) == (1000, 3, ("gpu:0", "gpu:1"))
    assert tuned.trusted_proxy_header == "X-Forwarded-For"
    assert hosted.jax_versions == ()  # a hosted server offers no JAX versions until its operator lists them
    offered = Settings.from_env({"JAXCOMPARE_MODE": "hosted", "JAXCOMPARE_JAX_VERSIONS": " 0.4.38, 0.10.2 0.4.38"})
    assert offered.jax_versions == ("0.4.38", "0.10.2")
    # Set but empty is unset: the hosted limits hold (an empty JAXCOMPARE_MAX_ELEMENTS= had lifted them)
    empty = Settings.from_env({"JAXCOMPARE_MODE": "hosted", **dict.fromkeys(
        ("JAXCOMPARE_MAX_ELEMENTS", "JAXCOMPARE_MAX_JOBS_PER_MINUTE", "JAXCOMPARE_MAX_QUEUE",
         "JAXCOMPARE_MAX_JOBS_PER_CLIENT"), " ")})
    assert empty == hosted
    assert Settings.from_env({"JAXCOMPARE_MODE": "hosted", "JAXCOMPARE_MAX_ELEMENTS": "none"}).max_elements is None


@pytest.mark.parametrize("address, allowed", [
    ("127.0.0.1", True), ("localhost", True), ("::1", True), ("[::1]", True), ("127.0.0.2", True),
    (None, False), ("", False), ("0.0.0.0", False), ("::", False), ("192.0.2.2", False),
    ("example.internal", False), ("unix:///run/jaxcompare.sock", False),
])
def test_a_local_app_loads_case_files_only_on_loopback(address, allowed):
    # Unset is Streamlit's default: it then listens on every interface.
    local = Settings.from_env({}).for_server(address)
    assert local.allow_cases_file is allowed
    assert not Settings.from_env({}).cases_file_exposed(address)
    assert Settings.from_env({"JAXCOMPARE_MODE": "hosted"}).for_server(address).allow_cases_file is False


def test_case_files_forced_on_are_allowed_and_flagged_where_others_can_reach():
    forced = Settings.from_env({"JAXCOMPARE_ALLOW_CASES_FILE": "true"})
    assert forced.for_server("0.0.0.0").allow_cases_file is True
    assert forced.cases_file_exposed("0.0.0.0") and not forced.cases_file_exposed("127.0.0.1")
    hosted = Settings.from_env({"JAXCOMPARE_MODE": "hosted", "JAXCOMPARE_ALLOW_CASES_FILE": "1"})
    assert hosted.for_server("127.0.0.1").allow_cases_file and hosted.cases_file_exposed("127.0.0.1")
    off = Settings.from_env({"JAXCOMPARE_ALLOW_CASES_FILE": "false"}).for_server("127.0.0.1")
    with pytest.raises(BadInput, match="disabled"):
        off.check_spec(Spec("x", (4,), cases_file="/tmp/c.py"))


def test_settings_file(tmp_path):
    path = tmp_path / "jaxcompare.toml"
    path.write_text('[jaxcompare]\nmode = "hosted"\nmax_sweep_points = 3\njob_timeout_s = 30\n'
                    'jax_versions = ["0.4.38", "0.10.2"]\n')
    s = Settings.from_env({"JAXCOMPARE_SETTINGS": str(path)})
    assert (s.mode, s.max_sweep_points, s.job_timeout_s) == ("hosted", 3, 30.0)
    assert s.jax_versions == ("0.4.38", "0.10.2")


@pytest.mark.parametrize("env, words", [
    ({"JAXCOMPARE_MODE": "party"}, "JAXCOMPARE_MODE"),
    ({"JAXCOMPARE_MAX_ELEMENTS": "lots"}, "number"),
    ({"JAXCOMPARE_JOB_TIMEOUT_S": "-5"}, "positive"),
    ({"JAXCOMPARE_ALLOW_CASES_FILE": "maybe"}, "true or false"),
    ({"JAXCOMPARE_SETTINGS": "/no/such/file.toml"}, "cannot be read"),
    ({"JAXCOMPARE_MAX_QUEUE": "-1"}, "positive"),
    ({"JAXCOMPARE_DEVICES": "nvidia:0"}, "not a device like gpu:0"),
    ({"JAXCOMPARE_DEVICES": "gpu"}, "not a device like gpu:0"),
    ({"JAXCOMPARE_DEVICES": "cpu:0,cpu:0"}, "twice"),
    ({"JAXCOMPARE_TRUSTED_PROXY_HEADER": "X Forwarded: For"}, "header name"),
    ({"JAXCOMPARE_JAX_VERSIONS": "0.4.38, latest"}, "jax_versions: JAX 'latest' is not a version number"),
    ({"JAXCOMPARE_JAX_VERSIONS": "0.4.1"}, "older than the oldest"),
])
def test_bad_settings_are_clear(env, words):
    with pytest.raises(BadInput, match=words):
        Settings.from_env(env)


def test_hosted_limits_refuse_big_shapes_and_case_files(tmp_path):
    hosted = Settings.hosted()
    with Runner(settings=hosted) as runner:
        side = math.isqrt(hosted.max_elements) + 1
        with pytest.raises(TooLarge, match="allows at most"):
            runner.submit(Spec("matmul", (side, side), timing=QUICK))
        with pytest.raises(BadInput, match="disabled"):
            runner.submit(Spec("x", (4,), cases_file=str(tmp_path / "c.py"), timing=QUICK))
    with pytest.raises(TooLarge, match="sweep"):
        hosted.check_sweep(hosted.max_sweep_points + 1)


def test_a_hosted_run_expected_to_outlast_its_deadline_is_refused_before_it_queues():
    # A hosted visitor's svd at 3000x3000 float64 was estimated at 44-212 min, queued on a server that stops a
    # job at 3 min, and held everyone else's place until then (a walk-through). Refused now, spending no rate.
    import dataclasses

    from jaxcompare.engine.server.runner import Owner

    settings = dataclasses.replace(Settings.hosted(), job_timeout_s=30.0, max_jobs_per_minute=1)
    long_one = Spec("svd", (3000, 3000), precision="x64", timing=QUICK)
    visitor = Owner("tab-1", client="10.0.0.7")
    with Runner(settings=settings) as runner:
        assert runner.estimate(long_one).low > 30.0
        for _ in range(2):  # the second try is refused the same way, not by the one-a-minute rate
            with pytest.raises(BadInput, match=r"would take at least .*longer than the 30 s a job may take"):
                runner.submit(long_one, owner=visitor)
        assert runner.queue_length() == 0
    local = dataclasses.replace(Settings(), job_timeout_s=30.0)
    with Runner(settings=local) as runner:  # locally the page and the CLI warn, and the run is still the user's
        job = runner.submit(long_one)
        job.cancel()


def test_rate_limiter_window():
    now = [0.0]
    limiter = RateLimiter(2, clock=lambda: now[0])
    limiter.acquire("alice")
    limiter.acquire("alice")
    limiter.acquire("bob")
    with pytest.raises(BadInput, match="try again in 60 s"):
        limiter.acquire("alice")
    now[0] = 60.0
    limiter.acquire("alice")
    assert RateLimiter(None).acquire("anyone") is None


def test_runner_rate_limits_each_session_not_the_cli():
    import dataclasses

    settings = dataclasses.replace(Settings(), max_jobs_per_minute=2)
    with Runner(settings=settings) as runner:
        jobs = [runner.submit(Spec("matmul", (8, 8), timing=QUICK), owner="alice") for _ in range(2)]
        with pytest.raises(BadInput, match="rate limit"):
            runner.submit(Spec("matmul", (8, 8), timing=QUICK), owner="alice")
        jobs.append(runner.submit(Spec("matmul", (8, 8), timing=QUICK), owner="bob"))
        jobs.append(runner.submit(Spec("matmul", (8, 8), timing=QUICK)))  # the CLI: no owner
        jobs.append(runner.submit(Spec("matmul", (8, 8), timing=QUICK), owner="alice", rate_limited=False))
        for job in jobs:
            job.cancel()


@pytest.mark.parametrize("key", ["JAXCOMPARE_MAX_ELEMENTS", "JAXCOMPARE_MAX_SWEEP_POINTS",
                                 "JAXCOMPARE_MAX_JOBS_PER_MINUTE", "JAXCOMPARE_MAX_QUEUE",
                                 "JAXCOMPARE_MAX_JOBS_PER_CLIENT"])
def test_integer_settings_must_be_whole_numbers(key):
    # 0.4 used to become 0: every job refused, or (where 0 means no limit) no limit at all.
    with pytest.raises(BadInput, match=f"setting {key[11:].lower()} must be a whole number, got '0.4'"):
        Settings.from_env({key: "0.4"})
    assert getattr(Settings.from_env({key: "3"}), key[11:].lower()) == 3
    assert getattr(Settings.from_env({key: "3.0"}), key[11:].lower()) == 3


def test_hosted_mode_caps_the_jobs_one_client_has_at_once():
    import dataclasses

    from jaxcompare.engine.server.runner import Owner

    assert Settings.hosted().max_jobs_per_client == 2 and Settings().max_jobs_per_client is None
    settings = dataclasses.replace(Settings(), max_jobs_per_client=1)
    with Runner(settings=settings) as runner:
        first = runner.submit(Spec("matmul", (16, 16), timing=QUICK), owner=Owner("tab-1", client="10.0.0.7"))
        assert not first.done  # a fresh worker takes seconds to start: the job is still queued or running
        with pytest.raises(BadInput, match=r"you already have 1 measurement\(s\) queued or running.*"
                                           r"JAXCOMPARE_MAX_JOBS_PER_CLIENT=1"):
            runner.submit(Spec("matmul", (16, 16), timing=QUICK), owner=Owner("tab-2", client="10.0.0.7"))
        other = runner.submit(Spec("matmul", (16, 16), timing=QUICK), owner=Owner("tab-3", client="10.0.0.8"))
        first.wait(240)
        again = runner.submit(Spec("matmul", (16, 16), timing=QUICK), owner=Owner("tab-2", client="10.0.0.7"))
        other.wait(240), again.wait(240)


def test_the_wait_behind_a_running_job_comes_from_jobs_like_it():
    import time as clock

    from jaxcompare.engine import job_kind
    from jaxcompare.engine.server.jobs import Job

    def job(case: str) -> Job:
        spec = Spec(case, (16, 16), timing=QUICK)
        measure = job_kind("measure")
        return Job(measure, measure.steps(spec, None), 60, spec=spec)

    with Runner() as runner:
        slow, fast = job("centered_gram"), job("matmul")
        # Two finished jobs told how long each takes: the slow one 9 s, a fast one 0.4 s after it.
        for done, seconds in ((slow, 9.0), (fast, 0.4)):
            done.started_at = clock.time() - seconds
            runner._q.finish(done, value=None)
        lane = runner._q.lanes[0]
        running, queued = job("centered_gram"), job("matmul")
        with runner._q.cv:  # a stand-in for the dispatcher: the slow kind has just started
            running.started_at = clock.time()
            lane.current = running
            lane.queue.append(queued)
            behind_running = runner._q.wait_s(lane, before=queued)
            at_the_end = runner._q.wait_s(lane)
            lane.current = None
            lane.queue.clear()
        assert behind_running > 8.0  # was "about 1 s": the last job of any case said how long
        assert at_the_end - behind_running == pytest.approx(1.0, abs=0.05)  # the fast one: at least a second
        # No job runs past its deadline: behind one that would take 9 s on a server that stops it at 5 s,
        # the wait is the deadline's, not the 9 s (a hosted visitor's 89-min run had said "about 78 min").
        running.timeout_s = 5.0
        with runner._q.cv:
            running.started_at = clock.time()
            lane.current = running
            lane.queue.append(queued)
            capped = runner._q.wait_s(lane, before=queued)
            lane.current = None
            lane.queue.clear()
        assert 4.0 < capped <= 5.0


def test_the_memory_guard_counts_numpy_temporaries():
    import tracemalloc

    import numpy as np

    case = get_case("elementwise")
    n = 2_000_000
    est = estimate(case, (n,), "float32", backend="gpu")
    # What the worker holds on the host: the float32 inputs and output, then the float64 reference
    # computed from them, NumPy's temporaries included (NumPy reports its buffers to tracemalloc).
    tracemalloc.start()
    try:
        x = case.make_inputs((n,), np.dtype("float32"), np.random.default_rng(0))
        y = case.numpy_fn(*x)
        x64 = tuple(a.astype(np.float64) for a in x)
        y64 = case.numpy_fn(*x64)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    del y, y64
    assert est.host_bytes >= peak


def test_make_serve_checks_the_settings_before_the_server_starts():
    """A bad setting failed only at the first visitor ("This app has encountered an error", a traceback on every
    page load) while the server ran on: `make serve` now checks them first, in one line and status 2."""
    import os
    import subprocess
    import sys

    from support import ROOT

    check = [sys.executable, "-m", "jaxcompare.engine.server.settings"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAXCOMPARE_")} | {"JAXCOMPARE_MODE": "hosted"}
    bad = subprocess.run(check, env=env | {"JAXCOMPARE_MAX_ELEMENTS": "-5"}, capture_output=True, text=True, cwd=ROOT)
    assert bad.returncode == 2 and bad.stderr.strip() == (
        "jaxcompare: bad settings: environment variable JAXCOMPARE_MAX_ELEMENTS: setting max_elements must be "
        "positive, got '-5'"), bad.stderr
    good = subprocess.run(check, env=env, capture_output=True, text=True, cwd=ROOT)
    assert good.returncode == 0 and good.stderr.startswith("jaxcompare: hosted mode;"), good.stderr
    steps = subprocess.run(["make", "-n", "serve"], capture_output=True, text=True, cwd=ROOT).stdout
    assert steps.index("-m jaxcompare.engine.server.settings") < steps.index("streamlit run app.py"), steps


def test_a_misspelt_variable_is_refused_by_the_settings_check_and_every_name_the_code_reads_is_known():
    """JAXCOMPARE_MAX_ELEMENT=1000 on a hosted demo was ignored without a word: its limit did not apply. `make
    serve`'s check names it and the variable it likely meant; the list of names it knows is the code's."""
    import os
    import re
    import subprocess
    import sys

    from support import ROOT

    from jaxcompare.engine.server.settings import known_variables

    check = [sys.executable, "-m", "jaxcompare.engine.server.settings"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAXCOMPARE_")} | {"JAXCOMPARE_MODE": "hosted"}
    bad = subprocess.run(check, env=env | {"JAXCOMPARE_MAX_ELEMENT": "1000", "JAXCOMPARE_ZZZ": "1"},
                         capture_output=True, text=True, cwd=ROOT)
    assert bad.returncode == 2 and bad.stderr.strip() == (
        "jaxcompare: bad settings: JAXCOMPARE_MAX_ELEMENT is not a variable jaxcompare reads (did you mean "
        "JAXCOMPARE_MAX_ELEMENTS?); JAXCOMPARE_ZZZ is not a variable jaxcompare reads"), bad.stderr
    harness = env | {"JAXCOMPARE_TEST_CPU_PEAKS": "x", "JAXCOMPARE_DB": "x.sqlite3"}
    assert subprocess.run(check, env=harness, capture_output=True, text=True, cwd=ROOT).returncode == 0
    read = set()
    for folder in ("jaxcompare", "tests", "examples", "benchmarks"):
        for path in (ROOT / folder).rglob("*.py*"):
            if path.suffix in (".py", ".ipynb") and path.name != "test_limits.py":  # this test's misspellings
                read |= set(re.findall(r"JAXCOMPARE_[A-Z0-9_]*[A-Z0-9]", path.read_text(encoding="utf-8")))
    unknown = {name for name in read if not name.startswith("JAXCOMPARE_TEST")} - known_variables()
    assert {"JAXCOMPARE_DB", "JAXCOMPARE_MAX_ELEMENTS"} <= read and not unknown, unknown
