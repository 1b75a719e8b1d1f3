"""The notebook front end: ``compare()`` and ``sweep()`` on a notebook's own functions, results
that show themselves in Jupyter, and the ``%jaxcompare`` magic (``%load_ext jaxcompare``).
Beside the CLI and the app; IPython is imported only when the magic is loaded."""

from __future__ import annotations

from typing import Any

from .api import compare, current_job, runner, shutdown, sweep, versions
from .results import NotebookResult, OutputsDisagree, PortsResult, SweepResult

__all__ = ["NotebookResult", "OutputsDisagree", "PortsResult", "SweepResult", "compare", "current_job",
           "load_ipython_extension", "runner", "shutdown", "sweep", "versions"]


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext jaxcompare.notebook`` (``%load_ext jaxcompare`` lands here too)."""
    from .magic import load

    load(ipython)
