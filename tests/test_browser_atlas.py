"""The Atlas page in Chromium, English and Chinese, drawing the atlas recorded with the project (its cells
as SVG rects, a set-aside one grey, each with its label); and the atlas's HTML export opened from a file
with every network request refused: the heatmap still draws (Vega inlined) and the tables are there."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from browser_support import (
    # noqa: F401
    IDLE,
    POLL_MS,
    assert_no_error,
    main_text,
    open_page,
    streamlit_run,
    svg_text,
)
from support import ROOT, partial_tpu_atlas, zh

from jaxcompare import i18n
from jaxcompare.analysis import atlas as am
from jaxcompare.analysis.atlas_text import cell_label, partial_line
from jaxcompare.app import atlas_view
from jaxcompare.app.charts_atlas import atlas_heatmap, atlas_html
from jaxcompare.model.palette import DOUBT_GREY

pytestmark = pytest.mark.browser

RECORDED = sorted((ROOT / "tests" / "data" / "atlas").glob("*.json*"))
OWN = "none.json"  # the reader's own atlas: absent but where a test writes one
RECT_JS = """([colour]) => Array.from(document.querySelectorAll("svg.marks path, svg.marks rect"))
    .filter(p => (p.getAttribute('fill') || '').toLowerCase() === colour).length"""


@pytest.fixture(scope="module")
def atlas_home(tmp_path_factory):
    return tmp_path_factory.mktemp("atlas_server")


@pytest.fixture(scope="module")
def atlas_server(atlas_home):
    """The app with no atlas of the reader's own (its file absent, but while one test writes one for its own
    run): the Atlas page shows the recorded ones.
    One server for the module's three page tests (each started its own: a server and its worker's start)."""
    with streamlit_run(atlas_home, env={am.ENV_VAR: str(atlas_home / OWN)}) as url:
        yield url


# Chinese first: the English run adds the atlas's results to the server's History, which links its cells.
@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_atlas_page_draws_the_recorded_atlas(atlas_server, browser, lang):  # noqa: F811
    recorded = am.load(RECORDED[0])
    doubtful = sum(v.status == am.DOUBTFUL for v in am.views(recorded))
    page = open_page(browser, f"{atlas_server}/Atlas?lang={lang}", height=1600)
    page.wait_for_selector("[data-testid='stVegaLiteChart'] svg.marks", timeout=60_000)
    page.wait_for_function(f"() => ({RECT_JS})(['{DOUBT_GREY}']) >= {doubtful}", polling=POLL_MS, timeout=30_000)
    assert page.evaluate(RECT_JS, [DOUBT_GREY]) == doubtful  # every set-aside cell greyed, no other
    drawn = svg_text(page, 0)
    word = "Recorded on" if lang == "en" else zh("recorded on {device}, JAX {version}, {date}").split("{")[0]
    assert word in main_text(page) and "Recorded: recorded" not in main_text(page)
    cases = {c.key.case for c in recorded.cells.values()}
    assert all(case in drawn for case in cases)
    assert (zh("Speedup atlas: NumPy time over JAX time") if lang == "zh"
            else "Speedup atlas: NumPy time over JAX time") in drawn
    assert_no_error(page)
    label = next(v for v in am.views(recorded) if v.status == am.TRUSTED)
    if lang == "zh":  # its results not in History yet: a cell opens nothing (it had opened "/null", no page)
        page.locator("svg.marks text", has_text=cell_label(label)).first.click()
        assert page.url.endswith("/Atlas?lang=zh"), page.url
        # The HTML download is made on the click, in the page's language (it had come out English).
        with page.expect_download() as download:
            page.get_by_role("button", name=zh("Atlas (HTML)")).click()
        exported = Path(download.value.path()).read_text(encoding="utf-8")
        assert f"<h1>{zh('Speedup atlas')}</h1>" in exported and zh("Environment") in exported, exported[-2000:]
    if lang == "en":  # once its results are in History, a cell opens its result on the Compare page
        page.get_by_role("button", name="Add them to History").click()
        page.get_by_text("Added to History").wait_for(timeout=30_000)
        page.wait_for_selector(IDLE, timeout=30_000)
        page.wait_for_selector("[data-testid='stVegaLiteChart'] svg.marks", timeout=30_000)
        page.locator("svg.marks text", has_text=cell_label(label)).first.click()
        page.wait_for_url("**/Compare?**", timeout=30_000)
        assert f"result={label.result_id}" in page.url
    page.close()


TEXT_COUNT_JS = """([word]) => Array.from(document.querySelectorAll("svg.marks text"))
    .filter(t => t.textContent === word).length"""


def test_an_atlas_stopped_partway_is_drawn_with_the_cells_it_lacks_and_says_it_is_partial(
        atlas_home, atlas_server, browser):  # noqa: F811
    stopped = partial_tpu_atlas()
    missing = sum(v.status == am.NOT_MEASURED for v in am.grid(stopped))
    assert missing == 4
    am.save(stopped, atlas_home / OWN)  # the reader's own atlas, shown first from the next page load
    try:
        for lang in ("en", "zh"):
            page = open_page(browser, f"{atlas_server}/Atlas?lang={lang}", height=2200)
            page.wait_for_selector("[data-testid='stVegaLiteChart'] svg.marks", timeout=60_000)
            word = "not measured" if lang == "en" else zh("not measured")
            page.wait_for_function(f"() => ({TEXT_COUNT_JS})(['{word}']) === {missing}",
                                   polling=POLL_MS, timeout=60_000)
            page.wait_for_selector(IDLE, timeout=30_000)
            warning = page.locator("[data-testid='stAlertContentWarning']").inner_text()
            with i18n.using(lang):  # the page's own words: the cells held of those planned, the rest named
                assert warning.strip().endswith(partial_line(stopped))
            held, planned = len(stopped.cells), len(stopped.plan())
            assert (f"{held} of the {planned}" if lang == "en" else f"{planned} 格中只有 {held} 格") in warning
            drawn = svg_text(page, 0)
            assert "TPU v5e" in drawn and "cdist" in drawn and "float64" in drawn  # each precision holds cells
            assert page.evaluate(RECT_JS, [DOUBT_GREY]) == sum(v.status == am.DOUBTFUL for v in am.views(stopped))
            assert_no_error(page)
            if lang == "en":  # the recorded TPU atlas beside it, chosen in the sidebar, is whole
                page.locator("[data-testid='stSidebar'] [data-testid='stSelectbox'] input").click()
                # has_text alone is a case-blind substring: "Yours: recorded on TPU v5e" would match
                page.get_by_role("option").filter(has_text=re.compile("^Recorded on TPU v5e")).first.click()
                page.wait_for_function(f"() => ({TEXT_COUNT_JS})(['over 240 s']) === 6",
                                       polling=POLL_MS, timeout=60_000)
                page.wait_for_selector(IDLE, timeout=30_000)
                assert page.locator("[data-testid='stAlertContentWarning']").count() == 0
                assert page.evaluate(TEXT_COUNT_JS, [word]) == 0
            page.close()
    finally:
        (atlas_home / OWN).unlink()


def test_the_html_export_opens_with_no_network(tmp_path, browser):  # noqa: F811
    recorded = am.load(RECORDED[0])
    rows = atlas_view.heatmap_rows(recorded)
    path = tmp_path / "atlas.html"
    path.write_text(atlas_html(atlas_heatmap(rows, ["small", "middle", "large"]), recorded), encoding="utf-8")
    context = browser.new_context(viewport={"width": 1400, "height": 1400})
    asked: list[str] = []

    def refuse(route):  # anything but the file itself would need a network
        asked.append(route.request.url)
        route.abort()

    context.route(lambda url: not url.startswith("file:"), refuse)
    page = context.new_page()
    page.goto(path.as_uri())
    page.wait_for_selector("svg.marks, canvas.marks", timeout=30_000)
    assert asked == []
    text = page.inner_text("body")
    assert "Speedup atlas" in text and "Environment" in text
    assert page.locator("table").count() >= len(recorded.precisions()) + 1
    context.close()
