"""The results database: round trips, concurrent writers, crash safety, bad imports, CLI. The tests
of the Store API run on SQLite and on a real PostgreSQL server alike (the ``store`` fixture)."""

from __future__ import annotations

import argparse
import csv
import dataclasses
import io
import json
import multiprocessing
import sqlite3
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import pytest
from support import QUICK, cli

from jaxcompare import BadInput, Result, Spec
from jaxcompare.cli import history as cli_history
from jaxcompare.history.store import EXPORT_SCHEMA, SCHEMA_VERSION, Store, default_path
from jaxcompare.model.formatting import dumps

pytestmark = pytest.mark.slow  # 20 s or more: collected first, so parallel workers end together


@pytest.fixture(scope="module")
def results(runner) -> list[Result]:
    """Three small real measurements: matmul x32 twice (the second with its runtimes in two
    pairs of blocks) and matmul x64."""
    specs = [Spec("matmul", (16, 16), timing=QUICK), Spec("matmul", (16, 16), precision="x64", timing=QUICK),
             Spec("matmul", (24, 24), timing=dataclasses.replace(QUICK, runtime_blocks=2))]
    return [runner.run(s) for s in specs]


def normal(result: Result) -> dict:
    """to_dict as strict JSON sees it (NaN and infinities are null in a file)."""
    return json.loads(dumps(result.to_dict()))


def snapshot(store: Store) -> list[tuple]:
    """Every row of the database, read with plain SQL."""
    with store._connection() as conn:
        return [tuple(r) for r in conn.execute("SELECT * FROM results ORDER BY id").fetchall()]


def where(store: Store) -> str:
    """What opens this store again in another process: its file, or its URL with the password."""
    return store._pg.url if store._pg else str(store.path)


def copies(result: Result, n: int) -> list[Result]:
    return [dataclasses.replace(result, id=uuid.uuid4().hex) for _ in range(n)]


@pytest.fixture(params=["sqlite", "postgres"])
def store(request, tmp_path) -> Store:
    """An empty store: an SQLite file, or a fresh database on the session's PostgreSQL server."""
    if request.param == "sqlite":
        return Store(tmp_path / "results.sqlite3")
    return Store(request.getfixturevalue("pg_url"))


# --- round trip ------------------------------------------------------------------------------
def test_round_trip_save_list_export_import_is_identical(results, store, tmp_path):
    for r in results:
        assert store.save(r) == r.id
    rows = store.list()
    assert len(rows) == 3
    assert [row["created"] for row in rows] == sorted((row["created"] for row in rows), reverse=True)
    assert set(rows[0]) == {"id", "created", "case", "port", "shape", "precision", "dtype", "backend",  # docs/json.md
                            "device", "device_kind", "host", "jax_version", "speedup", "numpy_median_s",
                            "numpy_kept_median_s", "jax_median_s", "saved"}
    by_id = {row["id"]: row for row in rows}
    for r in results:
        row = by_id[r.id]
        assert row["case"] == "matmul" and row["precision"] == r.precision and row["dtype"] == r.dtype
        assert row["shape"] == "x".join(map(str, r.shape))
        assert row["backend"] == "cpu" and row["host"] == r.env["hostname"]
        assert row["jax_version"] == r.env["versions"]["jax"]
        assert row["numpy_median_s"] == r.numpy_runtime.median_s and row["jax_median_s"] == r.jax.runtime.median_s
        assert row["numpy_kept_median_s"] is None  # 16x16 and 24x24: too small for the allocator to matter
        assert row["speedup"] == pytest.approx(r.speedup)
        assert normal(store.get(r.id)) == normal(r)
    assert normal(store.get(results[0].id[:10])) == normal(results[0])  # unique prefix

    out = tmp_path / "out" / "export.json"
    assert store.export(out) == 3
    doc = json.loads(out.read_text())
    assert doc["schema"] == EXPORT_SCHEMA and len(doc["results"]) == 3

    fresh = Store(tmp_path / "fresh.sqlite3")
    assert fresh.import_file(out) == (3, 0)
    assert fresh.import_file(out) == (0, 3)  # idempotent: ids already present are skipped
    assert fresh.count() == 3
    for r in results:
        assert normal(fresh.get(r.id)) == normal(r)
    assert [row["id"] for row in fresh.list()] == [row["id"] for row in rows]
    paired = fresh.get(results[2].id)  # the block pairs (or a busy machine's recheck) survive the round trip
    assert paired.speedup_pairs == results[2].speedup_pairs and paired.load == results[2].load
    # A busy machine's recheck keeps each side's best block, or the samples that had their cores: no pairs.
    if (results[2].load.get("recheck") or {}).get("kept", "first") == "first":
        assert len(paired.speedup_pairs) == 2


