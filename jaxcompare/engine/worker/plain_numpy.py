"""NumPy as the user's own program runs it. The worker keeps freed memory for reuse
(memory.keep_freed_memory) so its NumPy figures hold from one input to the next; a plain process
leaves glibc's allocator as it comes, which may hand a freed block back to the system and fault it
in again on the next call (a TPU host: centered Gram 1000x1000 14.9 ms plain, 3.0 ms kept). So
NumPy's runtime is timed again in a fresh interpreter that sets nothing, and that figure is the
headline (docs/protocol.md, "Two speeds of NumPy").

glibc raises its mmap threshold to the largest mmapped block freed so far, so which speed a plain
process gets depends on its heap's history: inputs made in float64 and cast free a block twice
their size and put the call's temporaries in the heap (fast), where the JAX docs' script, which
frees nothing larger than the call's own arrays, runs slow. The child therefore never builds its
inputs: it reads the worker's arrays from .npy files straight into arrays of their own size, as a
script that types ``x = np.ones(...)`` holds them, whatever built them (a float64 cast, a case's
intermediates, a notebook's pickle).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ...i18n import N_
from ...model.cases import Case
from ...model.errors import JaxCompareError
from ...model.platforms import HOST
from ...model.spec import MIN_SAMPLES_FOR_RANGE, Spec
from ...model.stats import Stats
from ..common.child import run_child, start_child
from ..common.footprint import GLIBC_MMAP_THRESHOLD
from ..common.load import PLAIN_ATTEMPTS, LoadMeter, SampleWatch, Span, is_busy
from .memory import keep_freed_memory
from .runtimes import CLEAN_BUDGET_S, CLEAN_SAMPLE_S
from .timing import bound_call, sample

# The child imports NumPy and the case and times one runtime phase; more than this is a stuck child.
CHILD_TIMEOUT_S = 120.0

BUSY_NOTE = N_("NumPy's plain process ran while other programs used {cores} cores, and too few of its samples "
               "had the cores they wanted in {attempts} tries: NumPy's figure is the worker's, with freed memory "
               "kept; rerun when the machine is quieter")


def allocator_matters(arrays: Sequence[np.ndarray]) -> bool:
    """Whether glibc's defaults could hand this call's memory back between calls: an array (input or
    output) as large as its mmap threshold."""
    return any(np.asarray(a).nbytes >= GLIBC_MMAP_THRESHOLD for a in arrays)


def numpy_as_users_run_it(case: Case, spec: Spec, kept: Stats, inputs: tuple[np.ndarray, ...],
                          outputs: Sequence[np.ndarray], *, by_value: bool, load: LoadMeter,
                          starting: Callable[[], Any] | None = None) -> tuple[Stats, Stats | None, str | None]:
    """NumPy's headline runtime, the worker's own with freed memory kept (``kept``) beside it, and a
    note: where the worker keeps freed memory and an array is large enough for the allocator to
    matter, NumPy is timed again in a plain process and that figure leads; else the two are one.
    ``load``: the meter the plain process is timed under (phase "numpy_plain", a child counted as our
    own); timed again while busy (PLAIN_ATTEMPTS), and ``load.notes["numpy_plain"]`` says how it went.
    ``starting``: called before the plain process starts (progress). A plain process that fails leaves
    the worker's figure, and a note that says why."""
    if not (keep_freed_memory() and allocator_matters((*inputs, *outputs))):
        return kept, None, None
    if starting is not None:
        starting()
    timed: list[tuple[Stats | None, Span, PlainTiming]] = []
    try:
        for attempt in range(PLAIN_ATTEMPTS):
            with load.phase(f"numpy_plain {attempt}") as span:
                timing = plain_numpy_runtime(case, spec, inputs, by_value=by_value)
            # Busy, only the samples that had their cores stand (a neighbour leaves a serial call's alone).
            timed.append((timing.runtime if not is_busy(span.others_cores) else timing.clean, span, timing))
            if timed[-1][0] is not None:
                break
    except JaxCompareError as exc:
        if not timed:
            return kept, None, N_("NumPy's runtime is the worker's, with freed memory kept: {error}").format(
                error=exc)
    figure, span, timing = timed[-1]
    for attempt in range(len(timed)):  # one phase: the timing kept
        del load.spans[load.prefix + f"numpy_plain {attempt}"]
    load.spans[load.prefix + "numpy_plain"] = span
    load.notes["numpy_plain"] = {"attempts": len(timed), "busy": figure is None,
                                 **({"clean_samples": list(timing.clean_count)} if timing.clean_count else {})}
    if figure is None:  # contention spoils a multithreaded BLAS call's every sample: no figure of that regime
        return kept, None, BUSY_NOTE.format(cores=f"{span.others_cores:.2f}", attempts=len(timed))
    return figure, kept, None


