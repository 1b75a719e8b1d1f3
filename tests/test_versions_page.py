"""The JAX versions page with real environments and real JAX: the host's version and the oldest
this package supports at a tiny shape, quick timing, its results filtered by JAX version on
History; Stop; and hosted mode offering only the operator's prepared versions.
The environments live where tests/test_versions.py keeps them ($JAXCOMPARE_ENVS_DIR, else a
stable folder under ~/.cache), so only the first run on a machine makes one."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import psutil
import pytest
from apptest_support import app_runner, fresh_caches, page  # noqa: F401

from jaxcompare.app import resources
from jaxcompare.engine.server import envs
from jaxcompare.model.formatting import markdown_literal

pytestmark = pytest.mark.slow  # the first run on a machine installs a JAX release

OLDEST = envs.jax_floor() or "0.4.35"
HOST = envs.host_jax_version()
OFF_LIST = "0.4.36"
ENVS_DIR = os.environ.get(envs.ENVS_DIR_ENV) or str(Path("~/.cache/jaxcompare/envs-test").expanduser())
PAGE = "pages/6_Versions.py"


@pytest.fixture(autouse=True)
def envs_dir(monkeypatch):
    monkeypatch.setenv(envs.ENVS_DIR_ENV, ENVS_DIR)
    return Path(ENVS_DIR)


@pytest.fixture
def db(tmp_path, monkeypatch):
    """A fresh results database, so History lists only what this test saved."""
    monkeypatch.setenv("JAXCOMPARE_DB", str(tmp_path / "results.sqlite3"))
    resources._store_at.clear()
    yield
    resources._store_at.clear()


@pytest.fixture
def hosted(monkeypatch):
    """Hosted mode, offering the oldest release and the host's; a fresh app Runner with those settings."""
    monkeypatch.setenv("JAXCOMPARE_MODE", "hosted")
    monkeypatch.setenv("JAXCOMPARE_JAX_VERSIONS", f"{OLDEST}, {HOST}")
    resources.get_runner.clear()
    yield
    resources.get_runner.clear()


def test_two_versions_run_to_a_table_comparison_and_chart(db):
    at = page(PAGE)
    assert at.text_input(key="versions_jax").value == f"{HOST} {OLDEST}"
    at.segmented_control(key="versions_size").set_value("custom").run()
    at.text_input(key="versions_custom_shape").set_value("32x32").run()
    at.button(key="run_versions").click().run()
    job = at.session_state["versions_job"]
    assert job.wait(900), job.message  # the job's own thread: wait on it, not on a sleep
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    rows = at.dataframe[0].value
    assert list(rows["JAX asked for"]) == [OLDEST, HOST]  # release order
    assert list(rows["jax (ran)"]) == [OLDEST, HOST]  # read in each worker
    # Shown as written (markdown_literal escapes its punctuation, so a case name cannot be a link).
    host, oldest = markdown_literal(HOST), markdown_literal(OLDEST)
    (sentence,) = [m.value for m in at.markdown if "JAX " + host in m.value and oldest in m.value]
    assert sentence.startswith("- " + markdown_literal(f"on centered_gram 32x32 x32, JAX {HOST} "))
    (chart,) = at.get("vega_lite_chart")
    assert "Runtime and compile time by JAX version" in chart.proto.spec

    # Saved to History with the versions the workers ran; its JAX filter keeps one of them.
    history = page("pages/4_History.py")
    assert sorted(history.dataframe[0].value["JAX"]) == sorted([OLDEST, HOST])
    jax_filter = history.selectbox(key="history_jax")
    assert jax_filter.options == [HOST, OLDEST]  # newest release first
    jax_filter.set_value(OLDEST).run()
    assert list(history.dataframe[0].value["JAX"]) == [OLDEST]
    history.button(key="history_clear_filters").click().run()
    assert len(history.dataframe[0].value) == 2 and not history.exception


def test_stop_ends_the_run_and_its_worker():
    """Stop while a round runs under the oldest release: its worker process is killed and no
    later round is queued."""
    at = page(PAGE)
    at.text_input(key="versions_jax").set_value(OLDEST).run()
    at.segmented_control(key="versions_size").set_value("large").run()  # a round of a few seconds
    at.segmented_control(key="versions_timing").set_value("careful").run()
    at.button(key="run_versions").click().run()
    job = at.session_state["versions_job"]
    # Until the round's worker reports its first phase (it is up and measuring): an event, not a sleep.
    while (job.current is None or job.current.phase in ("queued", "starting worker")) and not job.done:
        job.wait(0.05)
    python = envs.ensure_env(OLDEST).python

    def workers() -> list[psutil.Process]:
        return [p for p in psutil.Process().children(recursive=True)
                if p.is_running() and p.status() != psutil.STATUS_ZOMBIE and p.cmdline()[:1] == [python]]

    assert len(workers()) == 1
    at.run()
    assert at.button(key="stop_versions")  # drawn with the round's progress
    at.button(key="stop_versions").click().run()
    assert job.wait(60) and job.stopped
    assert resources.get_runner().wait_idle(30)
    at.run()
    assert any("Stopped" in e.value for e in at.error), [e.value for e in at.error]
    assert "versions_job" not in at.session_state and not at.dataframe
    mine = [j.status for j in resources.get_runner().recent() if j.owner == at.session_state["owner_id"]]
    assert mine == ["cancelled"]  # the running round, and no later one
    assert workers() == []  # the oldest release's worker was stopped, not left measuring
    assert not at.exception


def test_hosted_mode_offers_only_the_operators_versions(hosted):
    at = page(PAGE)
    versions = at.multiselect(key="versions_jax")
    assert versions.options == [OLDEST, HOST] and versions.value == [OLDEST, HOST]
    assert [t.key for t in at.text_input] == ["versions_custom_shape"]  # no box to type another release in
    at.session_state["versions_jax"] = [OFF_LIST, OLDEST]  # a forged choice: the widget keeps only offered ones
    at.run()
    assert at.multiselect(key="versions_jax").value == [OLDEST]
    at.multiselect(key="versions_jax").set_value([OLDEST]).run()
    at.segmented_control(key="versions_size").set_value("custom").run()
    at.text_input(key="versions_custom_shape").set_value("32x32").run()
    at.button(key="run_versions").click().run()
    job = at.session_state["versions_job"]
    assert job.wait(300), job.message
    at.run()
    assert not at.error, [e.value for e in at.error]
    assert list(at.dataframe[0].value["jax (ran)"]) == [OLDEST]
    ran = [j for j in resources.get_runner().recent() if j.owner == at.session_state["owner_id"]]
    assert [j.jax_env.jax_version for j in ran] == [OLDEST, OLDEST]  # two rounds, jobs of the shared queue


def test_hosted_mode_never_makes_an_environment(hosted, tmp_path, monkeypatch, caplog):
    """A listed release that the operator has not prepared: a clear message for the visitor, a
    line for the operator's log, and nothing installed."""
    monkeypatch.setenv(envs.ENVS_DIR_ENV, str(tmp_path))
    at = page(PAGE)
    at.multiselect(key="versions_jax").set_value([OLDEST]).run()
    with caplog.at_level(logging.WARNING, logger="jaxcompare.envs"):
        at.button(key="run_versions").click().run()
    assert "versions_job" not in at.session_state
    (refusal,) = [e.value for e in at.error]
    assert f"JAX {OLDEST} is offered but not ready on this server yet" in refusal
    assert f"jaxcompare versions --prepare {OLDEST}" in caplog.text and str(tmp_path) in caplog.text
    assert list(tmp_path.iterdir()) == []
