"""A real browser against `streamlit run app.py`: the Pitfalls page, in Chinese (a teacher's
class), runs all seven sections at a small shape and draws every chart; a deep link lands on its
section. (The English page: tests/test_pitfalls_page.py.)"""

from __future__ import annotations

import inspect
import os
import re
import sys

import browser_support as bs
import pytest
from support import zh

from jaxcompare.app.charts_profile import BUSY_COLOR, GAP_COLOR

pytestmark = [pytest.mark.browser, pytest.mark.slow]  # slow: 20 s or more, collected first


def section_box(page, pid: str) -> dict:
    """The page region from a section's heading to the main area's next heading (or the page's end): the
    sidebar's headings scroll apart from it."""
    return page.evaluate("""pid => {
        const heads = [...document.querySelectorAll("[data-testid='stMain'] [data-testid='stHeading']")];
        const top = document.getElementById(`pitfall-${pid}`).getBoundingClientRect().top + window.scrollY;
        const next = heads.map(h => h.getBoundingClientRect().top + window.scrollY).find(y => y > top + 5);
        const end = next ?? document.querySelector("[data-testid='stMain']").scrollHeight;
        return {x: 0, y: Math.max(top - 10, 0), width: window.innerWidth, height: end - top};
    }""", pid)


def test_pitfalls_in_chinese_run_all_draws_seven_charts_and_the_size_gap(server, browser, tmp_path):
    page = bs.open_page(browser, f"{server}/Pitfalls?case=centered_gram&shape=200x200&timing=quick&lang=zh",
                        height=1200)
    bs.assert_no_error(page)
    for pid in ("jit", "async", "dtype", "transfer", "size", "tf32", "cache"):
        assert page.locator(f"#pitfall-{pid}").count() == 1, f"no anchor for {pid}"
    page.get_by_role("button", name=zh("Run all pitfalls")).click()
    try:
        page.wait_for_function(f"() => document.querySelectorAll(\"{bs.CHART}\").length >= 7", timeout=180_000)
    except Exception as exc:  # say what the page showed instead
        raise AssertionError(f"seven charts did not show within 180 s; the page said:\n{bs.main_text(page)[-1500:]}"
                             ) from exc
    page.wait_for_selector(bs.IDLE, timeout=60_000)
    text = bs.main_text(page)
    # Beside busy neighbours the traced calls may run slower than the timed ones (CI: 388 µs traced in a
    # 247 µs call); the page then withholds the size section's busy-vs-gap bars and says why.
    apart = zh("Profiled, but not as timed: the device was busy **{busy}** per traced call, longer than the whole "
               "timed call ({seconds}, {range}), so the traced calls ran at another speed and their split into "
               "device time and host overhead is withheld.").split("**")[0]
    charts = page.locator("[data-testid='stVegaLiteChart']").count()
    if apart in text:
        assert charts == 7, charts  # seven pitfall charts, no gap chart
        pitfall_charts, gap_chart = [0, 1, 2, 3, 4, 5, 6], None
    else:
        # Seven pitfall charts, and after the size section's, the busy-vs-gap bars of its two shapes.
        assert charts == 8, charts
        pitfall_charts, gap_chart = [0, 1, 2, 3, 4, 6, 7], 5
    for index in pitfall_charts:
        assert bs.wait_for_chart_marks(page, index, bs.JAX_COLOR) > 0, f"chart {index} drew no JAX dots"
    if gap_chart is not None:
        assert bs.wait_for_chart_marks(page, gap_chart, BUSY_COLOR, mark="rect", at_least=2) == 2
        assert bs.chart_marks(page, gap_chart, GAP_COLOR, mark="rect") == 2
    bs.assert_no_error(page)
    text = bs.main_text(page)
    measured_properly = zh("naive: {naive}; measured properly: {correct}").split("{correct}")[0].split("{naive}")[1]
    assert text.count(measured_properly) >= 7, measured_properly  # each section's verdict, in Chinese
    not_applicable = zh("Not applicable on {backend}: no TF32 here. Both sides compute in full float32, so the "
                        "errors match and the times differ only by noise; the numbers are shown for reference.")
    assert not_applicable.format(backend="CPU") in text
    # Every figure with its range, every lesson judged against it: the effect's words, in Chinese.
    assert text.count(zh(" (95% range {range})").split("{range}")[0].strip()) >= 5
    effects = [zh(w) for w in ("within the noise", "JAX looks {factor}x better", "JAX looks {factor}x worse")]
    assert any(e.split("{factor}")[0] in text for e in effects)
    profiled = zh("Profiled: the device was busy **{busy}** of **{wall}** per call; the gap, **{gap}**, is host "
                  "overhead.").split("**")[0]
    if gap_chart is not None:
        assert text.count(profiled) == 2, profiled  # the size section's two shapes
        gap_svg = page.evaluate("i => document.querySelectorAll(\"[data-testid='stVegaLiteChart'] svg.marks\")[i]"
                                ".textContent", gap_chart)
        assert zh("device busy") in gap_svg
    assert "case=centered_gram" in page.url and "shape=200x200" in page.url and "lang=zh" in page.url
    height = page.evaluate("() => document.querySelector(\"[data-testid='stMain']\").scrollHeight")
    page.set_viewport_size({"width": 1400, "height": min(height + 50, 12_000)})
    page.wait_for_selector(bs.IDLE, timeout=30_000)
    for index in pitfall_charts:  # still drawn after the resize (the width is unchanged: no redraw due)
        assert bs.chart_marks(page, index, bs.JAX_COLOR) > 0, f"chart {index} lost its JAX dots"
    # Pitfall 7's rows name each first call's compile step, in Chinese, in its chart.
    cache_svg = page.evaluate("i => document.querySelectorAll(\"[data-testid='stVegaLiteChart'] svg.marks\")[i]"
                              ".textContent", pitfall_charts[-1])
    assert zh("compiling {time}").split("{time}")[0].strip() in cache_svg
    assert zh("read from the cache in {time}").split("{time}")[0].strip() in cache_svg
    shot = tmp_path / "pitfalls.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 50_000
    section = os.environ.get("JAXCOMPARE_SHOT_DIR") or str(tmp_path)  # where a person looks at it
    page.screenshot(path=f"{section}/pitfall_cache_zh.png", full_page=True,
                    clip=section_box(page, "cache"))
    page.close()


