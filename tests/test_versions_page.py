"""The JAX versions page with real environments and real JAX: the host's version and the oldest
this package supports at a tiny shape, quick timing; and hosted mode refusing an unprepared one.
The environments live where tests/test_versions.py keeps them ($JAXCOMPARE_ENVS_DIR, else a
stable folder under ~/.cache), so only the first run on a machine makes one."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from apptest_support import app_runner, fresh_caches, page  # noqa: F401

from jaxcompare.engine import envs
from jaxcompare.model.formatting import markdown_literal

pytestmark = pytest.mark.slow  # the first run on a machine installs a JAX release

OLDEST = envs.jax_floor() or "0.4.35"
HOST = envs.host_jax_version()
ENVS_DIR = os.environ.get(envs.ENVS_DIR_ENV) or str(Path("~/.cache/jaxcompare/envs-test").expanduser())
PAGE = "pages/6_Versions.py"


@pytest.fixture(autouse=True)
def envs_dir(monkeypatch):
    monkeypatch.setenv(envs.ENVS_DIR_ENV, ENVS_DIR)
    return Path(ENVS_DIR)


def test_two_versions_run_to_a_table_comparison_and_chart():
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


def test_hosted_mode_refuses_every_versions_run(monkeypatch):
    from jaxcompare.app import resources

    monkeypatch.setenv("JAXCOMPARE_MODE", "hosted")
    resources.get_runner.clear()
    try:
        at = page(PAGE)
        at.text_input(key="versions_jax").set_value(HOST).run()  # the host's JAX: nothing to install
        at.button(key="run_versions").click().run()
        assert "versions_job" not in at.session_state
        (refusal,) = [e.value for e in at.error]
        assert "A hosted demo does not run JAX version comparisons" in refusal
    finally:
        resources.get_runner.clear()
