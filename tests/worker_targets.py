"""Step functions for tests that drive a worker process by hand (tests/test_worker_exit.py): the worker
imports this module by its import path, as it does a job kind's."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable


def wait_for_eof(fd: int, report: Callable[[str, float], None]) -> str:
    """Report, wait until the test closes the pipe whose read end is ``fd`` (passed to the worker), then
    report again: a step still running, at a moment the test chooses."""
    report("waiting for the test", 0.25)
    while os.read(fd, 1024):
        pass
    report("the test let go", 0.75)
    print("the step went on after its parent had gone", file=sys.stderr, flush=True)
    return "done"
