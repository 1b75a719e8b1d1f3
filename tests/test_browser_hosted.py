"""The hosted demo as a visitor uses it: `make serve`'s command, Chromium, several visitors
(each browser context is one client, told apart by the trusted proxy's header)."""

from __future__ import annotations

import re

import pytest
from browser_support import IDLE, assert_no_error, open_page, stop_button, tick
from hosted_support import GATED_WORKER, own_address, serve

pytestmark = [pytest.mark.browser, pytest.mark.slow]

TOKEN = "operator-secret-7f3a"
RATE = 2
# Test-only code for the server's processes (hosted_support.serve puts it in a sitecustomize):
# in the server, the Pitfalls page meets an internal error whose details must not reach the page;
# in a worker, centered_gram waits for a gate file, so one visitor's job holds the queue for as
# long as the test needs, however fast the machine. The server's rate limiter gets a clock that
# stands still, so its 60 s window cannot run out while slow runs finish (test_limits checks the
# window itself).
SITE = """
import functools
import os
import sys
import time

if any(arg.endswith("streamlit") for arg in sys.argv[:1]):
    from jaxcompare.app import pitfalls_view
    from jaxcompare.engine.server import dispatch, settings

    dispatch.RateLimiter = functools.partial(settings.RateLimiter, clock=lambda: 0.0)

    def summary_rows(*args, **kwargs):
        raise RuntimeError("secret internal detail 4242")

    pitfalls_view.summary_rows = summary_rows
""" + GATED_WORKER


