"""The Compare page, asked for a case a TPU cannot run at x64, says so before a run fails and offers
what works (x32, or the CPU device). On a CPU-only host: the TPU is chosen, not present."""

from __future__ import annotations

from apptest_support import app_runner, fresh_caches, page  # noqa: F401  (autouse fixtures)


def _gap_notes(at) -> list[str]:
    return [w.value for w in at.sidebar.warning if "choose x32" in w.value]


def test_compare_offers_x32_or_the_cpu_where_a_tpu_lacks_float64_lu():
    at = page("pages/1_Compare.py", case="inv", shape="small", precision="x64", device="tpu")
    assert not at.exception
    (note,) = _gap_notes(at)
    assert "float64 LU decomposition" in note
    at.button(key="use_x32").click().run()
    assert at.session_state["precision"] == "x32" and not _gap_notes(at)


def test_the_cpu_button_keeps_x64_and_the_note_goes():
    at = page("pages/1_Compare.py", case="fft", shape="small", precision="x64", device="tpu")
    assert "float64 FFTs" in _gap_notes(at)[0]
    at.button(key="use_cpu").click().run()
    assert at.session_state["device"] == "cpu" and at.session_state["precision"] == "x64" and not _gap_notes(at)


def test_no_note_for_a_case_the_tpu_runs_at_x64():
    at = page("pages/1_Compare.py", case="cholesky", shape="small", precision="x64", device="tpu")
    assert not at.exception and not _gap_notes(at)
