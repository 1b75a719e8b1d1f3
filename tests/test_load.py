"""Twenty visitors at once on the hosted demo: 16 sessions on the Runner API inside the server
(tests/load_driver.py) and 4 Chromium sessions, all on the server's one queue, submitting for
JAXCOMPARE_LOAD_S seconds (default 10; JAXCOMPARE_LOAD_S=120 for two minutes).

Every job completes or is refused with a message, no two measurements overlap on the device,
the server's memory stays flat, and every completed result is in History exactly once."""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from pathlib import Path

import pytest
from browser_support import CHROMIUM, CHROMIUM_ARGS, IDLE, POLL_MS, run_coroutine
from hosted_support import PENDING, serve

from jaxcompare.history.store import Store

# Not `slow` (collected first): a serial test runs alone anyway, and in its place by name, after
# test_charts has measured this host's CPU ceilings on a quiet machine, its server reads them
# instead of measuring them beside twenty sessions (and again on later jobs: 11 s of its 50).
pytestmark = pytest.mark.browser

API_SESSIONS, BROWSER_SESSIONS = 16, 4
SECONDS = float(os.environ.get("JAXCOMPARE_LOAD_S", "10"))
MAX_QUEUE = 12  # below the number of sessions, so some requests meet a full queue
REFUSALS = ("the queue is full", "rate limit")
SITE = """
import sys
if any(arg.endswith("streamlit") for arg in sys.argv[:1]):
    import load_driver

    load_driver.start()
"""
# After a click on a freshly loaded page: idle, and showing what became of the request.
ANSWERED = f"""() => document.querySelector("{IDLE}") !== null && (
    !!document.querySelector("[data-testid='stProgress'], [data-testid='stAlert'] [data-testid='stAlertContentError']")
    || document.body.innerText.includes("Saved to history."))"""
SETTLED = f"""() => !document.querySelector("[data-testid='stProgress']") && document.querySelector("{IDLE}") !== null
                    && !!document.querySelector("[data-testid='stBaseButton-primary']:not([disabled])")"""


