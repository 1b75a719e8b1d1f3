"""Local vs hosted mode, operator limits, and the checks every request passes first; runs
in the server/CLI process, before a job is queued.

Local mode keeps everything enabled. Hosted mode (``JAXCOMPARE_MODE=hosted`` or a
settings file named by ``JAXCOMPARE_SETTINGS``) caps sizes, sweep length, the queue and
the rate per client, and refuses user case files (they are arbitrary code). A local-mode
app refuses them too unless its server listens on loopback only (``for_server``).
"""

from __future__ import annotations

import ipaddress
import math
import os
import re
import threading
import time
import tomllib
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from ...i18n import N_
from ...model.cases import Case, format_shape
from ...model.errors import BadInput, TooLarge
from ...model.platforms import PLATFORMS as KNOWN_PLATFORMS
from ...model.platforms import PREFERRED
from ...model.spec import Spec
from ..common.footprint import check_fits, estimate, host_available

MODES = ("local", "hosted")
PLATFORMS = tuple(KNOWN_PLATFORMS)  # JAXCOMPARE_DEVICES' platform names: the platform table's
# JAXCOMPARE_RAY_RESOURCE's words, the platform table's names; any other value names a custom Ray resource.
RAY_RESOURCES = ("auto", *PREFERRED)


@dataclass(frozen=True)
class Settings:
    mode: str = "local"
    max_elements: int | None = None
    max_sweep_points: int = 12
    max_jobs_per_minute: int | None = None
    # None: the CLI may load them; the app only when its server listens on loopback (for_server).
    allow_cases_file: bool | None = None
    job_timeout_s: float = 600.0
    max_queue: int | None = None
    # Measurements one client may have queued or running at once (a reload does not reset it).
    max_jobs_per_client: int | None = None
    # One worker pair and one queue per device ('gpu:0', 'gpu:1'); empty: the first device.
    devices: tuple[str, ...] = ()
    # The header a trusted reverse proxy puts the client's address in (X-Forwarded-For).
    trusted_proxy_header: str | None = None
    # Hosted mode: the only JAX releases the Versions page offers, each prepared ahead by the operator
    # (`jaxcompare versions --prepare`); a visitor never makes the server install packages.
    jax_versions: tuple[str, ...] = ()
    # A Ray cluster that runs the jobs instead of local workers (docs/cluster.md): its address,
    # or 'local' for a cluster of this machine alone; None: the local workers.
    ray_address: str | None = None
    # The resource each job holds one of there: 'auto', 'gpu', 'tpu', 'cpu' or a custom name.
    ray_resource: str = "auto"
    # Worker processes that may hold one device at once; None: as its platform allows (model/platforms.py:
    # one on a TPU). 1 makes any device's lane hand it from one worker to the next.
    device_holders: int | None = None

    @classmethod
    def hosted(cls) -> Settings:
        return cls(mode="hosted", max_elements=2**24, max_sweep_points=8, max_jobs_per_minute=6,
                   allow_cases_file=False, job_timeout_s=180.0, max_queue=20, max_jobs_per_client=2)

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
                raise BadInput(N_("settings file {path!r} cannot be read: {error}").format(
                    path=path, error=exc)) from None
            section = data.get("jaxcompare", data)
            mode = str(section.get("mode", mode)).lower()
            overrides.update({k: v for k, v in section.items() if k != "mode"})
        if mode not in MODES:
            raise BadInput(N_("JAXCOMPARE_MODE must be one of {modes}, got {mode!r}").format(
                modes=", ".join(MODES), mode=mode))
        settings = _apply(cls.hosted() if mode == "hosted" else cls(), overrides)
        for f in fields(cls):
            key = f"JAXCOMPARE_{f.name.upper()}"
            # Set but empty is unset: the mode's default, never "no limit" (an empty JAXCOMPARE_MAX_ELEMENTS= in
            # a hosted unit file lifted the limit); `none`, `unlimited` or 0 say no limit.
            if env.get(key, "").strip() and f.name != "mode":
                try:
                    settings = _apply(settings, {f.name: env[key]})
                except BadInput as exc:  # named by the variable an operator set
                    raise BadInput(N_("environment variable {variable}: {error}").format(
                        variable=key, error=exc)) from None
        return settings

    @property
    def hosted_mode(self) -> bool:
        return self.mode == "hosted"

    def for_server(self, address: str | None) -> Settings:
        """These settings for an app server listening on ``address`` (Streamlit's
        ``server.address``; unset means every interface): user case files, unless set
        explicitly, only in local mode on a loopback address."""
        if self.allow_cases_file is not None:
            return self
        return replace(self, allow_cases_file=not self.hosted_mode and is_loopback(address))

    def cases_file_exposed(self, address: str | None) -> bool:
        """Case files were allowed explicitly on a server others can reach: warn about it."""
        return self.allow_cases_file is True and (self.hosted_mode or not is_loopback(address))

    def check_spec(self, spec: Spec) -> None:
        """Operator limits (hosted mode); raises TooLarge / BadInput with the limit named."""
        if spec.cases_file and self.allow_cases_file is False:
            raise BadInput(N_("user case files are disabled on this server (they are code; see "
                              "JAXCOMPARE_ALLOW_CASES_FILE in docs/hosting.md)"))
        n = math.prod(spec.shape)
        if self.max_elements is not None and n > self.max_elements:
            raise TooLarge(N_("shape {shape} has {elements:,} elements; this server allows at most {limit:,}").format(
                shape=format_shape(spec.shape), elements=n, limit=self.max_elements))

    def check_sweep(self, points: int) -> None:
        if points > self.max_sweep_points:
            raise TooLarge(N_("a sweep of {points} sizes is longer than this server allows ({limit})").format(
                points=points, limit=self.max_sweep_points))

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def is_loopback(address: str | None) -> bool:
    """Whether a server bound to ``address`` is reachable from this machine only. Unset or
    empty means every interface (what Streamlit binds then), and so does a Unix socket
    (a reverse proxy may stand in front of it)."""
    if not address:
        return False
    text = address.strip().strip("[]")
    if text.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(text).is_loopback
    except ValueError:
        return False


