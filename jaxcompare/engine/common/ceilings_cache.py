"""The CPU's measured ceilings, cached per host (worker/ceilings.py measures them once and writes
them here): the file's place and schema, reading and writing it, and whether a dtype's matmul rate
is in it, which the server's estimates ask before a run (server/durations.py). No JAX here.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

from .host import cpu_model

CACHE_NAME = "cpu_peaks.json"
CACHE_SCHEMA = "jaxcompare.cpu_peaks/1"
# A rate measured on a busy machine is measured again on up to this many later runs.
BUSY_RETRIES = 3


def cache_path() -> Path:
    """$JAXCOMPARE_CPU_PEAKS (one file for every database on a host), else beside the results
    database: $JAXCOMPARE_DB's folder, else ~/.jaxcompare. (The same rule as history/store.py's
    default_path, repeated: the engine sits below the history layer.)"""
    own = os.environ.get("JAXCOMPARE_CPU_PEAKS")
    if own:
        return Path(own).expanduser()
    db = os.environ.get("JAXCOMPARE_DB", "").strip()
    on_file = db and "://" not in db  # a postgresql:// URL has no folder: ~/.jaxcompare then
    folder = Path(db).expanduser().parent if on_file else Path.home() / ".jaxcompare"
    return folder / CACHE_NAME


def read_cache(path: Path) -> dict[str, Any]:
    """The cached entries by key; {} for a missing, unreadable or other-schema file."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(doc, dict) or doc.get("schema") != CACHE_SCHEMA or not isinstance(doc.get("peaks"), dict):
        return {}
    return doc["peaks"]


def write_cache(path: Path, key: str, entry: dict[str, Any]) -> None:
    """Merge one entry into the cache, written beside it and renamed (readers never see half a
    file). A cache that cannot be written only means measuring again next time."""
    peaks = read_cache(path) | {key: entry}
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps({"schema": CACHE_SCHEMA, "peaks": peaks}, indent=1), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()


def ceilings_known(dtype: str) -> bool:
    """Whether this host's matmul rate at ``dtype`` is in the ceilings' cache (else the first run
    measures it: server/durations.CEILINGS_S). Read from the file, as the worker will: a missing file is 'no'."""
    peaks = read_cache(cache_path())
    prefix = cpu_model()
    # An entry measured while the machine was busy is measured again on the next runs (worker/ceilings.py).
    return any(isinstance(key, str) and key.startswith(prefix) and key.endswith(f"| {dtype}")
               and isinstance(entry, dict) and not (entry.get("busy") and entry.get("measurements", 1) <= BUSY_RETRIES)
               for key, entry in peaks.items())
