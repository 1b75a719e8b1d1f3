"""The CLI as a user runs it: a subprocess, stdout JSON, exit status 2 for bad input."""

from __future__ import annotations

import json
import logging
import re
import textwrap
from pathlib import Path

import pytest
from support import cli

from jaxcompare.cli import main
from jaxcompare.history.store import Store

pytestmark = pytest.mark.slow  # a minute of CLI processes in all: collected first, so workers end together

STATS_FIELDS = {"median_s", "min_s", "mean_s", "std_s", "iqr_s", "n", "loops", "samples_s", "stable"}


def _assert_stats(obj: dict, where: str) -> None:
    missing = STATS_FIELDS - set(obj)
    assert not missing, f"{where} lacks {missing}"
    assert obj["n"] == len(obj["samples_s"]) >= 1, where
    assert obj["min_s"] <= obj["median_s"], where
    assert isinstance(obj["stable"], bool), where


def test_list_shows_the_catalog():
    proc = cli("list")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert len(lines) >= 24
    assert any(line.startswith("centered_gram") for line in lines)


def test_list_json():
    proc = cli("list", "--json", "-")
    assert proc.returncode == 0
    names = {c["name"] for c in json.loads(proc.stdout)}
    assert {"centered_gram", "svd", "cdist"} <= names


@pytest.fixture(scope="module")
def run_json():
    proc = cli("run", "--case", "centered_gram", "--shape", "64x64", "--precision", "x64",
               "--quick", "--json", "-")
    assert proc.returncode == 0, proc.stderr
    return proc


def test_run_json_is_one_document_with_documented_fields(run_json):
    doc = json.loads(run_json.stdout)  # fails if anything else was printed on stdout
    assert doc["case"] == "centered_gram" and doc["shape"] == [64, 64]
    assert doc["precision"] == "x64" and doc["dtype"] == "float64"
    assert doc["backend"] == "cpu" and doc["jax"]["device"]
    _assert_stats(doc["numpy"]["runtime"], "numpy.runtime")
    for phase in ("transfer", "first_call", "runtime", "dispatch", "fetch"):
        _assert_stats(doc["jax"][phase], f"jax.{phase}")
    for phase in ("trace", "lower", "compile"):
        _assert_stats(doc["jax"]["compile"][phase], f"jax.compile.{phase}")
    assert doc["speedup"] == pytest.approx(
        doc["numpy"]["runtime"]["median_s"] / doc["jax"]["runtime"]["median_s"])
    assert doc["break_even_calls"] is None or doc["break_even_calls"] > 0
    fewest = min(doc["numpy"]["runtime"]["n"], doc["jax"]["runtime"]["n"])
    if fewest < 6:  # quick often stops at 3 samples a side: too few for a 95% range
        assert doc["speedup_range"] == [None, None]
    else:
        assert doc["speedup_range"][0] <= doc["speedup"] <= doc["speedup_range"][1]
    assert {"ok", "max_abs_err", "max_rel_err", "rtol", "atol"} <= set(doc["jax"]["agreement"])
    assert doc["jax"]["agreement"]["ok"] is True
    assert doc["env"]["versions"]["jax"] and doc["env"]["jax"]["x64_enabled"] is True
    assert "measuring" in run_json.stderr  # progress goes to stderr, not stdout
    # Before it runs, about how long it will take (the runner's estimate, as the app's Run button says).
    assert re.search(r"measuring \w+ at \S+ \(x64\), about [\d.]+ (s|min) \.\.\.", run_json.stderr), run_json.stderr
    assert doc["profile"] is None  # only with --profile


