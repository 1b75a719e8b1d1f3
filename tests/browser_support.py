"""Shared browser-test plumbing: `streamlit run app.py` on a free port and headless Chromium.

The fixtures (`server`, `fresh_server`, `browser` over the process's `chromium`) reach every test module
through conftest's `pytest_plugins`; the helpers are imported (`import browser_support as bs`)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from support import ROOT, zh

# Chromium's headless shell first: the same Blink without the full browser's UI layer, and a fifth
# less CPU a page here (a browser module alone: 19.6 -> 15.6 core-s; RESULTS.md). Any Chromium will do.
CHROMIUM = (os.environ.get("JAXCOMPARE_CHROMIUM") or shutil.which("chromium-headless-shell")
            or shutil.which("chromium") or "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
IDLE = "[data-testid='stApp'][data-test-script-state='notRunning']"
MAIN = "[data-testid='stMain']"
CHART = "[data-testid='stVegaLiteChart'] canvas, [data-testid='stVegaLiteChart'] svg"
ROW_PX = 35  # st.dataframe's default row (and header) height
# wait_for_function's polling, in ms: by default it evaluates every animation frame, 60 times a second, and a
# page's innerText each time kept its renderer at 0.075 cores for as long as a test waited (0.01 polled at 250 ms).
POLL_MS = 100


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Server(str):
    """A running `streamlit run`: its base URL (a plain str to f-strings), its process (its
    workers are its children), log file and results database."""

    proc: subprocess.Popen
    log: Path
    db: Path
    gate: Path  # for a test's own use

    @property
    def pid(self) -> int:
        return self.proc.pid

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")


def wait_until_serving(url: str, proc: subprocess.Popen, log_path: Path, *, timeout_s: float) -> None:
    """Poll a starting `streamlit run` until its health check answers; its log if it exits or
    takes longer than ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read() == b"ok":
                return
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"streamlit did not start:\n{log_path.read_text()}")
        time.sleep(0.25)  # polling a process that is starting up; nothing to wait on


def streamlit_command(script: str, port: int, address: str) -> list[str]:
    """`streamlit run SCRIPT`, headless, on ``address``:``port``, with this interpreter's streamlit."""
    return [str(Path(sys.executable).with_name("streamlit")), "run", script, "--server.headless", "true",
            "--server.port", str(port), "--server.address", address, "--browser.gatherUsageStats", "false"]


def server_env(tmp: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """A test server's environment: this process's, JAX on the CPU unless it says otherwise, the
    results database in ``tmp``, this checkout importable; then ``extra``."""
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "JAX_PLATFORMS": os.environ.get("JAX_PLATFORMS", "cpu"),
            "JAXCOMPARE_DB": str(tmp / "results.sqlite3"), "PYTHONUNBUFFERED": "1", "PYTHONPATH": path,
            **(extra or {})}


@contextlib.contextmanager
def run_server(tmp: Path, port: int, command: list[str], env: dict[str, str],
               address: str = "127.0.0.1") -> Iterator[Server]:
    """Run ``command`` (a `streamlit run` on ``port``) until the block ends, logging to
    tmp/streamlit.log; then stop it and its workers (its process group)."""
    log_path = tmp / "streamlit.log"
    with log_path.open("w") as log:
        proc = subprocess.Popen(command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)
        host = f"[{address}]" if ":" in address else address
        url = Server(f"http://{host}:{port}")
        url.proc, url.log, url.db = proc, log_path, Path(env["JAXCOMPARE_DB"])
        try:
            wait_until_serving(url, proc, log_path, timeout_s=90)
            yield url
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)


@contextlib.contextmanager
def streamlit_run(tmp: Path, script: str = "app.py", *, address: str = "127.0.0.1",
                  env: dict[str, str] | None = None) -> Iterator[Server]:
    """`streamlit run SCRIPT` in local mode on a free port of ``address`` until the block ends."""
    port = free_port()
    with run_server(tmp, port, streamlit_command(script, port, address), server_env(tmp, env), address) as url:
        yield url


