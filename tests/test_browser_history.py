"""A real browser on the History page: seeded results in the server's database, tick two rows,
see the verdict and both comparison charts drawn; tick one, open it in Compare."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import math
import re
import uuid

import pytest
from _results import make_result, stats
from browser_support import (
    CHART,
    IDLE,
    JAX_COLOR,
    MAIN,
    assert_no_error,
    chart_count,
    main_text,
    open_page,
    tick,
    wait_for_chart_marks,
)
from test_browser_doubt import DATA, FACTOR, METRIC, _spread, tile

from jaxcompare import Result
from jaxcompare.analysis.trust import JAX_FASTER, direction, trusted
from jaxcompare.history.store import Store

pytestmark = pytest.mark.browser


def seed(db) -> list:
    """A (older) and B (2x faster JAX, newer JAX version, NumPy timed both ways) of one case, and C:
    another case."""
    a = dataclasses.replace(make_result(jax_s=2e-4), id="browser-a", created="2026-01-01T10:00:00+00:00")
    b = dataclasses.replace(make_result(jax_s=1e-4), id="browser-b", created="2026-01-02T10:00:00+00:00",
                            env={**a.env, "versions": {"jax": "0.11.0"}}, numpy_kept=stats(3e-4))
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
    assert "NumPy with freed memory kept: A — → B 300 µs" in text
    assert chart_count(page, 2) == 2
    for index in range(2):  # run B is drawn in #E4572E in both charts
        assert wait_for_chart_marks(page, index, JAX_COLOR) > 0, f"chart {index} drew no marks for run B"
    assert_no_error(page)
    shot = tmp_path / "history.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 20_000
    page.close()


def saved_doubtful(db) -> list:
    """Recorded results not trusted (test_browser_doubt's), saved as History keeps them, newest now:
    the 64x64 matmul measured busy (no side, break-even not known) and the same made 20x with a
    range too wide but wholly above 1x (JAX faster for sure, break-even a range of calls)."""
    now = dt.datetime.now(dt.UTC).isoformat()  # newest: History's first row (its table is newest first)
    base = Result.from_dict(json.loads((DATA / "result-v1-third-side.json").read_text()))
    wide = dataclasses.replace(base, numpy_runtime=_spread(20 * base.jax.runtime.median_s, 3.0), load={})
    run = uuid.uuid4().hex[:8]  # the session's server keeps every module's results: ids of this run's own
    results = [dataclasses.replace(base, id=f"reopen-{run}-busy", created=now),
               dataclasses.replace(wide, id=f"reopen-{run}-wide", created=now)]  # busy sorts first
    assert not any(trusted(r) for r in results) and direction(wide).side == JAX_FASTER
    Store(db).import_docs([r.to_dict() for r in results])
    return results


def test_a_saved_result_set_aside_reopens_in_compare_without_a_bare_figure(server, browser):
    """History's "Open in Compare" shows a saved run's full Compare view, and an untrusted one's tiles
    carry their doubt: a range (never the point figure) and a break-even not known or a range."""
    busy, wide = saved_doubtful(server.db)
    page = open_page(browser, f"{server}/History", height=1600)
    tick(page, 0, selected=1)  # newest first: the busy run
    page.locator(MAIN).get_by_role("link", name="Open in Compare").click()
    page.wait_for_url(re.compile(r"/Compare\?"), timeout=30_000)
    for result, break_even in ((busy, "not known"), (wide, r"[\d,]+–[\d,]+ calls")):
        if result is wide:
            page.goto(f"{server}/Compare?result={result.id}")
        page.locator(METRIC).first.wait_for(timeout=60_000)
        page.wait_for_selector(IDLE, timeout=60_000)
        assert_no_error(page)
        text = main_text(page)
        assert "A saved run" in text and "No verdict from this run" in text, text[:800]
        value, detail = tile(page, "Speedup")
        assert re.fullmatch(rf"{FACTOR}–{FACTOR}", value) and f"{result.speedup:.2f}x" not in value + detail, \
            (value, detail)
        shown = tile(page, "Break-even")[0]
        assert re.fullmatch(break_even, shown), shown
        calls = result.break_even_calls  # the advice words the break-even as the tile does
        if calls is not None and math.isfinite(calls):
            assert f"({math.ceil(calls):,} calls to break even)" not in text
            assert ("calls to break even is not known" in text) == (shown == "not known"), text
        assert f"result={result.id}" in page.url  # a reload shows it again
    page.goto(f"{server}/Compare?result=no-such-run")
    page.wait_for_selector(IDLE, timeout=60_000)
    page.get_by_text("No saved result with the id no-such-run can be opened").wait_for(timeout=30_000)
    assert_no_error(page)
    assert page.get_by_role("button", name="Run comparison").is_enabled()
    page.close()
