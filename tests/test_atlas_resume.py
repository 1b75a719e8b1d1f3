"""``jaxcompare atlas`` resumes: real Runner, real JAX on the CPU, the small presets, quick timing. A run
stopped partway (``--limit``, as a lost device stops it; Ctrl-C, given to a real ``python -m jaxcompare atlas``)
and the same command again give the planned cells, none measured twice; a third run measures nothing."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from support import ROOT, cli

from jaxcompare import get_case
from jaxcompare.analysis import atlas as am
from jaxcompare.analysis.atlas_text import cell_detail, cell_label, counts_line, partial_line
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
    # The file keeps the whole plan, so it reads as partial until the last cell is in.
    assert len(first.plan()) == 4 and partial_line(first).startswith("Partial: it holds 3 of the 4 cells planned.")

    assert main([*ARGS, *where]) == 0
    err = capsys.readouterr().err
    assert "1 of 4 cells to measure (3 already there)" in err and "[4/4] elementwise 1000 x64 cpu" in err
    second = am.load(out)
    planned = {am.CellKey(c, "small", p, "cpu") for c in ("reduction", "elementwise") for p in ("x32", "x64")}
    assert second.done() == planned and partial_line(second) is None
    # The three cells of the first run are the same measurements, not measured again.
    assert {k: c.result.id for k, c in first.cells.items()} == {
        k: c.result.id for k, c in second.cells.items() if k in first.cells}
    ids = [c.result.id for c in second.cells.values()]
    assert sorted(ids) == sorted(Store(db).all_ids())  # each cell saved in History once, as it finished

    assert main([*ARGS, *where]) == 0
    assert "0 of 4 cells to measure (4 already there)" in capsys.readouterr().err
    assert am.load(out).to_dict() == second.to_dict() and len(Store(db).all_ids()) == 4


# Ctrl-C as a user gives it: `python -m jaxcompare atlas` in a process group of its own, as a terminal's
# foreground job. Two cheap cases at two sizes, float32: four cells, so each stop finds work left.
CTRL_C_ARGS = ["atlas", "--cases", "matmul", "reduction", "--sizes", "small", "middle", "--precisions", "x32",
               "--devices", "cpu", "--timing", "quick", "--no-save"]
# A terminal starts its foreground job with Ctrl-C unblocked and at its default; a child inherits an ignored
# or blocked SIGINT from this test process (a library another test ran here may have left one: the CLI then
# ran all four cells and exited 0, once in a clean clone), so the child restores both before the CLI starts.
AS_A_TERMINAL_STARTS_IT = (
    "import runpy, signal, sys; signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT}); "
    "signal.signal(signal.SIGINT, signal.default_int_handler); sys.argv[0] = 'jaxcompare'; "
    "runpy.run_module('jaxcompare', run_name='__main__', alter_sys=True)")
PROGRESS = re.compile(r"^\[(\d+)/4\] (\S+) (\S+) (x32) (cpu): ")


def cell_of(line: str) -> am.CellKey | None:
    """The cell a progress line names ('[2/4] matmul 100x100 x32 cpu: ...')."""
    found = PROGRESS.match(line)
    if found is None:
        return None
    case, shape = found[2], tuple(int(n) for n in found[3].split("x"))
    size = next(s for s in am.SIZES if am.size_shape(get_case(case), s) == shape)
    return am.CellKey(case, size, "x32", "cpu")


def interrupted(out: Path, how: str) -> tuple[int, str, list[am.CellKey], float]:
    """Run the atlas until its first progress line, then Ctrl-C it: ``how`` "terminal" signals the whole
    group (a terminal's Ctrl-C), "timeout" the CLI and then its group (as `timeout -s INT` does, so the CLI
    gets it twice). Returns its exit status, its stderr (to the end: every worker has let go of it too), the
    cells its progress lines named, and how many times longer reaching that first line took than stopping."""
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-c", AS_A_TERMINAL_STARTS_IT, *CTRL_C_ARGS, "--out", str(out)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env={**os.environ, "PYTHONPATH": path})
    lines = []
    for line in proc.stderr:  # reading its lines as they come: no sleep
        lines.append(line)
        if PROGRESS.match(line):
            break
    else:
        raise AssertionError("the atlas ended before its first cell:\n" + "".join(lines))
    signalled = time.monotonic()
    if how == "timeout":
        proc.send_signal(signal.SIGINT)
    os.killpg(proc.pid, signal.SIGINT)
    lines += proc.stderr.readlines()  # to its end: the CLI and every worker have gone
    gone = time.monotonic()
    code = proc.wait()
    err = "".join(lines)
    return code, err, [c for c in map(cell_of, lines) if c is not None], (signalled - started) / (gone - signalled)


def interrupted_at_once(out: Path, how: str) -> tuple[int, str, list[am.CellKey], float]:
    """interrupted(), and where its stop was not at once, again from the same file: a stall of the whole
    machine lands on one stop (once in a clean clone's parallel part, 1.3x where 16-60x is usual beside a
    browser module), a CLI that waits for its cell or its workers on both."""
    before = out.read_bytes() if out.exists() else None
    found = interrupted(out, how)
    if found[3] > 3:
        return found
    if before is None:
        out.unlink(missing_ok=True)
    else:
        out.write_bytes(before)
    return interrupted(out, how)


def test_ctrl_c_stops_the_atlas_at_once_and_the_same_command_finishes_it_with_no_cell_measured_twice(tmp_path):
    out = tmp_path / "atlas.json"
    code, err, named, ratio = interrupted_at_once(out, "terminal")
    assert code == 130 and "jaxcompare: interrupted" in err, err
    assert "Traceback" not in err and "Error" not in err, err  # nor the worker's: it shares this stderr
    # Stopping (workers included) takes a fraction of what starting a worker and measuring one cell took.
    assert ratio > 3, (ratio, err)
    first = am.load(out)
    assert set(named) <= first.done() and 1 <= len(first.cells) < 4, (named, first.done())
    assert f"cells the atlas keeps: {len(first.cells)}; run the same command to continue" in err

    code, err, named, ratio = interrupted_at_once(out, "timeout")  # Ctrl-C twice over, as the TPU runs were stopped
    assert code == 130 and "Traceback" not in err and "Error" not in err, err
    assert ratio > 3, (ratio, err)
    second = am.load(out)
    assert not set(named) & first.done(), named  # it went on from the cells the file held
    assert first.done() < second.done()

    proc = cli(*CTRL_C_ARGS, "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    left = 4 - len(second.cells)
    assert f"{left} of 4 cells to measure ({len(second.cells)} already there)" in proc.stderr
    named = [c for c in map(cell_of, proc.stderr.splitlines()) if c is not None]
    planned = {am.CellKey(c, s, "x32", "cpu") for c in ("matmul", "reduction") for s in ("small", "middle")}
    assert set(named) == planned - second.done() and len(named) == left
    final = am.load(out)
    assert len(final.cells) == 4 and "Traceback" not in proc.stderr
    for key, kept in second.cells.items():  # each cell measured once: the earlier runs' results, as they were
        assert (final.cells[key].result.id, final.cells[key].result.created) == (kept.result.id, kept.result.created)
    assert len({c.result.id for c in final.cells.values()}) == 4


def test_a_cases_files_atlas_marks_a_cell_whose_function_fails_and_measures_the_rest(tmp_path):
    # A user's cases file: "breaks" raises in its JAX function at its large preset only (as a TPU's
    # fftconvolve ran out of device memory at 10^6), "fine" never does.
    cases = tmp_path / "mine.py"
    cases.write_text(
        "import jax.numpy as jnp\n"
        "from jaxcompare import Case\n"
        "def jax_breaks(x):\n"
        "    if x.size > 100:\n"
        "        raise ValueError('no room for this many')\n"
        "    return jnp.cumsum(x)\n"
        "def inputs(shape, dtype, rng):\n"
        "    return (rng.standard_normal(shape).astype(dtype),)\n"
        "CASES = [Case('breaks', lambda x: x.cumsum(), jax_breaks, inputs, small_shape=(10,), large_shape=(1000,)),\n"
        "         Case('fine', lambda x: x * 2, lambda x: x * 2, inputs, small_shape=(10,), large_shape=(1000,))]\n")
    out = tmp_path / "atlas.json"
    proc = cli("atlas", "--cases-file", str(cases), "--sizes", "small", "large", "--precisions", "x32",
               "--devices", "cpu", "--out", str(out), "--no-save")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    atlas = am.load(out)
    assert sorted(atlas.cells) == sorted(f"{c}/{s}/x32/cpu" for c in ("breaks", "fine") for s in ("small", "large"))
    broken = atlas.cells["breaks/large/x32/cpu"]
    assert broken.status == am.UNMEASURABLE and "no room for this many" in broken.reason
    assert all(atlas.cells[k].status == am.MEASURED for k in atlas.cells if k != "breaks/large/x32/cpu")
    # The same command again measures nothing: the marked cell is done, not failed.
    again = cli("atlas", "--cases-file", str(cases), "--sizes", "small", "large", "--precisions", "x32",
                "--devices", "cpu", "--out", str(out), "--no-save", "--limit", "1")
    assert again.returncode == 0 and "0 of 4 cells to measure" in again.stderr, again.stderr[-2000:]


def test_a_cell_past_its_deadline_is_marked_and_a_longer_deadline_measures_it_again(tmp_path, capsys):
    """A cell whose work outlasts the deadline (a float64 decomposition compiling for minutes on a TPU) is
    one line, so the atlas can end; the same command leaves it, a longer --timeout measures it."""
    cases = tmp_path / "slow.py"
    cases.write_text(
        "import time\n"
        "from jaxcompare import Case\n"
        "TRACED = []\n"
        "def traced_slowly(x):\n"
        "    if not TRACED:  # a process's first trace: the job's work, longer than a 1 s deadline\n"
        "        TRACED.append(time.sleep(3))\n"
        "    return x * 2\n"
        "def inputs(shape, dtype, rng):\n"
        "    return (rng.standard_normal(shape).astype(dtype),)\n"
        "CASES = [Case('slow', lambda x: x * 2, traced_slowly, inputs, small_shape=(10,), large_shape=(100,))]\n")
    out = tmp_path / "atlas.json"
    args = ["atlas", "--cases-file", str(cases), "--sizes", "small", "--precisions", "x32", "--devices", "cpu",
            "--timing", "quick", "--out", str(out), "--no-save"]
    assert main([*args, "--timeout", "1"]) == 0
    cell = am.load(out).cells["slow/small/x32/cpu"]
    assert cell.status == am.UNMEASURABLE and cell.deadline_s == 1.0
    assert cell.reason == "did not finish within its 1 s deadline; a longer --timeout measures it again"
    # It runs here, only slowly: the heatmap says so, not "cannot run", and so does the count beside it.
    slow = am.view(cell)
    assert cell_label(slow) == "over 1 s" and cell_detail(slow) == cell.reason
    assert counts_line(am.load(out)) == "1 cells: 0 trusted, 0 set aside, 0 cannot run here. 1 did not finish " \
        "within their deadline."
    assert main([*args, "--timeout", "1"]) == 0 and "0 of 1 cells to measure" in capsys.readouterr().err
    assert main([*args, "--timeout", "120"]) == 0 and "1 of 1 cells to measure" in capsys.readouterr().err
    cell = am.load(out).cells["slow/small/x32/cpu"]
    assert cell.status == am.MEASURED and cell.deadline_s is None and cell.result.spec.case == "slow"


def test_the_time_left_counts_the_deadline_for_a_case_that_outlasted_it_in_the_file(tmp_path, capsys):
    """A resumed atlas whose file holds a cell past its deadline counts that deadline for the case's other
    cells on that device and precision (a TPU's float64 cumsum: "about 25 s" said before 240 s a cell).
    Here the other cells then fail at once (the function raises), which ends them in a second."""
    cases = tmp_path / "mine.py"
    cases.write_text(
        "from jaxcompare import Case\n"
        "def jax_breaks(x):\n"
        "    raise ValueError('no room for this many')\n"
        "def inputs(shape, dtype, rng):\n"
        "    return (rng.standard_normal(shape).astype(dtype),)\n"
        "CASES = [Case('breaks', lambda x: x * 2, jax_breaks, inputs, small_shape=(10,), large_shape=(1000,))]\n")
    out = tmp_path / "atlas.json"
    atlas = am.new_atlas("quick")
    atlas.add(am.Cell(am.CellKey("breaks", "small", "x32", "cpu"), (10,), am.UNMEASURABLE, deadline_s=600.0,
                      reason="did not finish within its 600 s deadline; a longer --timeout measures it again"))
    am.save(atlas, out)
    assert main(["atlas", "--cases-file", str(cases), "--precisions", "x32", "--devices", "cpu", "--out", str(out),
                 "--no-save", "--timeout", "600"]) == 0
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].endswith("2 of 3 cells to measure (1 already there), about 20 min"), lines
    assert lines[1].startswith("[2/3] breaks") and "no room for this many" in lines[1], lines
    assert lines[1].endswith("about 10 min left"), lines


def test_devices_not_here_are_refused_before_measuring(tmp_path, capsys):
    """--devices gpu on a machine with none: one line, exit 2, nothing written (it had written a "cannot run"
    cell per case and shape, a worker start each)."""
    out = tmp_path / "atlas.json"
    assert main(["atlas", "--cases", "matmul", "--devices", "cpu", "gpu", "--out", str(out), "--no-save"]) == 2
    assert capsys.readouterr().err.strip() == "jaxcompare: error: no GPU device here; present: cpu (1)"
    assert not out.exists()
