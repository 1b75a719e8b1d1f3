"""The Compare screenshot in the README (docs/compare.png), taken in a real browser.

`make screenshots` runs this test with JAXCOMPARE_SCREENSHOTS=1 and rewrites docs/compare.png.
Without that variable (as in `make test`) the picture goes to pytest's tmp_path, so a test run
never changes the repository."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from browser_support import CHART, IDLE, POLL_MS, ROOT, assert_no_error, stop_button
from playwright.sync_api import TimeoutError as PlaywrightTimeout

pytestmark = [pytest.mark.browser, pytest.mark.slow]  # slow: 20 s or more, collected first

VIEWPORT = {"width": 1280, "height": 900}
MAX_HEIGHT = 4000
ERROR_BOX = "[data-testid='stAlertContentError']"
# All three charts (phases, samples, roofline) drawn: each has marks in the JAX colour (#E4572E),
# on a canvas or in an SVG.
CHARTS_DRAWN = """() => {
    const charts = [...document.querySelectorAll("[data-testid='stVegaLiteChart']")];
    if (charts.length !== 3) return false;
    return charts.every(chart => {
        const canvas = chart.querySelector('canvas');
        if (!canvas) return /#e4572e|rgb\\(228, ?87, ?46\\)/i.test(chart.innerHTML);
        const d = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
        for (let i = 0; i < d.length; i += 4)
            if (d[i + 3] > 0 && d[i] > 180 && d[i + 1] < 150 && d[i + 2] < 130) return true;
        return false;
    });
}"""

# How tall the page is: the main pane and the sidebar each scroll on their own.
PAGE_HEIGHT = """() => Math.max(...["stMain", "stSidebarContent"].map(id => {
    const pane = document.querySelector(`[data-testid='${id}']`);
    return pane ? pane.scrollHeight : 0;
}))"""


def for_the_docs() -> bool:
    """Whether JAXCOMPARE_SCREENSHOTS asks for docs/compare.png itself."""
    return os.environ.get("JAXCOMPARE_SCREENSHOTS", "").strip() not in ("", "0")


def screenshot_path(tmp_path: Path) -> Path:
    """docs/compare.png when JAXCOMPARE_SCREENSHOTS asks for it, else a file under tmp_path."""
    return ROOT / "docs" / "compare.png" if for_the_docs() else tmp_path / "compare.png"


def test_compare_screenshot(server, browser, tmp_path):
    page = browser.new_page(viewport=VIEWPORT)
    # The README's picture shows the JAX docs' example at careful timing, the default; a test run
    # checks the same page and charts at the small size and quick timing (what it asserts depends
    # on neither), 10-15 s sooner.
    options = "shape=large" if for_the_docs() else "shape=small&timing=quick"
    page.goto(f"{server}/Compare?case=centered_gram&{options}")
    page.wait_for_selector(IDLE, timeout=60_000)
    run = page.get_by_role("button", name="Run comparison")
    run.wait_for(timeout=30_000)
    page.wait_for_function(
        "() => { const b = [...document.querySelectorAll('button')]"
        ".find(b => b.innerText.includes('Run comparison')); return b && !b.disabled; }",
        polling=POLL_MS, timeout=30_000)
    run.click()
    # Finished: the result's metrics and both charts are on the page, the marks drawn, the
    # Stop button gone and the script idle.
    page.wait_for_selector(CHART, timeout=180_000)
    page.wait_for_function(CHARTS_DRAWN, polling=POLL_MS, timeout=60_000)
    stop_button(page).wait_for(state="detached", timeout=60_000)
    page.wait_for_selector(IDLE, timeout=60_000)
    assert page.locator("[data-testid='stMetric']").count() == 6
    assert page.locator(ERROR_BOX).count() == 0
    assert_no_error(page)

    # Streamlit scrolls inside its main and sidebar panes, so a full-page screenshot would show
    # one window's worth: make the window as tall as the page instead, then let it redraw.
    # A page taller than MAX_HEIGHT (a busy machine adds warnings) is cut there; a page that grows
    # while the window is resized (a late chart, a notice) is measured and resized again.
    for _ in range(3):
        height = min(max(page.evaluate(PAGE_HEIGHT), VIEWPORT["height"]), MAX_HEIGHT)
        page.set_viewport_size({"width": VIEWPORT["width"], "height": height})
        fits = "true" if height == MAX_HEIGHT else f"({PAGE_HEIGHT})() <= {height} + 2"
        try:
            page.wait_for_function(f"() => window.innerHeight === {height} && {fits}", polling=POLL_MS, timeout=15_000)
            break
        except PlaywrightTimeout:
            continue
    else:
        pytest.fail(f"the page kept growing past the window: {page.evaluate(PAGE_HEIGHT)} px")
    page.wait_for_function(CHARTS_DRAWN, polling=POLL_MS, timeout=30_000)
    page.wait_for_selector(IDLE, timeout=60_000)

    shot = screenshot_path(tmp_path)
    shot.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(shot))
    size = shot.stat().st_size
    assert 20_000 < size < 600_000, f"{shot}: {size} bytes"
    page.close()
