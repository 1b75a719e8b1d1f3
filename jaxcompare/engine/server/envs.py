"""One Python environment per JAX release, so the same comparison can run under several JAX
versions (``jaxcompare versions``). Runs in the server/CLI process and never imports JAX.

An environment is made with uv (fast, and its cache is shared, so a second environment
reuses the wheels it already fetched) under ``envs_dir()/<key>``, keyed by JAX version,
Python version and accelerator build. It holds ``jax==V`` (``jax[cuda12]==V`` etc. when the
host's JAX is that build), the host's NumPy and SciPy versions when they resolve beside it
(so the NumPy side stays the same and the verdict is about JAX), and the engine's own
runtime dependencies read from this package's metadata. jaxcompare itself is not installed
there: the worker puts a folder holding only a link to this package first on its sys.path
(``source_path``), so every environment runs the code of the checkout that asks.
A marker file written last says the environment is complete; one without it is made again.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from ...i18n import N_
from ...model.errors import BadInput, JaxCompareError
from ...model.platforms import BUILDS

ENVS_DIR_ENV = "JAXCOMPARE_ENVS_DIR"
MARKER = "jaxcompare-env.json"
# A JAX version as PyPI spells its releases (0.4.35, 0.9.0.1, 0.5.0rc1): anything else is
# refused before it reaches a path or a requirement.
_VERSION = re.compile(r"^\d+(\.\d+){1,3}((a|b|rc|\.post|\.dev)\d+)?$")
# The host JAX build, as `make install` (tools/accelerator.py) chose it: the plugin installed beside jax
# (the platform table's builds, model/platforms.py).
_ACCEL_PLUGINS = tuple((build.name, build.plugin) for build in BUILDS.values() if build.plugin)
_ACCELS = tuple(sorted(BUILDS))
_INSTALL_TIMEOUT_S = 1800.0

log = logging.getLogger("jaxcompare.envs")

Progress = Callable[[str, float], None]


class VersionUnavailable(BadInput):
    """A JAX version that cannot be installed here (no such release, or no build for this
    Python or machine): one line, and the other versions still run."""


class NotPrepared(VersionUnavailable):
    """A JAX version whose environment is not made, where nothing may make it (a job, a hosted server)."""


@dataclass(frozen=True)
class JaxEnv:
    """Where one JAX version runs: its interpreter (None: this process's own, the host's JAX),
    the folders its workers put first on sys.path, and what was installed in it."""

    jax_version: str
    python: str | None
    path: Path | None
    python_path: tuple[str, ...] = ()
    installed: dict[str, str] = field(default_factory=dict)
    made: bool = False  # made by this call (False: reused, or the host's own)
    made_s: float | None = None
    notes: tuple[str, ...] = ()

    @property
    def host(self) -> bool:
        return self.python is None


def envs_dir() -> Path:
    """$JAXCOMPARE_ENVS_DIR, else ~/.cache/jaxcompare/envs (XDG_CACHE_HOME respected)."""
    chosen = os.environ.get(ENVS_DIR_ENV)
    if chosen:
        return Path(chosen).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "jaxcompare" / "envs"


def check_version(version: str) -> str:
    version = str(version).strip()
    if not _VERSION.match(version):
        raise VersionUnavailable(N_("JAX {version!r} is not a version number (like 0.4.35)").format(version=version))
    floor = jax_floor()
    if floor is not None and _release(version) < _release(floor):
        # Older releases lack jit(f).trace() and CPU asynchronous dispatch, which the protocol relies on.
        raise VersionUnavailable(N_("JAX {version} is older than the oldest this package measures ({floor})").format(
            version=version, floor=floor))
    return version


def jax_floor() -> str | None:
    """The oldest JAX this package supports, from its metadata (``jax>=0.4.35``)."""
    try:
        requires = metadata.requires("jaxcompare") or []
    except metadata.PackageNotFoundError:
        return None
    for line in requires:
        found = re.match(r"^jax\s*(\[[^]]*\])?\s*>=\s*([\d.]+)", line)
        if found and "extra ==" not in line:
            return found.group(2)
    return None


def _release(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", version.split("rc")[0].split("a")[0].split("b")[0])[:4])


def host_jax_version() -> str | None:
    try:
        return metadata.version("jax")
    except metadata.PackageNotFoundError:
        return None


def host_accelerator() -> str:
    """cpu, cuda12, cuda13 or tpu: ACCEL when set (as for `make install`), else the build the
    host's JAX was installed as (its plugin package), so every environment matches the host."""
    forced = os.environ.get("ACCEL", "").strip().lower()
    if forced:
        if forced not in _ACCELS:
            raise BadInput(N_("ACCEL={accel!r}: expected one of {choices}").format(
                accel=forced, choices=", ".join(_ACCELS)))
        return forced
    for accel, dist in _ACCEL_PLUGINS:
        try:
            metadata.version(dist)
            return accel
        except metadata.PackageNotFoundError:
            continue
    return next(build.name for build in BUILDS.values() if build.plugin is None)