@pytest.fixture(scope="module")
def hosted(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hosted")
    env = {"JAXCOMPARE_MAX_JOBS_PER_MINUTE": str(RATE), "JAXCOMPARE_ADMIN_TOKEN": TOKEN,
           "JAXCOMPARE_TRUSTED_PROXY_HEADER": "X-Forwarded-For", "JAXCOMPARE_TEST_GATE": str(tmp / "gate")}
    with serve(tmp, env=env, site=SITE) as url:
        url.gate = tmp / "gate"
        yield url


def visitor(browser, address: str):
    """A browser context that is one client: the proxy header carries its address."""
    return browser.new_context(viewport={"width": 1400, "height": 1000},
                               extra_http_headers={"X-Forwarded-For": f"203.0.113.9, {address}"})


def text(page) -> str:
    return page.locator("[data-testid='stApp']").inner_text()


def run_compare(page) -> None:
    page.get_by_role("button", name="Run comparison").click()


def test_the_cases_file_box_is_disabled(hosted, browser):
    context = visitor(browser, "10.0.0.1")
    page = open_page(context, f"{hosted}/Compare")
    page.get_by_text("Your own cases").click()
    box = page.get_by_placeholder("disabled on this server")
    box.wait_for(timeout=30_000)
    assert box.is_disabled()
    assert "Loading your own case files is disabled on this server" in text(page)
    assert page.get_by_placeholder("~/my_cases.py").count() == 0
    context.close()


def test_an_unexpected_error_shows_a_generic_message(hosted, browser):
    context = visitor(browser, "10.0.0.1")
    page = open_page(context, f"{hosted}/Pitfalls")
    page.get_by_text("This app has encountered an error").wait_for(timeout=30_000)
    assert "secret internal detail" not in page.content()
    assert "RuntimeError" not in text(page) and "Traceback" not in text(page)
    assert "secret internal detail 4242" in hosted.log_text()  # the details are in the log
    context.close()


def test_a_sweep_longer_than_the_cap_is_refused_with_the_limit_named(hosted, browser):
    context = visitor(browser, "10.0.0.1")
    page = open_page(context, f"{hosted}/Size_sweep?case=matmul&steps=10&timing=quick")
    # Said beside Run, which is off, before any click (a walk-through had learnt it only from the click).
    page.get_by_text("a sweep of 10 sizes is longer than this server allows (8)").wait_for(timeout=30_000)
    assert page.get_by_role("button", name="Run sweep").is_disabled()
    assert_no_error(page)
    context.close()


def test_the_rate_limit_holds_after_the_limit_and_after_a_reload(hosted, browser, tmp_path):
    context = visitor(browser, "10.0.0.2")
    url = f"{hosted}/Compare?case=matmul&shape=small&timing=quick"
    for done in range(1, RATE + 1):
        # A fresh page (a new session of the same client) each time, so "Saved to history."
        # can only be this run's and not the last one's, still on the page.
        page = open_page(context, url)
        run_compare(page)
        page.get_by_text("Saved to history.").wait_for(timeout=180_000)
        page.wait_for_selector(IDLE, timeout=60_000)
        assert text(page).count("rate limit") == 0, done
        page.close()
    page = open_page(context, url)
    run_compare(page)
    message = f"rate limit: at most {RATE} runs a minute on this server"
    page.get_by_text(re.compile(re.escape(message))).wait_for(timeout=30_000)
    page.screenshot(path=str(tmp_path / "rate_limit.png"), full_page=True)
    page.reload()
    page.wait_for_selector(IDLE, timeout=60_000)
    assert message not in text(page)
    run_compare(page)  # a fresh session of the same client: still limited
    page.get_by_text(re.compile(re.escape(message))).wait_for(timeout=30_000)
    other = open_page(visitor(browser, "10.0.0.3"), f"{hosted}/Compare?case=matmul&shape=small&timing=quick")
    run_compare(other)  # another client is not
    other.get_by_text("Saved to history.").wait_for(timeout=180_000)
    other.context.close()
    context.close()


def test_a_second_visitor_sees_the_queue_and_stop_frees_the_place_at_once(hosted, browser, tmp_path):
    first = open_page(visitor(browser, "10.0.0.4"), f"{hosted}/Compare?case=centered_gram&shape=small&timing=quick")
    run_compare(first)  # held at the gate in its worker until the test opens it
    first.locator("[data-testid='stProgress']").wait_for(timeout=60_000)
    second = open_page(visitor(browser, "10.0.0.5"), f"{hosted}/Compare?case=matmul&shape=small&timing=quick")
    run_compare(second)
    queued = second.get_by_text(re.compile(r"queued behind 1 other measurement\(s\), about \d+ s"))
    queued.wait_for(timeout=30_000)
    second.screenshot(path=str(tmp_path / "queued.png"), full_page=True)
    stop_button(second).click()
    # Freed at once: the message comes while the first visitor's measurement is still held.
    try:
        second.get_by_text("Stopped: cancelled before it started").wait_for(timeout=30_000)
    finally:
        second.screenshot(path=str(tmp_path / "stopped.png"), full_page=True)
    assert first.locator("[data-testid='stProgress']").count() == 1
    assert "Saved to history." not in text(first)
    hosted.gate.touch()
    first.get_by_text("Saved to history.").wait_for(timeout=120_000)
    first.context.close()
    second.context.close()


def test_history_offers_no_delete_or_import_without_the_token(hosted, browser, tmp_path):
    context = visitor(browser, "10.0.0.6")
    page = open_page(context, f"{hosted}/History")
    page.locator("[data-testid='stDataFrame']").wait_for(timeout=30_000)
    tick(page, 0, 1)  # the first row of the History table
    assert page.get_by_role("button", name=re.compile("Delete")).count() == 0
    assert page.locator("[data-testid='stFileUploader']").count() == 0
    assert "read-only for visitors" in text(page) and str(hosted.db) not in text(page)
    page.screenshot(path=str(tmp_path / "history_visitor.png"), full_page=True)

    box = page.get_by_label("Operator token")
    box.fill("wrong")
    box.press("Enter")
    page.get_by_text("That is not the operator token.").wait_for(timeout=30_000)
    page.get_by_label("Operator token").fill(TOKEN)
    page.get_by_label("Operator token").press("Enter")
    page.get_by_text("Unlocked for this session").wait_for(timeout=30_000)
    page.wait_for_selector(IDLE, timeout=30_000)
    page.get_by_role("button", name="Delete 1 selected").wait_for(timeout=30_000)
    # The uploader is drawn after the delete button: counted once it is there (a clean clone counted it 0).
    page.locator("[data-testid='stFileUploader']").wait_for(timeout=30_000)
    assert page.locator("[data-testid='stFileUploader']").count() == 1
    page.screenshot(path=str(tmp_path / "history_operator.png"), full_page=True)
    context.close()


def test_a_local_server_on_a_reachable_address_refuses_case_files(browser, tmp_path):
    address = own_address()
    if address is None:
        pytest.skip("this machine has no non-loopback address to listen on")
    with serve(tmp_path, address=address, hosted=False) as url:
        context = browser.new_context()
        page = open_page(context, f"{url}/Compare")
        page.get_by_text("Your own cases").click()
        page.get_by_placeholder("disabled on this server").wait_for(timeout=30_000)
        assert page.get_by_placeholder("~/my_cases.py").count() == 0
        context.close()
