"""Shared browser-test plumbing: `streamlit run app.py` on a free port and headless Chromium.

Test modules import the fixtures (`from browser_support import browser, server`)."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = os.environ.get("JAXCOMPARE_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
IDLE = "[data-testid='stApp'][data-test-script-state='notRunning']"
CHART = "[data-testid='stVegaLiteChart'] canvas, [data-testid='stVegaLiteChart'] svg"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Server(str):
    """The server's base URL (a plain str to f-strings) with ``db``: its results database file."""

    db: Path


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """`streamlit run app.py` on a free loopback port; always stopped (with its workers)."""
    port = free_port()
    log_path = tmp_path_factory.mktemp("server") / "streamlit.log"
    db_path = log_path.parent / "results.sqlite3"
    log = log_path.open("w")
    streamlit = Path(sys.executable).with_name("streamlit")
    proc = subprocess.Popen(
        [str(streamlit), "run", "app.py", "--server.headless", "true", "--server.port", str(port),
         "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false"],
        cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        env={**os.environ, "JAX_PLATFORMS": os.environ.get("JAX_PLATFORMS", "cpu"),
             "JAXCOMPARE_DB": str(db_path)},
    )
    url = Server(f"http://127.0.0.1:{port}")
    url.db = db_path
    try:
        deadline = time.time() + 60
        while True:
            try:
                if urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read() == b"ok":
                    break
            except OSError:
                pass
            if proc.poll() is not None or time.time() > deadline:
                raise RuntimeError(f"streamlit did not start:\n{log_path.read_text()}")
            time.sleep(0.25)
        yield url
    finally:
        # The server's process group holds its worker processes too.
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=15)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)
        log.close()


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api")
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM} (make browser installs it)")
    with sync_api.sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def assert_no_error(page) -> None:
    assert page.locator("[data-testid='stException']").count() == 0
    text = page.locator("[data-testid='stApp']").inner_text()
    assert "Traceback" not in text


def jax_marks(page, index: int) -> int:
    """How much of a chart is drawn in the JAX colour (#E4572E): the marks themselves, not just
    axes and labels. Vega draws to a canvas or an SVG; count pixels/40 or coloured elements."""
    chart = page.locator("[data-testid='stVegaLiteChart']").nth(index)
    canvas = chart.locator("canvas")
    if canvas.count():
        return canvas.first.evaluate("""c => {
            const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
            let n = 0;
            for (let i = 0; i < d.length; i += 4)
                if (d[i + 3] > 0 && d[i] > 180 && d[i + 1] < 150 && d[i + 2] < 130) n++;
            return Math.floor(n / 20);
        }""")
    return len(re.findall(r"#e4572e|rgb\(228, ?87, ?46\)", chart.inner_html(), flags=re.IGNORECASE))
