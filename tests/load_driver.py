"""Test-only: sessions that use the Runner API from inside the app server's process, beside the
browser sessions, so both share the server's one queue. tests/test_load.py puts this in the server
through a sitecustomize module; it starts once the test writes the ``go`` file, and writes what
it saw to ``report`` when the test writes ``stop``. Nothing in the app knows about it."""

from __future__ import annotations

import itertools
import json
import os
import sys
import threading
import time
from pathlib import Path

SHAPES = ((8, 8), (16, 16), (24, 24))
# Shorter than the quick preset (as tests/test_cluster.py's jobs): the load test is about the queue, the
# device and History, not the figures. Each session's first job waits in the full queue until after the
# sessions stop, so the test ends when the last of them is measured: at quick, 1-2 s a job beside the four
# browsers, the queue took 16 s to drain after the 10 s of load; at this timing 0.4-1 s a job.
TINY = dict(target_sample_s=0.001, min_samples=3, max_samples=6, phase_budget_s=0.03, rel_ci=0.5,
            compile_samples=1, warmup_s=0.001, first_call_processes=0)


def start() -> None:
    config = os.environ.get("JAXCOMPARE_TEST_LOAD_DRIVER")
    if config:
        threading.Thread(target=_main, args=(json.loads(Path(config).read_text()),), daemon=True,
                         name="load-driver").start()


def _wait_for(path: str, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)  # a file the test writes; there is nothing to block on across processes
    return True


def _main(config: dict) -> None:
    try:
        _drive(config)
    except BaseException:  # the test reads this instead of waiting for a report that never comes
        import traceback

        Path(config["report"]).write_text(json.dumps({"error": traceback.format_exc()}))


def _drive(config: dict) -> None:
    if not _wait_for(config["go"], 600):
        raise TimeoutError("the test never said go")
    from jaxcompare import JaxCompareError, Spec, TimingConfig
    from jaxcompare.engine.server.runner import Owner
    from jaxcompare.history.store import Store, default_path

    resources = sys.modules["jaxcompare.app.resources"]  # the test opened a page first: the app made its Runner
    runner = resources.get_runner()
    store = Store(default_path())
    lock = threading.Lock()
    outcomes: list[dict] = []
    jobs: dict[str, dict] = {}
    end = time.monotonic() + config["seconds"]
    stop = threading.Event()

    def session(i: int) -> None:
        owner = Owner(f"api-{i}", client=f"10.9.0.{i}")
        specs = itertools.cycle(Spec("matmul", shape, precision=("x32", "x64")[(i + k) % 2],
                                     timing=TimingConfig(**TINY)) for k, shape in enumerate(SHAPES))
        while time.monotonic() < end:
            try:
                job = runner.submit(next(specs), owner=owner)
            except JaxCompareError as exc:
                with lock:
                    outcomes.append({"session": i, "outcome": "refused", "message": str(exc)})
                time.sleep(1.0)  # a refused visitor tries again a little later
                continue
            try:
                result = job.wait(600)
            except JaxCompareError as exc:
                with lock:
                    outcomes.append({"session": i, "outcome": "failed", "message": str(exc), "job": job.id})
                continue
            store.save(result)  # as the app does with every result
            with lock:
                outcomes.append({"session": i, "outcome": "done", "job": job.id, "result": result.id})
            time.sleep(1.0)  # a visitor looks at the result before the next run

    def snapshot() -> None:
        for job in runner.recent():
            jobs[job.id] = {"kind": job.kind, "status": job.status, "device": job.device, "window": job.window,
                            "client": job.client, "result": getattr(job.value, "id", None),
                            "error": str(job.error) if job.error is not None else None}

    def collect() -> None:
        while not stop.is_set():
            snapshot()
            time.sleep(0.2)  # the runner keeps its last 200 jobs; reading it this often misses none

    collector = threading.Thread(target=collect, daemon=True)
    collector.start()
    sessions = [threading.Thread(target=session, args=(i,), daemon=True) for i in range(config["sessions"])]
    for t in sessions:
        t.start()
    for t in sessions:
        t.join()
    _wait_for(config["stop"], 900)
    stop.set()
    collector.join()
    snapshot()
    Path(config["report"]).write_text(json.dumps({"outcomes": outcomes, "jobs": jobs}))
