"""What a TPU cannot do in float64, said plainly: the errors XLA gave on a real TPU v5e
(tests/data/tpu/selfcheck-x64.jsonl) fed to the platform table, the self-check's records, the
measurement's one line, the result's notes and the CLI's list. CPU only: the recorded text stands
in for the TPU."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import jax
import pytest
from _results import make_result
from support import cli

from jaxcompare.catalog import builtin_cases, get_case
from jaxcompare.engine.worker.jax_phases import user_call
from jaxcompare.engine.worker.measure import _notes
from jaxcompare.engine.worker.selfcheck import error_record, record_status
from jaxcompare.model.errors import BadInput, TooLarge, Unsupported
from jaxcompare.model.platforms import PLATFORMS, error_first_line, float64_line, float64_note

RECORDED = Path(__file__).parent / "data" / "tpu" / "selfcheck-x64.jsonl"
RECORDS = [r for r in map(json.loads, RECORDED.read_text().splitlines()) if "case" in r]
FAILED = {r["case"]: r["error"] for r in RECORDS if "error" in r}
TPU = PLATFORMS["tpu"]


def _as_raised(error: str) -> jax.errors.JaxRuntimeError:
    """The recorded line as the exception JAX raised ('JaxRuntimeError: ' is its type's name)."""
    kind, _, message = error.partition(": ")
    assert kind == "JaxRuntimeError"
    return jax.errors.JaxRuntimeError(message)


def test_the_recording_has_the_failures_the_table_is_built_from():
    assert len(FAILED) == 10 and any("0x7ee8" in e for e in FAILED.values())  # addresses to hide


@pytest.mark.parametrize("case", sorted(FAILED))
def test_each_recorded_xla_error_becomes_one_plain_line(case):
    error = FAILED[case]
    line = float64_line("tpu", "x64", error)
    assert line is not None, error[:200]
    assert "\n" not in line and "0x" not in line and "XlaBuilder" not in line
    assert "x32" in line and "CPU" in line and "TPU" in line
    assert ("LU" in line) == ("LuDecomposition" in error) and ("FFT" in line) == ("FFT" in error)
    # The same error is not this platform's gap elsewhere, nor at x32 (where nothing was missing).
    assert float64_line("tpu", "x32", error) is None
    assert float64_line("cpu", "x64", error) is None and float64_line("cuda", "x64", error) is None


@pytest.mark.parametrize("case", sorted(FAILED))
def test_the_raw_first_line_is_kept_without_code_addresses(case):
    first = error_first_line(FAILED[case])
    assert first.startswith("JaxRuntimeError: ") and "0x" not in first and "\n" not in first
    assert "f64[" in first or "c128[" in first  # what XLA was given, the operator's clue


def test_the_table_lists_exactly_the_cases_the_recorded_run_saw_fail():
    listed = [case for gap in TPU.float64_missing for case in gap.cases]
    assert sorted(listed) == sorted(FAILED)  # each once, and no other
    for gap in TPU.float64_missing:
        assert {case for case, error in FAILED.items() if gap.pattern in error} == gap.cases


def test_the_table_names_catalog_cases_with_their_recorded_seconds():
    names = {c.name for c in builtin_cases()}
    seconds = {r["case"]: r["seconds"] for r in RECORDS}
    assert {case for gap in TPU.float64_missing for case in gap.cases} <= names
    for case, recorded in TPU.float64_slow:
        assert case in names and seconds[case] == recorded and recorded > 30
    assert TPU.float64_seconds("cumsum") == pytest.approx(148, abs=1) and TPU.float64_seconds("matmul") is None


@pytest.mark.parametrize("case", ["inv", "fft"])
def test_a_recorded_error_in_the_self_check_is_not_on_tpu_at_x64(case):
    record = error_record(case, (10, 10), "x64", "tpu", _as_raised(FAILED[case]))
    assert record_status(record) == "unsupported"
    assert record["unsupported"] == float64_line("tpu", "x64", FAILED[case])
    assert record["error"] == error_first_line(FAILED[case]) and not record["ok"]
    # The same error from a CPU is a failure to look into, not a known gap.
    on_cpu = error_record(case, (10, 10), "x64", "cpu", _as_raised(FAILED[case]))
    assert record_status(on_cpu) == "error" and "unsupported" not in on_cpu and "0x" not in on_cpu["error"]


def test_recorded_disagreements_stay_disagreements():
    statuses = {r["case"]: record_status(r) for r in RECORDS if "error" not in r}
    assert statuses["svd"] == statuses["eigh"] == "disagree" and statuses["matmul"] == "agree"


def test_a_measured_call_that_hits_the_gap_raises_the_plain_line():
    error = _as_raised(FAILED["inv"])

    def compiled_on_a_tpu():
        raise error

    with pytest.raises(Unsupported) as caught:
        user_call(get_case("inv"), "jax_fn", compiled_on_a_tpu, (), where=("tpu", "x64"))
    exc = pickle.loads(pickle.dumps(caught.value))  # as it crosses from the worker
    assert str(exc) == "case 'inv': " + float64_line("tpu", "x64", FAILED["inv"])
    assert exc.detail == error_first_line(FAILED["inv"])
    with pytest.raises(BadInput) as other:
        user_call(get_case("inv"), "jax_fn", compiled_on_a_tpu, (), where=("cpu", "x64"))
    assert not isinstance(other.value, Unsupported) and "0x" not in str(other.value)


def test_a_float64_result_on_a_tpu_says_float64_is_emulated():
    result = make_result(precision="x64")
    emulated = float64_note("tpu", "x64")
    assert emulated is not None and "emulated" in emulated and "less accurate" in emulated
    assert emulated in _notes(result.spec, result.jax, "tpu")
    assert emulated not in _notes(result.spec, result.jax, "cpu")
    assert float64_note("tpu", "x32") is None and float64_note("gpu", "x64") is None


def test_list_marks_the_cases_a_tpu_cannot_run_at_x64():
    proc = cli("list")
    assert proc.returncode == 0, proc.stderr
    lines = {line.split()[0]: line for line in proc.stdout.splitlines()}
    assert all(lines[case].endswith("[not on TPU at x64]") for case in FAILED)
    assert "not on TPU" not in lines["cholesky"] and "not on TPU" not in lines["cumsum"]
    assert "148 s" in lines["cumsum"]


def test_list_json_carries_the_reason():
    proc = cli("list", "--json", "-")
    assert proc.returncode == 0, proc.stderr
    cases = {c["name"]: c for c in json.loads(proc.stdout)}
    (inv,) = cases["inv"]["unsupported"]
    assert inv == {"platform": "tpu", "precision": "x64", "status": "not on TPU at x64",
                   "reason": float64_line("tpu", "x64", FAILED["inv"])}
    assert cases["matmul"]["unsupported"] == [] and cases["cumsum"]["slow_compile"][0]["seconds"] > 100


# What a TPU v5e said of fftconvolve at 10^6 float32 in the atlas (benchmarks/DEVICE-TPU.md), as raised.
OUT_OF_HBM = ("RESOURCE_EXHAUSTED: Ran out of memory on HBM, the total memory required for HLO temporaries "
              "(4.40T) exceeds available HBM (15.75G).")


def test_a_function_that_runs_out_of_the_devices_memory_is_too_large_not_a_bad_case():
    def on_a_tpu(*_):
        raise _as_raised("JaxRuntimeError: " + OUT_OF_HBM)

    with pytest.raises(TooLarge) as caught:
        user_call(get_case("fftconvolve"), "jax_fn", on_a_tpu, (), where=("tpu", "x32"))
    exc = pickle.loads(pickle.dumps(caught.value))  # as it crosses from the worker
    assert str(exc).startswith("case 'fftconvolve': jax_fn needs more memory than the device has at this shape")
    assert "4.40T" in str(exc) and not isinstance(exc, BadInput)
