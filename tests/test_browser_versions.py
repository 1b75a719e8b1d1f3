"""The JAX versions page in Chromium: the host's JAX and the oldest supported release at the
default small shape, quick timing, to a table and a chart whose dots are drawn (issue 27's
"runs in Chromium and its chart has marks"), then History filtered by JAX version.
Environments as tests/test_versions.py keeps them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from browser_support import (  # noqa: F401
    CHART,
    IDLE,
    assert_no_error,
    browser,
    main_text,
    open_page,
    streamlit_run,
    wait_for_chart_marks,
)

from jaxcompare.engine.server import envs

pytestmark = [pytest.mark.browser, pytest.mark.slow]

OLDEST = envs.jax_floor() or "0.4.35"
ENVS_DIR = os.environ.get(envs.ENVS_DIR_ENV) or str(Path("~/.cache/jaxcompare/envs-test").expanduser())


def test_versions_page_runs_to_a_chart_with_marks(tmp_path, browser):  # noqa: F811
    with streamlit_run(tmp_path, env={envs.ENVS_DIR_ENV: ENVS_DIR}) as url:
        page = open_page(browser, f"{url}/Versions", height=1000)
        page.locator("[data-testid='stBaseButton-primary']").first.click()
        page.wait_for_selector(CHART, timeout=600_000)
        page.wait_for_selector(IDLE, timeout=60_000)
        # Two versions x (runtime, compile): four dots, whatever the legend draws.
        assert wait_for_chart_marks(page, 0, mark="symbol", at_least=4) >= 4
        assert page.locator("[data-testid='stDataFrame']").count() == 1
        assert_no_error(page)

        # Both versions' results are in History; its JAX filter keeps the oldest release's.
        history = open_page(browser, f"{url}/History", height=1000)
        assert "Showing all 2 results" in main_text(history)
        history.locator("[data-testid='stSelectbox']").filter(has_text="JAX version").locator("input").click()
        history.get_by_role("option", name=OLDEST, exact=True).click()
        history.get_by_text("Showing 1 of 2 results").wait_for(timeout=30_000)
        assert_no_error(history)
