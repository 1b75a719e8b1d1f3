"""A real browser on the Chinese app: Compare with ``?lang=zh`` runs and draws its charts with
Chinese titles and labels; a browser set to Chinese gets Chinese without asking, and the sidebar
switch changes the language, the URL and every page after it. (Pitfalls in Chinese:
test_pitfalls_page.py.)"""

from __future__ import annotations

import browser_support as bs
import pytest
from support import zh

pytestmark = [pytest.mark.browser, pytest.mark.slow]  # slow: 20 s or more, collected first


def test_compare_in_chinese_runs_and_draws_chinese_charts(server, browser, tmp_path):
    page = bs.open_page(browser, f"{server}/Compare?case=matmul&shape=small&timing=quick&lang=zh", height=1800)
    bs.assert_no_error(page)
    page.get_by_role("button", name=zh("Run comparison")).click()
    bs.wait_or_say(page, bs.CHART, timeout=120_000)
    page.wait_for_selector(bs.IDLE, timeout=60_000)
    for index in range(2):
        bs.wait_for_chart_marks(page, index, bs.JAX_COLOR)
    assert bs.chart_marks(page, 0, bs.JAX_COLOR, mark="symbol") == 7  # every JAX phase, as in English
    assert zh("Where the time goes") in bs.svg_text(page, 0)
    assert zh("Compile: XLA compile") in bs.svg_text(page, 0)  # the phase rows
    assert zh("Samples: how noisy is each side?") in bs.svg_text(page, 1)
    # The roofline in Chinese: this CPU's roof, its ridge point and a dot per side, as in English.
    assert bs.roofline_marks(page, 2) == {"roofs": 1, "ridges": 1, "numpy": 1, "jax": 1}
    assert zh("Roofline: what holds each side back") in bs.svg_text(page, 2)
    assert zh("arithmetic intensity (FLOP per byte)") in bs.svg_text(page, 2)
    assert zh("**What would help most**").strip("*") in bs.main_text(page)
    labels = page.locator("[data-testid='stMetricLabel']").all_inner_texts()
    assert [label.strip() for label in labels][:3] == [zh("NumPy runtime"), zh("JAX runtime"), zh("Speedup")]
    values = page.locator("[data-testid='stMetricValue']").all_inner_texts()
    assert values[0].strip().endswith(("s", "ms", "µs", "ns")) and values[2].strip().endswith("x")  # numbers stay
    main = bs.main_text(page)
    assert zh("Checks: warn") in main or zh("Checks: pass") in main or zh("Checks: fail") in main
    assert "lang=zh" in page.url and "case=matmul" in page.url
    bs.assert_no_error(page)
    shot = tmp_path / "compare-zh.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 20_000
    page.close()


def test_a_chinese_browser_gets_chinese_and_the_switch_holds_across_pages(server, browser):
    context = browser.new_context(locale="zh-CN", viewport={"width": 1300, "height": 900})
    page = bs.open_page(context, server)
    bs.assert_no_error(page)
    page.get_by_role("heading", name=zh("How to read the numbers")).wait_for(timeout=30_000)
    page.wait_for_function("() => location.search.includes('lang=zh')",
                           polling=bs.POLL_MS, timeout=30_000)  # shareable as it is
    # English, chosen in the sidebar: the page and the address bar follow; so does the next page.
    page.get_by_role("radio", name="English").click()
    page.get_by_role("heading", name="How to read the numbers").wait_for(timeout=30_000)
    page.wait_for_function("() => location.search.includes('lang=en')", polling=bs.POLL_MS, timeout=30_000)
    sidebar = page.get_by_test_id("stSidebarUserContent")
    sidebar.get_by_role("link", name="Compare").click()
    page.get_by_role("button", name="Run comparison").wait_for(timeout=30_000)
    page.wait_for_selector(bs.IDLE, timeout=30_000)
    assert "lang=en" in page.url
    bs.assert_no_error(page)
    # The switch shows its choice on every page reached by a link (every second one showed none).
    for link, heading in (("Pitfalls", "Pitfalls"), ("History", "History"), ("Compare", "Compare")):
        sidebar.get_by_role("link", name=link).click()
        page.get_by_role("heading", name=heading).first.wait_for(timeout=30_000)
        page.wait_for_selector(bs.IDLE, timeout=30_000)
        assert page.get_by_role("radio", name="English").get_attribute("aria-checked") == "true", link
    context.close()
    # An English browser opening a Chinese link reads Chinese.
    context = browser.new_context(locale="en-US", viewport={"width": 1300, "height": 900})
    page = context.new_page()
    page.goto(f"{server}/Environment?lang=zh")
    page.get_by_role("heading", name=zh("Environment")).first.wait_for(timeout=60_000)
    page.get_by_test_id("stSidebarUserContent").get_by_role("link", name=zh("History")).click()
    page.get_by_role("heading", name=zh("History")).first.wait_for(timeout=30_000)
    assert "lang=zh" in page.url
    bs.assert_no_error(page)
    context.close()


@pytest.mark.parametrize("path", ["Compare", "Size_sweep", "Pitfalls"])
def test_switching_the_language_then_touching_a_control_keeps_the_page(server, browser, path):
    # A select box sends back the label it shows: after a switch, the old language's label came
    # back with the next control touched and the page died with StopIteration (issue 23).
    page = browser.new_page(viewport={"width": 1300, "height": 1000})
    page.goto(f"{server}/{path}?case=matmul&lang=en")  # not a page's default: a reset would show
    page.wait_for_selector(bs.IDLE, timeout=60_000)
    sidebar = page.get_by_test_id("stSidebarUserContent")
    for name, url_says in (("中文", "location.search.includes('lang=zh')"),
                           ("English", "!location.search.includes('lang=zh')")):  # English: no lang= here
        page.get_by_role("radio", name=name).click()
        page.wait_for_function(f"() => {url_says}", polling=bs.POLL_MS, timeout=30_000)
        page.wait_for_selector(bs.IDLE, timeout=30_000)
        sidebar.get_by_text("x64 · float64").first.click()  # the same words in both languages
        page.wait_for_selector(bs.IDLE, timeout=30_000)
        bs.assert_no_error(page)
        sidebar.get_by_text("x32 · float32").first.click()
        page.wait_for_selector(bs.IDLE, timeout=30_000)
        bs.assert_no_error(page)
        # The choice itself held, not only the page: the URL still names the case.
        assert "case=matmul" in page.url and "there is no case" not in page.inner_text("body")
    heading = {"Compare": "Compare", "Size_sweep": "Size sweep", "Pitfalls": "Pitfalls"}[path]
    page.get_by_role("heading", name=heading).first.wait_for(timeout=30_000)
    page.close()
