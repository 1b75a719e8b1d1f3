"""Results a stranger wrote: non-finite numbers, names that carry Markdown or spreadsheet formulas,
rows put straight into the database. Imports refuse them with one line; whatever is already
stored still lists, loads and exports; CSV cells open as text."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import math
import os
import sqlite3

import pytest
from _results import make_result, with_jax

from jaxcompare import BadInput
from jaxcompare.cli import history as cli_history
from jaxcompare.history import store as store_module
from jaxcompare.history.exchange import export_csv, redact
from jaxcompare.history.store import Store
from jaxcompare.model.formatting import dumps
from jaxcompare.model.profile import Profile

LINK = "x`[click me](https://evil.example/)`"
IMAGE = "![pic](https://evil.example/pixel.png)"


def doc(**changes) -> dict:
    result = make_result()
    data = json.loads(dumps(result.to_dict()))
    for path, value in changes.items():
        target = data
        *parents, last = path.split("__")
        for key in parents:
            if key == "jax_cpu" and data["jax_cpu"] is None:
                data["jax_cpu"] = json.loads(json.dumps(data["jax"]))  # a third side to forge
            target = target.setdefault(key, {})
        target[last] = value
    return data


@pytest.mark.parametrize("text, field", [
    ('"median_s": Infinity', "runtime: median_s"),
    ('"median_s": NaN', "runtime: median_s"),
    ('"median_s": -Infinity', "runtime: median_s"),
])
def test_non_finite_numbers_are_refused_naming_the_field(tmp_path, text, field):
    store = Store(tmp_path / "db.sqlite3")
    good = json.dumps(doc())
    runtime = json.dumps(doc()["jax"]["runtime"])
    bad = good.replace(runtime, runtime.replace(f'"median_s": {doc()["jax"]["runtime"]["median_s"]!r}', text))
    assert bad != good
    with pytest.raises(BadInput, match=f"{field} must be a finite number") as info:
        store.import_json(bad, "forged.json")
    assert "\n" not in str(info.value) and "nothing was imported" in str(info.value)
    assert store.count() == 0
    assert store.import_json(good, "real.json") == (1, 0)  # counts say what happened


@pytest.mark.parametrize("path, value, field", [
    ("case", LINK, "case"),
    ("jax__device_kind", IMAGE, "device_kind"),
    ("jax_cpu__device", IMAGE, "jax_cpu.device"),
    ("env__versions__jax", "0.4.35 [x](https://evil.example/)", "env.versions.jax"),
    ("backend", "<img src=x>", "backend"),
])
def test_names_that_carry_markdown_are_refused_at_import(tmp_path, path, value, field):
    data = doc(**{path: value})
    if path == "case":
        data["spec"]["case"] = value
    with pytest.raises(BadInput, match=f"{field} .* is not a") as info:
        Store(tmp_path / "db.sqlite3").import_docs(data, "forged.json")
    assert "\n" not in str(info.value)


def forged(result_id: str, case: str, *, device: str, device_kind: str, **fields):
    result = with_jax(make_result(), device=device, device_kind=device_kind)
    return dataclasses.replace(result, id=result_id, spec=dataclasses.replace(result.spec, case=case), **fields)


def insert_raw(path, result_id: str, doc_text: str, **summary) -> None:
    """A row written straight into the database, past every check an import makes."""
    row = {"id": result_id, "created": "2026-01-02T00:00:00+00:00", "case": "matmul", "shape": "10x10",
           "precision": "x32", "dtype": "float32", "backend": "cpu", "device": "cpu:0", "device_kind": "cpu",
           "host": "", "jax_version": "", "speedup": None, "numpy_median_s": 1e-3, "jax_median_s": 2e-4,
           "saved": "2026-01-02T00:00:00+00:00", "doc": doc_text, **summary}
    with sqlite3.connect(path) as conn:
        conn.execute(f"INSERT INTO results ({', '.join(chr(34) + k + chr(34) for k in row)}) "
                     f"VALUES ({', '.join('?' * len(row))})", list(row.values()))


def test_a_database_holding_bad_rows_still_lists_loads_and_exports(tmp_path, capsys):
    db = tmp_path / "db.sqlite3"
    store = Store(db)
    store.save(make_result())
    null_median = doc()
    null_median["id"] = "null-median"
    null_median["jax"]["runtime"]["median_s"] = None  # what an Infinity became in older versions
    insert_raw(db, "null-median", json.dumps(null_median))
    insert_raw(db, "not-json", "{this is not json")
    assert len(store.list()) == 3
    results, unreadable = store.load_readable([r["id"] for r in store.list()])
    assert [r.id for r in results] == [make_result().id] and sorted(unreadable) == ["not-json", "null-median"]
    with pytest.raises(BadInput, match="null-median is unreadable"):
        store.load(["null-median"])
    for name in ("all.json", "all.csv"):
        assert store.export_report(tmp_path / name) == (1, ["not-json", "null-median"])
    assert json.loads((tmp_path / "all.json").read_text())["count"] == 1
    assert cli_history.handle(cli_history_args("export", str(tmp_path / "cli.csv"), "--db", str(db))) == 0
    out = capsys.readouterr()
    assert "exported 1 result to" in out.out and "left out 2 saved result(s)" in out.err


def cli_history_args(*argv: str):
    import argparse

    parser = argparse.ArgumentParser()
    cli_history.add_commands(parser.add_subparsers(dest="command"))
    return parser.parse_args(argv)


def test_csv_cells_that_a_spreadsheet_would_run_open_as_text():
    result = forged("=HYPERLINK(\"https://evil.example/\",\"x\")", case="+cmd|' /C calc'!A0",
                    device_kind="@SUM(1+1)*cmd|' /C calc'!A0", device="\t=1+1", backend="-2+3")
    text = export_csv([result, make_result()])
    rows = list(csv.DictReader(io.StringIO(text)))
    for column in ("id", "case", "device_kind", "device", "backend"):
        assert rows[0][column].startswith("'"), column
    assert rows[0]["case"] == "'+cmd|' /C calc'!A0"
    # Numbers stay numbers, negative ones too (a spreadsheet reads them as numbers, not formulas).
    assert float(rows[1]["numpy_median_s"]) > 0 and not rows[1]["case"].startswith("'")
    negative = with_jax(make_result(), agreement={**make_result().jax.agreement, "max_abs_err": -1e-7})
    assert list(csv.DictReader(io.StringIO(export_csv([negative]))))[0]["max_abs_err"] == "-1e-07"


def test_visitors_see_no_trace_path():
    result = dataclasses.replace(make_result(), profile=Profile(trace_file="/srv/db/traces/abc/host.trace.json.gz"))
    assert redact(result).profile.trace_file is None
    assert "/srv/db" not in dumps(redact(result).to_dict())


def test_a_read_only_database_says_so(tmp_path, monkeypatch):
    real = os.statvfs

    class ReadOnly:
        def __init__(self, path):
            self.f_flag = real(path).f_flag | os.ST_RDONLY

    # As root nothing is read-only to os.access, and no file system here is mounted read-only:
    # the kernel's answer is stood in for, and SQLite's own failure is real (/proc takes no files).
    monkeypatch.setattr(store_module.os, "statvfs", ReadOnly)
    with pytest.raises(BadInput, match="is on a read-only file system; set JAXCOMPARE_DB") as info:
        Store("/proc/self/results.sqlite3")
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("path, field", [("numpy__kept_memory", "numpy.kept_memory"),
                                         ("jax__back_to_back", "jax.back_to_back")])
def test_figures_beside_the_phases_are_checked_as_the_phases_are(tmp_path, path, field):
    # NumPy with freed memory kept and JAX back to back are optional, and validated where present.
    forged = dict(doc()["jax"]["runtime"], median_s=math.nan)
    store = Store(tmp_path / "db.sqlite3")
    with pytest.raises(BadInput, match=f"{field}: median_s must be a finite number"):
        store.import_json(json.dumps(doc(**{path: forged})), "forged.json")
    assert store.count() == 0


def test_an_imported_results_words_show_as_written_when_reopened(tmp_path):
    """An operator imported a result whose case_info title and notes held Markdown: reopened in Compare, the
    title rendered bold with a live link and the notes fetched a tracking image from evil.example. Its title
    and notes are now shown as written, and a backtick in a function's name cannot end its code span."""
    from apptest_support import page

    from jaxcompare.model.formatting import code_text, markdown_literal

    evil = "**bold** [link](http://evil.example) ![i](http://evil.example/i.png)"
    base = make_result()
    result = dataclasses.replace(base, id="c0c0c0c0-md", notes=("[note](http://evil.example) ![n](x.png)",),
                                 case_info=base.case_info | {"title": evil, "jax_name": "f` ![j](http://evil.example)"})
    Store().import_docs([result.to_dict()], "forged.json")  # the tests' database (JAXCOMPARE_DB), as the app's
    at = page("pages/1_Compare.py", result=result.id)
    assert not at.exception and at.session_state["compare_result"].id == result.id
    assert [h.value for h in at.subheader][0] == markdown_literal(evil)
    shown = " ".join(m.value for m in [*at.markdown, *at.caption])
    assert code_text("f` ![j](http://evil.example)") in shown and "f` ![j]" not in shown
    assert markdown_literal(result.notes[0]) in shown and "![n](x.png)" not in shown
    with pytest.raises(BadInput, match="notes must be a list of strings"):  # a string was read as its characters
        Store(tmp_path / "db.sqlite3").import_docs([result.to_dict() | {"notes": "one note"}], "forged.json")
