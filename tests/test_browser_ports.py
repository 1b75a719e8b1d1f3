"""A real browser races two ports of cumsum on the Compare page (#51): the picker from the URL, each
port measured as its own run, the race's sentence on top, a bar per port from NumPy's 1x and a tab
per port with its phase chart."""

from __future__ import annotations

import re

import browser_support as bs
import pytest

pytestmark = pytest.mark.browser


def test_compare_races_two_ports(server, browser, tmp_path):
    page = bs.open_page(browser, f"{server}/Compare?case=cumsum&shape=300&timing=quick&ports=jnp,scan", height=1600)
    bs.assert_no_error(page)
    picker = page.locator("[data-testid='stSidebar'] [data-testid='stMultiSelect']")
    picker.get_by_text("scan", exact=True).wait_for(timeout=30_000)
    assert picker.get_by_text("jnp", exact=True).count() == 1
    page.get_by_text(re.compile(r"^Takes about ")).wait_for(timeout=30_000)  # both ports, one after the other
    page.get_by_role("button", name="Run comparison").click()
    page.get_by_role("tab", name="scan").wait_for(timeout=180_000)
    page.wait_for_selector(bs.IDLE, timeout=60_000)
    text = bs.main_text(page)
    assert re.search(r"(jnp|scan) \d+\.\d\dx faster than (jnp|scan) \(|no difference within the noise", text), text
    # Every port has calls back to back on the CPU: the race is run on them too, on the next line.
    assert "blocked calls: " in text and "calls back to back: " in text, text
    assert re.search(r"jnp: JAX .+ a call, NumPy .+ over NumPy", text) and "scan: JAX " in text
    assert "All 2 measurements saved to history" in text
    # The ports chart first (a bar per port, from 1x), then each port's phase chart and roofline in its tab.
    assert bs.chart_count(page, 5) == 5
    bs.wait_for_chart_marks(page, 0, bs.NUMPY_COLOR, mark="rule")  # NumPy's line at 1x, drawn
    # A bar per port (one at about 1x may be a pixel wide, so counted in the SVG, not by its area).
    bars = page.evaluate("() => document.querySelectorAll(\"[data-testid='stVegaLiteChart']\")[0]"
                         ".querySelectorAll('svg.marks g.mark-rect.role-mark > path').length")
    assert bars == 2
    assert "NumPy (1x)" in bs.svg_text(page, 0)
    page.get_by_role("tab", name="scan").click()
    page.wait_for_selector(bs.IDLE, timeout=30_000)
    # The tiles can still be placeholders the moment the page reads idle: wait for the second port's.
    speedups = page.locator("[data-testid='stMetric']").filter(has_text="Speedup")
    speedups.nth(1).wait_for(state="attached", timeout=30_000)
    assert speedups.count() == 2  # each port's tab
    bs.assert_no_error(page)
    page.wait_for_function("() => location.search.includes('ports=jnp%2Cscan') "
                           "|| location.search.includes('ports=jnp,scan')", polling=bs.POLL_MS, timeout=30_000)
    page.screenshot(path=str(tmp_path / "compare_ports.png"), full_page=True)
    page.close()