def test_run_profile_writes_a_trace_and_a_bad_folder_is_one_line(tmp_path):
    out = tmp_path / "result.json"
    proc = cli("run", "--case", "matmul", "--shape", "128x128", "--quick", "--profile", str(tmp_path / "traces"),
               "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    profile = doc["profile"]
    assert Path(profile["trace_file"]).is_file()
    assert Path(profile["trace_file"]).is_relative_to(tmp_path / "traces" / doc["id"])
    assert profile["ops"] and 0 < profile["device_busy_s"] <= profile["wall_s"]
    assert "XLA op" in proc.stdout and profile["trace_file"] in proc.stdout and "ui.perfetto.dev" in proc.stdout
    blocker = tmp_path / "file.txt"
    blocker.write_text("")
    proc = cli("run", "--case", "matmul", "--shape", "16x16", "--quick", "--profile", str(blocker / "traces"))
    assert proc.returncode == 0, proc.stderr  # the comparison still stands
    assert "speedup" in proc.stdout
    [line] = [line for line in proc.stdout.splitlines() if "profile:" in line]
    assert "cannot write the trace" in line and "Traceback" not in proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def table_run():
    """A plain `run` at the default matmul precision, as a table on stdout."""
    return cli("run", "--case", "matmul", "--shape", "32x32", "--quick")


def test_run_prints_a_table(table_run):
    proc = table_run
    assert proc.returncode == 0, proc.stderr
    for words in ("NumPy runtime", "JAX runtime (blocked)", "Compile: XLA compile", "speedup",
                  "break-even", "agreement: OK", "quick timing"):
        assert words in proc.stdout


def test_run_at_a_chosen_matmul_precision_records_it_and_says_so(tmp_path, table_run):
    out = tmp_path / "r.json"
    proc = cli("run", "--case", "matmul", "--shape", "8x8", "--quick", "--matmul-precision", "highest",
               "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    assert doc["spec"]["matmul_precision"] == doc["jax"]["protocol"]["matmul_precision"] == "highest"
    assert "matmul precision: highest (a TPU: six bfloat16 passes; an NVIDIA GPU: float32)" in proc.stdout
    assert table_run.returncode == 0 and "matmul precision" not in table_run.stdout  # the default: not said


def test_run_and_sweep_parse_the_matmul_precision():
    from jaxcompare.cli import _base_spec, build_parser

    for command in ("run", "sweep"):
        args = build_parser().parse_args([command, "--case", "matmul", "--matmul-precision", "high"])
        assert _base_spec(args, (8, 8)).matmul_precision == "high"
        default = build_parser().parse_args([command, "--case", "matmul"])
        assert _base_spec(default, (8, 8)).matmul_precision == "default"


@pytest.mark.serial  # beside two test processes a burst stretched quick's 5 ms samples to 28 ms
def test_thorough_timing_samples_the_speedup_phases_longer():
    # Each sample's length is calibrated to its preset's target (50 ms against 5 ms); a burst of
    # load after the calibration stretches one run's samples and not the other's.
    proc = cli("run", "--case", "elementwise", "--shape", "1000", "--timing", "thorough", "--json", "-")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    # The readable table and checklist moved to stderr, as the docs say, not away.
    assert "NumPy runtime" in proc.stderr and "credibility checklist" in proc.stderr, proc.stderr
    assert doc["spec"]["timing"]["runtime_rel_ci"] == 0.01
    quick = json.loads(cli("run", "--case", "elementwise", "--shape", "1000", "--timing", "quick",
                           "--json", "-").stdout)
    # At least thorough's 10 samples on both sides, each sample far longer than quick's (a 50 ms
    # target against 5 ms): compared with each other, never with a wall-clock bound.
    for side in ("numpy", "jax"):
        stats, fast = doc[side]["runtime"], quick[side]["runtime"]
        assert stats["n"] >= 10, side
        assert stats["median_s"] * stats["loops"] > 3 * fast["median_s"] * fast["loops"], side
    low, high = doc["speedup_range"]
    assert low <= doc["speedup"] <= high


def test_sweep_reports_each_size_and_a_verdict(tmp_path):
    db = tmp_path / "h.sqlite3"
    proc = cli("sweep", "--case", "matmul", "--sizes", "8", "32", "--quick", "--json", "-", "--save", "--db", str(db))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert [r["shape"] for r in doc["results"]] == [[8, 8], [32, 32]]
    # Each size saved as measured, said once after the table (a line a size had come between its rows).
    assert f"saved 2 results to {db}" in proc.stderr and proc.stderr.count("saved ") == 1, proc.stderr
    assert {r["id"] for r in doc["results"]} == {r["id"] for r in Store(str(db)).list()}
    # The verdict, from trusted sizes only; each point says whether it is trusted, and if not why.
    assert any(w in proc.stderr for w in ("crossover", "starts to win", "No size could be trusted", " is faster ")), \
        proc.stderr
    for point in doc["results"]:
        assert isinstance(point["trusted"], bool) and (point["set_aside"] is None) == point["trusted"]
        if not point["trusted"]:
            assert "[set aside: " in proc.stderr


def _bad_inputs(tmp_path) -> list[tuple[list[str], str]]:
    no_cases = tmp_path / "empty.py"
    no_cases.write_text("X = 1\n")
    syntax = tmp_path / "syntax.py"
    syntax.write_text("def (:\n")
    garbage = tmp_path / "garbage.json"
    garbage.write_text("hello\n")
    return [
        (["run", "--case", "no_such_case"], "unknown case"),
        (["run", "--case", "matmul", "--shape", "10x-5"], "positive"),
        (["run", "--case", "matmul", "--shape", "-5x-5"], "positive"),  # not "expected one argument"
        (["run", "--case", "matmul", "--shape", "tenxten"], "whole number"),
        (["run", "--case", "matmul", "--shape", "10x20"], "square"),
        (["run", "--case", "matmul", "--shape", "10x10", "--device", "tpu"], "no TPU"),
        (["sweep", "--case", "matmul", "--sizes", "10", "--device", "gpu", "--precision", "x64"], "no GPU"),
        (["pitfalls", "--case", "matmul", "--shape", "10x10", "--device", "tpu"], "no TPU"),
        (["versions", "--case", "matmul", "--jax", "0.10.2", "banana"], "JAX 'banana' is not a version number"),
        (["run", "--case", "matmul", "--precision", "x16"], "invalid choice"),
        (["run", "--case", "x", "--cases-file", str(tmp_path / "missing.py")], "does not exist"),
        (["run", "--case", "x", "--cases-file", str(syntax)], "could not be loaded"),
        (["list", "--cases-file", str(no_cases)], "must define CASES"),
        (["sweep", "--case", "matmul", "--sizes", "0"], "positive"),
        (["sweep", "--case", "matmul", "--sizes", "10x10", "-5x5", "--quick"], "'-5x5': sizes must be positive"),
        (["run", "--case", "matmul", "--timing", "thorough"], "contradict"),  # with --quick, below
        (["run", "--case", "matmul", "--timing", "slow"], "invalid choice"),
        (["sweep", "--case", "matmul", "--matmul-precision", "fast"], "invalid choice: 'fast'"),
        (["frobnicate"], "invalid choice"),
        # 0 had meant the default deadline, -1 one every atlas cell ran past
        (["run", "--case", "matmul", "--timeout", "0"], "--timeout must be a positive number of seconds, got 0"),
        (["atlas", "--cases", "matmul", "--timeout", "-1"], "positive number of seconds, got -1"),
        (["pitfalls", "--timeout", "nan"], "positive number of seconds, got nan"),
        (["run", "--case", "matmul", "--shape", "8x8", "--ports", "jnp,pallas,jnp"],
         "port(s) named twice in --ports: jnp"),  # had raced jnp against pallas, saying nothing
        # More memory than any test machine has (about 95 GiB each): refused before "measuring ...", and a sweep
        # before its first size is measured.
        (["run", "--case", "matmul", "--shape", "46000x46000"], "GiB of host memory"),
        (["sweep", "--case", "matmul", "--sizes", "10", "46000"], "GiB of host memory"),
        (["pitfalls", "--shape", "46000x46000", "--precision", "x64"], "GiB of host memory"),
        (["atlas", "--cases", "matmul", "--json", "-"], "--json writes the comparison of --diff A B"),
        # 0 and -2 had measured a ladder of two sizes, 13 one of twelve, saying nothing
        (["sweep", "--case", "matmul", "--steps", "0"], "--steps must be between 2 and 12, got 0"),
        (["sweep", "--case", "matmul", "--steps", "13"], "--steps must be between 2 and 12, got 13"),
        # json's own words apart from its position, so that the Chinese catalog translates them
        (["atlas", "--diff", str(garbage), str(garbage)], "not valid JSON: Expecting value at line 1 column 1"),
    ]


def cli_here(args: list[str], capsys) -> tuple[int, str, str]:
    """The CLI's ``main(args)`` in this process (a bad input needs no worker: a process each cost 1-1.5 s):
    its exit status, stdout and stderr. The level main() sets on jaxcompare's logger is put back."""
    log = logging.getLogger("jaxcompare")
    level = log.level
    try:
        code = main(args)
    except SystemExit as exc:  # argparse's own errors
        code = exc.code
    finally:
        log.setLevel(level)
    out, err = capsys.readouterr()
    return code, out, err


def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    bad = _bad_inputs(tmp_path)
    # One as a user types it, in its own process: nothing but the line reaches the terminal.
    proc = cli(*bad[0][0], "--quick")
    assert proc.returncode == 2 and bad[0][1] in proc.stderr and proc.stdout == "", proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) <= 2, proc.stderr
    for args, words in bad[1:]:
        code, out, err = cli_here([*args, "--quick"] if args[0] in ("run", "sweep") else args, capsys)
        assert code == 2, (args, code, err)
        assert words in err, (args, err)
        assert out == "", (args, out)
        # Said before anything is measured, or said to be ("measuring matmul at 10x10 ..." came first).
        assert len(err.strip().splitlines()) <= 2 and "measuring" not in err, (args, err)


def test_an_output_that_cannot_be_written_is_said_before_anything_is_measured(tmp_path, capsys):
    run = ["run", "--case", "matmul", "--shape", "10x10", "--quick", "--json"]
    (tmp_path / "file").write_text("")
    for target, words in ((tmp_path / "no" / "r.json", "No such file or directory"), (tmp_path, "Is a directory"),
                          (tmp_path / "file" / "r.json", "Not a directory")):
        code, out, err = cli_here([*run, str(target)], capsys)
        assert code == 2 and words in err and "measuring" not in err, err
    # The operating system's words, and json's, in the reader's language too.
    code, out, err = cli_here([*run, str(tmp_path / "no" / "r.json"), "--lang", "zh"], capsys)
    assert code == 2 and "无法写入" in err and "没有这个文件或文件夹" in err, err
    bad = tmp_path / "bad.json"
    bad.write_text("{bad")
    code, out, err = cli_here(["import", str(bad), "--db", str(tmp_path / "h.sqlite3"), "--lang", "zh"], capsys)
    assert code == 2 and "此处应有用双引号括起的属性名" in err and "Expecting" not in err, err


def test_cases_file_cases_run_from_the_cli(tmp_path):
    path = tmp_path / "cases.py"
    path.write_text(textwrap.dedent("""
        import numpy as np
        import jax.numpy as jnp
        from jaxcompare import Case
        CASES = [Case(name="square_plus_one", numpy_fn=lambda x: x * x + 1,
                      jax_fn=lambda x: x * x + 1,
                      make_inputs=lambda shape, dtype, rng: (rng.random(shape).astype(dtype),),
                      small_shape=(10,), large_shape=(1000,)),
                 Case(name="a_wrong_port", numpy_fn=lambda x: x * x + 1, jax_fn=lambda x: x * x + 2,
                      make_inputs=lambda shape, dtype, rng: (rng.random(shape).astype(dtype),),
                      small_shape=(10,), large_shape=(1000,))]
    """))
    proc = cli("run", "--case", "square_plus_one", "--cases-file", str(path), "--shape", "100",
               "--quick", "--json", "-")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["jax"]["agreement"]["ok"]
    # A port that computes something else: measured and reported, but status 1, so a script's check fails.
    wrong = cli("run", "--case", "a_wrong_port", "--cases-file", str(path), "--shape", "100", "--quick",
                "--json", "-")
    assert wrong.returncode == 1 and "MISMATCH" in wrong.stderr, wrong.stderr
    assert json.loads(wrong.stdout)["jax"]["agreement"]["ok"] is False
    listing = cli("list", "--cases-file", str(path))
    assert "square_plus_one" in listing.stdout


def test_a_reader_that_stops_early_ends_the_output_without_a_traceback():
    """`list | head -1`: the pipe closes before the catalog is written, which raised BrokenPipeError at the user."""
    import os
    import subprocess
    import sys

    from support import ROOT

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    read, write = os.pipe()
    proc = subprocess.Popen([sys.executable, "-m", "jaxcompare", "list"], stdout=write, stderr=subprocess.PIPE,
                            env=env, cwd=ROOT)
    os.close(write)
    os.close(read)  # the reader gone before the first line is written (it imports for a while first)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 141 and b"Traceback" not in err and err == b"", err
