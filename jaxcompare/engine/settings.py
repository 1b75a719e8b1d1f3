"""Local vs hosted mode, operator limits, and the checks every request passes first; runs
in the server/CLI process, before a job is queued.

Local mode keeps everything enabled. Hosted mode (``JAXCOMPARE_MODE=hosted`` or a
settings file named by ``JAXCOMPARE_SETTINGS``) caps sizes, sweep length and per-session
rate, and refuses user case files (they are arbitrary code).
"""

from __future__ import annotations

import math
import os
import threading
import time
import tomllib
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from ..model.cases import Case, format_shape
from ..model.errors import BadInput, TooLarge
from ..model.spec import Spec
from .memory import check_fits, estimate, host_available

MODES = ("local", "hosted")


@dataclass(frozen=True)
class Settings:
    mode: str = "local"
    max_elements: int | None = None
    max_sweep_points: int = 12
    max_jobs_per_minute: int | None = None
    allow_cases_file: bool = True
    job_timeout_s: float = 600.0

    @classmethod
    def hosted(cls) -> Settings:
        return cls(mode="hosted", max_elements=2**24, max_sweep_points=8, max_jobs_per_minute=6,
                   allow_cases_file=False, job_timeout_s=180.0)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Mode defaults, then a TOML settings file, then single JAXCOMPARE_* variables."""
        env = os.environ if environ is None else environ
        mode = env.get("JAXCOMPARE_MODE", "local").strip().lower() or "local"
        overrides: dict[str, Any] = {}
        path = env.get("JAXCOMPARE_SETTINGS")
        if path:
            try:
                data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
            except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
                raise BadInput(f"settings file {path!r} cannot be read: {exc}") from None
            section = data.get("jaxcompare", data)
            mode = str(section.get("mode", mode)).lower()
            overrides.update({k: v for k, v in section.items() if k != "mode"})
        if mode not in MODES:
            raise BadInput(f"JAXCOMPARE_MODE must be one of {', '.join(MODES)}, got {mode!r}")
        base = cls.hosted() if mode == "hosted" else cls()
        for f in fields(cls):
            key = f"JAXCOMPARE_{f.name.upper()}"
            if key in env and f.name != "mode":
                overrides[f.name] = env[key]
        return _apply(base, overrides)

    @property
    def hosted_mode(self) -> bool:
        return self.mode == "hosted"

    def check_spec(self, spec: Spec) -> None:
        """Operator limits (hosted mode); raises TooLarge / BadInput with the limit named."""
        if spec.cases_file and not self.allow_cases_file:
            raise BadInput("user case files are disabled on this server (hosted mode)")
        n = math.prod(spec.shape)
        if self.max_elements is not None and n > self.max_elements:
            raise TooLarge(f"shape {format_shape(spec.shape)} has {n:,} elements; this server "
                           f"allows at most {self.max_elements:,}")

    def check_sweep(self, points: int) -> None:
        if points > self.max_sweep_points:
            raise TooLarge(f"a sweep of {points} sizes is longer than this server allows "
                           f"({self.max_sweep_points})")

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def _apply(base: Settings, overrides: dict[str, Any]) -> Settings:
    known = {f.name: f for f in fields(Settings)}
    values: dict[str, Any] = {}
    for key, raw in overrides.items():
        if key not in known:
            raise BadInput(f"unknown setting {key!r}; known: {', '.join(sorted(known))}")
        values[key] = _coerce(key, raw)
    return replace(base, **values)


def _coerce(key: str, raw: Any) -> Any:
    text = str(raw).strip().lower()
    if key == "allow_cases_file":
        if text in ("1", "true", "yes", "on"):
            return True
        if text in ("0", "false", "no", "off"):
            return False
        raise BadInput(f"setting {key} must be true or false, got {raw!r}")
    if key in ("max_elements", "max_jobs_per_minute") and text in ("", "none", "0", "unlimited"):
        return None
    try:
        value = float(text)
    except ValueError:
        raise BadInput(f"setting {key} must be a number, got {raw!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise BadInput(f"setting {key} must be positive, got {raw!r}")
    return value if key == "job_timeout_s" else int(value)


def preflight(spec: Spec, settings: Settings | None = None, case: Case | None = None) -> None:
    """Every check that needs no worker: case, shape, limits, host memory. Fast, allocates
    nothing big, so an impossible request is refused before it queues. ``case``: a Case sent
    with the job (a notebook's functions) instead of the catalog's."""
    from ..catalog import get_case

    settings = settings or Settings()
    settings.check_spec(spec)
    if case is not None and not settings.allow_cases_file:
        raise BadInput("your own functions are code, and this server (hosted mode) runs only its built-in cases")
    case = get_case(spec.case, spec.cases_file) if case is None else case
    case.check_shape(spec.shape)
    est = estimate(case, spec.shape, spec.dtype, backend="unknown", with_outputs=False)
    check_fits(est, case.name, spec.shape, host_free=host_available(), device_free_bytes=None)


class RateLimiter:
    """At most ``per_minute`` jobs per key in any 60 s window (thread-safe)."""

    def __init__(self, per_minute: int | None, clock: Any = time.monotonic) -> None:
        self.per_minute = per_minute
        self._clock = clock
        self._events: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def acquire(self, key: str) -> None:
        """Record one job for ``key`` or raise BadInput saying when to retry."""
        if self.per_minute is None:
            return
        now = self._clock()
        with self._lock:
            events = self._events.setdefault(key, deque())
            while events and now - events[0] >= 60:
                events.popleft()
            if len(events) >= self.per_minute:
                wait = 60 - (now - events[0])
                raise BadInput(f"rate limit: at most {self.per_minute} runs a minute on this server; "
                               f"try again in {math.ceil(wait)} s")
            events.append(now)
