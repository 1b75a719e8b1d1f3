"""The results schema, written once for SQLite and PostgreSQL: versioned migrations and the one
place where the two dialects' parameter styles meet.

Migration N (1-based) takes a database from schema N-1 to N; SQLite records the version in
``PRAGMA user_version``, PostgreSQL in the ``jaxcompare_schema_version`` table (a row per migration).
A migration is SQL, then where it fills a new column for rows saved before it, a Python step
(``FILLS``) that runs in the same transaction: all of it lands, or none.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable
from typing import Any

from ..model.port_names import PORT_NAME

# Column types that differ: PostgreSQL's REAL is 4-byte (a saved median would come back rounded),
# and its text sorts by the database's locale unless COLLATE "C" (SQLite compares bytes, so both
# backends list alike).
TYPES = {
    "sqlite": {"text": "TEXT", "float": "REAL"},
    "postgres": {"text": 'TEXT COLLATE "C"', "float": "DOUBLE PRECISION"},
}

MIGRATIONS = (
    # 1: the results table (docs/json.md's summary fields, then the full Result JSON in doc).
    """
CREATE TABLE IF NOT EXISTS results (
    id {text} PRIMARY KEY,
    created {text} NOT NULL,
    "case" {text} NOT NULL,
    shape {text} NOT NULL,
    precision {text} NOT NULL,
    dtype {text} NOT NULL,
    backend {text} NOT NULL,
    device {text} NOT NULL,
    device_kind {text} NOT NULL,
    host {text} NOT NULL,
    jax_version {text} NOT NULL,
    speedup {float},
    numpy_median_s {float} NOT NULL,
    jax_median_s {float} NOT NULL,
    saved {text} NOT NULL,
    doc {text} NOT NULL
);
CREATE INDEX IF NOT EXISTS results_created ON results (created);
CREATE INDEX IF NOT EXISTS results_case ON results ("case", precision);
""",
    # 2: NumPy's second figure, timed in the worker with freed memory kept (the doc's
    # numpy.kept_memory.median_s; NULL where NumPy was timed once). Older rows: fill_numpy_kept.
    """
ALTER TABLE results ADD COLUMN numpy_kept_median_s {float};
""",
    # 3: the JAX port measured (Result.port: the spec's, else the case's default as its worker recorded
    # it; NULL for a result saved before cases had ports, which measured today's default). Older rows:
    # fill_port. History lists and filters by it; two ports of one case are two configurations.
    """
ALTER TABLE results ADD COLUMN port {text};
CREATE INDEX IF NOT EXISTS results_port ON results ("case", port);
""",
)
SCHEMA_VERSION = len(MIGRATIONS)

# Where PostgreSQL keeps the versions applied (SQLite has user_version for it).
VERSION_TABLE = "jaxcompare_schema_version"


def migration(version: int, dialect: str) -> list[str]:
    """The statements of migration ``version`` in ``dialect`` ("sqlite" or "postgres")."""
    text = MIGRATIONS[version - 1].format(**TYPES[dialect])
    return [s.strip() for s in text.split(";") if s.strip()]


def migrate(conn: Any, version: int, dialect: str) -> None:
    """Apply migration ``version`` on ``conn`` (sqlite3's, or postgres.Connection: both take qmark
    SQL) inside the caller's transaction: its statements, then its fill for older rows, if any."""
    for statement in migration(version, dialect):
        conn.execute(statement)
    fill = FILLS.get(version)
    if fill is not None:
        fill(conn)


FILL_BATCH = 500  # rows read at a time: a history of large docs never sits in memory whole


def fill_numpy_kept(conn: Any) -> None:
    """Migration 2 for rows saved before it: each row's kept figure from its own doc. In Python, not
    SQL: SQLite's json_extract and PostgreSQL's ::jsonb both fail the whole upgrade on one doc that is
    not JSON (a row written by hand), where here that row keeps NULL and stays the unreadable row it was."""
    last = ""
    while True:
        # Only docs that mention it (LIKE's _ matches any character: a superset, checked below).
        batch = conn.execute("SELECT id, doc FROM results WHERE id > ? AND doc LIKE ? ORDER BY id LIMIT ?",
                             (last, "%kept_memory%", FILL_BATCH)).fetchall()
        if not batch:
            return
        for row_id, doc in batch:
            median = kept_median(doc)
            if median is not None:
                conn.execute("UPDATE results SET numpy_kept_median_s = ? WHERE id = ?", (median, row_id))
        last = batch[-1][0]


def kept_median(doc: Any) -> float | None:
    """``numpy.kept_memory.median_s`` of a saved doc's text, when it is a finite number; else None."""
    try:
        value = json.loads(doc)["numpy"]["kept_memory"]["median_s"]
    except (ValueError, TypeError, KeyError, IndexError, RecursionError):
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def fill_port(conn: Any) -> None:
    """Migration 3 for rows saved before it: each row's port from its own doc (as fill_numpy_kept, a doc
    that is not JSON keeps NULL); NULL for a doc from before ports."""
    last = ""
    while True:
        batch = conn.execute("SELECT id, doc FROM results WHERE id > ? AND doc LIKE ? ORDER BY id LIMIT ?",
                             (last, '%"port"%', FILL_BATCH)).fetchall()
        if not batch:
            return
        for row_id, doc in batch:
            port = doc_port(doc)
            if port is not None:
                conn.execute("UPDATE results SET port = ? WHERE id = ?", (port, row_id))
        last = batch[-1][0]


def doc_port(doc: Any) -> str | None:
    """The port a saved doc's text measured: ``spec.port``, else ``case_info.port`` (as Result.port reads
    them), when it is a port's name; else None."""
    try:
        data = json.loads(doc)
        port = (data.get("spec") or {}).get("port") or (data.get("case_info") or {}).get("port")
    except (ValueError, TypeError, AttributeError, RecursionError):
        return None
    return port if isinstance(port, str) and PORT_NAME.fullmatch(port) else None


# Migrations that fill a column they add, by version.
FILLS: dict[int, Callable[[Any], None]] = {2: fill_numpy_kept, 3: fill_port}


@functools.lru_cache(maxsize=256)
def to_pyformat(sql: str) -> str:
    """The store's SQL (qmark, ``?``) in psycopg's style (``%s``, a literal ``%`` doubled). The
    store's statements hold no ``?`` inside a string literal, so a plain replace is exact."""
    return sql.replace("%", "%%").replace("?", "%s")
