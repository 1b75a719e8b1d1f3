"""NumPy as the user's own program runs it. The worker keeps freed memory for reuse
(memory.keep_freed_memory) so its NumPy figures hold from one input to the next; a plain process
leaves glibc's allocator as it comes, which may hand a freed block back to the system and fault it
in again on the next call (a TPU host: centered Gram 1000x1000 13.7 ms plain, 2.9 ms kept). So
NumPy's runtime is timed again in a fresh interpreter that sets nothing, and that figure is the
headline (docs/protocol.md, "Two speeds of NumPy").
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np

from ..i18n import N_
from ..model.cases import Case
from ..model.errors import JaxCompareError
from ..model.spec import Spec
from ..model.stats import Stats
from .child import run_child, start_child
from .inputs import build_inputs
from .timing import bound_call, sample

# glibc serves a block below this from the heap and keeps it when freed, whatever the settings: a
# call whose arrays are all smaller runs alike in a plain process and in the worker.
GLIBC_MMAP_THRESHOLD = 128 << 10
# The child imports NumPy and the case and times one runtime phase; more than this is a stuck child.
CHILD_TIMEOUT_S = 120.0


def allocator_matters(arrays: tuple[np.ndarray, ...]) -> bool:
    """Whether glibc's defaults could hand this call's memory back between calls: an array (input or
    output) as large as its mmap threshold."""
    return any(np.asarray(a).nbytes >= GLIBC_MMAP_THRESHOLD for a in arrays)


def plain_numpy_runtime(case: Case, spec: Spec, *, by_value: bool, timeout_s: float = CHILD_TIMEOUT_S) -> Stats:
    """Time ``case``'s NumPy function as a fresh, plain process runs it (JAX kept to the CPU there: it
    needs no device). ``by_value``: send the Case itself (a notebook's functions), else its name.
    A child that fails is a JaxCompareError of one line."""
    import cloudpickle

    request = cloudpickle.dumps({"spec": spec, "case": case if by_value else None})
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    try:
        report = start_child(__name__, env=env, payload=request, timeout_s=timeout_s)
    except subprocess.TimeoutExpired:
        raise JaxCompareError(N_("NumPy in a plain process did not finish within {timeout_s:g} s").format(
            timeout_s=timeout_s)) from None
    except OSError as exc:
        raise JaxCompareError(N_("NumPy in a plain process failed: {error}").format(error=exc)) from None
    if "error" in report:
        raise JaxCompareError(N_("NumPy in a plain process failed: {error}").format(error=report["error"]))
    return Stats.from_dict(report["runtime"])


# --- in the child ---------------------------------------------------------------------------------
def child_main() -> None:
    """Report NumPy's runtime (child.run_child)."""
    run_child(lambda: {"runtime": _time_numpy(sys.stdin.buffer.read()).to_dict()})


def _time_numpy(payload: bytes) -> Stats:
    import cloudpickle

    from ..catalog import get_case

    request = cloudpickle.loads(payload)
    spec: Spec = request["spec"]
    case = request["case"] or get_case(spec.case, spec.cases_file)
    inputs = build_inputs(case, spec)
    return sample(bound_call(case.numpy_fn, inputs), spec.timing.for_runtime())
