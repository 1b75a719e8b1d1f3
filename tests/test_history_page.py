"""The History page under AppTest, on a temporary database seeded with real measurements; and
Compare and Size sweep saving every finished result to the store."""

from __future__ import annotations

import dataclasses
import json
import re
import urllib.parse
from pathlib import Path

import pytest
from _results import make_result, stats
from apptest_support import page, run_until
from chart_support import layer_marks, vega_specs
from streamlit.testing.v1 import AppTest

from jaxcompare import Spec, TimingConfig
from jaxcompare.analysis.compare import compare_results
from jaxcompare.app import history_view as hv
from jaxcompare.history.exchange import export_json
from jaxcompare.history.store import Store

VERDICTS = {"B is", "No significant difference", "Too few samples to judge"}

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="module")
def measured(runner):
    """Three real results at tiny shapes: matmul 10x10 twice (a verdict pair), 16x16 once."""
    return [runner.run(Spec("matmul", shape, timing=TimingConfig.quick())) for shape in ((10, 10), (10, 10), (16, 16))]


@pytest.fixture
def db(tmp_path, monkeypatch, runner):
    """JAXCOMPARE_DB at a fresh file; the app shares the test session's Runner (no new workers)."""
    import streamlit as st

    from jaxcompare.app import resources

    path = tmp_path / "results.sqlite3"
    monkeypatch.setenv("JAXCOMPARE_DB", str(path))
    monkeypatch.setattr(resources, "get_runner", lambda: runner)
    st.cache_data.clear()
    resources._store_at.clear()
    yield path
    resources._store_at.clear()


@pytest.fixture
def store(db, measured) -> Store:
    store = Store(db)
    for result in measured:
        store.save(result)
    return store


def history() -> AppTest:
    at = page("pages/4_History.py")
    assert not at.exception, [e.value for e in at.exception]
    return at


def select(at: AppTest, ids: list[str]) -> AppTest:
    """Tick the table rows of these results (row selection is widget state AppTest can set)."""
    shown = list(at.dataframe[0].value["ID"])
    at.session_state["history_table"] = {"selection": {"rows": [shown.index(i[:8]) for i in ids], "columns": []}}
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def texts(at: AppTest) -> str:
    """The page's text as a reader sees it: recorded strings go in as plain text (Markdown's
    escapes and invisible word joiners), undone here."""
    text = "\n".join(str(e.value) for kind in ("markdown", "caption", "info", "success", "error", "warning")
                     for e in getattr(at, kind))
    return re.sub(r"\\(.)", r"\1", text).replace("\u2060", "")


# --- the History page -------------------------------------------------------------------------------
def test_empty_history_points_to_compare_and_the_cli(db):
    at = history()
    info = " ".join(i.value for i in at.info)
    assert "No saved results yet" in info and "python -m jaxcompare import" in info
    links = {link.proto.label for link in at.get("page_link")}
    assert {"Compare", "Size sweep"} <= links
    assert not at.dataframe and len(at.file_uploader) == 1


def test_table_lists_saved_results_and_filters_narrow_it(store, measured):
    at = history()
    table = at.dataframe[0].value
    assert list(table["ID"]) == [row["id"][:8] for row in store.list()]  # newest first
    assert sorted(table["Shape"]) == ["10x10", "10x10", "16x16"] and set(table["Precision"]) == {"x32"}
    assert all(t.endswith(("µs", "ms", "ns")) for t in table["JAX runtime"])
    assert "3 saved" in texts(at)

    at.segmented_control(key="history_precision").set_value("x64").run()
    assert not at.dataframe and any("No saved results match" in i.value for i in at.info)
    at.button(key="history_clear_filters_main").click().run()
    assert len(at.dataframe[0].value) == 3

    host = measured[0].env["hostname"]
    at.selectbox(key="history_host").set_value(host).run()
    assert len(at.dataframe[0].value) == 3
    created = measured[0].created[:10]
    day = __import__("datetime").date.fromisoformat(created)
    at.date_input(key="history_dates").set_value((day, day)).run()
    assert len(at.dataframe[0].value) == 3
    at.date_input(key="history_dates").set_value((day.replace(year=day.year - 1),
                                                  day.replace(year=day.year - 1))).run()
    assert not at.dataframe
    assert not at.exception


