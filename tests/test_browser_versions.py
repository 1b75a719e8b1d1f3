"""The JAX versions page in Chromium: the host's JAX and the oldest supported release at the
default small shape, quick timing, to a table and a chart whose dots are drawn (issue 27's
"runs in Chromium and its chart has marks"). Environments as tests/test_versions.py keeps them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from browser_support import CHART, IDLE, assert_no_error, browser, open_page, streamlit_run, wait_for_chart_marks  # noqa: F401

from jaxcompare.engine import envs

pytestmark = [pytest.mark.browser, pytest.mark.slow]

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