def test_a_deep_link_scrolls_to_its_section(server, browser):
    page = bs.open_page(browser, f"{server}/Pitfalls?case=matmul#pitfall-size", height=900)
    bs.assert_no_error(page)
    heading = page.locator("#pitfall-size")
    heading.wait_for(timeout=10_000)
    # Streamlit scrolls to the fragment once the page has drawn: wait for the heading to be in view.
    page.wait_for_function("""() => {
        const top = document.querySelector('#pitfall-size').getBoundingClientRect().top;
        return top >= 0 && top < window.innerHeight;
    }""", timeout=10_000)
    box = heading.bounding_box()
    assert box is not None and 0 <= box["y"] < 900, f"section heading not in view: {box}"
    assert page.url.endswith("#pitfall-size")  # the page kept the link's URL (no rewrite)
    page.close()


@pytest.mark.serial  # the neighbour's one core is the load it was written for, not other tests'
def test_on_a_busy_machine_a_section_says_so_beside_its_lesson_and_the_summary_counts_it(server, browser, neighbour,
                                                                                         tmp_path):
    """Issue 44: pitfalls measured while another program kept a core busy never said so. One
    section, a small shape, quick timing: the lab's meter must see the neighbour, and the page show it."""
    page = bs.open_page(browser, f"{server}/Pitfalls?case=matmul&shape=200x200&timing=quick", height=1200)
    page.locator(".st-key-run_pitfall_async button").click()
    bs.wait_or_say(page, f"{bs.MAIN} [data-testid='stAlert']:has-text('while this pitfall was timed')",
                   timeout=180_000)
    page.wait_for_selector(bs.IDLE, timeout=60_000)
    assert neighbour.is_running(), "the neighbour stopped before the section was timed"
    bs.assert_no_error(page)
    text = bs.main_text(page)
    assert "1 of 1 pitfalls were timed while the machine was busy" in text
    assert re.search(r"Busy machine: other programs used \d+\.\d\d cores while this pitfall was timed", text)
    assert re.search(r"\| busy \(\d+\.\d\d cores\)|busy \(\d+\.\d\d cores\)", text)  # the summary's Machine cell
    # The note sits in the section it is about, beside its lesson ("How wrong").
    box = section_box(page, "async")
    note = page.locator(f"{bs.MAIN} [data-testid='stAlert']", has_text="while this pitfall was timed").bounding_box()
    scroll = page.evaluate("() => window.scrollY")
    assert box["y"] <= note["y"] + scroll <= box["y"] + box["height"], (box, note)
    shots = os.environ.get("JAXCOMPARE_SHOT_DIR") or str(tmp_path)  # where a person looks at it
    page.screenshot(path=f"{shots}/pitfall_busy.png", full_page=True)
    page.close()


def test_the_tests_beside_a_neighbour_run_in_the_serial_part():
    """conftest's rule: a test that starts a neighbour is marked serial, so `make test` runs it
    alone; beside two test processes its load would not be the one it was written for."""
    tests = {name: f for name, f in vars(sys.modules[__name__]).items() if name.startswith("test_") and callable(f)}
    with_neighbour = [f for f in tests.values() if "neighbour" in inspect.signature(f).parameters]
    assert with_neighbour
    for f in with_neighbour:
        assert any(m.name == "serial" for m in getattr(f, "pytestmark", [])), f.__name__
