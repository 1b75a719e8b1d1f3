"""`jaxcompare versions` with real environments and real JAX: the host's version and the oldest
this package supports, a version that does not exist, the JSON record, the versions read in
the worker, and environments reused rather than made again.

The environments live in $JAXCOMPARE_ENVS_DIR when set (CI points it at a cached folder), else
in a stable folder under ~/.cache, so only the first run on a machine pays for making one.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from support import cli

from jaxcompare.engine import envs
from jaxcompare.engine.runner import Runner
from jaxcompare.engine.versions import round_orders

pytestmark = pytest.mark.slow  # the first run on a machine installs a JAX release (seconds to a minute)

OLDEST = envs.jax_floor() or "0.4.35"  # the oldest release this package measures (pyproject)
HOST = envs.host_jax_version()
BOGUS = "9.9.9"
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
def versions_run(envs_dir):
    assert HOST is not None and HOST != OLDEST
    return cli("versions", "--case", "centered_gram", "--shape", "64x64", "--quick",
               "--jax", HOST, OLDEST, BOGUS, "--json", "-", env={envs.ENVS_DIR_ENV: str(envs_dir)}, timeout=900)


def test_a_missing_version_is_one_line_and_the_others_run(versions_run):
    assert versions_run.returncode == 2, versions_run.stderr
    errors = [line for line in versions_run.stderr.splitlines() if line.startswith("jaxcompare: error:")]
    assert len(errors) == 1 and BOGUS in errors[0], versions_run.stderr
    assert "Traceback" not in versions_run.stderr
    doc = json.loads(versions_run.stdout)  # one JSON document on stdout, nothing else
    assert [u["requested"] for u in doc["unavailable"]] == [BOGUS]
    assert [v["requested"] for v in doc["versions"]] == [HOST, OLDEST]


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