@pytest.fixture(scope="session")
def server(tmp_path_factory):
    """`streamlit run app.py` on a free loopback port, shared by every module (a server and its
    workers take seconds to start); always stopped (with its workers). Its database keeps every
    module's results: a test that needs it empty uses `fresh_server`."""
    with streamlit_run(tmp_path_factory.mktemp("server")) as url:
        yield url


@pytest.fixture(scope="module")
def fresh_server(tmp_path_factory):
    """A `server` of the module's own, on an empty database (for tests that count or place rows)."""
    with streamlit_run(tmp_path_factory.mktemp("fresh_server")) as url:
        yield url


PENDING = "Checking which device the measurements will run on"
# The same banner on a Chinese page (?lang=zh): open_page waits for either to go.
PENDING_ZH = zh(PENDING + "…").rstrip("…")


def open_page(opener, url: str, *, height: int | None = None, timeout: float = 90_000):
    """A page of ``url``, idle, its device banner final: until then the banner's own rerun can
    swallow a click. ``opener``: a browser context (the page gets its viewport) or, with
    ``height``, the browser (a page 1400 by ``height`` pixels)."""
    page = opener.new_page() if height is None else opener.new_page(viewport={"width": 1400, "height": height})
    page.goto(url)
    page.wait_for_selector(IDLE, timeout=timeout)
    page.wait_for_function(f"() => !document.body.innerText.includes({PENDING!r}) "
                           f"&& !document.body.innerText.includes({PENDING_ZH!r})", polling=POLL_MS, timeout=timeout)
    page.wait_for_selector(IDLE, timeout=timeout)
    return page


def run_sweep(page, plan: str, points: int) -> None:
    """On the Size sweep page: wait for the sidebar's ``plan`` (the URL's sizes), click Run sweep,
    then wait until all ``points`` are measured and the page is idle."""
    page.locator("[data-testid='stSidebar']").get_by_text(plan).wait_for(timeout=30_000)
    page.get_by_role("button", name="Run sweep").click()
    page.wait_for_function(f"""() => {{
        const text = document.querySelector("{MAIN}").innerText;
        return text.includes("{points} of {points} measurement(s)") && !text.includes("so far");
    }}""", polling=POLL_MS, timeout=120_000)
    page.wait_for_selector(IDLE, timeout=60_000)


def stop_button(page):
    """The app's Stop button. Streamlit's toolbar shows a "Stop" of its own while a script
    runs (it stops the rerun, not the job), so the name alone can match two buttons."""
    return page.locator(MAIN).get_by_role("button", name="Stop", exact=True)


def wait_or_say(page, selector: str, *, timeout: float) -> None:
    """wait_for_selector, failing with what the page showed instead (a run's error, a queue,
    a progress line) rather than only the selector it waited for."""
    try:
        page.wait_for_selector(selector, timeout=timeout)
    except Exception as exc:  # Playwright's TimeoutError
        alerts = page.locator(f"{MAIN} [data-testid='stAlert'], {MAIN} [data-testid='stException']").all_inner_texts()
        raise AssertionError(f"{selector!r} did not show within {timeout / 1000:g} s at {page.url}; its alerts:\n"
                             + "\n".join(alerts) + f"\nthe page's end:\n{main_text(page)[-1500:]}") from exc


def chart_count(page, expected: int, *, timeout: float = 30_000) -> int:
    """How many charts the page holds, once it holds ``expected`` (or the wait ends): idle is a
    moment's state, and a clean-clone run once read it with one of Compare's three charts drawn."""
    return element_count(page, "[data-testid='stVegaLiteChart']", expected, timeout=timeout)


def table_count(page, expected: int, *, timeout: float = 30_000) -> int:
    """How many static tables the page holds, once it holds ``expected`` (or the wait ends): Streamlit
    sends them after the charts and data frames, and clean clones read Compare and Environment idle first."""
    return element_count(page, "[data-testid='stTable']", expected, timeout=timeout)


def element_count(page, selector: str, expected: int, *, timeout: float = 30_000) -> int:
    try:
        page.wait_for_function(f"() => document.querySelectorAll(\"{selector}\").length >= {expected}",
                               polling=POLL_MS, timeout=timeout)
    except Exception:  # Playwright's TimeoutError: the count below says what there was
        pass
    return page.locator(selector).count()


def main_text(page) -> str:
    """What the page's main area reads (the sidebar left out)."""
    return page.locator(MAIN).inner_text()


