"""`jaxcompare versions` with real environments and real JAX: the host's version and the oldest
this package supports, a version that does not exist, the JSON record, the versions read in
the worker, environments reused rather than made again, the results saved and History's JAX
filter; `--prepare`; every round a job on the Runner's queue (a hosted one's list, rate limit and
Stop).

The environments live in $JAXCOMPARE_ENVS_DIR when set (CI points it at a cached folder), else
in a stable folder under ~/.cache, so only the first run on a machine pays for making one.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import threading
from pathlib import Path

import numpy as np
import psutil
import pytest
from support import cli

from jaxcompare import BadInput, Spec, TimingConfig
from jaxcompare.engine.server import envs
from jaxcompare.engine.server.runner import Cancelled, Owner, Runner
from jaxcompare.engine.server.settings import Settings
from jaxcompare.engine.server.versions import StopSignal, measure_versions, round_orders
from jaxcompare.history.store import Store

pytestmark = pytest.mark.slow  # the first run on a machine installs a JAX release (seconds to a minute)

OLDEST = envs.jax_floor() or "0.4.35"  # the oldest release this package measures (pyproject)
HOST = envs.host_jax_version()
BOGUS = "9.9.9"
OFF_LIST = "0.4.36"  # a real release no test lists for a hosted server
TINY = Spec("centered_gram", (32, 32), timing=TimingConfig.quick())
ENVS_DIR = os.environ.get(envs.ENVS_DIR_ENV) or str(Path("~/.cache/jaxcompare/envs-test").expanduser())


@pytest.fixture(scope="module", autouse=True)
def envs_dir():
    old = os.environ.get(envs.ENVS_DIR_ENV)
    os.environ[envs.ENVS_DIR_ENV] = ENVS_DIR
    yield Path(ENVS_DIR)
    if old is None:
        os.environ.pop(envs.ENVS_DIR_ENV, None)
    else:
        os.environ[envs.ENVS_DIR_ENV] = old


@pytest.fixture(scope="module")
def saved_db(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("versions-history") / "results.sqlite3"


@pytest.fixture(scope="module")
def versions_run(envs_dir, saved_db):
    assert HOST is not None and HOST != OLDEST
    return cli("versions", "--case", "centered_gram", "--shape", "64x64", "--quick",
               "--jax", HOST, OLDEST, BOGUS, "--json", "-", "--save", "--db", str(saved_db),
               env={envs.ENVS_DIR_ENV: str(envs_dir)}, timeout=900)


def hosted_runner(**limits) -> Runner:
    """A hosted-mode Runner whose operator offers the oldest release and the host's."""
    return Runner(settings=dataclasses.replace(Settings.hosted(), jax_versions=(OLDEST, HOST), **limits))


def test_a_missing_version_is_one_line_and_the_others_run(versions_run):
    assert versions_run.returncode == 2, versions_run.stderr
    errors = [line for line in versions_run.stderr.splitlines() if line.startswith("jaxcompare: error:")]
    assert len(errors) == 1 and BOGUS in errors[0], versions_run.stderr
    assert "Traceback" not in versions_run.stderr
    doc = json.loads(versions_run.stdout)  # one JSON document on stdout, nothing else
    assert "NumPy (one for every version" in versions_run.stderr  # the readable figures, on stderr
    assert [u["requested"] for u in doc["unavailable"]] == [BOGUS]
    assert [v["requested"] for v in doc["versions"]] == [HOST, OLDEST]
    # The last progress line does not say "every round measured" where a version was not
    assert "done: a version could not be measured (said below)" in versions_run.stderr, versions_run.stderr
    assert "every round measured" not in versions_run.stderr


