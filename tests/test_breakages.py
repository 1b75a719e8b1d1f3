"""The suite fails when JAX lies: each breakage in tests/breakjax, applied in every process of
a pytest run (workers included), must fail the tests written to catch it."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).parent
CATCHERS = {
    "block_until_ready": ["test_protocol.py::test_every_timed_jax_call_was_finished_when_the_clock_stopped",
                          "test_measure.py::test_blocked_runtime_exceeds_dispatch_only_for_a_large_workload"],
    "x64_off": ["test_protocol.py::test_x32_and_x64_run_in_different_worker_processes_with_their_own_dtypes"],
    "clear_caches": ["test_measure.py::test_cold_compile_is_slower_than_a_cache_hit"],
    "device_put": ["test_protocol.py::test_runtime_inputs_were_device_arrays"],
}


def _run(nodeids: list[str], breakage: str | None, peaks: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "JAXCOMPARE_TEST_BREAK_JAX"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(TESTS / "breakjax"), env.get("PYTHONPATH")]))
    env["JAXCOMPARE_TEST_CPU_PEAKS"] = str(peaks)  # read by conftest
    if breakage:
        env["JAXCOMPARE_TEST_BREAK_JAX"] = breakage
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rf",
                           *(str(TESTS / n) for n in nodeids)],
                          capture_output=True, text=True, env=env, cwd=TESTS.parent, timeout=600)


@pytest.fixture(scope="module")
def unbroken(tmp_path_factory):
    """Every catcher run once on an unbroken JAX, with the CPU rates (roofline ceilings) this
    test session uses: measured there if no test has yet, then read by the session's later tests.
    Each broken run starts from its own copy of them, so a lying JAX never writes a rate another
    run reads, and none spends seconds measuring them again."""
    session = os.environ.get("JAXCOMPARE_TEST_CPU_PEAKS")  # conftest sets it for the session
    peaks = Path(session) if session else tmp_path_factory.mktemp("unbroken") / "cpu_peaks.json"
    return _run(sorted({n for ns in CATCHERS.values() for n in ns}), None, peaks), peaks


@pytest.mark.slow
def test_the_catchers_pass_on_an_unbroken_jax(unbroken):
    proc, _ = unbroken
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]


@pytest.mark.slow
@pytest.mark.parametrize("breakage", sorted(CATCHERS))
def test_each_breakage_fails_its_catchers(breakage, unbroken, tmp_path):
    _, measured = unbroken
    peaks = tmp_path / "cpu_peaks.json"
    if measured.exists():
        shutil.copyfile(measured, peaks)
    proc = _run(CATCHERS[breakage], breakage, peaks)
    failed = set(re.findall(r"^FAILED tests/(\S+?)(?: - |$)", proc.stdout, flags=re.M))
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert failed == set(CATCHERS[breakage]), (failed, proc.stdout[-3000:])
