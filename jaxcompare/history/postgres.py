"""The results database on PostgreSQL (``JAXCOMPARE_DB=postgresql://...``), through psycopg 3.

The credential comes from the URL, ``PGPASSWORD``, a service file (``postgresql:///?service=name``
with ``PGSERVICEFILE``) or ``~/.pgpass``: libpq reads them all, and nothing here prints one.
Every place that shows where the database is uses ``redact``; every error text passes ``scrub``.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
from collections.abc import Iterator, Sequence
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlsplit

from ..i18n import N_
from ..model.errors import BadInput
from .schema import SCHEMA_VERSION, VERSION_TABLE, migrate, to_pyformat

SCHEMES = ("postgresql://", "postgres://")
HIDDEN = "***"
CONNECT_TIMEOUT_S = 10
IDLE_CONNECTIONS = 4  # kept open per Store: a fresh TCP + SCRAM login per query costs milliseconds
MIGRATION_LOCK = 0x6A617863  # "jaxc": the advisory lock that lets one server at a time migrate
INSTALL_HINT = "pip install 'jaxcompare[postgres]'"


def is_url(location: str | os.PathLike[str] | None) -> bool:
    """Whether ``location`` names a PostgreSQL database rather than an SQLite file."""
    return isinstance(location, str) and location.strip().lower().startswith(SCHEMES)


def redact_url(url: str) -> str:
    """``url`` with its password (in the user part or a ``password=`` parameter) shown as ***."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return "postgresql://" + HIDDEN
    netloc = parts.netloc
    user, at, hosts = netloc.rpartition("@")
    if at and ":" in user:
        netloc = f"{user.split(':', 1)[0]}:{HIDDEN}@{hosts}"
    query = "&".join(f"{k}={HIDDEN if k == 'password' else quote(v, safe=',:/')}"
                     for k, v in parse_qsl(parts.query, keep_blank_values=True))
    return f"{parts.scheme}://{netloc}{parts.path}" + (f"?{query}" if query else "")


def secrets(url: str) -> list[str]:
    """Every spelling of a password this process knows for ``url``, longest first (for scrub)."""
    found = [os.environ.get("PGPASSWORD", "")]
    with contextlib.suppress(ValueError):
        parts = urlsplit(url.strip())
        user, at, _hosts = parts.netloc.rpartition("@")
        if at and ":" in user:
            found.append(user.split(":", 1)[1])
        found += [v for k, v in parse_qsl(parts.query, keep_blank_values=True) if k == "password"]
        found += [m.group(1) for m in re.finditer(r"password=([^&]*)", parts.query)]
    found += [unquote(s) for s in found]
    return sorted({s for s in found if s}, key=len, reverse=True)


def scrub(text: str, url: str) -> str:
    """An error text on one line, with any password this process knows for ``url`` hidden."""
    for secret in secrets(url):
        text = text.replace(secret, HIDDEN)
    return " ".join(text.split())


class Postgres:
    """Connections to one PostgreSQL database: a few kept open, handed to one thread at a time."""

    def __init__(self, url: str):
        self.url = url.strip()
        self.location = redact_url(self.url)
        self._idle: list[Any] = []
        self._lock = threading.Lock()
        try:
            import psycopg
        except ImportError:
            raise BadInput(N_("the results database {path} is on PostgreSQL, which needs psycopg: {hint}").format(
                path=self.location, hint=INSTALL_HINT)) from None
        self._psycopg = psycopg
        try:
            given = psycopg.conninfo.conninfo_to_dict(self.url)
        except psycopg.Error as exc:
            raise BadInput(self.message(exc)) from None
        self._options = {k: v for k, v in (("connect_timeout", CONNECT_TIMEOUT_S), ("application_name", "jaxcompare"))
                         if k not in given}

    def message(self, exc: BaseException) -> str:
        """A psycopg error as one line naming the database, no password in it."""
        reason = scrub(str(exc) or type(exc).__name__, self.url)
        return N_("results database {path}: {reason}").format(path=self.location, reason=reason)

    @contextlib.contextmanager
    def connection(self) -> Iterator[Connection]:
        """An open connection in autocommit mode (each statement its own transaction)."""
        psycopg = self._psycopg
        with self._lock:
            raw = self._idle.pop() if self._idle else None
        try:
            if raw is None:
                raw = psycopg.connect(self.url, autocommit=True, **self._options)
            yield Connection(raw)
        except psycopg.Error as exc:
            if raw is not None:
                raw.close()
            raise BadInput(self.message(exc)) from None
        except BaseException:
            if raw is not None:
                raw.close()
            raise
        else:
            if raw.closed or raw.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                raw.close()
                return
            with self._lock:
                keep = len(self._idle) < IDLE_CONNECTIONS
                if keep:
                    self._idle.append(raw)
            if not keep:
                raw.close()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Connection]:
        """One transaction: committed when the block ends, rolled back on any error."""
        with self.connection() as conn, conn.raw.transaction():
            yield conn

    def migrate(self) -> None:
        """Bring the schema to SCHEMA_VERSION, one server at a time; a foreign or newer schema is
        BadInput and changes nothing."""
        with self.transaction() as conn:
            conn.execute("SELECT pg_advisory_xact_lock(?)", (MIGRATION_LOCK,))
            tables = conn.execute("SELECT to_regclass('results') IS NOT NULL, to_regclass(?) IS NOT NULL",
                                  (VERSION_TABLE,)).fetchone()
            has_results, has_versions = bool(tables[0]), bool(tables[1])
            if has_results and not has_versions:
                raise BadInput(N_("{path} has a results table that is not jaxcompare's (no {table})").format(
                    path=self.location, table=VERSION_TABLE))
            conn.execute(f"CREATE TABLE IF NOT EXISTS {VERSION_TABLE} (version INTEGER PRIMARY KEY, "
                         "applied TEXT NOT NULL)")
            version = conn.execute(f"SELECT coalesce(max(version), 0) FROM {VERSION_TABLE}").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise BadInput(N_("the results database {path} was written by a newer jaxcompare (schema {version}, "
                                  "this one knows {known})").format(
                    path=self.location, version=version, known=SCHEMA_VERSION))
            for step in range(version + 1, SCHEMA_VERSION + 1):
                migrate(conn, step, "postgres")
                conn.execute(f"INSERT INTO {VERSION_TABLE} (version, applied) VALUES (?, now()::text)", (step,))

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for raw in idle:
            raw.close()


class Connection:
    """A psycopg connection that takes the store's qmark SQL, as sqlite3 does."""

    def __init__(self, raw: Any):
        self.raw = raw

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return self.raw.execute(to_pyformat(sql), list(params))
