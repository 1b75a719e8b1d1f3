"""Saved results: an embedded SQLite database that many app sessions and CLIs share, or a
PostgreSQL one that several app servers share (``JAXCOMPARE_DB=postgresql://...``: postgres.py).

Every write is one short transaction on a fresh connection (WAL journal, busy timeout), so
concurrent writers queue instead of failing and a crash loses nothing already committed.
The full Result JSON (``doc``) is the source of truth; the other columns are a summary
for filtering and listing. A Result's id names one measurement, and a Result is immutable,
so saving an id that is already present is a no-op (ON CONFLICT(id) DO NOTHING: any other
constraint still fails loudly): the first copy wins and imports report it as "already present".
A row that cannot be read back (written by hand, or by an older version) is skipped where
many are read (History, export) and named, never a traceback.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ..i18n import N_
from ..model.errors import BadInput
from ..model.result import Result
from . import postgres
from .exchange import (
    EXPORT_SCHEMA,
    SUMMARY_FIELDS,
    check,
    export_csv,
    export_json,
    now,
    parse_json,
    read_results,
    write_atomically,
)
from .schema import SCHEMA_VERSION, migrate

__all__ = ["EXPORT_SCHEMA", "SCHEMA_VERSION", "SUMMARY_COLUMNS", "Store", "default_location", "default_path",
           "shown_location",
           "export_csv", "export_json"]

APPLICATION_ID = 0x6A617863  # "jaxc": marks the file as ours
BUSY_TIMEOUT_S = 10.0
ENV_VAR = "JAXCOMPARE_DB"

SUMMARY_COLUMNS = (*SUMMARY_FIELDS, "saved")  # what list() returns
ROW_COLUMNS = (*SUMMARY_COLUMNS, "doc")  # a whole row, as history copy moves it



HOME_PATH = Path("~") / ".jaxcompare" / "results.sqlite3"


def default_location() -> str:
    """``$JAXCOMPARE_DB`` (an SQLite file or a postgresql:// URL), else ``~/.jaxcompare/results.sqlite3``."""
    return os.environ.get(ENV_VAR, "").strip() or str(HOME_PATH.expanduser())


def default_path() -> Path:
    """The default SQLite file: ``$JAXCOMPARE_DB`` or ``~/.jaxcompare/results.sqlite3`` (the latter when
    the variable is a PostgreSQL URL, for what lives beside the database)."""
    location = default_location()
    return HOME_PATH.expanduser() if postgres.is_url(location) else Path(location).expanduser()


def shown_location(where: str | os.PathLike[str] | None = None) -> str:
    """What to show of a database location (default: the default one): a URL's password hidden."""
    where = default_location() if where is None else where
    return postgres.redact_url(where) if postgres.is_url(where) else str(Path(where).expanduser())


def traces_dir(db_path: str | os.PathLike[str] | None = None) -> Path:
    """Where profiler traces go by default: a ``traces`` folder beside the results database
    (``~/.jaxcompare/traces``, also for a PostgreSQL one), one subfolder per result id."""
    beside = default_path() if not db_path or postgres.is_url(db_path) else Path(db_path).expanduser()
    return beside.parent / "traces"


class Store:
    """A results database; cheap to create, safe to share between threads and processes.

    ``path``: an SQLite file or a postgresql:// URL. ``location`` is what to show of it (a URL's
    password hidden); ``path`` is the SQLite file (None on PostgreSQL)."""

    def __init__(self, path: str | os.PathLike[str] | None = None):
        where = default_location() if path is None else path
        self._pg = postgres.Postgres(str(where)) if postgres.is_url(where) else None
        self.path: Path | None = None if self._pg else Path(where).expanduser()
        self.location = self._pg.location if self._pg else str(self.path)
        self._init_lock = threading.Lock()
        self._ready = False
        self._open()

    def __repr__(self) -> str:
        return f"Store({self.location!r})"

    # --- writing -----------------------------------------------------------------------------
    def save(self, result: Result) -> str:
        """Save one result (a no-op when its id is already saved); returns its id."""
        row = _row(result)
        with self._transaction() as conn:
            _insert(conn, row)
        return result.id

    def import_docs(self, docs: Any, source: str = "upload") -> tuple[int, int]:
        """Import result dicts (a list, an export, a sweep or a single result document).

        Everything is validated before anything is written, then all rows go in one
        transaction: a bad document changes nothing. Returns (added, already present).
        """
        # In id order: two writers saving overlapping batches then lock the same rows in the same
        # order, so PostgreSQL never meets a deadlock between them.
        rows = sorted((_row(r) for r in read_results(docs, source)), key=lambda row: row["id"])
        added = 0
        with self._transaction() as conn:
            for row in rows:
                added += _insert(conn, row)
        return added, len(rows) - added

    def import_json(self, data: bytes | str, source: str = "upload") -> tuple[int, int]:
        """Import the text of a JSON file (the app's uploader hands over bytes)."""
        return self.import_docs(parse_json(data, source), source)

    def import_file(self, path: str | os.PathLike[str]) -> tuple[int, int]:
        """Import a JSON file from ``export``, ``run --json`` or ``sweep --json``."""
        name = str(path)
        try:
            data = Path(path).read_bytes()
        except IsADirectoryError:
            raise BadInput(N_("cannot import {name}: it is a directory, not a JSON file").format(name=name)) from None
        except FileNotFoundError:
            raise BadInput(N_("cannot import {name}: no such file").format(name=name)) from None
        except OSError as exc:
            raise BadInput(N_("cannot import {name}: {reason}").format(name=name, reason=exc.strerror or exc)) from None
        return self.import_json(data, name)

    def delete(self, ids: Iterable[str]) -> int:
        """Delete results by full id; returns how many were deleted (unknown ids are ignored)."""
        ids = list(ids)
        if not ids:
            return 0
        with self._transaction() as conn:
            return sum(conn.execute("DELETE FROM results WHERE id = ?", (i,)).rowcount for i in ids)

    def copy_to(self, target: Store) -> tuple[int, int]:
        """Every saved row into ``target`` (saved times kept) in one transaction there: all or nothing.
        A row here that cannot be read back stops the copy, and ``target`` is left as it was.
        Returns (added, already present)."""
        added = total = 0
        with self._connection() as source, target._transaction() as conn:
            cursor = source.execute(f"SELECT {', '.join(_q(c) for c in ROW_COLUMNS)} FROM results ORDER BY id")
            while batch := cursor.fetchmany(500):
                for values in batch:
                    row = dict(zip(ROW_COLUMNS, values, strict=True))
                    _from_doc(row["doc"], row["id"])
                    added += _insert(conn, row)
                    total += 1
        return added, total - added

    # --- reading -----------------------------------------------------------------------------
    def count(self) -> int:
        with self._connection() as conn:
            return int(conn.execute("SELECT count(*) FROM results").fetchone()[0])

    def list(
        self,
        case: str | None = None,
        precision: str | None = None,
        port: str | None = None,
        device: str | None = None,
        host: str | None = None,
        jax: str | None = None,
        since: str | dt.datetime | dt.date | None = None,
        until: str | dt.datetime | dt.date | None = None,
        limit: int | None = None,
    ) -> list[dict[str, Any]]:
        """Summary rows (SUMMARY_COLUMNS), newest first; ties by id, so every copy of the
        database lists alike. ``port``: the JAX port measured (a result saved before ports has none);
        ``device`` matches the backend ("cpu", "gpu"), the device
        ("cuda:0") or the device kind, ignoring case; ``jax`` the JAX version the worker ran
        (as recorded, "0.4.35"); ``since`` and ``until`` are inclusive,
        and a date-only ``until`` includes that whole day."""
        where: list[str] = []
        params: list[Any] = []
        if case:
            where.append('"case" = ?')
            params.append(case)
        if precision:
            where.append("precision = ?")
            params.append(precision)
        if port:
            where.append("port = ?")
            params.append(port)
        if device:
            where.append("(lower(backend) = ? OR lower(device) = ? OR lower(device_kind) = ?)")
            params += [device.lower()] * 3
        if host:
            where.append("host = ?")
            params.append(host)
        if jax:
            where.append("jax_version = ?")
            params.append(str(jax).strip())
        if since is not None:
            where.append("created >= ?")
            params.append(_time_bound(since, "since", end_of_day=False))
        if until is not None:
            bound = _time_bound(until, "until", end_of_day=True)
            where.append("created < ?" if _is_date_only(until) else "created <= ?")
            params.append(bound)
        sql = f"SELECT {', '.join(_q(c) for c in SUMMARY_COLUMNS)} FROM results"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY created DESC, id"
        if limit is not None:
            if not isinstance(limit, int) or isinstance(limit, bool) or limit <= 0:
                raise BadInput(N_("limit must be a positive whole number, got {value!r}").format(value=limit))
            sql += f" LIMIT {limit}"
        with self._connection() as conn:
            return [dict(zip(SUMMARY_COLUMNS, r, strict=True)) for r in conn.execute(sql, params)]

    def facets(self) -> dict[str, list[str]]:
        """Distinct values of the filterable columns, for the app's filter widgets."""
        out: dict[str, list[str]] = {}
        with self._connection() as conn:
            for col in ("case", "port", "precision", "backend", "device", "device_kind", "host", "jax_version"):
                rows = conn.execute(f"SELECT DISTINCT {_q(col)} FROM results ORDER BY 1").fetchall()
                out[col] = [r[0] for r in rows if r[0] is not None]
        return out

    def resolve(self, id_or_prefix: str) -> str:
        """The full id of a saved result from its id or a unique prefix (the short ids shown)."""
        key = str(id_or_prefix).strip()
        with self._connection() as conn:
            if conn.execute("SELECT 1 FROM results WHERE id = ?", (key,)).fetchone():
                return key
            if len(key) >= 4:
                pattern = key.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
                found = [r[0] for r in conn.execute(
                    "SELECT id FROM results WHERE id LIKE ? ESCAPE '\\' LIMIT 2", (pattern,))]
                if len(found) == 1:
                    return found[0]
                if len(found) > 1:
                    raise BadInput(N_("id prefix {prefix!r} matches more than one saved result; "
                                      "give more of it").format(prefix=key))
        raise BadInput(N_("no saved result with id {id!r} in {path}").format(id=key, path=self.location))

    def get(self, id: str) -> Result:
        """One saved result by id (or unique id prefix)."""
        return self.load([id])[0]

    def load(self, ids: Iterable[str]) -> list[Result]:
        """Saved results in the order asked for; an unknown id is BadInput."""
        full = [self.resolve(i) for i in ids]
        with self._connection() as conn:
            docs = {}
            for chunk in _chunks(full, 500):
                marks = ", ".join("?" * len(chunk))
                docs.update(conn.execute(f"SELECT id, doc FROM results WHERE id IN ({marks})", chunk))
        out = []
        for i in full:
            if i not in docs:  # deleted by someone else between resolve and load
                raise BadInput(N_("no saved result with id {id!r} in {path}").format(id=i, path=self.location))
            out.append(_from_doc(docs[i], i))
        return out

    def load_readable(self, ids: Iterable[str]) -> tuple[list[Result], list[str]]:
        """Like load, but a saved row that cannot be read back is left out: (results, its ids). One query for
        them all; one a row where any fails (a row unreadable, or deleted meanwhile)."""
        ids = list(ids)
        try:
            return self.load(ids), []
        except BadInput:
            pass
        results, unreadable = [], []
        for i in ids:
            try:
                results += self.load([i])
            except BadInput:
                unreadable.append(str(i))
        return results, unreadable

    def all_ids(self) -> list[str]:
        """Every saved id, newest first."""
        with self._connection() as conn:
            return [r[0] for r in conn.execute("SELECT id FROM results ORDER BY created DESC, id")]

    # --- export ------------------------------------------------------------------------------
    def export(self, path: str | os.PathLike[str], ids: Sequence[str] | None = None) -> int:
        """Write results (all, or ``ids``) as JSON or CSV by the file's extension; returns
        how many. The file is written whole or not at all (temporary file, then rename)."""
        return self.export_report(path, ids)[0]

    def export_report(self, path: str | os.PathLike[str], ids: Sequence[str] | None = None) -> tuple[int, list[str]]:
        """export, and the ids of saved rows left out because they cannot be read back."""
        target = Path(path)
        kind = target.suffix.lower()
        if kind not in (".json", ".csv"):
            raise BadInput(N_("cannot export to {path!r}: the name must end in .json or .csv").format(path=str(path)))
        if ids is not None:
            ids = [self.resolve(i) for i in ids]  # an unknown id is still an error, not a skipped row
        results, unreadable = self.load_readable(self.all_ids() if ids is None else ids)
        write_atomically(target, export_json(results) if kind == ".json" else export_csv(results))
        return len(results), unreadable

    # --- connections -------------------------------------------------------------------------
    def _open(self) -> None:
        """Create the file and schema once per Store; a bad path is one clear BadInput line."""
        with self._init_lock:
            if self._ready:
                return
            if self._pg:
                self._pg.migrate()
                self._ready = True
                return
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise BadInput(N_("cannot create the folder for the results database {path}: {reason}").format(
                    path=self.path, reason=exc.strerror or exc)) from None
            if self.path.is_dir():
                raise BadInput(N_("cannot open the results database {path}: it is a directory").format(path=self.path))
            with self._connection(init=True) as conn:
                _set_wal(conn, self.path)
                conn.execute("BEGIN IMMEDIATE")
                try:
                    _check_and_create_schema(conn, self.path)
                    conn.execute("COMMIT")
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
            self._ready = True

    @contextlib.contextmanager
    def _connection(self, init: bool = False) -> Iterator[sqlite3.Connection]:
        """A fresh connection per operation: sqlite3 connections never cross threads."""
        if not init and not self._ready:
            self._open()
        if self._pg:
            with self._pg.connection() as pg_conn:
                yield pg_conn
            return
        conn = None
        try:
            conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
            conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
            conn.execute("PRAGMA synchronous = FULL")
            yield conn
        except sqlite3.Error as exc:
            raise BadInput(_db_message(self.path, exc)) from None
        finally:
            if conn is not None:
                conn.close()

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction: BEGIN IMMEDIATE takes the write lock up front (waiting up
        to the busy timeout), so concurrent writers queue instead of deadlocking. PostgreSQL
        locks rows instead, so writers of different rows never wait for each other."""
        if self._pg:
            if not self._ready:
                self._open()
            with self._pg.transaction() as pg_conn:
                yield pg_conn
            return
        with self._connection() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")


# --- rows ---------------------------------------------------------------------------------------
def _row(result: Result) -> dict[str, Any]:
    summary, doc = check(result)
    return {**summary, "saved": now(), "doc": doc}


def _insert(conn: sqlite3.Connection, row: dict[str, Any]) -> int:
    cols = ", ".join(_q(c) for c in row)
    marks = ", ".join("?" * len(row))
    return conn.execute(f"INSERT INTO results ({cols}) VALUES ({marks}) ON CONFLICT(id) DO NOTHING",
                        list(row.values())).rowcount


def _from_doc(doc: str, id: str) -> Result:
    """A saved row's Result, its numbers checked as an import's are: a row that would break a reader
    fails here, named. Its names are not (pages show them as plain text)."""
    try:
        result = Result.from_dict(json.loads(doc))
        check(result, names=False)
        return result
    except (ValueError, TypeError, BadInput) as exc:
        raise BadInput(N_("saved result {id} is unreadable: {reason}").format(id=id, reason=exc)) from None


# --- helpers -------------------------------------------------------------------------------
def _set_wal(conn: sqlite3.Connection, path: Path) -> None:
    """WAL lets readers run beside one writer; switching can briefly meet a lock, so retry."""
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    while True:
        try:
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            break
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    if str(mode).lower() != "wal":
        raise BadInput(N_("the results database {path} cannot use WAL journaling (got {mode!r}); is it on a network "
                          "or read-only file system?").format(path=path, mode=mode))


def _check_and_create_schema(conn: sqlite3.Connection, path: Path) -> None:
    app_id = conn.execute("PRAGMA application_id").fetchone()[0]
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if app_id not in (0, APPLICATION_ID) or (app_id == 0 and tables):
        raise BadInput(N_("{path} is an SQLite database of something else, not jaxcompare results").format(path=path))
    if version > SCHEMA_VERSION:
        raise BadInput(N_("the results database {path} was written by a newer jaxcompare (schema {version}, this one "
                          "knows {known})").format(path=path, version=version, known=SCHEMA_VERSION))
    for step in range(version + 1, SCHEMA_VERSION + 1):
        migrate(conn, step, "sqlite")
    if version < SCHEMA_VERSION:
        conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


def _db_message(path: Path, exc: sqlite3.Error) -> str:
    text = str(exc)
    if "locked" in text or "busy" in text:
        return N_("the results database {path} stayed locked by another writer for over {timeout:g} s; "
                  "try again").format(path=path, timeout=BUSY_TIMEOUT_S)
    if "not a database" in text:
        return N_("{path} is not a jaxcompare results database (not an SQLite file)").format(path=path)
    if "unable to open" in text or "readonly" in text:
        where = _read_only_place(path)
        if where is not None:
            return where
    if "unable to open" in text:
        return N_("cannot open the results database {path}: {reason}").format(path=path, reason=text)
    if "readonly" in text:
        return N_("the results database {path} is read-only: {reason}").format(path=path, reason=text)
    return N_("results database {path}: {reason}").format(path=path, reason=text)


def _read_only_place(path: Path) -> str | None:
    """Why SQLite cannot write there, when the file system or the folder says (SQLite says only
    "unable to open database file"); None when neither is read-only."""
    folder = path.parent
    try:
        read_only_fs = bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except (OSError, AttributeError):  # no statvfs on Windows
        read_only_fs = False
    if read_only_fs:
        return N_("the results database {path} is on a read-only file system; set JAXCOMPARE_DB to a file on a "
                  "writable one").format(path=path)
    if not os.access(folder, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        return N_("the results database {path} is read-only for this user (or its folder is); set JAXCOMPARE_DB "
                  "to a file this user can write").format(path=path)
    return None


def _q(column: str) -> str:
    return f'"{column}"'


def _is_date_only(value: Any) -> bool:
    if isinstance(value, dt.datetime):
        return False
    if isinstance(value, dt.date):
        return True
    return isinstance(value, str) and len(value.strip()) == 10


def _time_bound(value: Any, name: str, *, end_of_day: bool) -> str:
    """A filter bound as normalised UTC text; a date-only ``until`` means the next midnight."""
    if isinstance(value, dt.datetime):
        when = value
    elif isinstance(value, dt.date):
        when = dt.datetime(value.year, value.month, value.day)
    else:
        try:
            when = dt.datetime.fromisoformat(str(value).strip())
        except ValueError:
            raise BadInput(N_("{name} {value!r} is not a date or time like 2025-01-31 or 2025-01-31T12:00").format(
                name=name, value=value)) from None
    if end_of_day and _is_date_only(value):
        when = when + dt.timedelta(days=1)
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return when.astimezone(dt.UTC).isoformat(timespec="seconds")


def _chunks(items: Sequence[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield list(items[start:start + size])


