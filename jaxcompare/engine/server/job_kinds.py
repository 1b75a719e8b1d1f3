"""The engine's own job kinds: a measurement, the pitfalls lab, the worker's environment, the
self-check and a cases file's listing. Each says its steps (the worker functions they run, by
import path, and their typed requests), what it prepares before a step on a device one process at
a time may hold, how the steps' values combine and how its duration is guessed. A new kind is a
subclass registered the same way (docs/architecture.md).
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import asdict, replace
from typing import Any

from ...i18n import N_
from ...model.cases import Case
from ...model.errors import BadInput, JaxCompareError, JobFailed
from ...model.result import Result
from ...model.spec import Spec
from ..common.fresh import fresh_first_call, fresh_processes
from ..common.lessons import join_fair_float64, lab_timing
from ..common.requests import (
    ListCasesRequest,
    MeasureOptions,
    MeasureRequest,
    NoRequest,
    PitfallsRequest,
    SelfCheckRequest,
    SpecRequest,
)
from .durations import call_s, measure_parts, pitfalls_kind, pitfalls_parts, plain_process
from .jobs import Job, JobKind, Step, StepContext, register_kind

# The worker's functions each step runs (worker/serve.py), named rather than imported: the server
# half never loads the worker's modules.
SERVE = "jaxcompare.engine.worker.serve"
_MAX_CASES_FILES = 16  # cases files' listings kept per runner


class Measure(JobKind):
    """One Spec measured (docs/protocol.md): a Result."""

    name = "measure"
    capped = True

    def steps(self, spec: Spec, options: MeasureOptions | None = None) -> tuple[Step, ...]:
        request = MeasureRequest(spec, options or MeasureOptions())
        return (Step(spec.precision, f"{SERVE}:run_measurement", request),)

    def prepare(self, job: Job, step: Step, context: StepContext) -> Step:
        """The first call as a user's %time pays it, on a single-holder device: its fresh processes each
        need the device, so the lane's workers let go of it and the processes run from here, one at a
        time; the worker then measures the rest with their calls (MeasureOptions.first_calls). Unchanged
        elsewhere (the worker starts them itself), in quick timing, or where one failed (the worker's
        recompile stands, and the notice says why)."""
        request: MeasureRequest = step.request
        spec = request.spec
        if not context.local or job.jax_env is not None or spec.timing.first_call_processes == 0:
            return step
        env = context.let_go(N_("the first call: a fresh process takes the {device}, so the worker lets go of "
                                "it until that process is done"), job)
        if env is None:
            return step
        total = spec.timing.first_call_processes
        calls = []
        for i in range(total):
            context.check_cancelled()
            context.progress(N_("the first call: fresh process {i} of {total}, holding the {device}").format(
                i=i + 1, total=total, device=context.device_label), 0.05 * i / total)
            try:
                call = fresh_first_call(spec, None, env=env, label=N_("the first call"),
                                        case=job.case if request.options.case_bytes is not None else None)
            except JobFailed as exc:
                context.notice(N_("the first call was timed in the worker after jax.clear_caches(): {error}").format(
                    error=exc))
                return step
            calls.append(asdict(call))
        return replace(step, request=replace(request, options=replace(request.options, first_calls=tuple(calls))))

    def combine(self, job: Job, values: list[Any]) -> Any:
        return Result.from_dict(values[0])

    def work_parts(self, key: str, spec: Spec | None, case: Case | None) -> tuple[float, float, float]:
        if spec is None:
            return super().work_parts(key, spec, case)
        return measure_parts(spec.timing, call_s(case, spec), plain=plain_process(case, spec))


class Pitfalls(JobKind):
    """The pitfalls lab (common/lessons.py): an x32 run borrows the x64 worker for pitfall 3's fair
    float64 side, which joins the report."""

    name = "pitfalls"
    capped = True

    def steps(self, spec: Spec, sections: tuple[str, ...]) -> tuple[Step, ...]:
        steps = [Step(spec.precision, f"{SERVE}:run_pitfalls", PitfallsRequest(spec, sections))]
        if "dtype" in sections and spec.precision == "x32":
            steps.append(Step("x64", f"{SERVE}:run_fair_float64", SpecRequest(replace(spec, precision="x64"))))
        return tuple(steps)

    def precisions(self, spec: Spec | None, key: str) -> tuple[str, ...]:
        if spec is not None and spec.precision == "x32" and "dtype" in self._sections(key):
            return ("x32", "x64")
        return super().precisions(spec, key)

    @staticmethod
    def _sections(key: str) -> Sequence[str]:
        from ..common.lessons import SECTIONS

        detail = key.partition(":")[2]
        return detail.split(",") if detail else SECTIONS

    def prepare(self, job: Job, step: Step, context: StepContext) -> Step:
        """Pitfall 7 on a single-holder device: its fresh processes each need the device, so the lane's
        workers let go of it and the processes run from here, one at a time; the worker then measures the
        rest of the lab with them. Unchanged elsewhere: the worker starts them itself."""
        request = step.request
        if not isinstance(request, PitfallsRequest) or "cache" not in request.sections or not context.local:
            return step
        env = context.let_go(N_("pitfall 7: its fresh processes take the {device} in turn, so the worker lets "
                                "go of it until they are done"), job)
        if env is None:
            return step

        def on_start(i: int, total: int) -> None:
            context.check_cancelled()
            context.progress(N_("pitfall 7: fresh process {i} of {total}, each holding the {device} in turn").format(
                i=i + 1, total=total, device=context.device_label), 0.05 * i / total)

        spec = request.spec
        fresh = fresh_processes(spec, lab_timing(spec.timing).compile_samples, env=env, on_start=on_start)
        return replace(step, request=replace(request, fresh=fresh.to_dict()))

    def combine(self, job: Job, values: list[Any]) -> Any:
        report = values[0]
        if len(values) > 1:  # the fair float64 side from the x64 worker joins pitfall 3
            join_fair_float64(report, values[1])
        return report

    def estimate_key(self, job: Job) -> str:
        return pitfalls_kind(job.steps[0].request.sections)

    def work_parts(self, key: str, spec: Spec | None, case: Case | None) -> tuple[float, float, float]:
        if spec is None:
            return super().work_parts(key, spec, case)
        return pitfalls_parts(self._sections(key), spec, case)


class Environment(JobKind):
    """The worker's view: JAX version, backend, devices, x64 state."""

    name = "environment"

    def steps(self, precision: str) -> tuple[Step, ...]:
        return (Step(precision, f"{SERVE}:run_environment", NoRequest()),)


