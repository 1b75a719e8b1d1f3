"""NumPy's kept figure (numpy.kept_memory) in History's store: the summary column migration 2 adds,
filled for rows saved before it, on SQLite and on the real PostgreSQL server; a result with it
through save, list, export and import; and the CLI's listing of both NumPy figures."""

from __future__ import annotations

import argparse
import contextlib
import csv
import dataclasses
import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from _results import make_result, stats

from jaxcompare import BadInput, Result
from jaxcompare.cli import history as cli_history
from jaxcompare.history import schema
from jaxcompare.history.exchange import check, export_csv
from jaxcompare.history.store import APPLICATION_ID, SCHEMA_VERSION, Store
from jaxcompare.i18n import using

DATA = Path(__file__).parent / "data"
# The results table's columns at schema 1, as jaxcompare wrote them before migration 2.
V1_COLUMNS = ("id", "created", "case", "shape", "precision", "dtype", "backend", "device", "device_kind", "host",
              "jax_version", "speedup", "numpy_median_s", "jax_median_s", "saved", "doc")


def kept_result(id: str = "kept-run", plain_s: float = 14.9e-3, kept_s: float = 3.0e-3) -> Result:
    """A result whose NumPy was timed both ways, as on the TPU host's allocator (docs/protocol.md)."""
    base = make_result("centered_gram", (1000, 1000), numpy_s=plain_s, jax_s=0.55e-3)
    return dataclasses.replace(base, id=id, numpy_kept=stats(kept_s), env={**base.env, "hostname": "tpu-host"})


def once_result(id: str = "once-run") -> Result:
    """A result whose NumPy was timed once (arrays too small for the allocator to matter)."""
    base = make_result()
    return dataclasses.replace(base, id=id, created="2026-01-02T00:00:00+00:00",
                               env={**base.env, "hostname": "cpu-host"})


def v1_row(result: Result, doc: str | None = None) -> dict:
    summary, text = check(result)
    row = {k: v for k, v in summary.items() if k in V1_COLUMNS}
    return row | {"saved": "2026-01-03T00:00:00+00:00", "doc": text if doc is None else doc}


def v1_rows() -> tuple[list[dict], dict[str, float | None]]:
    """Rows a schema-1 jaxcompare saved, and the kept figure migration 2 must give each: one timed both
    ways, one once, one whose doc is not JSON (written by hand) and one whose kept median is no number."""
    kept, once = kept_result(), once_result()
    hand = dataclasses.replace(kept, id="hand-written")
    odd = json.loads(check(dataclasses.replace(kept, id="odd-kept"))[1])
    odd["numpy"]["kept_memory"]["median_s"] = "fast"
    rows = [v1_row(kept), v1_row(once), v1_row(hand, doc='{"numpy": {"kept_memory": broken'),
            v1_row(dataclasses.replace(kept, id="odd-kept"), doc=json.dumps(odd))]
    return rows, {"kept-run": kept.numpy_kept.median_s, "once-run": None, "hand-written": None, "odd-kept": None}


def insert_v1(conn, rows: list[dict], mark: str) -> None:
    cols = ", ".join(f'"{c}"' for c in V1_COLUMNS)
    for row in rows:
        conn.execute(f"INSERT INTO results ({cols}) VALUES ({', '.join([mark] * len(V1_COLUMNS))})",
                     [row[c] for c in V1_COLUMNS])


def sqlite_v1(path: Path, rows: list[dict]) -> str:
    """An SQLite history at schema 1 holding ``rows``, as the version before this one left it."""
    with contextlib.closing(sqlite3.connect(path)) as conn, conn:
        for statement in schema.migration(1, "sqlite"):
            conn.execute(statement)
        conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        conn.execute("PRAGMA user_version = 1")
        insert_v1(conn, rows, "?")
    return str(path)


def postgres_v1(url: str, rows: list[dict]) -> str:
    """A PostgreSQL history at schema 1 (its version table says 1) holding ``rows``."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        for statement in schema.migration(1, "postgres"):
            conn.execute(statement)
        conn.execute(f"CREATE TABLE {schema.VERSION_TABLE} (version INTEGER PRIMARY KEY, applied TEXT NOT NULL)")
        conn.execute(f"INSERT INTO {schema.VERSION_TABLE} VALUES (1, 'before migration 2')")
        insert_v1(conn, rows, "%s")
    return url


def version(store: Store) -> int:
    with store._connection() as conn:
        if store.path is not None:
            return conn.execute("PRAGMA user_version").fetchone()[0]
        return conn.execute(f"SELECT max(version) FROM {schema.VERSION_TABLE}").fetchone()[0]


def columns(store: Store) -> list[str]:
    with store._connection() as conn:
        if store.path is not None:
            return [r[1] for r in conn.execute("PRAGMA table_info(results)")]
        return [r[0] for r in conn.execute("SELECT column_name FROM information_schema.columns WHERE table_name = "
                                           "'results' ORDER BY ordinal_position")]


@pytest.fixture(params=["sqlite", "postgres"])
def old_history(request, tmp_path):
    """Where a schema-1 history is made: an SQLite file, or a fresh database on the session's server."""
    if request.param == "sqlite":
        return lambda rows: sqlite_v1(tmp_path / "old.sqlite3", rows)
    url = request.getfixturevalue("pg_url")
    return lambda rows: postgres_v1(url, rows)