@dataclass(frozen=True)
class PlainTiming:
    """What the plain process timed: every sample (``runtime``), and where the kernel says whether each
    sample had the cores it wanted, those that did (``clean``, where they were enough for a range)."""

    runtime: Stats
    clean: Stats | None = None
    clean_count: tuple[int, int] | None = None  # samples that had their cores, of all


def plain_numpy_runtime(case: Case, spec: Spec, inputs: tuple[np.ndarray, ...], *, by_value: bool,
                        timeout_s: float = CHILD_TIMEOUT_S) -> PlainTiming:
    """Time ``case``'s NumPy function on ``inputs`` as a fresh, plain process runs it (JAX kept to the
    CPU there: it needs no device). ``by_value``: send the NumPy function itself (a notebook's), else
    the child looks the case up by name. A child that fails is a JaxCompareError of one line."""
    import cloudpickle

    with tempfile.TemporaryDirectory(prefix="jaxcompare-plain-") as folder:
        paths = [os.path.join(folder, f"input{k}.npy") for k in range(len(inputs))]
        for path, array in zip(paths, inputs, strict=True):
            np.save(path, array, allow_pickle=False)
        request = cloudpickle.dumps({"spec": spec, "numpy_fn": case.numpy_fn if by_value else None, "inputs": paths})
        env = {**os.environ, "JAX_PLATFORMS": HOST.name}
        try:
            report = start_child(__name__, env=env, payload=request, timeout_s=timeout_s)
        except subprocess.TimeoutExpired:
            raise JaxCompareError(N_("NumPy in a plain process did not finish within {timeout_s:g} s").format(
                timeout_s=timeout_s)) from None
        except OSError as exc:
            raise JaxCompareError(N_("NumPy in a plain process failed: {error}").format(error=exc)) from None
    if "error" in report:
        raise JaxCompareError(N_("NumPy in a plain process failed: {error}").format(error=report["error"]))
    clean = report.get("clean")
    return PlainTiming(Stats.from_dict(report["runtime"]), None if clean is None else Stats.from_dict(clean),
                       tuple(report["clean_count"]) if report.get("clean_count") else None)


# --- in the child ---------------------------------------------------------------------------------
def child_main() -> None:
    """Report NumPy's runtime (child.run_child)."""
    run_child(lambda: _time_numpy(sys.stdin.buffer.read()))


def _time_numpy(payload: bytes) -> dict[str, Any]:
    """Every sample's Stats, and each sample judged by whether it had the cores it wanted
    (load.SampleWatch): where too few did, timed again in short samples (CLEAN_SAMPLE_S) that a
    neighbour is more likely to leave alone, as the worker's runtime pairs are (runtimes._clean_recheck)."""
    import cloudpickle

    from ...catalog import get_case

    request = cloudpickle.loads(payload)
    spec: Spec = request["spec"]
    numpy_fn = request["numpy_fn"] or get_case(spec.case, spec.cases_file).numpy_fn
    # np.load reads a file into an array of its own size (fromfile): no larger block is freed first.
    inputs = tuple(np.load(path, allow_pickle=False) for path in request["inputs"])
    call, timing = bound_call(numpy_fn, inputs), spec.timing.for_runtime()
    watch = SampleWatch(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1,
                        per_block=10**9)
    if not watch.available:  # no run delays from this kernel: every sample would count
        return {"runtime": sample(call, timing).to_dict()}
    stats = sample(call, timing, watch=watch)
    every, verdicts = list(stats.samples_s), list(watch.clean)
    if sum(verdicts) < MIN_SAMPLES_FOR_RANGE:
        short = replace(timing, phase_budget_s=max(timing.phase_budget_s, CLEAN_BUDGET_S),
                        target_sample_s=CLEAN_SAMPLE_S, min_samples=3, max_samples=10**6, rel_ci=1e-9)
        start = len(watch.clean)
        more = sample(call, short, watch=watch, warmup=False)
        every, verdicts = list(more.samples_s), watch.clean[start:]
        loops = more.loops
    else:
        loops = stats.loops
    watch.close()
    kept = [x for x, ok in zip(every, verdicts, strict=True) if ok]
    report: dict[str, Any] = {"runtime": stats.to_dict(), "clean_count": [len(kept), len(every)]}
    if len(kept) >= MIN_SAMPLES_FOR_RANGE:
        report["clean"] = Stats.from_samples(kept, loops=loops).to_dict()
    return report
