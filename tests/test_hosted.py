"""Several app sessions at once share one device queue: all complete, none overlap."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


@pytest.fixture
def shared_runner():
    from jaxcompare.app import resources

    resources.get_runner.clear()
    yield
    resources.get_runner.clear()  # closes the Runner and its workers


def compare_session(case: str, precision: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    at.switch_page("pages/1_Compare.py")
    at.query_params.update({"case": case, "precision": precision, "shape": "small", "timing": "quick"})
    return at.run()


def test_concurrent_sessions_all_complete_without_overlap(shared_runner):
    sessions = [compare_session(case, precision) for case, precision in
                [("matmul", "x32"), ("matmul", "x64"), ("centered_gram", "x32"), ("svd", "x64")]]
    # One click after another: a click queues its job and returns, so the four sessions' jobs still
    # share the queue. (AppTests clicked from threads share Streamlit's one Runtime instance, which
    # each AppTest run sets and then clears: another session's click then could not read its client
    # address, "Runtime hasn't been created!", in 2 of 5 suite runs.)
    for at in sessions:
        at.button(key="run_compare").click().run()
        assert not at.exception, [e.value for e in at.exception]
        assert "compare_job" in at.session_state, [e.value for e in at.error]
    jobs = [at.session_state["compare_job"] for at in sessions]
    assert len({job.owner for job in jobs}) == len(jobs)  # one owner per session
    for job in jobs:
        job.wait(240)  # synchronise on the job itself, not on a sleep
    for at in sessions:
        at.run()
        assert not at.exception
        assert "compare_result" in at.session_state, [e.value for e in at.error]
    windows = sorted(job.window for job in jobs)
    for (_, end), (begin, _) in zip(windows, windows[1:], strict=False):
        assert end <= begin, f"two measurements overlapped: {windows}"