def test_two_runs_of_one_case_get_charts_and_a_verdict(store, measured):
    a, b, _ = measured
    at = select(history(), [a.id, b.id])
    assert "2 selected" in texts(at)
    downloads = {d.proto.label for d in at.get("download_button")}
    assert {"Selection (JSON)", "Selection (CSV)", "Phase chart (PNG)", "Speedup chart (PNG)"} <= downloads

    phases, speedups = vega_specs(at)
    assert layer_marks(phases) == ["rule", "rule", "circle"]
    dot = phases["layer"][2]["encoding"]
    assert dot["x"]["scale"]["type"] == "log" and dot["yOffset"]["field"] == "run"
    assert dot["color"]["field"] == "run" and len(dot["color"]["scale"]["domain"]) == 2
    assert dot["color"]["scale"]["domain"][0].startswith("A · matmul 10x10 x32")
    assert layer_marks(speedups)[:3] == ["rule", "rule", "circle"]
    assert speedups["layer"][0]["data"]["values"] == [{"x": 1.0}]
    assert speedups["layer"][2]["encoding"]["x"]["scale"]["type"] == "log"

    assert any(h.value == "Is B faster than A?" for h in at.subheader)
    boxes = [e.value for kind in ("success", "error", "info", "warning") for e in getattr(at, kind)]
    headlines = [t for t in boxes if any(t.startswith(v) for v in VERDICTS)]
    assert len(headlines) == 2, boxes  # one for the JAX runtime, one for NumPy
    body = texts(at)
    expected = compare_results(a, b)  # A is the older run, B the newer
    assert hv.verdict_explanation(expected.jax_runtime, "JAX runtime") in body
    assert hv.verdict_explanation(expected.numpy_runtime, "NumPy runtime") in body
    assert hv.verdict_stats(expected.jax_runtime) in body and hv.verdict_stats(expected.numpy_runtime) in body
    assert "Same setup" in body and "not the same measurement" not in body


def test_different_shapes_warn_and_three_runs_have_no_verdict(store, measured):
    a, _, c = measured
    at = select(history(), [a.id, c.id])
    body = texts(at)
    assert "not the same measurement" in body and "different shapes (10x10 vs 16x16)" in body
    assert "shape 10x10 → 16x16" in body

    at = select(at, [r.id for r in measured])
    assert "3 selected" in texts(at) and "Select exactly two runs" in texts(at)
    assert not any(h.value == "Is B faster than A?" for h in at.subheader)
    phases, speedups = vega_specs(at)
    assert len(phases["layer"][2]["encoding"]["color"]["scale"]["domain"]) == 3
    assert len(speedups["layer"][2]["encoding"]["y"]["scale"]["domain"]) == 3


def kept_pair(db) -> tuple:
    """A (older): NumPy timed once, in its worker; B: as a plain process runs it, and with freed memory
    kept (the TPU host's allocator figures, docs/protocol.md)."""
    once = dataclasses.replace(make_result(numpy_s=14e-3), id="numpy-once-run")
    both = dataclasses.replace(make_result(numpy_s=14.9e-3), id="numpy-both-run", numpy_kept=stats(3e-3),
                               created="2026-01-02T00:00:00+00:00")
    Store(db).import_docs([r.to_dict() for r in (once, both)])
    return once, both


