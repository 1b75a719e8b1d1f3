"""From `streamlit run` to the Home page's first heading, against Streamlit's own `hello`.

Starts each app headless on a free port, opens it in Chromium and times the moment its first
heading is visible; the two alternate (app, hello, hello, app, ...) so a machine that drifts
favours neither. Prints both medians and their ratio (benchmarks/RESULTS.md, "First paint").

    .venv/bin/python benchmarks/first_paint.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from browser_support import CHROMIUM, CHROMIUM_ARGS, free_port  # noqa: E402

APPS = {"jaxcompare": ["run", "app.py"], "hello": ["hello"]}


def first_heading_s(browser, which: str) -> float:
    """Seconds from starting the server process to its first heading in the page."""
    port = free_port()
    streamlit = Path(sys.executable).with_name("streamlit")
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "JAX_PLATFORMS": "cpu", "JAXCOMPARE_DB": str(Path(tmp) / "results.sqlite3")}
        start = time.perf_counter()
        proc = subprocess.Popen([str(streamlit), *APPS[which], "--server.headless", "true",
                                 "--server.port", str(port), "--browser.gatherUsageStats", "false"],
                                cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        page = browser.new_page()
        try:
            while True:  # the server is starting: the page loads once it listens
                try:
                    page.goto(f"http://127.0.0.1:{port}", timeout=5_000)
                    break
                except Exception:
                    if proc.poll() is not None:
                        raise RuntimeError(f"{which} exited with {proc.returncode}") from None
                    page.wait_for_timeout(50)
            page.locator("h1").first.wait_for(state="visible", timeout=60_000)
            return time.perf_counter() - start
        finally:
            page.close()
            proc.terminate()
            proc.wait(10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="pairs of starts (default 5)")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    times: dict[str, list[float]] = {name: [] for name in APPS}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        first_heading_s(browser, "hello")  # warm the disk cache for both, untimed
        first_heading_s(browser, "jaxcompare")
        for n in range(args.rounds):
            order = ("jaxcompare", "hello") if n % 2 == 0 else ("hello", "jaxcompare")
            for name in order:
                times[name].append(first_heading_s(browser, name))
        browser.close()
    ratios = [a / b for a, b in zip(times["jaxcompare"], times["hello"], strict=True)]
    for name, values in times.items():
        print(f"{name:>10}: median {statistics.median(values):.2f} s  ({', '.join(f'{v:.2f}' for v in values)})")
    print(f"     ratio: median {statistics.median(ratios):.2f}x  ({', '.join(f'{r:.2f}' for r in ratios)})")


if __name__ == "__main__":
    main()