def test_each_result_ran_the_version_asked_for(versions_run):
    doc = json.loads(versions_run.stdout)
    for entry in doc["versions"]:
        result = entry["result"]
        # Read in the worker: the module it imported, and its installed metadata.
        assert entry["jax"] == result["env"]["jax"]["version"] == result["env"]["versions"]["jax"] == entry["requested"]
        assert entry["jaxlib"] == result["env"]["jax"]["jaxlib_version"]
        assert result["case"] == "centered_gram" and result["shape"] == [64, 64]
        assert entry["rounds"] == doc["rounds"] == 2
        assert result["jax"]["runtime"]["n"] >= 2 * 3  # both rounds pooled (quick: at least 3 samples each)
        assert len(result["jax"]["runtime"]["block_medians_s"]) == 2
    host, oldest = doc["versions"]
    assert host["environment"] is None  # the host's own interpreter runs the host's version
    assert Path(oldest["environment"]).parent == Path(ENVS_DIR)
    # The one NumPy: every version's speedup is against the same pooled NumPy runtime.
    assert host["result"]["numpy"]["runtime"] == oldest["result"]["numpy"]["runtime"]


def test_adjacent_versions_are_compared(versions_run):
    doc = json.loads(versions_run.stdout)
    (comparison,) = doc["comparisons"]
    assert comparison["from"] == OLDEST and comparison["to"] == HOST
    runtimes = {v["requested"]: v["result"]["jax"]["runtime"]["median_s"] for v in doc["versions"]}
    assert comparison["ratio"] == pytest.approx(runtimes[HOST] / runtimes[OLDEST])
    assert isinstance(comparison["significant"], bool)
    assert comparison["direction"] in ("faster", "slower", "same", "too few")
    assert comparison["text"].startswith(f"on centered_gram 64x64 x32, JAX {HOST} ")


def test_environments_are_reused(versions_run):
    made = envs.ensure_env(OLDEST)
    assert not made.made and made.installed["jax"] == OLDEST
    assert made.installed["numpy"] == envs._host_versions()["numpy"]  # the NumPy side stays the host's


def test_a_worker_from_another_interpreter_reports_its_own_jax(versions_run):
    env = envs.ensure_env(OLDEST)
    with Runner(python=env.python, python_path=env.python_path) as runner:
        info = runner.environment("x64")
    assert info["jax"]["version"] == OLDEST and info["versions"]["jax"] == OLDEST
    assert info["jax"]["x64_enabled"] is True
    assert info["python_executable"] == env.python


def test_a_half_made_environment_is_made_again(tmp_path, monkeypatch):
    """No marker: made again (with uv's cache warm from the module's run, in seconds)."""
    monkeypatch.setenv(envs.ENVS_DIR_ENV, str(tmp_path))
    half = tmp_path / envs.env_key(OLDEST)
    (half / "bin").mkdir(parents=True)
    (half / "bin" / "python").write_text("not an interpreter")
    env = envs.ensure_env(OLDEST)
    assert env.made and env.installed["jax"] == OLDEST
    assert (half / envs.MARKER).exists()
    print(f"warm-cache environment for JAX {OLDEST}: {env.made_s:.1f} s")


def test_versions_that_cannot_be_asked_for():
    with pytest.raises(envs.VersionUnavailable, match="older than the oldest"):
        envs.check_version("0.4.1")
    with pytest.raises(envs.VersionUnavailable, match="not a version number"):
        envs.check_version("0.4.35; rm -rf /")


def test_rounds_alternate():
    assert round_orders(3, 4) == [[0, 1, 2], [2, 1, 0], [0, 1, 2], [2, 1, 0]]


def test_the_notebook_function_under_two_versions(versions_run):
    """A notebook's own functions, cloudpickled to each version's worker."""
    import jax.numpy as jnp
    import numpy as np

    import jaxcompare

    x = np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32)
    doc = jaxcompare.versions(lambda a: np.tanh(a) * 2, lambda a: jnp.tanh(a) * 2, x, jax=[OLDEST, HOST],
                              timing="quick", quiet=True)
    assert [v["jax"] for v in doc["versions"]] == [OLDEST, HOST]
    assert all(v["result"]["jax"]["agreement"]["ok"] for v in doc["versions"])
    assert doc["comparisons"][0]["from"] == OLDEST and not doc["unavailable"]
    assert not any(v["environment_made"] for v in doc["versions"])  # a second run: every environment reused


