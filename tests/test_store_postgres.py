"""History on a real PostgreSQL server: migrations, two app servers writing at once, `history copy`
all or nothing, and the credential (URL, PGPASSWORD, a service file) never shown anywhere.
(The Store API's own tests run on both backends in test_store.py.)"""

from __future__ import annotations

import dataclasses
import json
import threading
import uuid

import pytest
from _results import make_result
from postgres_support import PASSWORD, ROLE
from support import cli

from jaxcompare import BadInput, Result
from jaxcompare.cli import main
from jaxcompare.history import postgres
from jaxcompare.history.schema import SCHEMA_VERSION, VERSION_TABLE
from jaxcompare.history.store import Store

HIDDEN_URL = f"postgresql://{ROLE}:***@"


def fresh(n: int, **kwargs) -> list[Result]:
    base = make_result(**kwargs)
    return [dataclasses.replace(base, id=uuid.uuid4().hex) for _ in range(n)]


def rows(store: Store) -> list[tuple]:
    with store._connection() as conn:
        return [tuple(r) for r in conn.execute("SELECT * FROM results ORDER BY id").fetchall()]


def run_cli(capsys, *argv: str) -> tuple[int, str]:
    """`jaxcompare ARGV` in this process: its exit status and everything it printed."""
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out + out.err


# --- migrations --------------------------------------------------------------------------------
def test_migrations_create_the_schema_on_an_empty_database_once(postgres, pg_url):
    Store(pg_url)
    Store(pg_url).save(fresh(1)[0])  # a second server opening the same database migrates nothing
    with postgres.admin(pg_url.rsplit("/", 1)[1]) as conn:
        versions = conn.execute(f"SELECT version FROM {VERSION_TABLE} ORDER BY version").fetchall()
        assert versions == [(v,) for v in range(1, SCHEMA_VERSION + 1)]
        columns = dict(conn.execute("SELECT column_name, data_type FROM information_schema.columns "
                                    "WHERE table_name = 'results'").fetchall())
        indexes = {r[0] for r in conn.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'results'")}
    assert columns["jax_median_s"] == "double precision" and columns["doc"] == "text" and len(columns) == 18
    assert columns["numpy_kept_median_s"] == "double precision"  # migration 2
    assert columns["port"] == "text"  # migration 3
    assert {"results_created", "results_case"} <= indexes


def test_servers_starting_together_migrate_once(pg_url):
    errors: list[BaseException] = []
    go = threading.Barrier(4)

    def open_one() -> None:
        try:
            go.wait()
            Store(pg_url)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    with Store(pg_url)._connection() as conn:
        assert conn.execute(f"SELECT count(*) FROM {VERSION_TABLE}").fetchone()[0] == SCHEMA_VERSION


@pytest.mark.parametrize("state", ["foreign results table", "newer schema"])
def test_a_database_that_is_not_ours_is_refused_and_left_alone(postgres, pg_url, state):
    name = pg_url.rsplit("/", 1)[1]
    with postgres.admin(name) as conn:
        if state == "foreign results table":
            conn.execute(f"CREATE TABLE results (x int); ALTER TABLE results OWNER TO {ROLE}")
        else:
            conn.execute(f"CREATE TABLE {VERSION_TABLE} (version INTEGER PRIMARY KEY, applied TEXT NOT NULL); "
                         f"INSERT INTO {VERSION_TABLE} VALUES (99, 'later'); "
                         f"ALTER TABLE {VERSION_TABLE} OWNER TO {ROLE}")
    with pytest.raises(BadInput) as info:
        Store(pg_url)
    message = str(info.value)
    assert "\n" not in message and PASSWORD not in message and HIDDEN_URL in message
    assert ("not jaxcompare's" if state == "foreign results table" else "newer jaxcompare") in message
    with postgres.admin(name) as conn:
        tables = {r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")}
    assert tables == ({"results"} if state == "foreign results table" else {VERSION_TABLE})


# --- several app servers at once ----------------------------------------------------------------
def test_two_servers_saving_overlapping_results_lose_nothing_and_duplicate_nothing(pg_url):
    """Two Stores (two app servers: their own connections) save overlapping batches at once, in
    opposite orders, whole batches and one by one."""
    shared, only_a, only_b = fresh(30), fresh(15), fresh(15, precision="x64")
    servers = [Store(pg_url), Store(pg_url)]
    work = [(servers[0], shared + only_a), (servers[1], list(reversed(shared)) + only_b)]
    counts: list[tuple[int, int]] = []
    errors: list[BaseException] = []
    go = threading.Barrier(2)

    def server(store: Store, results: list[Result]) -> None:
        try:
            go.wait()
            for i in range(0, len(results), 5):
                counts.append(store.import_docs([r.to_dict() for r in results[i:i + 5]]))
            for r in results:  # and again one by one: each a no-op now
                store.save(r)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=server, args=w) for w in work]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    expected = {r.id for r in shared + only_a + only_b}
    assert sum(added for added, _present in counts) == len(expected) == 60  # each saved exactly once
    assert sorted(servers[0].all_ids()) == sorted(expected) == sorted(set(servers[1].all_ids()))
    assert len(servers[1].load(sorted(expected))) == 60


