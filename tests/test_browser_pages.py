"""A real browser on the paths no other test drives: Home, Size sweep and Environment loading and
working; a worker SIGKILLed in the middle of a measurement; Stop on a running job; and the History
page's "Selection (JSON)" download read back into a fresh database."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import signal
import time

import psutil
import pytest
from _results import make_result
from browser_support import (
    CHART,
    IDLE,
    JAX_COLOR,
    MAIN,
    NUMPY_COLOR,
    POLL_MS,
    assert_no_error,
    chart_count,
    chart_marks,
    cut_cells,
    hollow_marks,
    main_text,
    open_page,
    roofline_marks,
    run_sweep,
    stop_button,
    table_count,
    tick,
    wait_for_chart_marks,
)

from jaxcompare.history.store import Store

pytestmark = [pytest.mark.browser, pytest.mark.slow]

METRIC = "[data-testid='stMetric']"
PROGRESS = "[data-testid='stProgress']"
# Compare with a workload that measures for several seconds (thorough timing, 1000x1000), so
# there is time to kill its worker or press Stop while it runs.
LONG_RUN = "/Compare?case=centered_gram&shape=large&timing=thorough"


def poll_until(condition, timeout_s: float, what: str):
    """Poll a condition outside the page (a process's state) until it holds; its value."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}")
        time.sleep(0.05)  # a poll interval, not a wait for something to happen


def worker_processes(server_pid: int) -> list[psutil.Process]:
    """The server's worker processes (engine/server/process.py starts them with `python -c`): x32 and x64."""
    out = []
    for child in psutil.Process(server_pid).children(recursive=True):
        try:
            if "jaxcompare.engine.worker.serve import serve" in " ".join(child.cmdline()):
                out.append(child)
        except psutil.NoSuchProcess:
            continue
    return out


def cpu_seconds(proc: psutil.Process) -> float:
    try:
        times = proc.cpu_times()
    except psutil.NoSuchProcess:
        return 0.0
    return times.user + times.system


def measuring_worker(server_pid: int, before: dict[int, float]) -> psutil.Process:
    """The worker that is measuring: the one that burnt a second of CPU since ``before``."""
    def busy():
        for proc in worker_processes(server_pid):
            if cpu_seconds(proc) - before.get(proc.pid, 0.0) >= 1.0:
                return proc
        return None

    return poll_until(busy, 60, "a worker process to start measuring")


def start_long_run(page) -> None:
    """Press Run on LONG_RUN and wait until the page shows it measuring (not queued, and past
    the worker's start: a Stop then reaches a running measurement)."""
    page.get_by_role("button", name="Run comparison").click()
    page.locator(PROGRESS).wait_for(timeout=30_000)
    stop_button(page).wait_for(timeout=30_000)
    measuring = page.locator(PROGRESS).filter(has_not_text="Starting the worker")
    measuring.filter(has_not_text="Waiting in the device queue").filter(has_not_text="queued behind").wait_for(
        timeout=60_000)
    # A running job says its time so far and what is left of its estimate, or that it is taking longer.
    said = page.locator(PROGRESS).inner_text()
    assert re.search(r"· \d+ s, (about \d+(\.\d)? (s|min) left|longer than the .+ expected)", said), said


def run_small_quick(page) -> None:
    """In the same page (same session): pick the small shape and quick timing, run, and wait for
    the headline figures of that run."""
    page.get_by_role("radio", name="Small · 10x10").click()
    page.wait_for_function("() => location.search.includes('shape=small')", polling=POLL_MS, timeout=30_000)
    page.get_by_role("radio", name="Quick", exact=True).click()
    page.wait_for_function("() => location.search.includes('timing=quick')", polling=POLL_MS, timeout=30_000)
    page.wait_for_selector(IDLE, timeout=30_000)
    run = page.get_by_role("button", name="Run comparison")
    assert run.is_enabled(), "Run comparison stayed disabled after the last run ended"
    run.click()
    page.wait_for_function(f"() => document.querySelectorAll(\"{METRIC}\").length == 6",
                           polling=POLL_MS, timeout=120_000)
    page.wait_for_selector(IDLE, timeout=60_000)
    text = main_text(page)
    # The text itself in the message: pytest cuts a long one's middle, where the caption sits (seen once in
    # a clean clone's parallel part, not again alone).
    assert "shape 10x10" in text and "quick timing" in text, f"the result shown is not the new run's: {text[:1500]}"
    assert "Saved to history." in text


# --- Home, Environment, Size sweep -----------------------------------------------------------------------
def test_home_loads_names_the_device_and_links_every_page(server, browser):
    page = open_page(browser, f"{server}/", height=1800)
    # The banner says which device once the x32 worker reports (CPU here, a GPU or TPU elsewhere).
    page.get_by_text(re.compile(r"Measuring on|No GPU or TPU found")).first.wait_for(timeout=60_000)
    page.wait_for_selector(IDLE, timeout=30_000)
    assert_no_error(page)
    text = main_text(page)
    assert "Is the JAX port of a NumPy/SciPy function really faster, and when?" in text
    assert "Checking which device" not in text
    main = page.locator(MAIN)
    for label in ("Compare", "Size sweep", "Pitfalls", "History", "Environment", "JAX versions"):
        assert main.get_by_role("link", name=label).count() == 1, f"no card links to {label}"
    page.close()


def test_environment_shows_both_workers(server, browser):
    page = open_page(browser, f"{server}/Environment", height=1800)
    page.get_by_text("Workers and devices").wait_for(timeout=30_000)
    # Until both workers report, the page says it is waiting; then it draws their tables.
    page.wait_for_function(f"""() => {{
        const text = document.querySelector("{MAIN}").innerText;
        return !text.includes("Waiting for the workers") && !text.includes("Asking the x32 and x64 workers");
    }}""", polling=POLL_MS, timeout=90_000)
    page.wait_for_selector(IDLE, timeout=30_000)
    assert_no_error(page)
    assert "could not report" not in main_text(page)
    # Versions, the workers table, the devices table and BLAS at least; CPU and memory, and the
    # environment variables, as static tables whose cells wrap: a platform string or path whole.
    assert page.locator("[data-testid='stDataFrame']").count() >= 4
    tables = page.locator("[data-testid='stTable']")
    assert table_count(page, 2) == 2 and "Platform" in tables.first.inner_text()
    assert [cut_cells(tables.nth(i)) for i in range(2)] == [[], []]
    with page.expect_download() as download:
        page.get_by_role("button", name="Environment (JSON)").click()
    doc = json.loads(download.value.path().read_text())
    workers = doc["workers"]
    assert set(workers) == {"x32", "x64"}
    # Each worker runs in its own precision: the x64 one with jax_enable_x64 on, the x32 one off.
    assert workers["x32"]["jax"]["x64_enabled"] is False and workers["x32"]["jax"]["default_float"] == "float32"
    assert workers["x64"]["jax"]["x64_enabled"] is True and workers["x64"]["jax"]["default_float"] == "float64"
    assert all(w["jax"]["devices"] for w in workers.values()), "a worker reported no devices"
    page.close()


def test_size_sweep_runs_and_draws_the_crossover(server, browser):
    page = open_page(browser, f"{server}/Size_sweep?case=matmul&steps=3&largest=100x100&timing=quick", height=2600)
    run_sweep(page, "10x10 → 32x32 → 100x100: 3 measurement(s).", 3)  # the URL's plan
    assert_no_error(page)
    text = main_text(page)
    assert "The sweep stopped" not in text and "All 3 measurements saved to history." in text
    # The crossover and best-speedup figures, and the table of every size.
    metrics = page.locator(METRIC)
    assert metrics.count() == 2
    crossover = metrics.filter(has_text="Crossover (x32)")
    assert crossover.count() == 1 and "not yet" not in crossover.inner_text()
    best = metrics.filter(has_text="Best trusted speedup").inner_text()
    # The table of every size: a row each, whatever set a size aside said in full, never cut off.
    table = page.locator("[data-testid='stTable']")
    # One table; a busy browser can still show the last rerun's stale copy beside it for a moment.
    page.wait_for_function("() => document.querySelectorAll(\"[data-testid='stTable']\").length === 1",
                           polling=POLL_MS, timeout=15_000)
    assert table.locator("tbody tr").count() == 3
    assert cut_cells(table) == []
    # Runtime, speedup, one-off share and roofline charts, each with a mark per size inside its plot.
    assert chart_count(page, 4) == 4
    assert wait_for_chart_marks(page, 0, JAX_COLOR, mark="symbol", at_least=3) == 3  # JAX dot per size
    assert chart_marks(page, 0, NUMPY_COLOR, mark="symbol") == 3  # NumPy dot per size
    assert wait_for_chart_marks(page, 1, JAX_COLOR, mark="symbol", at_least=3) == 3  # x32 speedup per size
    # Doubtful sizes are hollow; the headline counts them and never leads with one (issue 23).
    doubtful = hollow_marks(page, 1)
    if doubtful:
        assert f"{doubtful} of 3 sizes set aside" in text, text
    else:
        assert "sizes set aside" not in text  # the chart's subtitle explains hollow dots always
    if doubtful == 3:
        # No verdict, or only which side is faster where a size's whole range lies on one side of 1x.
        assert re.search(r"Best trusted speedup\s+—", best), best
        assert "No size could be trusted" in text or " is faster " in text, text
    else:  # the best trusted speedup, with its 95% range under it
        assert re.search(r"Best trusted speedup\s+\d+\.\d\dx\s+95%: \d+\.\d\dx–\d+\.\d\dx", best), best
    assert wait_for_chart_marks(page, 2, JAX_COLOR, mark="rect", at_least=3) == 3  # XLA compile share bars
    # The roofline: one shared CPU roof and its ridge, and each side's path through the 3 sizes.
    assert roofline_marks(page, 3) == {"roofs": 1, "ridges": 1, "numpy": 3, "jax": 3}
    saved = {row["shape"] for row in Store(server.db).list(case="matmul")}
    assert {"10x10", "32x32", "100x100"} <= saved, f"the sweep's points were not all saved: {saved}"
    page.close()


# --- a worker killed mid-measurement, and Stop --------------------------------------------------------
def test_a_worker_killed_mid_measurement_is_reported_and_replaced(server, browser):
    page = open_page(browser, f"{server}{LONG_RUN}", height=1800)
    before = {proc.pid: cpu_seconds(proc) for proc in worker_processes(server.pid)}
    start_long_run(page)
    worker = measuring_worker(server.pid, before)
    assert stop_button(page).is_visible(), "the run ended before the worker was killed"
    os.kill(worker.pid, signal.SIGKILL)

    died = page.locator("[data-testid='stAlert']").filter(has_text="the worker process died")
    died.wait_for(timeout=60_000)
    page.wait_for_selector(IDLE, timeout=30_000)
    message = died.inner_text()
    assert "The measurement failed" in message and "exit code -9" in message  # SIGKILL, said as such
    assert "a fresh worker will be started for the next job" in message
    assert_no_error(page)
    assert page.locator(METRIC).count() == 0  # no result from the killed run
    assert not worker.is_running() or worker.status() == psutil.STATUS_ZOMBIE

    run_small_quick(page)  # the next run, in the same page, gets a fresh worker and succeeds
    assert "the worker process died" not in main_text(page), "the old failure is still shown"
    assert worker.pid not in {proc.pid for proc in worker_processes(server.pid)}
    assert_no_error(page)
    page.close()


def test_stop_a_running_comparison_then_run_again(server, browser):
    page = open_page(browser, f"{server}{LONG_RUN}", height=1800)
    start_long_run(page)
    stop_button(page).click()
    stopped = page.locator("[data-testid='stAlert']").filter(has_text="Stopped:")
    stopped.wait_for(timeout=60_000)
    page.wait_for_selector(IDLE, timeout=30_000)
    assert "cancelled while running; the worker was restarted" in stopped.inner_text()
    assert page.locator(METRIC).count() == 0  # the stopped run left no result
    assert page.locator(PROGRESS).count() == 0 and stop_button(page).count() == 0
    assert_no_error(page)

    run_small_quick(page)
    assert "Stopped:" not in main_text(page), "the old Stopped message is still shown"
    assert_no_error(page)
    page.close()


# --- History: the selection's JSON download, imported back -------------------------------------------
def seed_history(db) -> list:
    a = dataclasses.replace(make_result(jax_s=3e-4), id="pages-a", created="2026-02-01T10:00:00+00:00")
    b = dataclasses.replace(make_result("cumsum", (1000,), "x64"), id="pages-b", created="2026-02-02T10:00:00+00:00")
    c = dataclasses.replace(make_result(jax_s=1.5e-4, numpy_s=2e-3), id="pages-c",
                            created="2026-02-03T10:00:00+00:00")
    Store(db).import_docs([r.to_dict() for r in (a, b, c)])
    return [a, b, c]


def test_history_selection_json_imports_back_unchanged(fresh_server, browser, tmp_path):
    # Its own server: rows are ticked by position, and the shared one's results could push them off the table.
    server = fresh_server
    a, b, c = seed_history(server.db)
    page = open_page(browser, f"{server}/History", height=2400)
    page.wait_for_selector("[data-testid='stDataFrame']", timeout=60_000)
    assert_no_error(page)
    # Rows are listed newest first, as Store.list orders them; other tests' results may be there too.
    order = [row["id"] for row in Store(server.db).list()]
    tick(page, order.index(a.id), selected=1)
    tick(page, order.index(c.id), selected=2)  # A and C, not B between them
    page.wait_for_selector(CHART, timeout=30_000)
    with page.expect_download() as download:
        page.get_by_role("button", name="Selection (JSON)").click()
    text = download.value.path().read_text()
    assert_no_error(page)
    page.close()

    assert [r["id"] for r in json.loads(text)["results"]] == [a.id, c.id]  # oldest first, B left out
    fresh = Store(tmp_path / "fresh.sqlite3")
    assert fresh.import_json(text, source="download") == (2, 0)
    back = {r.id: r for r in fresh.load([a.id, c.id])}
    for seeded in (a, c):
        got = back[seeded.id]
        assert got.jax.runtime.samples_s == seeded.jax.runtime.samples_s
        assert got.numpy_runtime.samples_s == seeded.numpy_runtime.samples_s
        assert got.speedup == seeded.speedup and got.jax.compile.median_s == seeded.jax.compile.median_s
        assert got.to_dict() == seeded.to_dict()
