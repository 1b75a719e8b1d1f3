"""One Spec measured under several JAX versions, each in its own environment (engine/server/envs.py),
in rounds whose order alternates. Runs in the server/CLI process. Each round is a job on the
one Runner's queue whose worker starts from that version's interpreter, so nothing of a
versions run measures beside another job, and its deadline, rate limit and Stop are any job's.

Fairness: a host whose speed drifts would favour whichever version ran in its fast stretch.
Each round measures every version once (the whole protocol, NumPy included), round 1 in the
order A B C, round 2 C B A, and so on, so every version has as many early as late turns; the
analysis pools each version's rounds (analysis/versions.py). Whole measurements alternate
rather than single runtime blocks because each version lives in another process: a block
cannot be interleaved across processes without changing the protocol each worker runs.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ...i18n import N_
from ...model.cases import Case
from ...model.errors import JaxCompareError
from ...model.result import Result
from ...model.spec import Spec
from .envs import JaxEnv, VersionUnavailable, ensure_env, env_for_job
from .process import Cancelled
from .runner import Job, Owner, Runner

Progress = Callable[[str, float], None]


@dataclass
class VersionRun:
    """One requested JAX version: where it ran, a Result per round, or why it could not run."""

    requested: str
    env: JaxEnv | None = None
    results: list[Result] = field(default_factory=list)
    error: str | None = None


class StopSignal:
    """Stops a versions run from another thread (a page's Stop): no further job is submitted,
    and the one queued or running is cancelled, its worker stopped, as for any job."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stopped = False
        self._job: Job | None = None

    @property
    def stopped(self) -> bool:
        return self._stopped

    @property
    def job(self) -> Job | None:
        """The runner job of the round now queued or running (None between rounds and before the first)."""
        job = self._job
        return job if job is not None and not job.done else None

    def stop(self) -> None:
        with self._lock:
            self._stopped, job = True, self._job
        if job is not None:
            job.cancel()

    def follow(self, job: Job) -> None:
        with self._lock:
            self._job, stopped = job, self._stopped
        if stopped:  # stopped between the check before submitting and now
            job.cancel()


def round_orders(count: int, rounds: int) -> list[list[int]]:
    """A B C, C B A, A B C ...: the indices of each round's order."""
    forward = list(range(count))
    return [forward if r % 2 == 0 else forward[::-1] for r in range(rounds)]


def measure_versions(spec: Spec, versions: Sequence[str], *, rounds: int = 2, timeout_s: float | None = None,
                     progress: Progress | None = None, case: Case | None = None, runner: Runner | None = None,
                     owner: Owner | None = None, stop: StopSignal | None = None) -> list[VersionRun]:
    """Measure ``spec`` under each JAX version (duplicates dropped); a version that cannot be
    installed, or whose worker fails, gets its one-line error and the others still run.

    Every round is a job on ``runner``'s queue (None: a Runner of its own, closed at the end), so
    its rate limit, deadline and Stop apply as to any job; the run counts once against the rate
    limit, like a sweep, and stays on one device. A hosted runner only finds environments its
    operator prepared; locally a missing one is made first. ``case``: one not in the catalog (a
    notebook's functions), sent to each version's worker. Raises Cancelled when stopped."""
    report = progress or (lambda message, fraction: None)
    runs = [VersionRun(v) for v in dict.fromkeys(str(v).strip() for v in versions)]
    own = runner is None
    runner = runner or Runner(timeout_s=timeout_s)
    owner = owner or Owner(session=f"versions-{uuid.uuid4().hex[:12]}")  # one owner: one device for every round
    hosted = runner.settings.hosted_mode
    try:
        for run in runs:
            if stop is not None and stop.stopped:
                raise Cancelled(N_("before every environment was ready; nothing was measured"))
            try:
                run.env = (env_for_job(run.requested, runner.settings.jax_versions) if hosted
                           else ensure_env(run.requested, progress=report))
            except VersionUnavailable as exc:
                run.error = str(exc)
        ready = [run for run in runs if run.error is None]
        orders = round_orders(len(ready), max(rounds, 1))
        total = max(sum(len(order) for order in orders), 1)
        done, first = 0, True
        for number, order in enumerate(orders, start=1):
            for index in order:
                run = ready[index]
                done += 1
                if run.error is not None:
                    continue
                if stop is not None and stop.stopped:
                    raise Cancelled(N_("between two rounds; no later round was queued"))
                report(N_("round {round} of {rounds}: JAX {version}").format(
                    round=number, rounds=len(orders), version=run.requested), (done - 1) / total)
                try:
                    job = runner.submit(spec, case=case, timeout_s=timeout_s, owner=owner, rate_limited=first,
                                        jax=run.requested)
                except VersionUnavailable as exc:  # its environment went since it was found
                    run.error = str(exc)
                    continue
                first = False
                if stop is not None:
                    stop.follow(job)
                try:
                    run.results.append(job.wait())
                except Cancelled:
                    raise
                except JaxCompareError as exc:  # its later rounds are skipped; the others go on
                    run.error = N_("JAX {version}: {error}").format(version=run.requested, error=exc)
        if not any(run.results for run in runs):  # "every round measured" read as if something had been
            report(N_("no version could be measured"), 1.0)
        elif any(run.error is not None for run in runs):
            report(N_("done: a version could not be measured (said below)"), 1.0)
        else:
            report(N_("every round measured"), 1.0)
    finally:
        if own:
            runner.close()
    return runs
