"""A real browser against `streamlit run app.py`: a comparison with Profile on shows the
Profile tab's figures and chart, and its trace downloads as the gzipped Perfetto file."""

from __future__ import annotations

import gzip
import json

import browser_support as bs
import pytest

from jaxcompare.app.charts_profile import GAP_COLOR

pytestmark = pytest.mark.browser


def test_compare_with_profile_shows_the_tab_and_downloads_the_trace(server, browser, tmp_path):
    page = bs.open_page(browser, f"{server}/Compare?case=centered_gram&shape=200x200&timing=quick&profile=1",
                        height=1800)
    assert page.get_by_role("switch", name="Profile the JAX call").is_checked()  # from the URL
    page.get_by_role("button", name="Run comparison").click()
    page.wait_for_selector(bs.CHART, timeout=120_000)
    page.wait_for_selector(bs.IDLE, timeout=60_000)
    bs.assert_no_error(page)
    page.get_by_role("tab", name="Profile").click()
    panel = page.get_by_role("tabpanel", name="Profile")
    panel.get_by_text("Device busy").wait_for(timeout=30_000)
    assert panel.locator("[data-testid='stMetric']").count() == 3
    index = page.locator("[data-testid='stVegaLiteChart']").count() - 1  # the profile chart comes last
    assert bs.wait_for_chart_marks(page, index, bs.JAX_COLOR, mark="rect") >= 1  # at least one op's bar
    assert bs.chart_marks(page, index, GAP_COLOR, mark="rect") == 1  # and the gap's
    text = panel.inner_text()
    assert "ui.perfetto.dev" in text and "perfetto_trace.json.gz" in text
    assert str(server.db.parent / "traces") in text  # the app keeps traces beside its results database
    with page.expect_download(timeout=30_000) as download:
        panel.get_by_role("button", name="Trace (Perfetto)").click()
    saved = tmp_path / download.value.suggested_filename
    download.value.save_as(saved)
    assert saved.name.endswith(".perfetto.json.gz")
    trace = json.loads(gzip.decompress(saved.read_bytes()))
    assert any(e.get("name") == "jaxcompare call" for e in trace["traceEvents"])
    assert "profile=1" in page.url
    page.screenshot(path=str(tmp_path / "profile.png"), full_page=True)
    page.close()