@pytest.fixture(params=["sqlite", "postgres"])
def store(request, tmp_path) -> Store:
    if request.param == "sqlite":
        return Store(tmp_path / "results.sqlite3")
    return Store(request.getfixturevalue("pg_url"))


# --- migration 2 -----------------------------------------------------------------------------------
def test_a_schema_1_history_upgrades_with_each_rows_kept_figure_from_its_doc(old_history):
    rows, expected = v1_rows()
    where = old_history(rows)
    store = Store(where)
    assert version(store) == SCHEMA_VERSION and columns(store)[-2:] == ["numpy_kept_median_s", "port"]
    listed = {row["id"]: row for row in store.list()}
    assert {i: row["numpy_kept_median_s"] for i, row in listed.items()} == expected
    assert listed["kept-run"]["numpy_median_s"] == 14.9e-3  # the plain figure stays the headline's
    # The rows that could not be read before still cannot, and say so; the others load as they were.
    readable, unreadable = store.load_readable(store.all_ids())
    assert sorted(unreadable) == ["hand-written", "odd-kept"]
    assert {r.id: None if r.numpy_kept is None else r.numpy_kept.median_s for r in readable} == {
        "kept-run": 3.0e-3, "once-run": None}

    # Read again, and written by this version: opening once more migrates nothing, a new row gets its figure.
    again = Store(where)
    again.save(dataclasses.replace(kept_result("new-kept", kept_s=2.5e-3), created="2026-02-01T00:00:00+00:00"))
    assert version(again) == SCHEMA_VERSION and Store(where).list(limit=1)[0]["numpy_kept_median_s"] == 2.5e-3
    assert {row["id"]: row["numpy_kept_median_s"] for row in again.list()} == expected | {"new-kept": 2.5e-3}


