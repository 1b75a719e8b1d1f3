"""Several app sessions at once share one device queue: all complete, none overlap."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


@pytest.fixture
def shared_runner():
    from streamlit import config

    from jaxcompare.app import resources

    # Each AppTest compiles its page on every run, and Streamlit's magic does that through ast.parse,
    # which CPython 3.11 cannot run in several threads at once ("AST constructor recursion depth
    # mismatch", seen once in four sessions). A server compiles a page once for all sessions, and
    # no page relies on magic, so the sessions here run without it.
    magic = config.get_option("runner.magicEnabled")
    config.set_option("runner.magicEnabled", False)
    resources.get_runner.clear()
    yield
    resources.get_runner.clear()  # closes the Runner and its workers
    config.set_option("runner.magicEnabled", magic)


def compare_session(case: str, precision: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    at.switch_page("pages/1_Compare.py")
    at.query_params.update({"case": case, "precision": precision, "shape": "small", "timing": "quick"})
    return at.run()


def test_concurrent_sessions_all_complete_without_overlap(shared_runner):
    sessions = [compare_session(case, precision) for case, precision in
                [("matmul", "x32"), ("matmul", "x64"), ("centered_gram", "x32"), ("svd", "x64")]]
    start = threading.Barrier(len(sessions))
    errors: list[BaseException] = []

    def click(at: AppTest) -> None:
        try:
            start.wait(30)
            at.button(key="run_compare").click().run()
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=click, args=(at,)) for at in sessions]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
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
