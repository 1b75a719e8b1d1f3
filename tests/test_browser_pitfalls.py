"""A real browser against `streamlit run app.py`: a deep link to the Pitfalls page lands on its
section, and a section timed beside a busy neighbour says so. (The run of all eight sections, in
English under AppTest and in Chinese in Chromium: tests/test_pitfalls_page.py.)"""

from __future__ import annotations

import inspect
import os
import re
import sys

import browser_support as bs
import pytest

pytestmark = pytest.mark.browser


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


def test_a_deep_link_scrolls_to_its_section(server, browser):
    page = bs.open_page(browser, f"{server}/Pitfalls?case=matmul#pitfall-size", height=900)
    bs.assert_no_error(page)
    heading = page.locator("#pitfall-size")
    heading.wait_for(timeout=10_000)
    # Streamlit scrolls to the fragment once the page has drawn: wait for the heading to be in view.
    page.wait_for_function("""() => {
        const top = document.querySelector('#pitfall-size').getBoundingClientRect().top;
        return top >= 0 && top < window.innerHeight;
    }""", polling=bs.POLL_MS, timeout=10_000)
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
    shots = os.environ.get("JAXCOMPARE_TEST_SHOT_DIR") or str(tmp_path)  # where a person looks at it
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
