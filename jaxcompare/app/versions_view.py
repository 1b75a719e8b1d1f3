"""The Versions page's controls, its background job and its table (no Streamlit here): one case
measured under several JAX releases by engine/server/versions.py. Making an environment can take a
minute and a run is several jobs in a row, so a thread of its own submits each round to the
shared Runner's queue (its rate limit, deadline and Stop apply) and waits for it."""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..analysis.checkline import Check
from ..analysis.consistency import finding_title
from ..analysis.summary import doubt_text
from ..analysis.trust import trusted
from ..analysis.versions import compare_versions, findings, first_call_text, pooled_runs, real_versions, release_key
from ..engine import Cancelled, Job, Owner, Runner, Settings, StopSignal, VersionRun, envs, measure_versions
from ..i18n import N_, _, ngettext
from ..model.errors import BadInput
from ..model.formatting import format_factor, format_time, format_time_range, markdown_literal
from ..model.reruns import pooled_range
from ..model.result import Result
from ..model.spec import Spec
from .controls import CompareConfig

OLDER_JAX = "0.4.35"  # the oldest release this package measures: the default's second version


def default_versions() -> str:
    """The host's JAX and one older release, as the versions box shows them."""
    return " ".join(dict.fromkeys(v for v in (envs.host_jax_version(), envs.jax_floor() or OLDER_JAX) if v))


def parse_versions(text: str) -> list[str]:
    """'0.4.35, 0.10.2' or '0.4.35 0.10.2' -> the versions in order, duplicates dropped."""
    return list(dict.fromkeys(v for v in re.split(r"[\s,;]+", text.strip()) if v))


@dataclass(frozen=True)
class VersionsConfig(CompareConfig):
    """The Versions page's controls: Compare's but its device (every version measures on the
    host's default) and profile, a small default size (a version's first run may make its
    environment first), quick timing, and the versions to compare."""

    KEY_PREFIX: ClassVar[str] = "versions_"
    NOT_CONTROLS: ClassVar[frozenset[str]] = frozenset({"device", "profile", "matmul_precision", "ports"})
    size: str = "small"
    timing: str = "quick"
    jax: str = field(default_factory=default_versions)

    @classmethod
    def field_value(cls, name: str, value: Any) -> Any:
        if name == "jax" and isinstance(value, list | tuple):  # hosted mode: a choice among the offered versions
            return " ".join(value)
        return value

    def versions(self) -> list[str]:
        found = parse_versions(self.jax)
        if len(found) < 1:
            raise BadInput(N_("give at least one JAX version, like {example}").format(example=default_versions()))
        return found


def hosted_refusals(versions: list[str], settings: Settings) -> list[str]:
    """In hosted mode, why these versions cannot run (English, N_()): one off the operator's list
    (JAXCOMPARE_JAX_VERSIONS), or listed but not prepared (the operator's log says so). The
    runner refuses them as well; this says so before anything is queued."""
    if not settings.hosted_mode:
        return []
    refused = []
    for version in versions:
        try:
            envs.env_for_job(version, settings.jax_versions)
        except envs.VersionUnavailable as exc:
            refused.append(str(exc))
    return refused


class VersionsJob:
    """measure_versions in a daemon thread, each round a job on ``runner``'s queue; the page polls
    ``message``/``fraction`` (and ``current``, the round's Job) and takes ``runs`` once ``done``.
    ``message`` is an N_() template's English text (translate_text shows it); ``cancel`` is Stop."""

    def __init__(self, spec: Spec, versions: list[str], runner: Runner, owner: Owner | None = None, *,
                 rounds: int = 2) -> None:
        self.spec, self.versions, self.rounds = spec, versions, rounds
        self.message = N_("starting")
        self.fraction = 0.0
        self.runs: list[VersionRun] = []
        self.error: str | None = None
        self.stopped = False
        self._runner, self._owner = runner, owner
        self._stop = StopSignal()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="jaxcompare-versions")
        self._thread.start()

    def _progress(self, message: str, fraction: float) -> None:
        self.message, self.fraction = message, fraction

    def _run(self) -> None:
        try:
            self.runs = measure_versions(self.spec, self.versions, rounds=self.rounds, progress=self._progress,
                                         runner=self._runner, owner=self._owner, stop=self._stop)
        except Cancelled as exc:  # Stop, or the session's tab went (jobs.py's watch cancels its job)
            self.stopped, self.error = True, N_("Stopped: {error}").format(error=exc)
        except Exception as exc:  # shown on the page; the server goes on
            self.error = str(exc) or type(exc).__name__
        finally:
            self._done.set()

    def cancel(self) -> None:
        """Stop: no further round is queued; the queued or running one is cancelled, its worker stopped."""
        self._stop.stop()

    @property
    def current(self) -> Job | None:
        """The runner job of the round queued or running now (None while environments are made)."""
        return self._stop.job

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        return self._done.wait(timeout)