# --- history copy ------------------------------------------------------------------------------
@pytest.fixture
def sqlite_history(tmp_path) -> Store:
    store = Store(tmp_path / "results.sqlite3")
    store.import_docs([r.to_dict() for r in fresh(3) + fresh(2, precision="x64")])
    return store


def test_history_copy_moves_every_row_and_is_idempotent(sqlite_history, pg_url, capsys):
    code, text = run_cli(capsys, "history", "copy", "--db", str(sqlite_history.path), "--to", pg_url)
    assert code == 0 and text.count("\n") == 1, text
    assert "copied 5 results (0 already present)" in text and HIDDEN_URL in text and PASSWORD not in text
    target = Store(pg_url)
    assert rows(target) == rows(sqlite_history)  # every column, the saved times too
    assert [r["id"] for r in target.list()] == [r["id"] for r in sqlite_history.list()]
    code, text = run_cli(capsys, "history", "copy", "--db", str(sqlite_history.path), "--to", pg_url)
    assert code == 0 and "copied 0 results (5 already present)" in text


def test_history_copy_that_fails_midway_leaves_the_target_unchanged(sqlite_history, postgres, pg_url, capsys):
    target = Store(pg_url)
    target.save(fresh(1)[0])
    before = rows(target)
    with postgres.admin(pg_url.rsplit("/", 1)[1]) as conn:  # the target refuses x64 rows: the copy meets them late
        conn.execute("ALTER TABLE results ADD CONSTRAINT x32_only CHECK (precision = 'x32')")
    code, text = run_cli(capsys, "history", "copy", "--db", str(sqlite_history.path), "--to", pg_url)
    assert code == 2 and text.count("\n") == 1, text
    assert text.startswith("jaxcompare: error: nothing was copied: ") and "x32_only" in text
    assert PASSWORD not in text and HIDDEN_URL in text
    assert rows(target) == before


@pytest.mark.parametrize("target", ["closed port", "wrong password", "no such database", "unreadable source row"])
def test_history_copy_to_a_bad_target_says_so_in_one_line(sqlite_history, postgres, pg_url, target, capsys):
    url = {"closed port": f"postgresql://{ROLE}:{PASSWORD}@127.0.0.1:1/x",
           "wrong password": pg_url.replace(PASSWORD, PASSWORD[::-1]),
           "no such database": postgres.url("nope"),
           "unreadable source row": pg_url}[target]
    if target == "unreadable source row":
        with sqlite_history._transaction() as conn:
            conn.execute("UPDATE results SET doc = '{broken' WHERE id = (SELECT max(id) FROM results)")
    code, text = run_cli(capsys, "history", "copy", "--db", str(sqlite_history.path), "--to", url)
    assert code == 2 and text.count("\n") == 1, text
    assert text.startswith("jaxcompare: error: nothing was copied: "), text
    for secret in (PASSWORD, PASSWORD[::-1]):
        assert secret not in text
    if target == "unreadable source row":
        assert "unreadable" in text and Store(pg_url).count() == 0