def test_the_table_gives_numpys_plain_figure_and_its_kept_one_beside_it(db):
    once, both = kept_pair(db)
    at = history()
    frame = at.dataframe[0].value
    columns = list(frame.columns)
    assert columns.index("NumPy (freed memory kept)") == columns.index("NumPy runtime (plain process)") + 1
    assert "NumPy runtime" not in columns  # the plain figure says it is one
    table = frame.set_index("ID")
    assert table.loc["numpy-bo", "NumPy runtime (plain process)"] == "14.9 ms"
    assert table.loc["numpy-bo", "NumPy (freed memory kept)"] == "3 ms"
    assert table.loc["numpy-on", "NumPy runtime (plain process)"] == "14 ms"
    assert table.loc["numpy-on", "NumPy (freed memory kept)"] == ""  # timed once: blank
    config = json.loads(at.dataframe[0].proto.columns)  # each NumPy column says what it holds
    assert "fresh plain process" in config["NumPy runtime (plain process)"]["help"]
    assert "freed memory kept" in config["NumPy (freed memory kept)"]["help"]

    at = select(at, [once.id, both.id])
    body = texts(at)
    assert ("NumPy with freed memory kept: A — → B 3 ms; the NumPy runtime verdict compares the figures of NumPy "
            "as a plain process runs it") in body
    assert "A timed NumPy once, in its worker, and B as a plain process runs it" in body


def test_the_numpy_columns_and_the_comparison_in_chinese(db):
    from i18n_support import english_left

    from jaxcompare import i18n

    once, both = kept_pair(db)
    with i18n.using("zh"):  # AppTest formats some widgets in the test's thread (test_i18n_pages)
        at = page("pages/4_History.py", lang="zh")
        assert not at.exception, [e.value for e in at.exception]
        columns = list(at.dataframe[0].value.columns)
        assert {"NumPy 运行时间（普通进程）", "NumPy（保留已释放内存）"} <= set(columns)
        at = select(at, [once.id, both.id])
        assert "保留已释放内存的 NumPy：A — → B 3 ms" in texts(at)
        assert english_left(at) == []


def test_import_a_valid_export_then_a_bad_file(store):
    slow = make_result(jax_s=2e-4)
    fast = dataclasses.replace(make_result(jax_s=1e-4), id="test-fast", created="2026-01-02T00:00:00+00:00")
    at = history()
    at.file_uploader[0].set_value(("gpu_box.json", export_json([slow, fast]).encode(), "application/json")).run()
    assert not at.exception
    assert [s.value for s in at.success] == ["Imported 2 results (0 already present) from gpu_box.json."]
    assert store.count() == 5 and len(at.dataframe[0].value) == 5
    # A run measured on a busy machine (recorded) has no bare speedup: its tile's range and why.
    at.file_uploader[0].set_value(("busy.json", (DATA / "result-v1-third-side.json").read_bytes(),
                                   "application/json")).run()
    table = at.dataframe[0].value.set_index("ID")
    busy = table.loc["95049e84"]
    # A text column, as the times are: "set aside", never the "None" a number column shows for no figure.
    assert busy["Speedup"] == "set aside" and busy["Set aside"] == "0.17x–0.27x · the machine was busy", busy
    assert table.loc[fast.id[:8], "Set aside"] == "" and table.loc[fast.id[:8], "Speedup"] == "10.00x"
    store.delete(["95049e8402034838bca58fed8766c827"])

    at = select(at, [slow.id, fast.id])  # synthetic samples: 2x apart, so the verdict is certain
    assert any(s.value == "B is 2.00x faster than A" for s in at.success)

    at.file_uploader[0].set_value(("again.json", export_json([slow]).encode(), "application/json")).run()
    assert "Imported 0 results (1 already present) from again.json." in [s.value for s in at.success]
    at.file_uploader[0].set_value(("bad.json", b'{"results": [1, 2', "application/json")).run()
    errors = [e.value for e in at.error]
    assert errors == ["bad.json: JSON ends early (truncated file?): Expecting ',' delimiter at line 1 column 18"]
    at.file_uploader[0].set_value(("other.json", b'{"hello": 1}', "application/json")).run()
    assert any("other.json: not a jaxcompare export" in e.value for e in at.error)
    assert store.count() == 5 and not at.exception