def test_saved_results_carry_their_versions_and_history_filters_by_them(versions_run, saved_db):
    store = Store(saved_db)
    assert store.count() == 2  # one pooled result per version measured; the missing one saved nothing
    (oldest,) = store.list(jax=OLDEST)
    (host,) = store.list(jax=HOST)
    assert store.list(jax=OFF_LIST) == []
    result = store.get(oldest["id"])  # read in the worker, kept through pooling and saving
    assert result.env["jax"]["version"] == result.env["versions"]["jax"] == OLDEST
    assert result.env["jax"]["jaxlib_version"] == result.env["versions"]["jaxlib"] == OLDEST
    assert store.get(host["id"]).env["jax"]["version"] == HOST
    assert sorted(store.facets()["jax_version"]) == sorted([OLDEST, HOST])

    listed = cli("history", "--jax", OLDEST, "--db", str(saved_db), "--json", "-")
    assert listed.returncode == 0, listed.stderr
    assert [row["id"] for row in json.loads(listed.stdout)] == [oldest["id"]]
    missed = cli("history", "--jax", OFF_LIST, "--db", str(saved_db))
    assert missed.returncode == 1  # as grep: nothing matched
    assert f"--jax {OFF_LIST}" in missed.stdout and "the saved JAX versions are" in missed.stdout
    assert OLDEST in missed.stdout and "Traceback" not in missed.stderr


def test_prepare_makes_environments_and_measures_nothing(versions_run, tmp_path):
    """In a fresh folder --prepare makes the environment (uv's cache warm from the module's run);
    a second --prepare, reading JAXCOMPARE_JAX_VERSIONS, finds it made."""
    env = {envs.ENVS_DIR_ENV: str(tmp_path), "JAXCOMPARE_DB": str(tmp_path / "none.sqlite3")}
    first = cli("versions", "--prepare", OLDEST, HOST, env=env, timeout=900)
    assert first.returncode == 0, first.stderr
    assert f"JAX {OLDEST}: made in " in first.stdout and f"JAX {HOST}: the host's own JAX" in first.stdout
    assert (tmp_path / envs.env_key(OLDEST) / envs.MARKER).exists()
    again = cli("versions", "--prepare", env={**env, "JAXCOMPARE_JAX_VERSIONS": f"{OLDEST}, {BOGUS}"}, timeout=900)
    assert again.returncode == 2
    assert f"JAX {OLDEST}: ready (made before)" in again.stdout
    errors = [line for line in again.stderr.splitlines() if line.startswith("jaxcompare: error:")]
    assert len(errors) == 1 and BOGUS in errors[0]
    assert not (tmp_path / "none.sqlite3").exists()  # nothing measured, nothing saved
    refused = cli("versions", "--prepare", OLDEST, "--case", "matmul", env=env)
    assert refused.returncode == 2 and "measures nothing: drop --case" in refused.stderr


def test_a_hosted_runner_runs_only_prepared_versions_on_its_list(tmp_path, monkeypatch, caplog):
    """A crafted request cannot get past the widget: the runner itself refuses a version off the
    operator's list, and one on it whose environment is not prepared (saying so in the log), and
    makes no environment."""
    monkeypatch.setenv(envs.ENVS_DIR_ENV, str(tmp_path))  # nothing prepared here
    with hosted_runner() as runner:
        with pytest.raises(envs.VersionUnavailable, match=f"JAX {OFF_LIST} is not offered on this server"):
            runner.submit(TINY, jax=OFF_LIST)
        with caplog.at_level(logging.WARNING, logger="jaxcompare.envs"), \
                pytest.raises(envs.NotPrepared, match="not ready on this server"):
            runner.submit(TINY, jax=OLDEST)
        assert f"versions --prepare {OLDEST}" in caplog.text
        runs = measure_versions(TINY, [OFF_LIST, OLDEST], runner=runner)
        assert [run.results for run in runs] == [[], []] and all(run.error for run in runs)
        assert runner.recent() == []  # nothing was queued
    assert list(tmp_path.iterdir()) == []  # and nothing installed
    with Runner(settings=dataclasses.replace(Settings.hosted(), jax_versions=())) as bare, \
            pytest.raises(envs.VersionUnavailable, match="offers no JAX versions"):
        bare.submit(TINY, jax=HOST)