INSTALL_HELP = ("Install Chromium with 'make browser' (or 'sudo apt-get install chromium'), or set "
                "JAXCOMPARE_CHROMIUM=/path/to/chromium; Playwright comes with pip install -e '.[dev]'.")


T = TypeVar("T")


def run_coroutine(coroutine: Coroutine[Any, Any, T]) -> T:
    """asyncio.run(coroutine) in a thread of its own: once `browser` has started, Playwright's sync API
    leaves its event loop set as running in this thread, where asyncio.run refuses to start."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


@pytest.fixture(scope="session")
def chromium():
    """Headless Chromium, one per test process (Playwright's driver and the browser cost 2-3 core-s to
    start). Missing is a failure, not a skip: a skipped browser test passes silently."""
    try:
        from playwright import sync_api
    except ImportError as exc:
        pytest.fail(f"the browser tests need Playwright's Python package ({exc}). {INSTALL_HELP}", pytrace=False)
    if not Path(CHROMIUM).exists():
        pytest.fail(f"the browser tests need Chromium, and there is none at {CHROMIUM}. {INSTALL_HELP}",
                    pytrace=False)
    with sync_api.sync_playwright() as pw:
        launched = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def browser(chromium):
    """The process's Chromium; what a module leaves open is closed at its end (a page whose server
    has stopped keeps reconnecting, and drawing that, for the rest of the run)."""
    yield chromium
    for context in chromium.contexts:
        context.close()


def assert_no_error(page) -> None:
    assert page.locator("[data-testid='stException']").count() == 0
    text = page.locator("[data-testid='stApp']").inner_text()
    assert "Traceback" not in text


JAX_COLOR = "#E4572E"  # jaxcompare.model.palette.JAX_COLOR: JAX's side in every chart
NUMPY_COLOR = "#4C78A8"  # jaxcompare.model.palette.NUMPY_COLOR
ROOF_COLOR = "#6B6B6B"  # jaxcompare.app.charts_roofline.ROOF_COLOR: the roofline's ceilings and ridge points

# Vega's SVG output: each mark is a `g.mark-<type>.role-mark` whose children are its items
# (one per datum; one path per series for lines and areas). Legends and axes draw under
# `g.role-legend` / `g.role-axis`, so a legend swatch is never counted. An item counts when it is
# visible (not transparent, not zero-sized: a zero-height bar is blank) and overlaps the plot
# area: the background of the frame or facet cell the mark belongs to. Text marks (labels) are
# not counted: a chart of labels alone is blank. Returns -1 when the chart drew to a canvas.
_MARKS_JS = """([index, color, mark]) => {
    const chart = document.querySelectorAll("[data-testid='stVegaLiteChart']")[index];
    if (!chart) return 0;
    const svg = chart.querySelector("svg.marks");
    if (!svg) return chart.querySelector("canvas") ? -1 : 0;
    const ctx = document.createElement("canvas").getContext("2d");
    const norm = c => {
        if (!c || c === "none" || c === "transparent") return null;
        ctx.fillStyle = "#010203";
        ctx.fillStyle = c;
        return ctx.fillStyle;
    };
    const want = color ? norm(color) : null;
    let n = 0;
    for (const group of svg.querySelectorAll("g.role-mark")) {
        if (group.closest(".role-legend, .role-axis, .role-title")) continue;
        if (group.classList.contains("mark-text") || group.classList.contains("mark-group")) continue;
        if (mark && !group.classList.contains("mark-" + mark)) continue;
        const frame = group.parentElement.closest("g.mark-group");
        const background = frame && frame.querySelector(":scope > g > path.background");
        if (!background) continue;
        const area = background.getBoundingClientRect();
        const thin = group.classList.contains("mark-rule") || group.classList.contains("mark-line");
        for (const item of group.children) {
            if (item.getAttribute("opacity") === "0" || item.getAttribute("display") === "none") continue;
            const fill = norm(item.getAttribute("fill")), stroke = norm(item.getAttribute("stroke"));
            if (!fill && !stroke) continue;
            if (want && fill !== want && stroke !== want) continue;
            const box = item.getBoundingClientRect();
            if (!(thin ? box.width + box.height > 0 : box.width > 0 && box.height > 0)) continue;
            if (box.right < area.left - 1 || box.left > area.right + 1 ||
                box.bottom < area.top - 1 || box.top > area.bottom + 1) continue;
            n++;
        }
    }
    return n;
}"""


def cut_cells(table) -> list[str]:
    """The text of every cell of ``table`` (a locator of an st.table) wider than its column: a
    table whose cells wrap has none."""
    return table.evaluate("t => Array.from(t.querySelectorAll('td, th'))"
                          ".filter(c => c.scrollWidth > c.clientWidth + 1).map(c => c.innerText)")


def svg_text(page, index: int) -> str:
    """The text chart ``index`` drew (titles, axes, legends), from its SVG."""
    return page.evaluate("i => document.querySelectorAll(\"[data-testid='stVegaLiteChart'] svg.marks\")[i]"
                         ".textContent", index)


def roofline_marks(page, index: int) -> dict[str, int]:
    """What a roofline chart drew in its plot: roofs (lines), ridge points, and each side's dot."""
    wait_for_chart_marks(page, index, JAX_COLOR, mark="symbol")
    return {"roofs": chart_marks(page, index, ROOF_COLOR, mark="line"),
            "ridges": chart_marks(page, index, ROOF_COLOR, mark="symbol"),
            "numpy": chart_marks(page, index, NUMPY_COLOR, mark="symbol"),
            "jax": chart_marks(page, index, JAX_COLOR, mark="symbol")}


