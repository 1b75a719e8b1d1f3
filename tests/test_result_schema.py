"""Results saved as jaxcompare.result/1 (tests/data: an export, a History database, a result with
every optional block) load, re-export as schema 2 and load again with every value where schema 2
keeps it; the CSV says the same of them either way."""

from __future__ import annotations

import contextlib
import json
import shutil
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

import pytest

from jaxcompare.history.exchange import export_csv, read_results
from jaxcompare.history.store import Store
from jaxcompare.model.formatting import dumps
from jaxcompare.model.result import SCHEMA, SCHEMA_HISTORY, SCHEMA_V1, Result

DATA = Path(__file__).parent / "data"
# Where schema 2 keeps what schema 1 kept elsewhere: a path prefix, old -> new (SCHEMA_HISTORY).
MOVED = {
    ("device",): ("jax", "device"),
    ("device_kind",): ("jax", "device_kind"),
    ("agreement",): ("jax", "agreement"),
    ("protocol",): ("jax", "protocol"),
    ("jax_cpu", "speedup"): ("cpu_speedup",),
    ("jax_cpu", "gflops"): ("gflops", "jax_cpu"),
}


def v1_documents() -> list[tuple[str, dict[str, Any]]]:
    export = json.loads((DATA / "export-v0.1-before-layout.json").read_text())
    docs = [(f"export[{i}]", doc) for i, doc in enumerate(export["results"])]
    docs.append(("third side", json.loads((DATA / "result-v1-third-side.json").read_text())))
    # Read from a copy: SQLite leaves -wal and -shm files beside a database it opens, even read-only.
    with tempfile.TemporaryDirectory() as folder:
        db = Path(shutil.copy(DATA / "results-v0.1-before-layout.sqlite3", folder))
        with contextlib.closing(sqlite3.connect(db)) as conn:
            rows = conn.execute("SELECT id, doc FROM results").fetchall()
    return docs + [(f"sqlite {row_id[:8]}", json.loads(doc)) for row_id, doc in rows]


V1 = v1_documents()


# Derived figures the JSON writes but from_dict never reads: written anew from the kept values, by
# today's rules (the speedup's range became where a rerun falls: model/reruns.py).
RECOMPUTED = frozenset({"speedup_range"})


def flatten(value: Any, path: tuple = ()) -> dict[tuple, Any]:
    """Every leaf of a JSON document by its path (list items by index)."""
    if isinstance(value, dict):
        return {k: v for key, item in value.items() for k, v in flatten(item, (*path, key)).items()}
    if isinstance(value, list) and value:
        return {k: v for i, item in enumerate(value) for k, v in flatten(item, (*path, i)).items()}
    return {path: value}


def moved(path: tuple) -> tuple:
    for old, new in MOVED.items():
        if path[:len(old)] == old:
            return (*new, *path[len(old):])
    return path


def test_the_data_is_schema_1_and_covers_every_optional_block():
    assert len(V1) == 5 and all(doc["schema"] == SCHEMA_V1 for _, doc in V1)
    third = dict(V1)["third side"]
    assert all(third[key] for key in ("jax_cpu", "peak", "profile", "load", "protocol"))


@pytest.mark.parametrize("name, old", V1, ids=[name for name, _ in V1])
def test_a_schema_1_result_keeps_every_value_through_schema_2(name, old):
    first = Result.from_dict(old)
    new = json.loads(dumps(first.to_dict()))
    assert new["schema"] == SCHEMA and new["history"] == [dict(change) for change in SCHEMA_HISTORY]
    flat_new = flatten(new)
    for path, value in flatten(old).items():
        if path == ("schema",) or path[0] in RECOMPUTED:
            continue
        assert moved(path) in flat_new, (name, path)
        assert flat_new[moved(path)] == value, (name, path)
    # Schema 2 read back says exactly what it wrote, and the CSV is the same row either way.
    again = Result.from_dict(new)
    assert json.loads(dumps(again.to_dict())) == new
    assert export_csv([again]) == export_csv([first])
    # Both JAX sides have one layout.
    if new["jax_cpu"] is not None:
        assert set(new["jax_cpu"]) == set(new["jax"])


def test_schema_1_imports_into_history_and_exports_as_schema_2(tmp_path):
    store = Store(tmp_path / "db.sqlite3")
    docs = [doc for _, doc in V1]
    unique = {doc["id"]: doc for doc in docs}  # the export and the database hold the same two results
    assert store.import_docs({"schema": "jaxcompare.export/1", "results": list(unique.values())}) == (len(unique), 0)
    third = dict(V1)["third side"]
    assert store.import_docs(third) == (0, 1)  # a single schema-1 result document: already there
    with contextlib.closing(sqlite3.connect(tmp_path / "db.sqlite3")) as conn:  # kept as schema 2
        assert {json.loads(doc)["schema"] for (doc,) in conn.execute("SELECT doc FROM results")} == {SCHEMA}
    assert store.export(tmp_path / "all.json") == len(unique)
    exported = json.loads((tmp_path / "all.json").read_text())
    assert {doc["schema"] for doc in exported["results"]} == {SCHEMA}
    for doc in exported["results"]:
        assert json.loads(dumps(Result.from_dict(unique[doc["id"]]).to_dict())) == doc
    assert [r.id for r in read_results(exported)] == [doc["id"] for doc in exported["results"]]
