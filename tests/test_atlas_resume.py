"""``jaxcompare atlas`` resumes: real Runner, real JAX on the CPU, the small presets, quick timing. A run
stopped partway (``--limit``, as a lost device or Ctrl-C stops it) and the same command again give the
planned cells, none measured twice; a third run measures nothing."""

from __future__ import annotations

from jaxcompare.analysis import atlas as am
from jaxcompare.cli import main
from jaxcompare.history.store import Store

# Two cheap cases at their small presets (10x10 column sums, 1000-element elementwise), both precisions.
ARGS = ["atlas", "--cases", "reduction", "elementwise", "--sizes", "small", "--precisions", "x32", "x64",
        "--devices", "cpu", "--timing", "quick"]


def test_an_interrupted_atlas_resumes_to_the_planned_cells_with_none_measured_twice(tmp_path, capsys):
    out, db = tmp_path / "atlas.json", tmp_path / "results.sqlite3"
    where = ["--out", str(out), "--db", str(db)]
    assert main([*ARGS, *where, "--limit", "3"]) == 0
    first = am.load(out)
    assert len(first.cells) == 3
    assert "cells left: 1; run the same command to continue" in capsys.readouterr().err

    assert main([*ARGS, *where]) == 0
    err = capsys.readouterr().err
    assert "1 of 4 cells to measure (3 already there)" in err and "[4/4] elementwise 1000 x64 cpu" in err
    second = am.load(out)
    planned = {am.CellKey(c, "small", p, "cpu") for c in ("reduction", "elementwise") for p in ("x32", "x64")}
    assert second.done() == planned
    # The three cells of the first run are the same measurements, not measured again.
    assert {k: c.result.id for k, c in first.cells.items()} == {
        k: c.result.id for k, c in second.cells.items() if k in first.cells}
    ids = [c.result.id for c in second.cells.values()]
    assert sorted(ids) == sorted(Store(db).all_ids())  # each cell saved in History once, as it finished

    assert main([*ARGS, *where]) == 0
    assert "0 of 4 cells to measure (4 already there)" in capsys.readouterr().err
    assert am.load(out).to_dict() == second.to_dict() and len(Store(db).all_ids()) == 4