def test_a_failed_upgrade_leaves_the_history_at_schema_1(old_history, monkeypatch):
    """The column and its fill are one transaction: a fill that fails undoes the column too."""
    rows, expected = v1_rows()
    where = old_history(rows)

    def failing(conn) -> None:
        raise BadInput("the fill failed")

    monkeypatch.setitem(schema.FILLS, 2, failing)
    with pytest.raises(BadInput, match="the fill failed"):
        Store(where)
    monkeypatch.setitem(schema.FILLS, 2, schema.fill_numpy_kept)
    if where.startswith("postgresql://"):  # read it as the old version would: its own version table, its columns
        import psycopg

        with psycopg.connect(where) as conn:
            assert conn.execute(f"SELECT max(version) FROM {schema.VERSION_TABLE}").fetchone()[0] == 1
            assert "numpy_kept_median_s" not in {r[0] for r in conn.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = 'results'")}
    else:
        with contextlib.closing(sqlite3.connect(where)) as conn:
            assert conn.execute("PRAGMA user_version").fetchone()[0] == 1
            assert [r[1] for r in conn.execute("PRAGMA table_info(results)")] == list(V1_COLUMNS)
    later = {row["id"]: row["numpy_kept_median_s"] for row in Store(where).list()}  # and it upgrades later
    assert later == expected


def test_the_database_jaxcompare_0_1_wrote_upgrades_with_no_kept_figures(tmp_path):
    """A real schema-1 file (tests/data): its results predate the plain process, so none has a kept figure."""
    db = Path(shutil.copy(DATA / "results-v0.1-before-layout.sqlite3", tmp_path / "old.sqlite3"))
    store = Store(db)
    assert version(store) == SCHEMA_VERSION
    rows = store.list()
    assert len(rows) == 2 and all(row["numpy_kept_median_s"] is None for row in rows)
    assert len(store.load(store.all_ids())) == 2


def test_a_newer_schema_is_refused_by_name(tmp_path):
    path = tmp_path / "later.sqlite3"
    Store(path)
    with contextlib.closing(sqlite3.connect(path)) as conn:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    newer = rf"newer jaxcompare \(schema {SCHEMA_VERSION + 1}, this one knows {SCHEMA_VERSION}\)"
    with pytest.raises(BadInput, match=newer):
        Store(path)


# --- a result with numpy_kept, through the store and its files -------------------------------------------
def test_a_result_with_a_kept_figure_round_trips_through_save_list_export_and_import(store, tmp_path):
    kept, once = kept_result(), once_result()
    store.save(kept)
    store.save(once)
    listed = {row["id"]: row for row in store.list()}
    assert listed["kept-run"]["numpy_kept_median_s"] == kept.numpy_kept.median_s
    assert listed["kept-run"]["numpy_median_s"] == kept.numpy_runtime.median_s
    assert listed["once-run"]["numpy_kept_median_s"] is None
    assert store.get("kept-run").numpy_kept == kept.numpy_kept

    exported = tmp_path / "history.json"
    assert store.export(exported) == 2
    doc = json.loads(exported.read_text())
    by_id = {r["id"]: r for r in doc["results"]}
    assert by_id["kept-run"]["numpy"]["kept_memory"]["median_s"] == kept.numpy_kept.median_s
    assert "kept_memory" not in by_id["once-run"]["numpy"]
    other = Store(tmp_path / "other.sqlite3")  # into the other kind of store for the PostgreSQL case
    assert other.import_file(exported) == (2, 0)
    unsaved = lambda rows: [{k: v for k, v in row.items() if k != "saved"} for row in rows]  # noqa: E731
    assert unsaved(other.list()) == unsaved(store.list())
    assert other.get("kept-run").numpy_kept == kept.numpy_kept and other.get("once-run").numpy_kept is None

    table = tmp_path / "history.csv"
    store.export(table)
    header = next(csv.reader(table.open(encoding="utf-8")))
    assert header.index("numpy_kept_median_s") == header.index("numpy_median_s") + 1  # docs/json.md
    cells = {r["id"]: r for r in csv.DictReader(table.open(encoding="utf-8"))}
    assert float(cells["kept-run"]["numpy_kept_median_s"]) == kept.numpy_kept.median_s
    assert cells["once-run"]["numpy_kept_median_s"] == ""  # an empty cell is null
    assert table.read_text() == export_csv([store.get("once-run"), store.get("kept-run")])  # newest first


# --- the CLI's listing ------------------------------------------------------------------------------------
def cli_args(db: str, **given) -> argparse.Namespace:
    """``history``'s arguments as cli.py parses them: no filters unless given."""
    fields = dict.fromkeys(("action", "to", "case", "precision", "device", "host", "jax", "since", "until",
                            "limit", "json"))
    return argparse.Namespace(**(fields | {"db": db} | given))


def cells(line: str) -> list[str]:
    return [c for c in line.split("  ") if c.strip()]


def test_history_json_lists_the_kept_figure(tmp_path, capsys):
    db = str(tmp_path / "h.sqlite3")
    Store(db).import_docs([kept_result().to_dict(), once_result().to_dict()])
    assert cli_history.cmd_history(cli_args(db, json="-")) == 0
    rows = {r["id"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["kept-run"]["numpy_kept_median_s"] == 3.0e-3 and rows["once-run"]["numpy_kept_median_s"] is None


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_history_lists_both_numpy_figures_and_says_which_is_which(tmp_path, lang):
    store = Store(tmp_path / "h.sqlite3")
    store.import_docs([kept_result().to_dict(), once_result().to_dict()])
    with using(lang):
        text = cli_history.history_table(store.list(), store.location)
    lines = text.splitlines()
    header, newest, older = (cells(line) for line in lines[:3])
    plain, kept = ("NumPy plain", "NumPy kept") if lang == "en" else ("NumPy 普通进程", "NumPy 保留内存")
    assert [c.strip() for c in header[7:10]] == [plain, kept, "JAX"]
    # once-run is newer; NumPy timed once has "—" in its kept column, every row as many cells as the header.
    assert [c.strip() for c in newest[7:9]] == ["1 ms", "—"] and [c.strip() for c in older[7:9]] == ["14.9 ms", "3 ms"]
    assert len(newest) == len(older) == len(header) == 11
    legend = lines[3]
    assert legend.startswith(plain + ("：" if lang == "zh" else ":")) and kept in legend
    assert ("2 results in" if lang == "en" else "中共 2 个结果") in lines[4] and len(lines) == 5


def test_history_without_a_kept_figure_keeps_its_legend_out(tmp_path):
    store = Store(tmp_path / "h.sqlite3")
    store.save(once_result())
    lines = cli_history.history_table(store.list(), store.location).splitlines()
    assert len(lines) == 3 and lines[-1].startswith("1 result in") and "—" in lines[1]



def test_a_result_set_aside_is_marked_in_the_history_table_and_its_json(tmp_path, capsys):
    """`history` printed a set-aside speedup as bare as a trusted one (the History page says "set aside" with
    its reason): it is marked ?, its reason said under the table, and its JSON row says so."""
    from jaxcompare.analysis.trust import trust

    wide = dataclasses.replace(once_result("wide-run"), numpy_runtime=stats(1e-3, spread=0.9))
    assert not trust(wide).trusted and trust(kept_result()).trusted
    db = str(tmp_path / "h.sqlite3")
    Store(db).import_docs([kept_result().to_dict(), wide.to_dict()])
    assert cli_history.cmd_history(cli_args(db)) == 0
    lines = capsys.readouterr().out.splitlines()
    speedups = {line.split()[0]: cells(line)[-1].strip() for line in lines[1:3]}
    assert speedups["wide-run"].endswith("x?") and not speedups["kept-run"].endswith("?"), speedups
    assert "?: set aside, not to be quoted: the speedup's range is too wide (wide-run)" in lines, lines
    assert cli_history.cmd_history(cli_args(db, json="-")) == 0
    rows = {r["id"]: r for r in json.loads(capsys.readouterr().out)}
    assert (rows["wide-run"]["trusted"], rows["wide-run"]["set_aside"]) == (False, "the speedup's range is too wide")
    assert (rows["kept-run"]["trusted"], rows["kept-run"]["set_aside"]) == (True, None)
