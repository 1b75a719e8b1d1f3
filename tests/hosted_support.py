"""Starting the app the way an operator does (`make serve`), for the hosted browser and load tests.

The command line is read from `make -n serve`, so the tests run what the Makefile runs. Extra
code for the server process (a fault to provoke, a load driver) goes in through a
``sitecustomize`` module on its PYTHONPATH: nothing in the app knows about tests.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

from browser_support import IDLE, free_port, wait_until_serving

ROOT = Path(__file__).resolve().parents[1]
TESTS = Path(__file__).resolve().parent
# For a site's worker processes: a centered_gram measurement waits for the file named by
# JAXCOMPARE_TEST_GATE, so a job stays running (or queued behind it) until a test lets it go.
GATED_WORKER = """
elif os.environ.get("JAXCOMPARE_WORKER_PRECISION"):
    from jaxcompare.engine import worker

    measure = worker.TARGETS["measure"]

    def gated(job_id, spec, *options):
        for _ in range(12_000):  # at most ten minutes
            if spec["case"] != "centered_gram" or os.path.exists(os.environ["JAXCOMPARE_TEST_GATE"]):
                break
            time.sleep(0.05)
        return measure(job_id, spec, *options)

    worker.TARGETS["measure"] = gated
"""


def make_serve_command(port: int, address: str) -> tuple[dict[str, str], list[str]]:
    """The environment assignments and the command of `make serve`'s recipe, with this
    interpreter's streamlit in place of .venv's."""
    out = subprocess.run(["make", "-s", "-n", "serve", f"PORT={port}", f"ADDRESS={address}"], cwd=ROOT,
                         capture_output=True, text=True, check=True, timeout=60).stdout
    logical = out.replace("\\\n", " ").splitlines()
    line = next(text for text in logical if "streamlit run app.py" in text)
    words = shlex.split(line)
    env = {}
    while "=" in words[0] and not words[0].startswith("-"):
        key, _, value = words.pop(0).partition("=")
        env[key] = value
    assert words[0].endswith("/streamlit"), words
    words[0] = str(Path(sys.executable).with_name("streamlit"))
    return env, words


class Server(str):
    """The server's base URL (a str) with its process, log file and database."""

    proc: subprocess.Popen
    log: Path
    db: Path
    gate: Path  # for a test's own use

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")


@contextlib.contextmanager
def serve(tmp: Path, *, env: dict[str, str] | None = None, address: str = "127.0.0.1", hosted: bool = True,
          site: str | None = None) -> Iterator[Server]:
    """Run the app until the block ends: `make serve`'s command on ``address``, or with
    ``hosted=False`` a plain local-mode `streamlit run` there. ``site`` is the body of a
    sitecustomize module for the server process."""
    port = free_port()
    if hosted:
        make_env, cmd = make_serve_command(port, address)
    else:
        make_env = {}
        cmd = [str(Path(sys.executable).with_name("streamlit")), "run", "app.py", "--server.port", str(port),
               "--server.address", address, "--server.headless", "true"]
    full_env = {**os.environ, "JAX_PLATFORMS": os.environ.get("JAX_PLATFORMS", "cpu"),
                "JAXCOMPARE_DB": str(tmp / "results.sqlite3"), "PYTHONUNBUFFERED": "1",
                "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p),
                **make_env, **(env or {})}
    if site is not None:
        site_dir = tmp / "site"
        site_dir.mkdir(exist_ok=True)
        (site_dir / "sitecustomize.py").write_text(textwrap.dedent(site))
        full_env["PYTHONPATH"] = os.pathsep.join((str(site_dir), str(TESTS), full_env["PYTHONPATH"]))
    log_path = tmp / "streamlit.log"
    with log_path.open("w") as log:
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=full_env,
                                start_new_session=True)
        host = f"[{address}]" if ":" in address else address
        url = Server(f"http://{host}:{port}")
        url.proc, url.log, url.db = proc, log_path, tmp / "results.sqlite3"
        try:
            wait_until_serving(url, proc, log_path, timeout_s=90)
            yield url
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)  # the server's group holds its workers too
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)


PENDING = "Checking which device the measurements will run on"


def open_page(context, url: str, timeout: float = 90_000):
    """A page of ``url``, idle, its device banner final: until then the banner's own rerun can
    swallow a click."""
    page = context.new_page()
    page.goto(url)
    page.wait_for_selector(IDLE, timeout=timeout)
    page.wait_for_function(f"() => !document.body.innerText.includes({PENDING!r})", timeout=timeout)
    page.wait_for_selector(IDLE, timeout=timeout)
    return page


def own_address() -> str | None:
    """A non-loopback IPv4 address of this machine (a server may listen there), or None."""
    import psutil

    for addrs in psutil.net_if_addrs().values():
        for addr in addrs:
            if addr.family == 2 and not addr.address.startswith("127."):
                return addr.address
    return None