class SelfCheck(JobKind):
    """Agreement of each case at its small shape (no timing)."""

    name = "selfcheck"

    def steps(self, precision: str, names: Sequence[str] | None, cases_file: str | None) -> tuple[Step, ...]:
        request = SelfCheckRequest(None if names is None else tuple(names), cases_file)
        return (Step(precision, f"{SERVE}:run_selfcheck", request),)


class ListCases(JobKind):
    """A user's cases file loaded in a worker (it is code), under the job's deadline, and its cases
    described; a version of the file already listed by this runner finishes at once."""

    name = "list_cases"

    def steps(self, cases_file: str) -> tuple[Step, ...]:
        path, mtime, size = file_version(cases_file)
        return (Step("x32", f"{SERVE}:run_list_cases", ListCasesRequest(path, (mtime, size))),)

    def failed(self, job: Job, error: JaxCompareError) -> JaxCompareError:
        if isinstance(error, JobFailed):  # a hang or a crash at import
            return JobFailed(N_("cases file {path!r} could not be loaded: {reason}").format(
                path=job.steps[0].request.cases_file, reason=error))
        return error

    def known(self, job: Job, kept: OrderedDict[Any, Any]) -> Any:
        known = kept.get(self._version(job))
        return None if known is None else list(known)

    def keep(self, job: Job, value: Any, kept: OrderedDict[Any, Any]) -> None:
        kept[self._version(job)] = list(value)
        while len(kept) > _MAX_CASES_FILES:
            kept.popitem(last=False)

    @staticmethod
    def _version(job: Job) -> tuple[str, tuple[int, int]]:
        request: ListCasesRequest = job.steps[0].request
        return request.cases_file, request.stamp


def file_version(path: str) -> tuple[str, int, int]:
    """(absolute path, mtime, size): a cases file is listed again only when it changes."""
    full = os.path.abspath(os.path.expanduser(str(path)))
    if not os.path.isfile(full):
        raise BadInput(N_("cases file {path!r} does not exist or is not a file").format(path=str(path)))
    try:
        stat = os.stat(full)
    except OSError as exc:
        raise BadInput(N_("cases file {path!r} cannot be read: {reason}").format(
            path=str(path), reason=exc.strerror or exc)) from None
    return full, stat.st_mtime_ns, stat.st_size


MEASURE = register_kind(Measure())
PITFALLS = register_kind(Pitfalls())
ENVIRONMENT = register_kind(Environment())
SELFCHECK = register_kind(SelfCheck())
LIST_CASES = register_kind(ListCases())
