"""The Versions page's controls, its background job and its table (no Streamlit here): one case
measured under several JAX releases by engine/versions.py, which starts its own workers from
each release's interpreter, so it runs in a thread of its own rather than in the Runner's queue."""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..analysis.versions import compare_versions, pooled_runs, real_versions, release_key
from ..engine import envs
from ..engine.settings import Settings
from ..engine.versions import VersionRun, measure_versions
from ..i18n import N_, _
from ..model.errors import BadInput
from ..model.formatting import format_factor, format_time, format_time_range
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
    NOT_CONTROLS: ClassVar[frozenset[str]] = frozenset({"device", "profile"})
    size: str = "small"
    timing: str = "quick"
    jax: str = field(default_factory=default_versions)

    def versions(self) -> list[str]:
        found = parse_versions(self.jax)
        if len(found) < 1:
            raise BadInput(N_("give at least one JAX version, like {example}").format(example=default_versions()))
        return found


def hosted_refusals(versions: list[str], settings: Settings) -> list[str]:
    """In hosted mode, the refusal (English, N_()): a versions run starts its own workers outside
    the server's one queue (no rate limit, deadline or Stop, and beside other visitors' timings),
    so on a shared server the operator runs it with the CLI and saves it to History."""
    if not settings.hosted_mode:
        return []
    return [N_("A hosted demo does not run JAX version comparisons for its visitors: each starts its own "
               "workers beside everyone's measurements. The operator runs `jaxcompare versions ... --save`, "
               "and History shows the results.")]


class VersionsJob:
    """measure_versions in a daemon thread; the page polls ``message``/``fraction`` and takes
    ``runs`` once ``done``. ``message`` is an N_() template's English text (translate_text shows it)."""

    def __init__(self, spec: Spec, versions: list[str], *, rounds: int = 2) -> None:
        self.spec, self.versions, self.rounds = spec, versions, rounds
        self.message = N_("starting")
        self.fraction = 0.0
        self.runs: list[VersionRun] = []
        self.error: str | None = None
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="jaxcompare-versions")
        self._thread.start()

    def _progress(self, message: str, fraction: float) -> None:
        self.message, self.fraction = message, fraction

    def _run(self) -> None:
        try:
            self.runs = measure_versions(self.spec, self.versions, rounds=self.rounds, progress=self._progress)
        except Exception as exc:  # shown on the page; the server goes on
            self.error = str(exc) or type(exc).__name__
        finally:
            self._done.set()

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

    @property
    def comparisons(self) -> list[dict[str, Any]]:
        """Adjacent versions compared, worded in the reader's language of this moment."""
        return compare_versions(self.pooled)


def outcome(runs: list[VersionRun]) -> VersionsOutcome:
    _numpy, pooled = pooled_runs(runs)
    ordered = sorted(((run.requested, result) for run, result in pooled), key=lambda item: release_key(item[0]))
    return VersionsOutcome(ordered, [run.error for run in runs if run.error])


def versions_table(pooled: list[tuple[str, Result]]) -> list[dict[str, str]]:
    """One row per version: runtime with its 95% range, compile, first call, speedup, what really ran."""
    rows = []
    for requested, result in pooled:
        runtime = result.jax.runtime
        jax_version, jaxlib_version = real_versions(result)
        rows.append({_("JAX asked for"): requested, _("JAX runtime"): format_time(runtime.median_s),
                     _("95% range"): format_time_range(runtime.ci_low_s, runtime.ci_high_s),
                     _("Compile"): format_time(result.jax.compile_total_s),
                     _("First call"): format_time(result.jax.first_call.median_s),
                     _("Speedup"): format_factor(result.speedup),
                     _("jax (ran)"): jax_version or "?", _("jaxlib (ran)"): jaxlib_version or "?"})
    return rows
