"""The hosted demo as an attacker uses it: `make serve`'s command with no trusted proxy header,
Chromium on loopback (an SSH tunnel or a local proxy looks the same). A forged X-Forwarded-For
makes no new client; a visitor cannot lock the operator out; links and forged results put no
link or image in the page; a closed tab's job is stopped; one client runs one job at a time."""

from __future__ import annotations

import csv
import io
import json
import re
import time
import urllib.parse

import pytest
from _results import make_result
from browser_support import IDLE, POLL_MS, assert_no_error, open_page, run_coroutine, stop_button, tick
from hosted_support import GATED_WORKER, make_serve_command, serve
from test_hostile_records import IMAGE, LINK, insert_raw

from jaxcompare.history.store import Store
from jaxcompare.model.formatting import dumps

pytestmark = pytest.mark.slow  # a minute or more: collected first (conftest)

TOKEN = "operator-secret-2b9e"
RATE = 1
FORMULA = '=HYPERLINK("https://evil.example/","open me")'
EVIL = "a[href^='https://evil.example'], img[src^='https://evil.example']"  # a link or image to it
# Test-only code for the server's processes (hosted_support.serve): the rate limiter's clock is
# read from a file the test writes (its window moves only when the test says), and in a worker
# centered_gram waits for a gate file that never comes, so a job stays running until stopped.
# A closed tab's jobs are stopped after 2 s gone, not the app's 10 s of grace for a blip: the
# closed-tab test waits for the stop, and the grace's length is not what it checks.
SITE = """
import functools
import os
import sys
import time
from pathlib import Path

if any(arg.endswith("streamlit") for arg in sys.argv[:1]):
    from jaxcompare.app import jobs
    from jaxcompare.engine.server import dispatch, settings

    clock = Path(os.environ["JAXCOMPARE_TEST_CLOCK"])
    dispatch.RateLimiter = functools.partial(settings.RateLimiter, clock=lambda: float(clock.read_text()))
    jobs.SESSION_GONE_S = 2.0
""" + GATED_WORKER


def forged_rows(db) -> None:
    """Two results a stranger made, put in the database as an older version let them in."""
    Store(db)
    for n, (case, kind) in enumerate(((LINK, IMAGE), (FORMULA, f"cpu {LINK}"))):
        data = json.loads(dumps(make_result().to_dict()))
        data["id"], data["case"], data["spec"]["case"], data["jax"]["device_kind"] = f"forged-{n}", case, case, kind
        data["env"]["versions"] = {"jax": f"0.{n} {IMAGE}"}
        data["notes"] = [f"note {LINK}"]
        insert_raw(db, data["id"], json.dumps(data), case=case, device_kind=kind, jax_version=f"0.{n} {IMAGE}",
                   created=f"2026-01-0{n + 1}T00:00:00+00:00")


def test_make_serve_keeps_uvicorn_from_taking_the_address_from_x_forwarded_for(monkeypatch):
    # Streamlit builds its uvicorn.Config from the environment `make serve` gives it; uvicorn's
    # proxy-header middleware is then what decides st.context.ip_address.
    import uvicorn

    make_env, _ = make_serve_command(8501, "127.0.0.1")
    seen = {}

    async def app(scope, receive, send):
        seen["client"] = scope["client"]

    scope = {"type": "http", "client": ("127.0.0.1", 50000), "headers": [(b"x-forwarded-for", b"198.51.100.7")]}
    for env, expected in ((make_env, "127.0.0.1"), ({}, "198.51.100.7")):  # uvicorn's default trusts loopback
        monkeypatch.delenv("FORWARDED_ALLOW_IPS", raising=False)
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        config = uvicorn.Config(app)
        config.load()
        run_coroutine(config.loaded_app(dict(scope), None, None))
        assert seen["client"][0] == expected, env