def test_delete_asks_first_then_deletes_the_selection(store, measured):
    at = select(history(), [measured[2].id])
    at.button(key="history_delete").click().run()
    assert any("Delete 1 saved result for good?" in w.value for w in at.warning)
    at.button(key="history_cancel").click().run()
    assert store.count() == 3 and not any("for good" in w.value for w in at.warning)

    at.button(key="history_delete").click().run()
    at.button(key="history_confirm").click().run()
    assert [s.value for s in at.success] == ["Deleted 1 result."]
    assert store.count() == 2 and measured[2].id[:8] not in list(at.dataframe[0].value["ID"])
    assert at.session_state["history_table"]["selection"]["rows"] == []
    assert not at.exception


def test_unopenable_database_is_one_clear_error(tmp_path, monkeypatch, db):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("JAXCOMPARE_DB", str(blocker / "results.sqlite3"))
    at = history()
    assert any("results database cannot be opened" in e.value for e in at.error)


def test_a_postgresql_history_never_shows_its_password(db, monkeypatch, pg_url):
    """JAXCOMPARE_DB with a password in the URL: the page names the database with the password hidden,
    also when the server refuses it."""
    from postgres_support import PASSWORD

    from jaxcompare.app import resources

    Store(pg_url).import_docs([dataclasses.replace(make_result(), id=f"{i:032x}").to_dict() for i in range(3)])
    monkeypatch.setenv("JAXCOMPARE_DB", pg_url)
    shown = texts(history())
    assert "3 saved in" in shown and "postgresql://jc:***@127.0.0.1:" in shown and PASSWORD not in shown
    monkeypatch.setenv("JAXCOMPARE_DB", pg_url.replace(PASSWORD, "Wrong-" + PASSWORD[::-1]))
    resources._store_at.clear()
    at = history()
    refused = " ".join(e.value for e in at.error)
    assert "cannot be opened" in refused and "password authentication failed" in refused
    assert PASSWORD[::-1] not in refused + texts(at)


# --- saving from Compare and Size sweep ------------------------------------------------------------
def test_a_compare_run_is_saved_to_history(db):
    at = page("pages/1_Compare.py", case="matmul", shape="small", timing="quick")
    at.button(key="run_compare").click().run()
    at = run_until(at, lambda a: len(a.metric) >= 6)
    result = at.session_state["compare_result"]
    assert [row["id"] for row in Store(db).list()] == [result.id]
    assert any("Saved to history" in c.value for c in at.caption)
    assert "History" in {link.proto.page for link in at.get("page_link")}
    at.run()  # a rerun does not save it twice
    assert Store(db).count() == 1


def test_a_finished_run_is_saved_though_its_page_never_runs_again(tmp_path, monkeypatch):
    # The hosted demo's walk-through: a visitor pressed Run, then went to History (or closed the tab) before
    # the run ended; Compare never ran again to save it, and the finished result was lost. The app's own
    # Runner (not the test session's) saves it as it finishes.
    from jaxcompare.app import resources

    path = tmp_path / "results.sqlite3"
    monkeypatch.setenv("JAXCOMPARE_DB", str(path))
    resources._store_at.clear()
    at = page("pages/1_Compare.py", case="matmul", shape="small", timing="quick")
    at.button(key="run_compare").click().run()
    job = at.session_state["compare_job"]
    at.switch_page("pages/4_History.py").run()  # Compare's script does not run again
    assert resources.get_runner().wait_idle(timeout=120) and job.status == "done", job.status
    assert [row["id"] for row in Store(path).list()] == [job.value.id]
    resources._store_at.clear()


def test_an_unwritable_database_warns_and_keeps_the_result(db, tmp_path, monkeypatch):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("JAXCOMPARE_DB", str(blocker / "results.sqlite3"))
    at = page("pages/1_Compare.py", case="matmul", shape="small", timing="quick")
    at.button(key="run_compare").click().run()
    at = run_until(at, lambda a: len(a.metric) >= 6)
    warnings = [w.value for w in at.warning if "not saved to history" in w.value]
    assert len(warnings) == 1 and "cannot create the folder" in warnings[0]
    assert at.session_state["compare_result"].case == "matmul" and len(at.get("vega_lite_chart")) == 3
    assert not at.exception