def _apply(base: Settings, overrides: dict[str, Any]) -> Settings:
    known = {f.name: f for f in fields(Settings)}
    values: dict[str, Any] = {}
    for key, raw in overrides.items():
        if key not in known:
            raise BadInput(N_("unknown setting {key!r}; known: {known}").format(
                key=key, known=", ".join(sorted(known))))
        values[key] = _coerce(key, raw)
    return replace(base, **values)


def _coerce(key: str, raw: Any) -> Any:
    if key == "devices":
        return _devices(raw)
    if key == "jax_versions":
        return _jax_versions(raw)
    if key in ("ray_address", "ray_resource"):
        text = str(raw).strip()
        if key == "ray_resource":
            return text.lower() if text.lower() in RAY_RESOURCES else (text or "auto")
        return text or None
    if key == "trusted_proxy_header":
        header = str(raw).strip()
        if header and not all(c.isalnum() or c == "-" for c in header):
            raise BadInput(N_("setting {key} must be a header name like X-Forwarded-For, got {raw!r}").format(
                key=key, raw=raw))
        return header or None
    text = str(raw).strip().lower()
    if key == "allow_cases_file":
        if text in ("1", "true", "yes", "on"):
            return True
        if text in ("0", "false", "no", "off"):
            return False
        raise BadInput(N_("setting {key} must be true or false, got {raw!r}").format(key=key, raw=raw))
    if key in _UNLIMITED and text in ("", "none", "0", "unlimited"):
        return None
    try:
        value = float(text)
    except ValueError:
        raise BadInput(N_("setting {key} must be a number, got {raw!r}").format(key=key, raw=raw)) from None
    if not math.isfinite(value) or value <= 0:
        raise BadInput(N_("setting {key} must be positive, got {raw!r}").format(key=key, raw=raw))
    if key == "job_timeout_s":
        return value
    if not value.is_integer():  # 0.4 would become 0, which means "no limit" for some of these
        raise BadInput(N_("setting {key} must be a whole number, got {raw!r}").format(key=key, raw=raw))
    return int(value)


# Integer limits that 0 (or none, unlimited) lifts.
_UNLIMITED = ("max_elements", "max_jobs_per_minute", "max_queue", "max_jobs_per_client", "device_holders")


def _devices(raw: Any) -> tuple[str, ...]:
    """'gpu:0,gpu:1' (or a TOML list) -> ('gpu:0', 'gpu:1'); each platform:index once."""
    items = raw if isinstance(raw, list | tuple) else str(raw).split(",")
    out: list[str] = []
    for item in (str(i).strip().lower() for i in items):
        if not item:
            continue
        platform, _, index = item.partition(":")
        if platform not in PLATFORMS or not index.isdecimal():
            raise BadInput(N_("setting devices: {item!r} is not a device like gpu:0 or cpu:1 (platforms: {platforms})")
                           .format(item=item, platforms=", ".join(PLATFORMS)))
        name = f"{platform}:{int(index)}"
        if name in out:
            raise BadInput(N_("setting devices names {name} twice").format(name=name))
        out.append(name)
    return tuple(out)


def _jax_versions(raw: Any) -> tuple[str, ...]:
    """'0.4.38, 0.10.2' (or a TOML list) -> ('0.4.38', '0.10.2'), each a release number."""
    from .envs import check_version

    items = raw if isinstance(raw, list | tuple) else re.split(r"[\s,]+", str(raw))
    try:
        return tuple(dict.fromkeys(check_version(str(item)) for item in items if str(item).strip()))
    except BadInput as exc:
        raise BadInput(N_("setting jax_versions: {error}").format(error=exc)) from None