def test_save_is_idempotent_for_the_same_id(results, store):
    store.save(results[0])
    store.save(results[0])
    assert store.count() == 1


def test_imports_single_run_and_sweep_documents(results, store, tmp_path):
    run_json = tmp_path / "run.json"
    # `run --json` adds the credibility checklist beside the result's own fields.
    run_json.write_text(dumps(results[0].to_dict() | {"checklist": [{"id": "blocked", "status": "pass"}]}))
    assert store.import_file(run_json) == (1, 0)
    sweep_json = tmp_path / "sweep.json"
    sweep_json.write_text(dumps({"case": "matmul", "precision": "x32", "crossover_elements": None,
                                 "results": [results[0].to_dict(), results[2].to_dict()]}))
    assert store.import_file(sweep_json) == (1, 1)
    assert store.import_docs([results[1].to_dict()]) == (1, 0)
    assert store.import_json(dumps(results[1].to_dict()).encode()) == (0, 1)
    assert store.count() == 3


def test_list_filters_and_limit(results, store):
    for r in results:
        store.save(r)
    assert len(store.list(precision="x64")) == 1
    assert len(store.list(case="matmul", precision="x32")) == 2
    assert len(store.list(device="CPU")) == 3  # the backend, any case
    assert len(store.list(device=results[0].jax.device)) == 3
    assert store.list(device="gpu") == []
    assert len(store.list(host=results[0].env["hostname"])) == 3
    assert store.list(host="no-such-host") == []
    assert len(store.list(jax=results[0].env["versions"]["jax"])) == 3  # the JAX the worker ran
    assert store.list(jax="0.4.1") == []
    assert len(store.list(limit=2)) == 2
    day = results[0].created[:10]
    assert len(store.list(since=day, until=day)) == 3  # a date-only until includes the day
    assert store.list(until="2000-01-01") == []
    assert len(store.list(since="2000-01-01T00:00:00+00:00")) == 3
    with pytest.raises(BadInput, match="not a date"):
        store.list(since="yesterday")
    assert store.facets()["precision"] == ["x32", "x64"]


def test_csv_export_has_a_header_and_one_row_per_result(results, store, tmp_path):
    for r in results:
        store.save(r)
    out = tmp_path / "export.csv"
    assert store.export(out, ids=[results[0].id, results[1].id]) == 2
    header = next(csv.reader(out.open(encoding="utf-8")))
    assert len(header) == len(set(header))
    rows = list(csv.DictReader(out.open(encoding="utf-8")))
    assert len(rows) == 2
    assert {"id", "case", "speedup", "jax_runtime_median_s", "numpy_runtime_iqr_s", "compile_n"} <= set(header)
    assert rows[0]["id"] == results[0].id
    assert float(rows[0]["jax_runtime_median_s"]) == results[0].jax.runtime.median_s
    assert int(rows[1]["numpy_runtime_n"]) == results[1].numpy_runtime.n


