"""Shared fixtures: a fake clock for deterministic timing tests, one Runner per session, and a
neighbour process that keeps a core busy."""

from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import psutil
import pytest

os.environ.setdefault("JAX_PLATFORMS", "cpu")
# The app saves every result: tests must never write the user's ~/.jaxcompare database.
_TEST_DB_DIR = tempfile.mkdtemp(prefix="jaxcompare-test-db-")
atexit.register(shutil.rmtree, _TEST_DB_DIR, ignore_errors=True)
os.environ["JAXCOMPARE_DB"] = os.path.join(_TEST_DB_DIR, "results.sqlite3")
# One measured CPU ceiling for the whole run, as on a user's host: without it every test server's
# fresh database folder measured the matmul rate and bandwidth again (3-4 s each).
# A pytest run started by a test (test_breakages.py) is handed a copy of rates already measured
# there, as JAXCOMPARE_TEST_CPU_PEAKS: measuring them again cost each such run 3-7 s. Set here, it
# reaches pytest-xdist's workers too (they inherit this environment), so they share one file.
# `make test` hands both of its parts one file, measured first on a quiet machine (tests/quiet_ceilings.py).
os.environ.setdefault("JAXCOMPARE_TEST_CPU_PEAKS", os.path.join(_TEST_DB_DIR, "cpu_peaks.json"))
os.environ["JAXCOMPARE_CPU_PEAKS"] = os.environ["JAXCOMPARE_TEST_CPU_PEAKS"]

# `server` and `browser` fixtures for the real-browser tests; `postgres` and `pg_url`, a real PostgreSQL server.
pytest_plugins = ["browser_support", "postgres_support"]


def _scan_components_once() -> None:
    """Each new AppTest scans every installed distribution for Streamlit components (0.13 s; a run makes
    some 350 AppTests, 40 core-s): the installed packages do not change during a test run, so once."""
    import functools

    from streamlit.components.v2 import manifest_scanner

    manifest_scanner.scan_component_manifests = functools.cache(manifest_scanner.scan_component_manifests)


_scan_components_once()


# Modules whose tests compare two times measured here (a first call against its compile, a
# fraction of a measured ceiling, a lesson's direction), and the load test, which fills both cores
# with twenty sessions against its deadlines: a second test process beside them is a neighbour they
# were not written for, so `make test` runs them alone (marker `serial`). A module with only one
# such test marks that test itself (`@pytest.mark.serial`).
SERIAL_MODULES = frozenset({
    "test_accelerator", "test_breakages", "test_charts", "test_durations", "test_load", "test_machine_load",
    "test_measure", "test_noisy_neighbour", "test_pitfalls", "test_plain_numpy", "test_profile", "test_protocol",
    "test_roofline",
})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark SERIAL_MODULES' tests serial; then modules marked slow first (a stable sort keeps
    every module's own order): parallel workers then end together instead of one starting the
    longest module last."""
    for item in items:
        if item.path.stem in SERIAL_MODULES:
            item.add_marker(pytest.mark.serial)
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


class FakeClock:
    """A nanosecond clock that only moves when told to (inject as ``clock=``)."""

    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += round(seconds * 1e9)


@pytest.fixture
def fake_clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(1234)


@pytest.fixture(scope="session")
def runner():
    """One Runner (x32 and x64 workers) shared by the tests that measure for real."""
    from jaxcompare import Runner

    with Runner(timeout_s=240) as shared:
        yield shared


def measured_once_per_run(config: pytest.Config, tmp_path_factory: pytest.TempPathFactory, name: str, spec):
    """``spec`` measured in a test process, once per pytest run: a session fixture is once per process,
    and each pytest-xdist worker measured it again (`make test`'s parallel part: up to three times).
    The first worker to ask measures it and writes the Result into the run's folder; the others wait
    on a lock and read it back (Result's JSON round trip is exact). The serial part, a run of its own,
    measures its own on the quiet machine."""
    import fcntl

    from jaxcompare import Result
    from jaxcompare.engine.worker.measure import measure

    folder = tmp_path_factory.getbasetemp()
    if hasattr(config, "workerinput"):  # a pytest-xdist worker: its folder is popen-gwN in the run's
        folder = folder.parent
    path = folder / f"measured-{name}.json"
    with open(folder / f"measured-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if path.exists():
            return Result.from_dict(json.loads(path.read_text()))
        result = measure(spec)
        path.write_text(json.dumps(result.to_dict()))
        return result


@pytest.fixture(scope="session")
def fair_result(pytestconfig, tmp_path_factory):
    """A real, fair comparison at the JAX docs' size, measured in a test process (x32, CPU)."""
    from jaxcompare import Spec, TimingConfig

    spec = Spec("centered_gram", (1000, 1000), device="cpu", timing=TimingConfig.quick())
    return measured_once_per_run(pytestconfig, tmp_path_factory, "fair", spec)


@pytest.fixture(scope="session")
def tiny_result(pytestconfig, tmp_path_factory):
    """The same comparison at 10x10, where dispatch overhead dominates."""
    from jaxcompare import Spec, TimingConfig

    spec = Spec("centered_gram", (10, 10), device="cpu", timing=TimingConfig.quick())
    return measured_once_per_run(pytestconfig, tmp_path_factory, "tiny", spec)


# The loop ends by itself even if teardown never ran; longer than any test's waits beside it (the
# doubt sweep's: 30 + 120 + 60 s), so a slow run fails on its own timeout, not a neighbour gone quiet.
NEIGHBOUR_MAX_S = 300
NEIGHBOUR = f"import time\nend = time.time() + {NEIGHBOUR_MAX_S}\nwhile time.time() < end: pass\n"


def start_neighbour() -> psutil.Process:
    """A process that keeps one core busy with a tight loop, bounded in time (the caller kills it).
    Started through a shell that exits at once, so it is not in this process tree (whose CPU time
    the meter counts as ours): it is another program, as a browser or a build would be."""
    shell = subprocess.run(["sh", "-c", f'"{sys.executable}" -c "$0" >/dev/null 2>&1 & echo $!', NEIGHBOUR],
                           capture_output=True, text=True, check=True, timeout=30)
    return psutil.Process(int(shell.stdout.strip()))


@pytest.fixture
def neighbour():
    """start_neighbour's process, always killed in teardown."""
    proc = start_neighbour()
    try:
        yield proc
    finally:
        try:
            proc.kill()
        except psutil.NoSuchProcess:
            pass