def chart_marks(page, index: int, color: str | None = None, mark: str | None = None) -> int:
    """How many mark items chart ``index`` (in page order) draws in its plot area: points, bars,
    rules, lines (one per series), not legends, axes or text; optionally only those filled or
    stroked in ``color``, or of one Vega mark type (``mark="symbol"``: the dots). The app pins
    Vega's SVG renderer (chart_ui.svg_rendered); a chart drawn on a canvas fails here."""
    n = page.evaluate(_MARKS_JS, [index, color, mark])
    assert n >= 0, f"chart {index} was drawn on a canvas: the app's charts must render as SVG"
    return n


def wait_for_chart_marks(page, index: int, color: str | None = None, mark: str | None = None, *,
                         at_least: int = 1, timeout: float = 30_000) -> int:
    """Wait until chart ``index`` has drawn at least ``at_least`` such marks (Vega draws after
    the element appears); returns the count. Times out on a chart that stays blank."""
    page.wait_for_function(f"args => {{ const n = ({_MARKS_JS})(args); return n < 0 || n >= {at_least}; }}",
                           arg=[index, color, mark], polling=POLL_MS, timeout=timeout)
    return chart_marks(page, index, color, mark)


def tick(page, row: int, selected: int) -> None:
    """Click a row's selection box in the first st.dataframe (the grid is a canvas, so by
    position) and wait for the rerun that shows ``selected`` rows selected."""
    box = page.locator("[data-testid='stDataFrame']").first.bounding_box()
    page.mouse.click(box["x"] + 18, box["y"] + ROW_PX * (row + 1) + ROW_PX / 2)
    page.get_by_text(f"{selected} selected", exact=True).wait_for(timeout=30_000)
    page.wait_for_selector(IDLE, timeout=30_000)


_HOLLOW_JS = """index => {
    const chart = document.querySelectorAll("[data-testid='stVegaLiteChart']")[index];
    const svg = chart && chart.querySelector("svg.marks");
    if (!svg) return -1;
    let n = 0;
    for (const group of svg.querySelectorAll("g.role-mark.mark-symbol")) {
        if (group.closest(".role-legend")) continue;
        for (const item of group.children) {
            const fill = item.getAttribute("fill");
            const hollow = !fill || fill === "none" || fill === "transparent";
            if (hollow && item.getAttribute("stroke") && item.getAttribute("opacity") !== "0") n++;
        }
    }
    return n;
}"""


def hollow_marks(page, index: int) -> int:
    """How many hollow dots (stroked, not filled) chart ``index`` draws: the sweep's doubtful points."""
    n = page.evaluate(_HOLLOW_JS, index)
    assert n >= 0, f"chart {index} has no SVG marks"
    return n