def test_csv_has_every_phase_statistic_the_pages_used_to_write_one_row_per_phase():
    """The Compare page's CSV once had a row per phase; its columns live on as <phase>_<stat>."""
    from _results import make_result

    from jaxcompare.history.exchange import CSV_COLUMNS, export_csv

    r = make_result()
    rows = list(csv.DictReader(io.StringIO(export_csv([r, r]))))
    assert len(rows) == 2 and list(rows[0]) == list(CSV_COLUMNS)
    old_columns = ("created", "case", "shape", "precision", "dtype", "backend", "device", "device_kind", "speedup",
                   "break_even_calls", "compile_total_s", "agreement_ok", "max_abs_err", "max_rel_err", "rtol")
    old_stats = ("median_s", "min_s", "mean_s", "std_s", "iqr_s", "ci_low_s", "ci_high_s", "n", "loops", "stable",
                 "unstable_reason")
    documented_phases = ("numpy_runtime", "transfer", "trace", "lower", "compile", "first_call", "jax_runtime",
                         "dispatch", "fetch")  # docs/json.md, "CSV"
    assert set(old_columns) | {f"{p}_{s}" for p in documented_phases for s in old_stats} <= set(CSV_COLUMNS)
    assert float(rows[0]["numpy_runtime_median_s"]) == r.numpy_runtime.median_s
    assert rows[0]["id"] == r.id and rows[0]["case"] == "matmul" and rows[0]["shape"] == "10x10"
    assert rows[0]["jax_runtime_stable"] == "True" and rows[0]["fetch_unstable_reason"] == ""
    assert float(rows[0]["max_rel_err"]) == r.jax.agreement["max_rel_err"]


def test_export_to_an_unknown_extension_writes_nothing(results, store, tmp_path):
    store.save(results[0])
    with pytest.raises(BadInput, match=r"\.json or \.csv"):
        store.export(tmp_path / "out.txt")
    assert not (tmp_path / "out.txt").exists()
    with pytest.raises(BadInput, match="no saved result"):
        store.export(tmp_path / "out.json", ids=["0123456789abcdef"])


def test_a_misspelt_db_is_refused_by_the_commands_that_only_read_and_nothing_is_created(tmp_path, capsys):
    from jaxcompare.cli import main

    missing = tmp_path / "nodir" / "x.sqlite3"  # had been created, its folder too, and read "no saved results"
    for args in (["history"], ["export", str(tmp_path / "out.json")], ["history", "copy", "--to", str(tmp_path / "b")]):
        assert main([*args, "--db", str(missing)]) == 2
        assert f"no history at {missing}: there is no such file" in capsys.readouterr().err
    assert not missing.parent.exists() and not (tmp_path / "out.json").exists()
    assert cli_history.open_store(str(tmp_path / "new.sqlite3")).count() == 0  # run --save makes one where told


def test_delete(results, store):
    for r in results:
        store.save(r)
    assert store.delete([results[0].id, "not-an-id"]) == 1
    assert store.count() == 2
    with pytest.raises(BadInput, match="no saved result"):
        store.get(results[0].id)


# --- opening -----------------------------------------------------------------------------------
def test_default_path_honours_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("JAXCOMPARE_DB", str(tmp_path / "deep" / "dir" / "db.sqlite3"))
    store = Store()
    assert store.path == tmp_path / "deep" / "dir" / "db.sqlite3" == default_path()
    assert store.path.exists() and store.count() == 0
    with sqlite3.connect(store.path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


@pytest.mark.parametrize("kind", ["directory", "not sqlite", "foreign sqlite", "under a file"])
def test_a_path_that_cannot_be_opened_is_one_clear_line(tmp_path, kind):
    path = tmp_path / "db"
    if kind == "directory":
        path.mkdir()
    elif kind == "not sqlite":
        path.write_text("hello, this is not a database" * 10)
    elif kind == "foreign sqlite":
        with sqlite3.connect(path) as conn:
            conn.execute("CREATE TABLE other (x)")
    else:
        path.write_text("a file")
        path = path / "sub" / "db.sqlite3"
    with pytest.raises(BadInput) as info:
        Store(path)
    message = str(info.value)
    assert "\n" not in message and str(path) in message


# --- concurrency and crashes ------------------------------------------------------------------------
def test_concurrent_threads_leave_a_consistent_database(results, store):
    batches = [copies(results[i % 3], 20) for i in range(8)]
    errors: list[BaseException] = []
    start = threading.Barrier(len(batches))

    def writer(batch: list[Result]) -> None:
        try:
            start.wait()
            for r in batch:
                store.save(r)
                store.count()  # readers interleave with writers
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(b,)) for b in batches]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert store.count() == 160
    ids = [r.id for b in batches for r in b]
    assert {r.id for r in store.load(ids)} == set(ids)
    _assert_integrity(store)


