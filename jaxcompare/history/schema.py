"""The results schema, written once for SQLite and PostgreSQL: versioned migrations and the one
place where the two dialects' parameter styles meet.

Migration N (1-based) takes a database from schema N-1 to N; SQLite records the version in
``PRAGMA user_version``, PostgreSQL in the ``jaxcompare_schema_version`` table (a row per migration).
"""

from __future__ import annotations

import functools

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
)
SCHEMA_VERSION = len(MIGRATIONS)

# Where PostgreSQL keeps the versions applied (SQLite has user_version for it).
VERSION_TABLE = "jaxcompare_schema_version"


def migration(version: int, dialect: str) -> list[str]:
    """The statements of migration ``version`` in ``dialect`` ("sqlite" or "postgres")."""
    text = MIGRATIONS[version - 1].format(**TYPES[dialect])
    return [s.strip() for s in text.split(";") if s.strip()]


@functools.lru_cache(maxsize=256)
def to_pyformat(sql: str) -> str:
    """The store's SQL (qmark, ``?``) in psycopg's style (``%s``, a literal ``%`` doubled). The
    store's statements hold no ``?`` inside a string literal, so a plain replace is exact."""
    return sql.replace("%", "%%").replace("?", "%s")
