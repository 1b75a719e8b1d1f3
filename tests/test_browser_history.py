"""A real browser on the History page: seeded results in the server's database, tick two rows,
see the verdict and both comparison charts drawn."""

from __future__ import annotations

import dataclasses

import pytest
from _results import make_result
from browser_support import CHART, IDLE, JAX_COLOR, assert_no_error, chart_count, tick, wait_for_chart_marks

from jaxcompare.history.store import Store

pytestmark = pytest.mark.browser


def seed(db) -> list:
    """A (older) and B (2x faster JAX, newer JAX version) of one case, and C: another case."""
    a = dataclasses.replace(make_result(jax_s=2e-4), id="browser-a", created="2026-01-01T10:00:00+00:00")
    b = dataclasses.replace(make_result(jax_s=1e-4), id="browser-b", created="2026-01-02T10:00:00+00:00",
                            env={**a.env, "versions": {"jax": "0.11.0"}})
    c = dataclasses.replace(make_result("cumsum", (1000,), "x64"), id="browser-c",
                            created="2026-01-03T10:00:00+00:00")
    Store(db).import_docs([r.to_dict() for r in (a, b, c)])
    return [a, b, c]


def test_history_select_two_runs_shows_verdict_and_charts(fresh_server, browser, tmp_path):
    server = fresh_server  # an empty database: the table holds the three seeded rows alone
    seed(server.db)
    page = browser.new_page(viewport={"width": 1400, "height": 2400})
    page.goto(f"{server}/History")
    page.wait_for_selector("[data-testid='stDataFrame']", timeout=60_000)
    page.wait_for_selector(IDLE, timeout=60_000)
    assert_no_error(page)
    assert "3 saved" in page.locator("[data-testid='stApp']").inner_text()

    tick(page, 1, selected=1)  # newest first: C, B, A
    tick(page, 2, selected=2)
    page.get_by_text("B is 2.00x faster than A").wait_for(timeout=30_000)
    page.wait_for_selector(CHART, timeout=30_000)
    text = page.locator("[data-testid='stApp']").inner_text()
    assert "2 selected" in text and "Is B faster than A?" in text and "jax — → 0.11.0" in text
    assert chart_count(page, 2) == 2
    for index in range(2):  # run B is drawn in #E4572E in both charts
        assert wait_for_chart_marks(page, index, JAX_COLOR) > 0, f"chart {index} drew no marks for run B"
    assert_no_error(page)
    shot = tmp_path / "history.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 20_000
    page.close()