def _save_copies(path: str, docs: list[dict], go) -> None:
    """Process entry point: save each result with its own Store, as a separate CLI would."""
    go.wait(60)
    for doc in docs:
        Store(path).save(Result.from_dict(doc))


def test_concurrent_processes_leave_a_consistent_database(results, store):
    ctx = multiprocessing.get_context("spawn")
    batches = [[r.to_dict() for r in copies(results[i], 20)] for i in range(3)]
    go = ctx.Event()
    procs = [ctx.Process(target=_save_copies, args=(where(store), b, go)) for b in batches]
    for p in procs:
        p.start()
    go.set()
    local = copies(results[0], 20)
    for r in local:  # this process writes at the same time
        store.save(r)
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    assert store.count() == 80
    ids = [d["id"] for b in batches for d in b] + [r.id for r in local]
    assert len(store.load(ids)) == 80
    _assert_integrity(store)


CRASH = """
import os, sys
from jaxcompare.model.result import Result
from jaxcompare.history.store import Store, _insert, _row
import dataclasses, json, uuid
store = Store(sys.argv[1])
base = Result.from_dict(json.loads(sys.stdin.read()))
for _ in range(5):
    store.save(dataclasses.replace(base, id=uuid.uuid4().hex))
with store._transaction() as conn:   # a write in flight when the process dies
    _insert(conn, _row(dataclasses.replace(base, id=uuid.uuid4().hex)))
    os._exit(9)
"""


