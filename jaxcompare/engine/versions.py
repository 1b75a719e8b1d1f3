"""One Spec measured under several JAX versions, each in its own environment (engine/envs.py)
and its own runner, in rounds whose order alternates. Runs in the server/CLI process.

Fairness: a host whose speed drifts would favour whichever version ran in its fast stretch.
Each round measures every version once (the whole protocol, NumPy included), round 1 in the
order A B C, round 2 C B A, and so on, so every version has as many early as late turns; the
analysis pools each version's rounds (analysis/versions.py). Whole measurements alternate
rather than single runtime blocks because each version lives in another process: a block
cannot be interleaved across processes without changing the protocol each worker runs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..i18n import N_
from ..model.cases import Case
from ..model.errors import JaxCompareError
from ..model.result import Result
from ..model.spec import Spec
from .envs import JaxEnv, VersionUnavailable, ensure_env
from .runner import Runner

Progress = Callable[[str, float], None]


@dataclass
class VersionRun:
    """One requested JAX version: where it ran, a Result per round, or why it could not run."""

    requested: str
    env: JaxEnv | None = None
    results: list[Result] = field(default_factory=list)
    error: str | None = None


def round_orders(count: int, rounds: int) -> list[list[int]]:
    """A B C, C B A, A B C ...: the indices of each round's order."""
    forward = list(range(count))
    return [forward if r % 2 == 0 else forward[::-1] for r in range(rounds)]


def measure_versions(spec: Spec, versions: Sequence[str], *, rounds: int = 2, timeout_s: float | None = None,
                     progress: Progress | None = None, case: Case | None = None) -> list[VersionRun]:
    """Measure ``spec`` under each JAX version (duplicates dropped); a version that cannot be
    installed, or whose worker fails, gets its one-line error and the others still run.
    ``case``: one not in the catalog (a notebook's functions), sent to each version's worker."""
    report = progress or (lambda message, fraction: None)
    runs = [VersionRun(v) for v in dict.fromkeys(str(v).strip() for v in versions)]
    for run in runs:
        try:
            run.env = ensure_env(run.requested, progress=report)
        except VersionUnavailable as exc:
            run.error = str(exc)
    ready = [run for run in runs if run.error is None]
    runners = {id(run): Runner(timeout_s=timeout_s, python=run.env.python, python_path=run.env.python_path)
               for run in ready if run.env is not None}
    try:
        orders = round_orders(len(ready), max(rounds, 1))
        total = max(sum(len(order) for order in orders), 1)
        done = 0
        for number, order in enumerate(orders, start=1):
            for index in order:
                run = ready[index]
                done += 1
                if run.error is not None:
                    continue
                report(N_("round {round} of {rounds}: JAX {version}").format(
                    round=number, rounds=len(orders), version=run.requested), done / total)
                try:
                    run.results.append(runners[id(run)].submit(spec, case=case).wait())
                except JaxCompareError as exc:  # its later rounds are skipped; the others go on
                    run.error = N_("JAX {version}: {error}").format(version=run.requested, error=exc)
    finally:
        for runner in runners.values():
            runner.close()
    return runs