class Memory:
    """Samples the server process's resident memory (and its workers') until stopped."""

    def __init__(self, pid: int):
        import psutil

        self.proc = psutil.Process(pid)
        self.samples: list[tuple[float, int, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            try:
                own = self.proc.memory_info().rss
                workers = sum(c.memory_info().rss for c in self.proc.children(recursive=True))
            except Exception:  # a worker exiting between listing and reading
                continue
            self.samples.append((time.monotonic(), own, own + workers))

    def __enter__(self) -> Memory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)


async def ready_page(page, url: str) -> None:
    """Load ``url``: idle, its device banner final (the banner's own rerun could swallow a click)."""
    await page.goto(url)
    await page.wait_for_selector(IDLE, timeout=180_000)
    await page.wait_for_function(f"() => !document.body.innerText.includes({PENDING!r})",
                                 polling=POLL_MS, timeout=180_000)
    await page.wait_for_selector(IDLE, timeout=60_000)


async def click_run(page, n: int, outcomes: list[dict], shots: Path) -> bool:
    """Click Run and wait for the page to say what became of it; a stuck page is reported with
    what it showed (and a screenshot), not as a bare timeout."""
    try:
        await page.get_by_role("button", name="Run comparison").click()
        await page.wait_for_function(ANSWERED, polling=POLL_MS, timeout=180_000)
        return True
    except Exception as exc:
        await stuck(page, n, outcomes, shots, exc)
        return False


async def stuck(page, n: int, outcomes: list[dict], shots: Path, exc: Exception) -> None:
    shot = shots / f"stuck_{n}.png"
    await page.screenshot(path=str(shot), full_page=True)
    text = await page.locator("[data-testid='stApp']").inner_text()
    outcomes.append({"session": n, "outcome": "stuck", "message": f"{type(exc).__name__} ({shot}): {text[-500:]}"})


async def browser_session(page, url: str, end: float, outcomes: list[dict], n: int, shots: Path) -> None:
    """Follow the request already made on ``page`` to its end, then load the page again (a new
    session of the same visitor: nothing left from the last try) and run again, until ``end``."""
    app = page.locator("[data-testid='stApp']")
    while True:
        try:
            if await page.locator("[data-testid='stProgress']").count() > 0:  # accepted: queued or running
                await page.wait_for_function(SETTLED, polling=POLL_MS, timeout=600_000)
        except Exception as exc:
            await stuck(page, n, outcomes, shots, exc)
            return
        after = await app.inner_text()
        refused = [r for r in REFUSALS if r in after]
        if "The measurement failed" in after or "Stopped:" in after:
            outcomes.append({"session": n, "outcome": "failed", "message": after[-500:]})
        elif refused:
            outcomes.append({"session": n, "outcome": "refused", "message": refused[0]})
            await page.wait_for_timeout(1000)  # a refused visitor tries again a little later
        elif "Saved to history." in after:
            outcomes.append({"session": n, "outcome": "done"})
        else:  # with a screenshot: the page's words alone did not say what became of the request
            shot = shots / f"unclear_{n}.png"
            await page.screenshot(path=str(shot), full_page=True)
            outcomes.append({"session": n, "outcome": "unclear", "message": f"({shot}) {after[-1500:]}"})
        if time.monotonic() >= end:
            return
        await ready_page(page, url)
        if not await click_run(page, n, outcomes, shots):
            return


async def drive_browsers(url: str, go: Path, outcomes: list[dict], shots: Path) -> float:
    """Open the browser sessions, then start everyone at once (``go``); returns the start time."""
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        contexts = [await browser.new_context(viewport={"width": 1300, "height": 900},
                                              extra_http_headers={"X-Forwarded-For": f"10.8.0.{n}"})
                    for n in range(BROWSER_SESSIONS)]
        precisions = ("x32", "x64")
        urls = [f"{url}/Compare?case=matmul&shape=small&timing=quick&precision={precisions[n % 2]}"
                for n in range(len(contexts))]
        pages = [await ctx.new_page() for ctx in contexts]
        await asyncio.gather(*[ready_page(page, address) for page, address in zip(pages, urls, strict=True)])
        # Each visitor's first request goes in before the driver floods the queue: a browser is
        # slower to come back than the API, so after that it may meet a full queue every time.
        clicked = await asyncio.gather(*[click_run(page, n, outcomes, shots) for n, page in enumerate(pages)])
        started = time.monotonic()
        go.touch()  # the driver's API sessions start now too
        await asyncio.gather(*[browser_session(page, urls[n], started + SECONDS, outcomes, n, shots)
                               for n, page in enumerate(pages) if clicked[n]])
        await browser.close()
    return started


@pytest.mark.timeout(int(SECONDS) + 840)
def test_twenty_sessions_share_the_queue_and_nothing_is_lost(tmp_path):
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"the load test needs Chromium at {CHROMIUM} (make browser installs it)")
    config = {"go": str(tmp_path / "go"), "stop": str(tmp_path / "stop"), "report": str(tmp_path / "report.json"),
              "seconds": SECONDS, "sessions": API_SESSIONS}
    (tmp_path / "driver.json").write_text(json.dumps(config))
    env = {"JAXCOMPARE_MAX_QUEUE": str(MAX_QUEUE), "JAXCOMPARE_TRUSTED_PROXY_HEADER": "X-Forwarded-For",
           "JAXCOMPARE_TEST_LOAD_DRIVER": str(tmp_path / "driver.json")}
    browser_outcomes: list[dict] = []
    with serve(tmp_path, env=env, site=SITE) as url, Memory(url.proc.pid) as memory:
        # The browser pages make the app's Runner; the driver's sessions then use the same one.
        started = run_coroutine(drive_browsers(url, tmp_path / "go", browser_outcomes, tmp_path))
        (tmp_path / "stop").touch()
        deadline = time.monotonic() + 900
        while not os.path.exists(config["report"]):  # the driver's last jobs finish, then it reports
            assert url.proc.poll() is None and time.monotonic() < deadline, url.log_text()[-3000:]
            time.sleep(0.5)
        elapsed = time.monotonic() - started
    report = json.loads((tmp_path / "report.json").read_text())
    assert "error" not in report, report.get("error")
    api, jobs = report["outcomes"], report["jobs"]

    # Every request completed or was refused with a message.
    for outcome in api + browser_outcomes:
        assert outcome["outcome"] in ("done", "refused"), outcome
        if outcome["outcome"] == "refused":
            assert any(r in outcome["message"] for r in REFUSALS), outcome
    # Served, not only refused (a visitor can keep meeting a full queue, but not everyone).
    assert any(o["outcome"] == "done" for o in browser_outcomes), browser_outcomes
    assert len({o["session"] for o in api if o["outcome"] == "done"}) >= API_SESSIONS // 2
    measured = [j for j in jobs.values() if j["kind"] == "measure"]
    assert all(j["status"] == "done" for j in measured), [j for j in measured if j["status"] != "done"]
    assert any(o["outcome"] == "refused" for o in api), "the queue never filled: the test did not load it"

    # One measurement at a time on the device.
    by_device: dict[str | None, list] = {}
    for job in measured:
        by_device.setdefault(job["device"], []).append(tuple(job["window"]))
    for device, windows in by_device.items():
        windows.sort()
        for (_, end), (start, _) in zip(windows, windows[1:], strict=False):
            assert end <= start, f"two measurements overlapped on {device}: {end} > {start}"

    # Nothing lost from History: every completed result is there, once.
    results = {j["result"] for j in measured}
    saved = set(Store(tmp_path / "results.sqlite3").all_ids())
    assert results <= saved, f"{len(results - saved)} completed results missing from History"
    assert len(saved) == len(results)

    # The server's memory stays flat: the last third's peak against the first third's.
    samples = memory.samples
    third = len(samples) // 3
    early, late = max(s[1] for s in samples[:third]), max(s[1] for s in samples[-third:])
    peak, peak_total = max(s[1] for s in samples), max(s[2] for s in samples)
    print(f"\nload: {len(measured)} jobs measured, {sum(o['outcome'] == 'refused' for o in api + browser_outcomes)} "
          f"refused, in {elapsed:.0f} s; server peak RSS {peak / 2**20:.0f} MiB (with workers "
          f"{peak_total / 2**20:.0f} MiB); first third {early / 2**20:.0f} MiB, last third {late / 2**20:.0f} MiB")
    assert late <= 1.25 * early + 64 * 2**20, (early, late)