def jax_requirement(version: str, accel: str) -> str:
    return f"jax=={version}" if BUILDS[accel].plugin is None else f"jax[{accel}]=={version}"


def env_key(version: str, accel: str | None = None) -> str:
    """jax-0.4.35-py3.11-cpu: the folder name of one environment."""
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    return f"jax-{check_version(version)}-py{python}-{accel or host_accelerator()}"


def engine_requirements() -> list[str]:
    """The engine's runtime dependencies from this package's metadata, less jax, numpy and scipy
    (the environment pins those itself) and less every extra's (the app's are not needed)."""
    try:
        requires = metadata.requires("jaxcompare") or []
    except metadata.PackageNotFoundError:
        raise JaxCompareError(N_("jaxcompare's package metadata is missing, so the environment's dependencies are "
                                 "unknown: install it (pip install -e .) first")) from None
    keep = []
    for line in requires:
        if "extra ==" in line:
            continue
        name = re.split(r"[\s<>=!~;\[(]", line, maxsplit=1)[0].lower()
        if name not in ("jax", "jaxlib", "numpy", "scipy"):
            keep.append(line.split(";")[0].strip())
    return keep


def uv_binary() -> str:
    """The uv beside this interpreter (the `uv` package), else one on PATH."""
    try:
        import uv  # type: ignore[import-not-found]

        return uv.find_uv_bin()
    except (ImportError, FileNotFoundError):
        pass
    found = shutil.which("uv")
    if found:
        return found
    raise JaxCompareError(N_("making an environment per JAX version needs uv: pip install uv "
                             "(or pip install 'jaxcompare[versions]')"))


def source_path() -> str:
    """A folder holding only a link to this jaxcompare package: first on a foreign worker's
    sys.path, it brings this code and nothing else of the host's site-packages."""
    package = Path(__file__).resolve().parents[2]  # jaxcompare/engine/server/envs.py -> jaxcompare/
    digest = hashlib.sha256(str(package).encode()).hexdigest()[:12]
    folder = envs_dir() / "_source" / digest
    link = folder / "jaxcompare"
    if not (link.is_symlink() and link.resolve() == package):
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f".jaxcompare-{os.getpid()}"
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(package, target_is_directory=True)
        os.replace(tmp, link)  # atomic: a worker starting now sees the old link or the new one
    return str(folder)