@pytest.fixture(scope="module")
def hosted(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("attacks")
    forged_rows(tmp / "results.sqlite3")
    (tmp / "clock").write_text("0")
    # uvicorn's default, as when Streamlit is started without `make serve` (which turns it off, see
    # the test above): uvicorn then hands the app whatever address X-Forwarded-For says, and the
    # app must not believe it.
    env = {"FORWARDED_ALLOW_IPS": "127.0.0.1,::1", "JAXCOMPARE_MAX_JOBS_PER_MINUTE": str(RATE),
           "JAXCOMPARE_ADMIN_TOKEN": TOKEN,
           "JAXCOMPARE_MAX_JOBS_PER_CLIENT": "1", "JAXCOMPARE_TEST_GATE": str(tmp / "gate"),
           "JAXCOMPARE_TEST_CLOCK": str(tmp / "clock")}
    with serve(tmp, env=env, site=SITE) as url:
        url.gate = tmp / "clock"  # what this module moves: the rate limiter's clock
        yield url


def spoofer(browser, address: str):
    """A browser context that says, in the header uvicorn reads, that it is ``address``."""
    return browser.new_context(viewport={"width": 1400, "height": 1000},
                               extra_http_headers={"X-Forwarded-For": address})


def text(page) -> str:
    """The page's text as a reader sees it (the invisible word joiners that keep URLs text dropped)."""
    return page.locator("[data-testid='stApp']").inner_text().replace("\u2060", "")


@pytest.mark.browser
def test_a_forged_forwarded_for_makes_no_new_client(hosted, browser):
    url = f"{hosted}/Compare?case=matmul&shape=small&timing=quick"
    for run in range(RATE + 1):
        context = spoofer(browser, f"198.51.100.{run + 1}")  # a new address each run: one client all the same
        page = open_page(context, url)
        page.get_by_role("button", name="Run comparison").click()
        if run < RATE:
            page.get_by_text("Saved to history.").wait_for(timeout=180_000)
        else:
            page.get_by_text(re.compile(f"rate limit: at most {RATE} runs a minute")).wait_for(timeout=30_000)
        page.wait_for_selector(IDLE, timeout=60_000)
        context.close()
    log = hosted.log_text()  # it names the client the limit counted: every such visitor is one
    assert "198.51.100" not in log and "client forwarded" in log


def guess(page, token: str, answer: str) -> None:
    """Enter ``token``; once the server has taken it (it empties the box, or removes it on
    unlocking), ``answer`` is shown."""
    box = page.get_by_label("Operator token")
    box.fill(token)
    box.press("Enter")
    page.wait_for_function("() => { const box = document.querySelector(\"input[aria-label='Operator token']\");"
                           " return !box || box.value === ''; }", polling=POLL_MS, timeout=30_000)
    page.wait_for_selector(IDLE, timeout=30_000)
    page.get_by_text(answer).wait_for(timeout=30_000)


@pytest.mark.browser
def test_a_visitor_cannot_lock_the_operator_out(hosted, browser):
    visitor = browser.new_context(viewport={"width": 1400, "height": 1000})  # on the operator's machine
    page = open_page(visitor, f"{hosted}/History")
    for _ in range(5):
        guess(page, "wrong", "That is not the operator token.")
    guess(page, "wrong again", "Too many attempts; try again in a minute.")
    guess(page, TOKEN, "Too many attempts; try again in a minute.")  # this session is done guessing
    assert "Unlocked for this session" not in text(page)
    operator = browser.new_context(viewport={"width": 1400, "height": 1000})  # same machine, a session of its own
    mine = open_page(operator, f"{hosted}/History")
    guess(mine, TOKEN, "Unlocked for this session")
    operator.close()
    visitor.close()


PAGES = ("", "Compare", "Size_sweep", "Pitfalls", "History", "Environment", "Versions", "Atlas")
PARAMS = ("case", "shape", "precision", "device", "timing", "profile", "steps", "largest", "lang")


# Watches the page from its first node: a link or image from the payload counts even if a rerun
# removes it again (the lang warning shows once); so does the payload's text, shown as written.
WATCH = """payloads => {
    window.__evil = 0; window.__quoted = false;
    new MutationObserver(() => {
        // Links to this app's own pages keep the query (evil.example in it): only a link or image *to* it counts.
        window.__evil += document.querySelectorAll("a[href^='https://evil.example'], img[src^='https://evil.example']").length;
        const shown = document.body ? document.body.innerText.replaceAll("\\u2060", "") : "";  // less the word joiners
        window.__quoted = window.__quoted || payloads.some(payload => shown.includes(payload));
    }).observe(document, {childList: true, subtree: true, characterData: true});
}"""


@pytest.mark.browser
def test_link_parameters_show_as_text_on_every_page(hosted, browser):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    for index, name in enumerate(PAGES):
        # Each parameter gets the link on one page and the image on the next: both, on every page.
        values = {key: (LINK, IMAGE)[(index + i) % 2] for i, key in enumerate(PARAMS)}
        if name == "Size_sweep":
            values["largest"] += "A" * 10_000  # a long value is echoed cut, not whole
        page = context.new_page()
        page.add_init_script(f"({WATCH})({json.dumps(sorted(set(values.values()) & {LINK, IMAGE}))})")
        page.goto(f"{hosted}/{name}?{urllib.parse.urlencode(values)}")
        page.wait_for_selector(IDLE, timeout=90_000)
        if name not in ("Versions", "Atlas"):  # these read no link parameters: nothing quotes them, no link may show
            page.wait_for_function("() => window.__quoted",
                                   polling=POLL_MS, timeout=30_000)  # a warning quoted it, as written
        assert page.evaluate("window.__evil") == 0, name
        assert "A" * 100 not in text(page)
        assert_no_error(page)
        page.close()
    context.close()


@pytest.mark.browser
def test_a_forged_result_shows_as_text_and_its_csv_as_text(hosted, browser, tmp_path):
    context = browser.new_context(viewport={"width": 1400, "height": 1400}, accept_downloads=True)
    page = open_page(context, f"{hosted}/History")
    page.locator("[data-testid='stDataFrame']").wait_for(timeout=30_000)
    count = len(Store(hosted.db).list())
    tick(page, count - 1, 1)  # the oldest two rows: the forged ones
    tick(page, count - 2, 2)
    page.get_by_text("Is B faster than A?").wait_for(timeout=30_000)
    page.get_by_text("What differs:").wait_for(timeout=30_000)
    shown = text(page)
    assert LINK in shown and "different cases" in shown
    assert page.locator(EVIL).count() == 0
    page.screenshot(path=str(tmp_path / "forged_history.png"), full_page=True)
    with page.expect_download() as download:
        page.get_by_role("button", name="Selection (CSV)").click()
    with open(download.value.path(), encoding="utf-8") as fh:
        table = {row["id"]: row for row in csv.DictReader(io.StringIO(fh.read()))}
    assert set(table) == {"forged-0", "forged-1"}
    assert table["forged-1"]["case"] == "'" + FORMULA  # a spreadsheet shows it, and runs nothing
    context.close()


def wait_for_log(server, pattern: str, timeout_s: float = 60) -> str:
    """The server log's line matching ``pattern``, once it is written."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = re.search(pattern, server.log_text())
        if found:
            return found.group(0)
        time.sleep(0.2)  # polls a file the server writes; the condition, not the sleep, ends the wait
    raise AssertionError(f"no {pattern!r} in the server log within {timeout_s} s")


@pytest.mark.browser
def test_a_closed_tab_stops_its_job_and_one_client_runs_one_at_a_time(hosted, browser):
    hosted.gate.write_text("1000")  # a fresh rate-limit window for this test's runs
    first = spoofer(browser, "192.0.2.10")
    held = open_page(first, f"{hosted}/Compare?case=centered_gram&timing=quick")
    held.get_by_role("button", name="Run comparison").click()  # held in its worker: it never ends alone
    held.locator("[data-testid='stProgress']").wait_for(timeout=60_000)
    second = spoofer(browser, "192.0.2.11")  # the same client whatever it says
    page = open_page(second, f"{hosted}/Compare?case=matmul&shape=small&timing=quick")
    page.get_by_role("button", name="Run comparison").click()
    page.get_by_text(re.compile(r"you already have 1 measurement\(s\) queued or running")).wait_for(timeout=30_000)
    first.close()  # the tab goes; nobody will see that job's result
    line = wait_for_log(hosted, r"job \w+ \(measure\) stopped: its session \w+ ended[^\n]*")
    wait_for_log(hosted, re.escape(line.split()[1]) + r" \(measure\) cancelled")
    hosted.gate.write_text("2000")  # and a fresh window: the limit here is one run a minute
    page.get_by_role("button", name="Run comparison").click()  # its place is free again
    page.locator("[data-testid='stProgress']").wait_for(timeout=60_000)
    # The last run's refusal stays on the page, faded, until this run's script replaces it.
    page.get_by_text(re.compile(r"you already have 1 measurement")).wait_for(state="detached", timeout=30_000)
    stop_button(page).click()
    second.close()
