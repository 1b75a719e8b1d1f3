"""Starting the app the way an operator does (`make serve`), for the hosted browser and load tests.

The command line is read from `make -n serve`, so the tests run what the Makefile runs. Extra
code for the server process (a fault to provoke, a load driver) goes in through a
``sitecustomize`` module on its PYTHONPATH: nothing in the app knows about tests.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

from browser_support import (
    PENDING,  # noqa: F401  (test_load.py imports it from here)
    Server,
    free_port,
    run_server,
    server_env,
    streamlit_command,
)
from support import ROOT

TESTS = Path(__file__).resolve().parent
# For a site's worker processes: a centered_gram measurement waits for the file named by
# JAXCOMPARE_TEST_GATE, so a job stays running (or queued behind it) until a test lets it go.
GATED_WORKER = """
elif os.environ.get("JAXCOMPARE_WORKER_PRECISION"):
    from jaxcompare.engine.worker import serve as worker

    measure = worker.run_measurement

    def gated(request, report):
        for _ in range(12_000):  # at most ten minutes
            if request.spec.case != "centered_gram" or os.path.exists(os.environ["JAXCOMPARE_TEST_GATE"]):
                break
            time.sleep(0.05)
        return measure(request, report)

    worker.run_measurement = gated  # the measure kind's target names it: looked up at each call
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


@contextlib.contextmanager
def serve(tmp: Path, *, env: dict[str, str] | None = None, address: str = "127.0.0.1", hosted: bool = True,
          site: str | None = None) -> Iterator[Server]:
    """Run the app until the block ends: `make serve`'s command on ``address``, or with
    ``hosted=False`` a plain local-mode `streamlit run` there. ``site`` is the body of a
    sitecustomize module for the server process."""
    port = free_port()
    make_env, cmd = make_serve_command(port, address) if hosted else ({}, streamlit_command("app.py", port, address))
    full_env = server_env(tmp, {**make_env, **(env or {})})
    if site is not None:
        site_dir = tmp / "site"
        site_dir.mkdir(exist_ok=True)
        (site_dir / "sitecustomize.py").write_text(textwrap.dedent(site))
        full_env["PYTHONPATH"] = os.pathsep.join((str(site_dir), str(TESTS), full_env["PYTHONPATH"]))
    with run_server(tmp, port, cmd, full_env, address) as url:
        yield url


def own_address() -> str | None:
    """A non-loopback IPv4 address of this machine (a server may listen there), or None."""
    import psutil

    for addrs in psutil.net_if_addrs().values():
        for addr in addrs:
            if addr.family == 2 and not addr.address.startswith("127."):
                return addr.address
    return None
