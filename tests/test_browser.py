"""A real browser against `streamlit run app.py`: open Compare, run a small case, see the charts."""

from __future__ import annotations

import pytest
from browser_support import CHART, IDLE, assert_no_error, jax_marks

pytestmark = pytest.mark.browser


def test_compare_runs_and_renders_charts(server, browser, tmp_path):
    page = browser.new_page(viewport={"width": 1400, "height": 1800})
    page.goto(f"{server}/Compare?case=matmul&shape=large&timing=quick")
    page.wait_for_selector(IDLE, timeout=60_000)
    assert_no_error(page)
    for label in ("Quick (≈1–2 s)", "Careful (≈3–5 s)", "Thorough (≈6–10 s)"):  # the timing presets
        page.get_by_role("radio", name=label).wait_for(timeout=30_000)  # the sidebar may still be drawing
    page.get_by_role("radio", name="Small · 10x10").click()  # pick the small shape
    page.wait_for_function("() => !location.search.includes('shape=')", timeout=30_000)
    page.wait_for_selector(IDLE, timeout=30_000)
    page.get_by_role("button", name="Run comparison").click()
    page.wait_for_selector(CHART, timeout=120_000)
    page.wait_for_selector(IDLE, timeout=60_000)
    page.wait_for_timeout(500)  # let Vega finish drawing
    assert page.locator("[data-testid='stVegaLiteChart']").count() == 2
    assert page.locator("[data-testid='stMetric']").count() == 6
    for index in range(2):
        assert jax_marks(page, index) > 0, f"chart {index} drew no marks (a blank chart)"
    assert_no_error(page)
    assert "case=matmul" in page.url and "timing=quick" in page.url
    shot = tmp_path / "compare.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 20_000
    page.close()
