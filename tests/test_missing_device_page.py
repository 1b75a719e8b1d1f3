"""A server told to measure on a device the machine lacks (JAXCOMPARE_DEVICES=gpu:0 here): the page's
device banner says the worker could not start, and the app does not start a worker for it on every poll
(it started one a second, each printing a traceback, and the banner kept "Checking which device...")."""

from __future__ import annotations

import pytest
from apptest_support import app_runner, fresh_caches, page  # noqa: F401

from jaxcompare.app import resources


@pytest.fixture
def missing_gpu(monkeypatch):
    monkeypatch.setenv("JAXCOMPARE_DEVICES", "gpu:0")
    resources.get_runner.clear()
    resources._probe.clear()
    yield
    resources.get_runner.clear()  # closes that Runner; the next test's gets the CPU again
    resources._probe.clear()


def test_a_worker_that_cannot_start_is_said_once_not_started_again_on_every_poll(missing_gpu):
    at = page("app.py")
    asked = resources._probe().future("x32")
    assert asked.exception(timeout=120) is not None  # the worker for gpu:0 could not start
    for _ in range(3):  # the pending banner's polls, and visitors' page loads
        at.run()
        assert resources._probe().future("x32") is asked
    errors = [e.value for e in at.error]
    assert any("The measurement worker could not start" in e and "gpu:0" in e for e in errors), errors
    assert not at.exception