@dataclass(frozen=True)
class VersionsOutcome:
    """What the page shows of a finished job: pooled results by version, comparisons, errors."""

    pooled: list[tuple[str, Result]]
    errors: list[str]
    # Each version's rounds, for the figures that contradict each other (findings).
    rounds: dict[str, list[Result]] = field(default_factory=dict)

    @property
    def comparisons(self) -> list[dict[str, Any]]:
        """Adjacent versions compared, worded in the reader's language of this moment."""
        return compare_versions(self.pooled)

    @property
    def findings(self) -> dict[str, list[Check]]:
        """Each version's figures that contradict each other, in the reader's language of this moment."""
        return findings([(_Rounds(version, self.rounds.get(version) or [result]), result)
                         for version, result in self.pooled])


@dataclass(frozen=True)
class _Rounds:
    """A version's rounds as analysis.versions.findings reads a run: what was asked for, its results."""

    requested: str
    results: list[Result]


def outcome(runs: list[VersionRun]) -> VersionsOutcome:
    _numpy, pooled = pooled_runs(runs)
    ordered = sorted(((run.requested, result) for run, result in pooled), key=lambda item: release_key(item[0]))
    return VersionsOutcome(ordered, [run.error for run in runs if run.error],
                           {run.requested: list(run.results) for run, _result in pooled})


def versions_table(pooled: list[tuple[str, Result]],
                   found: dict[str, list[Check]] | None = None) -> list[dict[str, str]]:
    """One row per version: runtime with its 95% range, compile, first call, speedup, what really ran,
    and whether its figures agree (``found``: VersionsOutcome.findings; how many do not)."""
    rows = []
    for requested, result in pooled:
        runtime = result.jax.runtime
        jax_version, jaxlib_version = real_versions(result)
        row = {_("JAX asked for"): requested, _("JAX runtime"): format_time(runtime.median_s),
               _("95% range"): format_time_range(*pooled_range(runtime, runtime.block_medians_s)),
               _("Compile"): format_time(result.jax.compile_total_s),
               _("First call"): first_call_text(result),
               # Marked ? where set aside, as History marks it (its reason: set_aside_lines, under the table)
               _("Speedup"): format_factor(result.speedup) + ("" if trusted(result) else "?"),
               _("jax (ran)"): jax_version or "?", _("jaxlib (ran)"): jaxlib_version or "?"}
        if found is not None:  # a count: the findings' titles did not fit the column
            n = len(found.get(requested, []))
            row[_("Figures agree")] = ngettext("no: {n} finding below", "no: {n} findings below", n).format(n=n) \
                if n else _("yes")
        rows.append(row)
    return rows


def set_aside_lines(pooled: list[tuple[str, Result]]) -> list[str]:
    """Each version whose speedup the table marks ?, and why it is set aside: never a bare figure."""
    return [_("JAX {version}: speedup set aside, {why}").format(version=markdown_literal(requested), why=why)
            for requested, result in pooled if (why := doubt_text(result)) is not None]


def findings_markdown(found: dict[str, list[Check]]) -> list[str]:
    """Each figure of a version that contradicts another, a Markdown line quoting both figures, led by
    what it is (consistency.finding_title: a warning is "Figures that disagree", never its check's title,
    "Repeated measurement agrees", which would read as the opposite above it)."""
    return [_("JAX {version}: **{title}**: {reason}").format(version=markdown_literal(version),
                                                            title=finding_title(line),
                                                            reason=markdown_literal(line.reason))
            for version, lines in found.items() for line in lines]