def preflight(spec: Spec, settings: Settings | None = None, case: Case | None = None, *,
              found: Case | None = None) -> None:
    """Every check that needs no worker: case, shape, limits, host memory. Fast, allocates
    nothing big, so an impossible request is refused before it queues. A user's cases file
    is code and never runs here: the worker finds its case and checks shape and memory,
    under the job's deadline. ``case``: a Case sent with the job (a notebook's functions);
    ``found``: the catalog's case for the spec, where the caller has looked it up already."""
    from ...catalog import get_case

    settings = settings or Settings()
    settings.check_spec(spec)
    if case is not None and settings.allow_cases_file is False:  # None: a CLI or notebook process
        raise BadInput(N_("your own functions are code, and this server (hosted mode) runs only its built-in cases"))
    if spec.cases_file and case is None:
        return
    case = case or found or get_case(spec.case, spec.cases_file)
    case.get_port(spec.port)  # an unknown port is refused before it queues, with the case's ports named
    case.check_shape(spec.shape)
    est = estimate(case, spec.shape, spec.dtype, backend="unknown")
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
            if len(self._events) > 1024:  # forget clients quiet for a minute: memory stays bounded
                self._events = {k: e for k, e in self._events.items() if e and now - e[-1] < 60}
            events = self._events.setdefault(key, deque())
            while events and now - events[0] >= 60:
                events.popleft()
            if len(events) >= self.per_minute:
                wait = 60 - (now - events[0])
                raise BadInput(N_("rate limit: at most {per_minute} runs a minute on this server; "
                                  "try again in {wait} s").format(per_minute=self.per_minute, wait=math.ceil(wait)))
            events.append(now)


# The JAXCOMPARE_ variables read elsewhere than Settings' fields (whose names are JAXCOMPARE_ and the field's):
# the database, the CLI's language and debug, the CPU ceilings' file, the hosted demo's admin token, the atlas
# file, JAX versions' environments, a worker's own two (set by its runner), and the test harness's. Any
# other JAXCOMPARE_ name is a misspelling, which the check below refuses: a misspelt limit does not apply.
# tests/test_limits.py checks this list against the names the code reads.
OTHER_VARIABLES = frozenset({
    "JAXCOMPARE_DB", "JAXCOMPARE_LANG", "JAXCOMPARE_DEBUG", "JAXCOMPARE_CPU_PEAKS", "JAXCOMPARE_ADMIN_TOKEN",
    "JAXCOMPARE_SETTINGS", "JAXCOMPARE_ATLAS", "JAXCOMPARE_ENVS_DIR", "JAXCOMPARE_WORKER_PRECISION",
    "JAXCOMPARE_WORKER_DEVICE", "JAXCOMPARE_CHROMIUM", "JAXCOMPARE_SCREENSHOTS", "JAXCOMPARE_LOAD_S",
    "JAXCOMPARE_NOTEBOOK_SMALL",
})
TEST_PREFIX = "JAXCOMPARE_TEST_"  # the test suite's own hooks


def known_variables() -> frozenset[str]:
    return OTHER_VARIABLES | {f"JAXCOMPARE_{f.name.upper()}" for f in fields(Settings)}


def unknown_variables(environ: Mapping[str, str]) -> list[str]:
    """What to say of each JAXCOMPARE_ variable in ``environ`` that jaxcompare does not read, with the
    name it most likely meant."""
    import difflib

    known = known_variables()
    said = []
    for name in sorted(environ):
        if name.startswith("JAXCOMPARE_") and name not in known and not name.startswith(TEST_PREFIX):
            # Matched without the prefix that every name shares.
            close = difflib.get_close_matches(name.removeprefix("JAXCOMPARE_"),
                                              sorted(k.removeprefix("JAXCOMPARE_") for k in known), n=1, cutoff=0.6)
            said.append(f"{name} is not a variable jaxcompare reads"
                        + (f" (did you mean JAXCOMPARE_{close[0]}?)" if close else ""))
    return said


def main() -> int:
    """`python -m jaxcompare.engine.server.settings`: the settings this environment gives, checked before a
    server starts (`make serve`): one line and status 2 for a bad value, where the app would only fail at its
    first visitor, with a traceback on every page load."""
    import sys

    try:
        settings = Settings.from_env()
    except BadInput as exc:
        print(f"jaxcompare: bad settings: {exc}", file=sys.stderr)
        return 2
    if unknown := unknown_variables(os.environ):
        print(f"jaxcompare: bad settings: {'; '.join(unknown)}", file=sys.stderr)
        return 2
    print(f"jaxcompare: {settings.mode} mode; at most {settings.max_elements or 'any number of'} elements an input, "
          f"{settings.max_jobs_per_minute or 'any number of'} runs a minute", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