def test_every_size_sweep_point_is_saved(db):
    at = page("pages/2_Size_sweep.py", case="matmul", steps="3", largest="12x12")
    at.button(key="run_sweep").click().run()
    at = run_until(at, lambda a: a.session_state["sweep_run"].finished, timeout=120)
    run = at.session_state["sweep_run"]
    assert len(run.results) == 3 and not run.failures
    assert {row["id"] for row in Store(db).list()} == {r.id for r in run.results}
    assert any("All 3 measurements saved to history" in c.value for c in at.caption)


def test_the_compare_pages_csv_is_historys_export_of_the_same_result(db, monkeypatch):
    """One CSV format: the Compare page's download and History's export of one result are the same file."""
    from streamlit.delta_generator import DeltaGenerator

    from jaxcompare.history.exchange import export_csv

    csv_files: dict[str, str] = {}
    original = DeltaGenerator.download_button

    def recording(self, label, data, *args, **kwargs):
        if "(CSV)" in label:
            csv_files[label] = data() if callable(data) else data
        return original(self, label, data, *args, **kwargs)

    monkeypatch.setattr(DeltaGenerator, "download_button", recording)
    result = make_result()
    Store(db).save(result)
    at = page("pages/1_Compare.py")
    at.session_state["compare_result"] = result
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    select(history(), [result.id])
    assert csv_files["Result (CSV)"] == csv_files["Selection (CSV)"] == export_csv([result])


def test_each_selected_run_shows_its_roofline_limit_or_not_recorded(store, measured):
    a = measured[0]
    old = dataclasses.replace(a, id="0ld" + a.id[3:], created="2026-01-01T00:00:00+00:00", roofline=None)
    store.save(old)  # a result saved before the roofline was recorded
    at = select(history(), [a.id, old.id])
    body = texts(at)
    # A is the older (roofline-less) run, B the measured one: matmul 10x10 is mostly per-call overhead.
    lines = [t for t in body.splitlines() if " · roofline: " in t]
    assert len(lines) == 2 and lines[0].startswith("**A · ") and lines[0].endswith("** · roofline: not recorded")
    line = lines[1]
    assert "JAX overhead-bound" in line and "of its bound" in line and "%" in line


def test_the_saved_ports_of_one_race_reopen_in_compare_as_the_race(db, runner, measured):
    # Two ports of cumsum measured at one shape: History offers them back as one race, and Compare
    # shows the race (its verdict, a line a port) as after a run, with the sidebar set to both ports.
    ports = [runner.run(Spec("cumsum", (300,), timing=TimingConfig.quick(), port=port)) for port in ("jnp", "scan")]
    store = Store(db)
    for result in (*ports, measured[0]):
        store.save(result)
    at = select(history(), [r.id for r in ports])
    [link] = [link.proto for link in at.get("page_link") if link.proto.label == "Open the race in Compare"]
    query = dict(urllib.parse.parse_qsl(link.query_string))
    assert query["result"] == ",".join(r.id for r in ports)
    mixed = select(history(), [ports[0].id, measured[0].id])  # two cases: no race to reopen
    assert "Open the race in Compare" not in {link.proto.label for link in mixed.get("page_link")}

    compare = page("pages/1_Compare.py", result=query["result"])
    assert not compare.exception, [e.value for e in compare.exception]
    race = compare.session_state["compare_ports"]
    assert race.finished and [(r.name, r.result.id) for r in race.runs] == [(r.port, r.id) for r in ports]
    assert "compare_result" not in compare.session_state
    assert compare.multiselect(key="ports").value == ["jnp", "scan"]
    assert any("A saved run" in i.value for i in compare.info)  # said saved, not saved again
    text = [m.value.replace("\\", "") for m in compare.markdown]  # shown as written: Markdown's escapes
    assert any("- jnp: JAX " in t and "\n- scan: JAX " in t for t in text)
    # Ids that are not one race (a port twice) open nothing and say so.
    twice = page("pages/1_Compare.py", result=f"{ports[0].id},{ports[0].id}")
    assert "compare_ports" not in twice.session_state and "No saved result with the id" in " ".join(
        e.value for e in twice.error)