def test_a_crash_mid_write_loses_nothing_already_saved(results, store):
    proc = subprocess.run([sys.executable, "-c", CRASH, where(store)], input=dumps(results[0].to_dict()),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 9, proc.stderr
    assert store.count() == 5
    assert len(store.load([row["id"] for row in store.list()])) == 5
    _assert_integrity(store)
    store.save(results[1])  # and the database is still writable
    assert store.count() == 6


def _assert_integrity(store: Store) -> None:
    """SQLite's own check of the file (PostgreSQL has no such pragma; its rows were counted)."""
    if store.path is not None:
        with sqlite3.connect(store.path) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


# --- bad imports ------------------------------------------------------------------------------
def _bad_file(kind: str, tmp_path: Path, results: list[Result]) -> Path:
    path = tmp_path / f"{kind.replace(' ', '_')}.json"
    export = {"schema": EXPORT_SCHEMA, "results": [r.to_dict() for r in results]}
    text = dumps(export)
    if kind == "not json":
        path.write_text("id,case\n1,matmul\n")
    elif kind == "binary":
        path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe")
    elif kind == "truncated":
        path.write_text(text[: len(text) // 2])
    elif kind == "wrong schema":
        path.write_text(dumps({"schema": "someone.else/3", "results": export["results"]}))
    elif kind == "newer schema":
        path.write_text(dumps({"schema": "jaxcompare.export/9", "results": export["results"]}))
    elif kind == "foreign json":
        path.write_text(dumps({"name": "package.json", "version": "1.0"}))
    elif kind == "json array of numbers":
        path.write_text("[1, 2, 3]")
    elif kind == "corrupted middle result":
        export["results"][1]["jax"]["runtime"]["median_s"] = "fast"
        path.write_text(dumps(export))
    elif kind == "missing field":
        del export["results"][1]["spec"]
        path.write_text(dumps(export))
    elif kind == "bad created":
        export["results"][2]["created"] = "last tuesday"
        path.write_text(dumps(export))
    elif kind == "no results":
        path.write_text(dumps({"schema": EXPORT_SCHEMA, "results": []}))
    elif kind == "empty":
        path.write_text("")
    elif kind == "directory":
        path.mkdir()
    elif kind == "missing":
        pass
    return path


BAD = ["not json", "binary", "truncated", "wrong schema", "newer schema", "foreign json",
       "json array of numbers", "corrupted middle result", "missing field", "bad created", "no results",
       "empty", "directory", "missing"]


@pytest.mark.parametrize("kind", BAD)
def test_bad_imports_are_rejected_and_change_nothing(kind, results, store, tmp_path):
    store.save(results[0])
    before = snapshot(store)
    # Fresh copies, so a half-done import would show up as new rows.
    fresh = [dataclasses.replace(r, id=uuid.uuid4().hex) for r in results]
    path = _bad_file(kind, tmp_path, fresh)
    with pytest.raises(BadInput) as info:
        store.import_file(path)
    message = str(info.value)
    assert "\n" not in message and str(path) in message, message
    assert store.count() == 1
    assert snapshot(store) == before


def test_bad_import_messages_say_what_is_wrong(results, store, tmp_path):
    def message(kind: str) -> str:
        with pytest.raises(BadInput) as info:
            store.import_file(_bad_file(kind, tmp_path, results))
        return str(info.value)

    assert "truncated" in message("truncated")
    assert "not valid JSON" in message("not json")
    assert "empty" in message("empty")
    assert "directory" in message("directory")
    assert "result 2 of 3" in message("corrupted middle result")
    assert "newer" in message("newer schema")
    assert "not a jaxcompare export" in message("wrong schema")
    # json's "Unterminated string starting at" before our "at line ..." read "at at line"
    unterminated = tmp_path / "unterminated.json"
    unterminated.write_text('["abc')
    with pytest.raises(BadInput, match="Unterminated string starting at line 1 column 2$"):
        store.import_file(unterminated)


# --- CLI commands (called directly until cli.py wires them) ------------------------------------------
def _cli(*argv: str) -> int | None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    cli_history.add_commands(sub)
    sub.add_parser("other")
    return cli_history.handle(parser.parse_args(argv))


def test_cli_history_export_import(results, tmp_path, capsys, monkeypatch):
    db = str(tmp_path / "cli.sqlite3")
    monkeypatch.setenv("JAXCOMPARE_DB", str(tmp_path / "env-default.sqlite3"))
    for r in results:
        cli_history.save_result(r, db)
    assert "saved" in capsys.readouterr().err

    assert _cli("history", "--db", db) == 0
    out = capsys.readouterr().out
    assert out.count("matmul") == 3 and "16x16" in out and "3 results in" in out

    assert _cli("history", "--db", db, "--precision", "x64", "--json", "-") == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["precision"] for r in rows] == ["x64"]
    # Filtered, the count says how many of the saved ones are shown (it read "1 result in", as if that were all).
    assert _cli("history", "--db", db, "--precision", "x64") == 0
    assert "1 of 3 results in" in capsys.readouterr().out

    export = tmp_path / "x32.json"
    assert _cli("export", str(export), "--db", db, "--precision", "x32") == 0
    assert "exported 2 results" in capsys.readouterr().out
    assert _cli("import", str(export)) == 0  # into $JAXCOMPARE_DB
    assert "imported 2 results (0 already present)" in capsys.readouterr().out
    assert Store(tmp_path / "env-default.sqlite3").count() == 2

    # Filters that match nothing say so, with the saved cases, and exit 1 (2 is bad input).
    assert _cli("history", "--db", db, "--case", "matmull") == 1
    assert "no saved results match --case matmull" in capsys.readouterr().out
    assert _cli("history", "--db", db, "--case", "nope", "--json", "-") == 1
    captured = capsys.readouterr()
    assert json.loads(captured.out) == [] and "the saved cases are matmul" in captured.err

    with pytest.raises(BadInput, match="nothing was exported"):
        _cli("export", str(tmp_path / "none.json"), "--db", db, "--case", "svd")
    assert _cli("other") is None


def test_python_m_jaxcompare_import_of_a_bad_file_exits_2(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    env_db = tmp_path / "db.sqlite3"
    run = lambda *a: cli(*a, "--db", str(env_db), timeout=60)
    proc = run("import", str(bad))
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "bad.json" in proc.stderr
    proc = run("history", "--json", "-")
    assert proc.returncode == 0 and json.loads(proc.stdout) == []