def ensure_env(version: str, *, progress: Progress | None = None, use_host: bool = True) -> JaxEnv:
    """The environment for JAX ``version``: the host's own interpreter when it already runs that
    version (``use_host``), a complete cached one, or one made now (a minute or so cold, seconds
    with uv's cache warm). Raises VersionUnavailable with uv's reason in one line."""
    version = check_version(version)
    report = progress or (lambda message, fraction: None)
    if use_host and version == host_jax_version():
        return JaxEnv(version, None, None, installed=_host_versions())
    accel = host_accelerator()
    root = envs_dir()
    root.mkdir(parents=True, exist_ok=True)
    folder = root / env_key(version, accel)
    # One maker per environment (two test processes, two CLI runs): the second waits, then reuses it.
    with open(root / f"{folder.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        marker = _read_marker(folder)
        if marker is None:
            report(N_("making the environment for JAX {version} ({folder})").format(version=version, folder=folder),
                   0.0)
            marker = _make(folder, version, accel, report)
            made = True
        else:
            made = False
    report(N_("JAX {version}: environment ready").format(version=version), 1.0)
    return _env_at(folder, version, marker, made=made)


def prepared_env(version: str) -> JaxEnv | None:
    """The environment for JAX ``version`` when it is ready now (the host's own JAX, or a complete
    cached one), else None; never makes one."""
    version = check_version(version)
    if version == host_jax_version():
        return JaxEnv(version, None, None, installed=_host_versions())
    folder = envs_dir() / env_key(version)
    marker = _read_marker(folder)
    return None if marker is None else _env_at(folder, version, marker, made=False)


def env_for_job(version: str, offered: Sequence[str] | None = None) -> JaxEnv:
    """Where a job that names JAX ``version`` runs: its prepared environment. ``offered``: the
    only versions this server runs (hosted mode's JAXCOMPARE_JAX_VERSIONS; None: any). A version
    off the list, or listed but not prepared, is VersionUnavailable; the latter is also logged
    for the operator, with the command that prepares it."""
    version = check_version(version)
    if offered is not None and version not in offered:
        if not offered:
            raise VersionUnavailable(N_("this server offers no JAX versions to compare (its operator lists them "
                                        "in JAXCOMPARE_JAX_VERSIONS)"))
        raise VersionUnavailable(N_("JAX {version} is not offered on this server; it offers {offered}").format(
            version=version, offered=", ".join(offered)))
    env = prepared_env(version)
    if env is None:
        log.warning("JAX %s was asked for but its environment is not prepared in %s: run `jaxcompare versions "
                    "--prepare %s` (with the server's JAXCOMPARE_ENVS_DIR)", version, envs_dir(), version)
        raise NotPrepared(N_("JAX {version} is offered but not ready on this server yet: its environment has not "
                             "been prepared. The operator has been told.").format(version=version)
                          if offered is not None else
                          N_("the environment for JAX {version} is not made yet (jaxcompare versions --prepare "
                             "makes it)").format(version=version))
    return env


def _env_at(folder: Path, version: str, marker: dict[str, Any], *, made: bool) -> JaxEnv:
    return JaxEnv(version, str(folder / "bin" / "python"), folder, python_path=(source_path(),),
                  installed=dict(marker["installed"]), made=made, made_s=marker.get("made_s"),
                  notes=tuple(marker.get("notes", ())))


def _host_versions() -> dict[str, str]:
    found = {}
    for name in ("jax", "jaxlib", "numpy", "scipy"):
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return found


def _read_marker(folder: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((folder / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not (folder / "bin" / "python").exists():
        return None
    return data


def _make(folder: Path, version: str, accel: str, report: Progress) -> dict[str, Any]:
    started = time.monotonic()
    if folder.exists():  # half-made (no marker): start again
        shutil.rmtree(folder)
    uv = uv_binary()
    python = folder / "bin" / "python"
    _uv([uv, "venv", "--quiet", "--python", sys.executable, str(folder)], version)
    jax_req = jax_requirement(version, accel)
    deps = engine_requirements()
    host = _host_versions()
    pinned = [f"{name}=={host[name]}" for name in ("numpy", "scipy") if name in host]
    notes: list[str] = []
    report(N_("installing {requirement} with NumPy and SciPy as on the host").format(requirement=jax_req), 0.2)
    try:
        _uv([uv, "pip", "install", "--quiet", "--python", str(python), jax_req, *pinned, *deps], version)
    except VersionUnavailable as pinned_error:
        if not re.search(r"\b(numpy|scipy)\b", str(pinned_error)):  # no such JAX, or no wheel for it here
            shutil.rmtree(folder, ignore_errors=True)
            raise
        # The host's NumPy or SciPy may not install beside an old JAX: let the resolver choose and
        # record it (the NumPy side then differs, and the analysis keeps each version's own NumPy).
        report(N_("JAX {version} does not install beside the host's NumPy and SciPy; letting the resolver "
                  "choose").format(version=version), 0.5)
        try:
            _uv([uv, "pip", "install", "--quiet", "--python", str(python), jax_req, "numpy", "scipy", *deps], version)
        except VersionUnavailable:
            shutil.rmtree(folder, ignore_errors=True)
            raise pinned_error from None
        notes.append(N_("the host's NumPy and SciPy ({pins}) do not install beside JAX {version}").format(
            pins=", ".join(pinned), version=version))
    report(N_("JAX {version}: checking the environment").format(version=version), 0.9)
    listing = _uv([uv, "pip", "list", "--format", "json", "--python", str(python)], version)
    installed = {entry["name"].lower(): entry["version"] for entry in json.loads(listing)}
    marker = {"jax": version, "python": ".".join(map(str, sys.version_info[:3])), "accel": accel,
              "requirement": jax_req, "installed": installed, "notes": notes,
              "made_s": round(time.monotonic() - started, 2), "made_at": time.time()}
    tmp = folder / f".{MARKER}.tmp"
    tmp.write_text(json.dumps(marker, indent=1), encoding="utf-8")
    os.replace(tmp, folder / MARKER)  # written last: its presence means complete
    return marker


def _uv(command: list[str], version: str) -> str:
    """Run uv; a failure becomes VersionUnavailable with uv's reason in one line."""
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=_INSTALL_TIMEOUT_S,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise VersionUnavailable(N_("JAX {version} could not be installed: {reason}").format(
            version=version, reason=exc)) from None
    if proc.returncode != 0:
        raise VersionUnavailable(N_("JAX {version} cannot be installed for Python {python} on this machine: "
                                    "{reason}").format(version=version, python=f"{sys.version_info.major}."
                                                       f"{sys.version_info.minor}", reason=_reason(proc.stderr)))
    return proc.stdout


def _reason(stderr: str) -> str:
    """uv's explanation in one line: the 'Because ...' sentence when there is one, else its last line."""
    lines = [re.sub(r"^[\s×╰─▶│]+", "", line).strip() for line in stderr.splitlines()]
    lines = [line for line in lines if line]
    because = next((i for i, line in enumerate(lines) if "Because " in line), None)
    if because is not None:
        text = " ".join(lines[because:]).split("Because ", 1)[1]
        return text.split(", we can conclude")[0]
    return lines[-1] if lines else "uv failed without saying why"