# --- the credential --------------------------------------------------------------------------------
def test_the_password_may_come_from_pgpassword_or_a_service_file(postgres, pg_url, tmp_path, monkeypatch):
    name = pg_url.rsplit("/", 1)[1]
    Store(pg_url).save(fresh(1)[0])
    bare = postgres.url(name, password=False)
    with pytest.raises(BadInput, match="password"):  # no password anywhere: the server refuses, in one line
        Store(bare)
    monkeypatch.setenv("PGPASSWORD", PASSWORD)
    assert Store(bare).count() == 1 and Store(bare).location == bare
    monkeypatch.delenv("PGPASSWORD")
    services = tmp_path / "pg_service.conf"
    services.write_text(f"[history]\nhost=127.0.0.1\nport={postgres.port}\ndbname={name}\nuser={ROLE}\n"
                        f"password={PASSWORD}\n")
    monkeypatch.setenv("PGSERVICEFILE", str(services))
    store = Store("postgresql:///?service=history")
    assert store.count() == 1 and store.location == "postgresql:///?service=history"


def test_the_password_never_shows_in_cli_output_or_errors(pg_url, tmp_path, capsys, monkeypatch):
    export = tmp_path / "some.json"
    store = Store(tmp_path / "src.sqlite3")
    store.import_docs([r.to_dict() for r in fresh(2)])
    store.export(export)
    said = []
    for argv in (["import", str(export), "--db", pg_url], ["history", "--db", pg_url],
                 ["history", "--db", pg_url, "--case", "svd"], ["export", str(tmp_path / "e.json"), "--db", pg_url,
                                                                "--case", "svd"],
                 ["history", "--db", pg_url.replace(PASSWORD, "wrong" + PASSWORD[:3])],
                 ["history", "--db", pg_url.replace(PASSWORD, PASSWORD + "%zz")]):  # libpq echoes a bad token
        code, text = run_cli(capsys, *argv)
        said.append(text)
        assert PASSWORD not in text and PASSWORD[:3] + "%zz" not in text and "wrong" + PASSWORD[:3] not in text, text
        assert HIDDEN_URL in text or "postgresql://" + postgres.HIDDEN in text, text
    assert "imported 2 results (0 already present) into " + HIDDEN_URL in said[0]
    assert said[-1].count("\n") == 1 and said[-2].count("\n") == 1
    monkeypatch.setenv("JAXCOMPARE_DB", pg_url)  # and through the variable, in a real process
    proc = cli("history", "--json", "-", env={"JAXCOMPARE_DB": pg_url}, timeout=60)
    assert proc.returncode == 0 and len(json.loads(proc.stdout)) == 2 and PASSWORD not in proc.stdout + proc.stderr


def test_the_environment_fingerprint_never_holds_the_database_credential(pg_url, monkeypatch):
    from jaxcompare.engine.common.host import host_info

    monkeypatch.setenv("JAXCOMPARE_DB", pg_url)
    monkeypatch.setenv("PGPASSWORD", PASSWORD)
    assert PASSWORD not in json.dumps(host_info(), default=str)


@pytest.mark.parametrize(("url", "shown"), [
    ("postgresql://jc:s3cr%40t@db.example:5432/h", "postgresql://jc:***@db.example:5432/h"),
    ("postgres://jc@h1:5432,h2:5433/h?sslmode=require", "postgres://jc@h1:5432,h2:5433/h?sslmode=require"),
    ("postgresql:///h?user=jc&password=s3cr%40t&host=/run/pg", "postgresql:///h?user=jc&password=***&host=/run/pg"),
    ("postgresql://:s3cr%40t@/h", "postgresql://:***@/h"),
])
def test_redact_hides_the_password_in_every_place_a_url_holds_one(url, shown):
    assert postgres.redact_url(url) == shown
    if "s3cr" in url:  # an error text holding it, raw or percent-encoded, is scrubbed too
        assert "s3cr" not in postgres.scrub(f"libpq said {url} and s3cr@t", url)
