"""A fresh child process's plumbing (pitfall 7's processes, NumPy's plain process): its report is
the last JSON line of its stdout, its error the last line of its stderr, and it dies with its parent."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from ...model.errors import JaxCompareError
from ...model.platforms import error_first_line


def start_child(module: str, *args: str, env: dict[str, str], payload: bytes | None = None,
                timeout_s: float) -> dict[str, Any]:
    """Run ``module``'s ``child_main(*args)`` in a fresh interpreter of this one, with this process's
    sys.path (so it imports the same jaxcompare) and ``payload`` on its stdin. Returns its report; a
    child that failed reports {"error": its last words}. Raises subprocess.TimeoutExpired or OSError."""
    entry = ("import json, sys; sys.path[:] = json.loads(sys.argv[1]); "
             f"from {module} import child_main; child_main(*sys.argv[2:])")
    proc = subprocess.run([sys.executable, "-c", entry, json.dumps(sys.path), *args], env=env, input=payload,
                          stdin=None if payload is not None else subprocess.DEVNULL, capture_output=True,
                          timeout=timeout_s, check=False)
    report = last_json(proc.stdout)
    return report if report is not None else {"error": last_line(proc.stderr) or f"exit code {proc.returncode}"}


def last_json(out: bytes) -> dict[str, Any] | None:
    """The child's report: the last line of its stdout that is a JSON object."""
    for line in reversed(out.decode(errors="replace").splitlines()):
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


def last_line(out: bytes) -> str:
    """The last line with text (a failing child's stderr: its error)."""
    lines = [line.strip() for line in out.decode(errors="replace").splitlines() if line.strip()]
    return lines[-1] if lines else ""


# --- in the child ---------------------------------------------------------------------------------
def run_child(work: Callable[[], dict[str, Any]]) -> None:
    """A child's whole life: ``work()``'s report as a line of JSON on stdout (anything a library
    prints goes to stderr), or one line saying why not; never a traceback."""
    report_fd = os.dup(1)
    os.dup2(2, 1)
    exit_with_parent()
    try:
        report = work()
    except BaseException as exc:  # the parent shows this line as the error
        text = str(exc) if isinstance(exc, JaxCompareError) else f"{type(exc).__name__}: {exc}"
        report = {"error": error_first_line(text) or type(exc).__name__}
    with os.fdopen(report_fd, "w") as out:
        out.write(json.dumps(report) + "\n")


def exit_with_parent() -> None:
    """A worker stopped at its job's deadline is killed; its child must not measure on."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.2)
        os._exit(1)

    threading.Thread(target=watch, daemon=True, name="exit-with-parent").start()
