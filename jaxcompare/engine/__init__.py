"""The measuring engine's front door: what the app, the CLI and the notebook API use, by name.

The engine has two halves along the process boundary (docs/architecture.md): ``server/`` runs in
the Streamlit or CLI process and queues jobs; ``worker/`` runs in the worker processes, the only
place that imports JAX; ``common/`` is what both read. Front ends import from here only (an
import-linter contract). Each name loads its module on first use, so that importing this package
(a page's first paint) loads nothing of the engine it does not draw, and never JAX.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# name -> the module (under jaxcompare.engine) that defines it
_EXPORTS: dict[str, str] = {
    # running jobs
    "Runner": "server.runner",
    "Job": "server.jobs",
    "Owner": "server.jobs",
    "Cancelled": "server.process",
    "JobKind": "server.jobs",
    "Step": "server.jobs",
    "register_kind": "server.jobs",
    "job_kind": "server.jobs",
    "job_kinds": "server.jobs",
    "Settings": "server.settings",
    "RateLimiter": "server.settings",
    "Estimate": "server.durations",
    "pitfalls_kind": "server.durations",
    # JAX releases side by side
    "envs": "server.envs",
    "VersionUnavailable": "server.envs",
    "ensure_env": "server.envs",
    "envs_dir": "server.envs",
    "measure_versions": "server.versions",
    "StopSignal": "server.versions",
    "VersionRun": "server.versions",
    # the pitfalls lab's lessons, words and sections
    "CODE_COMMENTS": "common.lessons",
    "DOCS": "common.lessons",
    "EFFECTS": "common.lessons",
    "EFFECT_WORDS": "common.lessons",
    "PITFALLS": "common.lessons",
    "SECTIONS": "common.lessons",
    "check_sections": "common.lessons",
    "pitfall_title": "common.lessons",
    "side_roles": "common.lessons",
    "side_text": "common.lessons",
    # the host and its load
    "ENV_VARS": "common.host",
    "host_info": "common.host",
    "is_busy": "common.load",
    # read in the server too, though they live with the worker's code (no JAX at their import)
    "TOP_OPS": "worker.profile",
    "summarize_file": "worker.profile",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    where = _EXPORTS.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = importlib.import_module(f"{__name__}.{where}")
    value = module if where.rpartition(".")[2] == name else getattr(module, name)
    globals()[name] = value  # the next look-up is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


if TYPE_CHECKING:  # for type checkers and editors; at run time each name loads on first use
    from .common.host import ENV_VARS, host_info
    from .common.lessons import (
        CODE_COMMENTS,
        DOCS,
        EFFECT_WORDS,
        EFFECTS,
        PITFALLS,
        SECTIONS,
        check_sections,
        pitfall_title,
        side_roles,
        side_text,
    )
    from .common.load import is_busy
    from .server import envs
    from .server.durations import Estimate, pitfalls_kind
    from .server.envs import VersionUnavailable, ensure_env, envs_dir
    from .server.jobs import Job, JobKind, Owner, Step, job_kind, job_kinds, register_kind
    from .server.process import Cancelled
    from .server.runner import Runner
    from .server.settings import RateLimiter, Settings
    from .server.versions import StopSignal, VersionRun, measure_versions
    from .worker.profile import TOP_OPS, summarize_file
