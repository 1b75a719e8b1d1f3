"""AppTest plumbing shared by the page tests: open a page like a browser, wait for work."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # pages import the top-level ui module
    sys.path.insert(0, str(ROOT))

TIMEOUT = 60


# Page-test modules import these two (`from apptest_support import app_runner, fresh_caches`):
# autouse fixtures take effect in every module that imports them.
@pytest.fixture(autouse=True)
def fresh_caches():
    import streamlit as st

    st.cache_data.clear()
    yield


@pytest.fixture(scope="module", autouse=True)
def app_runner():
    """The app's shared Runner (st.cache_resource) lives for one test module; clearing it
    runs on_release, which closes the Runner, cancels anything in flight, and stops its workers."""
    yield
    from jaxcompare.app import resources

    resources.get_runner.clear()


def page(name: str, **query: str) -> AppTest:
    """Open ``name`` the way a browser does: app.py is the entry point, then the page, with
    ``query`` as the URL's parameters."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT).run()
    if name != "app.py":
        at.switch_page(name)
    for key, value in query.items():
        at.query_params[key] = value
    return at.run()


def run_until(at: AppTest, done, timeout: float = 120.0) -> AppTest:
    """Rerun the script (as the polling fragment would) until ``done(at)``. Between reruns it
    waits for the app's runner to go idle — on the work itself, not on a sleep."""
    from jaxcompare.app import resources

    deadline = time.monotonic() + timeout
    while not done(at):
        assert not at.exception, [e.value for e in at.exception]
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError("timed out waiting for the page")
        resources.get_runner().wait_idle(timeout=min(left, 30.0))
        at.run()
    return at