def test_a_hosted_versions_run_is_jobs_on_the_queue(versions_run):
    """Each round is a job on the shared queue, one after another on one device, run by a worker
    of the version asked for; the run counts once against the rate limit, and the next is refused."""
    owner = Owner(session="visitor", client="192.0.2.7")
    with hosted_runner(max_jobs_per_minute=1) as runner:
        runs = measure_versions(TINY, [OLDEST, HOST], runner=runner, owner=owner)
        assert [[r.env["jax"]["version"] for r in run.results] for run in runs] == [[OLDEST] * 2, [HOST] * 2]
        jobs = runner.recent()
        assert len(jobs) == 4 and {job.owner for job in jobs} == {"visitor"}
        assert [job.jax_env.jax_version for job in jobs] == [OLDEST, HOST, HOST, OLDEST]  # A B, B A
        windows = [job.window for job in jobs]
        assert all(a[1] <= b[0] for a, b in zip(windows, windows[1:], strict=False))  # never two at once
        with pytest.raises(BadInput, match="rate limit"):
            measure_versions(TINY, [OLDEST], runner=runner, owner=owner)


def test_stop_cancels_the_running_round_and_stops_its_worker(versions_run, tmp_path):
    """Stop while a round runs under another JAX: its worker process is killed, no later round
    is queued, and the run ends with Cancelled."""
    from jaxcompare.notebook.api import _request

    started = tmp_path / "started"
    os.mkfifo(started)

    def hang(a):  # sent by value to the worker: tells the test it runs (the FIFO's read returns), then hangs
        import time

        with open(started, "w") as fifo:
            fifo.write("x")
        time.sleep(3600)

    case, spec, _notes = _request(hang, lambda a: a * 2, (np.ones((4, 4), "float32"),),
                                  precision="x32", device="auto", timing="quick", name="hangs", shape=None,
                                  seed=0, tolerance=1.0, canonical=None, timeout_s=None)
    stop, outcome = StopSignal(), {}
    env = envs.ensure_env(OLDEST)

    def run() -> None:
        try:
            measure_versions(spec, [OLDEST], runner=runner, case=case, stop=stop)
        except Cancelled as exc:
            outcome["stopped"] = str(exc)

    with Runner() as runner:
        thread = threading.Thread(target=run)
        thread.start()
        with open(started) as fifo:
            assert fifo.read() == "x"
        workers = [p for p in psutil.Process().children(recursive=True) if p.cmdline()[:1] == [env.python]]
        assert len(workers) == 1  # the oldest release's worker, in its numpy_fn
        stop.stop()
        thread.join(60)
        assert not thread.is_alive() and "cancelled" in outcome["stopped"]
        workers[0].wait(30)  # killed (psutil raises TimeoutExpired if it still ran)
        (job,) = runner.recent()
        assert job.status == "cancelled" and runner.wait_idle(30)


def test_versions_findings_lead_with_figures_that_disagree_not_the_checks_title():
    """A version's figures that cannot all be true, under its result line: "Repeated measurement
    agrees: ... do not overlap" read as the opposite of a warning; the page's wording leads them."""
    from support import zh

    from jaxcompare import i18n
    from jaxcompare.analysis.checkline import WARN, Check
    from jaxcompare.analysis.consistency import TITLES
    from jaxcompare.cli.versions import finding_lines

    reason = "its rounds' 95% ranges do not overlap: 28.8 ms (28.1–29.4 ms), 67.8 ms (66.9–68.2 ms)"
    found = [Check("repeat", TITLES["repeat"], WARN, reason)]
    assert finding_lines(found) == [f"  Figures that disagree: {reason}"]
    with i18n.using("zh"):
        assert finding_lines(found) == [f"  {zh('Figures that disagree')}：{reason}"]
