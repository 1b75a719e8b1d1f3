"""History keys and lists results by the JAX port measured (#51): the port column migration 3 adds and
fills from each saved row's doc, the listing's filter and facets, the table's Port column, and an A/B
comparison that names two ports of one case as a difference in setup (a result saved before ports is
its case's default port)."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import sqlite3

from _results import make_result

from jaxcompare.analysis.compare import compare_results
from jaxcompare.app import history_view as hv
from jaxcompare.history import schema
from jaxcompare.history.exchange import CSV_COLUMNS, check, export_csv
from jaxcompare.history.store import APPLICATION_ID, SCHEMA_VERSION, Store


def port_result(port: str | None, id: str, created: str = "2026-01-01T00:00:00+00:00"):
    """A cumsum result that measured ``port`` (None: saved before ports, as a /3 result loads)."""
    result = dataclasses.replace(make_result("cumsum", (1000,)), id=id, created=created)
    if port is None:
        info = {k: v for k, v in result.case_info.items() if k not in ("port", "port_pallas", "ports", "ports_why")}
        return dataclasses.replace(result, case_info=info)
    return dataclasses.replace(result, spec=dataclasses.replace(result.spec, port=port))


def test_a_schema_2_history_upgrades_with_each_rows_port_from_its_doc(tmp_path):
    path = tmp_path / "v2.sqlite3"
    rows = {"scan-run": port_result("scan", "scan-run"), "old-run": port_result(None, "old-run"),
            "default-run": dataclasses.replace(port_result("scan", "default-run"),
                                               spec=port_result(None, "x").spec)}  # only case_info names it
    with contextlib.closing(sqlite3.connect(path)) as conn, conn:
        for version in (1, 2):
            for statement in schema.migration(version, "sqlite"):
                conn.execute(statement)
        conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        conn.execute("PRAGMA user_version = 2")
        for result in rows.values():
            summary, doc = check(result)
            summary.pop("port")
            row = {**summary, "saved": "2026-01-02T00:00:00+00:00", "doc": doc}
            conn.execute(f"INSERT INTO results ({', '.join(f'{chr(34)}{c}{chr(34)}' for c in row)}) "
                         f"VALUES ({', '.join('?' * len(row))})", list(row.values()))
        conn.execute("INSERT INTO results (id, created, \"case\", shape, precision, dtype, backend, device, "
                     "device_kind, host, jax_version, numpy_median_s, jax_median_s, saved, doc) VALUES "
                     "('hand', '2026-01-01', 'cumsum', '1000', 'x32', 'float32', 'cpu', 'cpu:0', 'cpu', '', '', "
                     "1, 1, '2026-01-01', '{\"port\": broken')")
    store = Store(path)
    with store._connection() as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 3
    listed = {row["id"]: row["port"] for row in store.list()}
    assert listed == {"scan-run": "scan", "old-run": None, "default-run": "jnp", "hand": None}
    assert [row["id"] for row in store.list(port="scan")] == ["scan-run"]


def test_results_are_saved_listed_and_exported_by_port(tmp_path):
    store = Store(tmp_path / "results.sqlite3")
    for port, minute in (("jnp", 1), ("scan", 2), ("associative_scan", 3)):
        store.save(port_result(port, f"run-{port}", f"2026-01-01T00:0{minute}:00+00:00"))
    assert store.facets()["port"] == ["associative_scan", "jnp", "scan"]
    assert [row["port"] for row in store.list(case="cumsum")] == ["associative_scan", "scan", "jnp"]
    assert [row["id"] for row in store.list(port="jnp")] == ["run-jnp"]
    table = hv.table_rows(store.list())
    assert [row["Port"] for row in table] == ["associative_scan", "scan", "jnp"]
    assert list(table[0])[:3] == ["Measured (UTC)", "Case", "Port"]
    labels = hv.run_labels(store.list())  # two ports of one case: each label names its port
    assert labels[0].startswith("cumsum associative_scan 1000 x32 · cpu") and labels[2].startswith("cumsum jnp 1000")
    assert hv.run_labels(store.list(port="jnp"))[0].startswith("cumsum 1000 x32")  # one port: as before
    assert "port" in CSV_COLUMNS and "scan" in export_csv(store.load(["run-scan"])).splitlines()[1].split(",")


def test_ab_names_two_ports_of_one_case_as_a_difference_and_an_old_run_as_the_default_port():
    jnp, scan, old = port_result("jnp", "a"), port_result("scan", "b"), port_result(None, "c")
    differences = compare_results(jnp, scan).differences
    assert differences[0] == {"field": "port", "a": "jnp", "b": "scan"}
    assert hv.difference_lines(differences)[0] == "port jnp → scan"
    assert compare_results(jnp, scan).comparable  # the same work, written two ways
    assert compare_results(old, jnp).differences == []  # saved before ports: it measured the default, jnp
    assert compare_results(old, scan).differences == [{"field": "port", "a": "jnp", "b": "scan"}]
    assert json.loads(check(old)[1])["spec"]["port"] is None and check(old)[0]["port"] is None


def test_the_history_page_lists_the_port_and_filters_by_it_where_there_are_several(tmp_path, monkeypatch, runner):
    import streamlit as st
    from apptest_support import page

    from jaxcompare.app import resources

    path = tmp_path / "results.sqlite3"
    monkeypatch.setenv("JAXCOMPARE_DB", str(path))
    monkeypatch.setattr(resources, "get_runner", lambda: runner)  # the session's Runner: no new workers
    st.cache_data.clear()
    resources._store_at.clear()
    try:
        store = Store(path)
        store.save(port_result("jnp", "run-jnp", "2026-01-01T00:01:00+00:00"))
        at = page("pages/4_History.py")
        assert not at.exception and not [b for b in at.selectbox if b.key == "history_port"]  # one port: no filter
        assert list(at.dataframe[0].value["Port"]) == ["jnp"]
        store.save(port_result("scan", "run-scan", "2026-01-01T00:02:00+00:00"))
        at = page("pages/4_History.py")
        box = at.selectbox(key="history_port")
        assert list(box.options) == ["jnp", "scan"]
        box.set_value("scan").run()
        assert not at.exception and list(at.dataframe[0].value["Port"]) == ["scan"]
    finally:
        resources._store_at.clear()


def test_the_cli_history_filters_by_port_and_names_ports_only_where_they_differ(tmp_path, capsys):
    from jaxcompare.cli import main

    db = str(tmp_path / "h.sqlite3")
    store = Store(db)
    for port, id in (("jnp", "jnp-run-1"), ("scan", "scan-run-1")):
        store.save(port_result(port, id))
    assert main(["history", "--db", db]) == 0
    out = capsys.readouterr().out
    assert "cumsum:jnp" in out and "cumsum:scan" in out  # two ports of one case: each row names its port
    assert main(["history", "--db", db, "--port", "scan"]) == 0
    out = capsys.readouterr().out
    assert "scan-run" in out and "jnp-run" not in out and "cumsum:" not in out  # one port: no need to name it
    assert main(["history", "--db", db, "--port", "pallas"]) == 1
    said = capsys.readouterr().out
    assert "--port pallas" in said and "the saved ports are jnp, scan" in said, said  # what to ask for instead
