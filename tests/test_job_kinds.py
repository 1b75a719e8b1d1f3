"""Job kinds through the engine's public registry: a kind added from outside runs end to end in a
real Runner (real worker processes, real JAX on the CPU), and the engine's own are found the same way."""

from __future__ import annotations

import pytest
from toy_kind import ToySum

from jaxcompare.engine import JobKind, Runner, job_kind, job_kinds, register_kind


def test_the_engines_own_kinds_are_in_the_registry():
    kinds = job_kinds()
    assert {"measure", "pitfalls", "environment", "selfcheck", "list_cases"} <= set(kinds)
    assert all(isinstance(kind, JobKind) and kinds[name] is job_kind(name) for name, kind in kinds.items())
    assert job_kind("measure").capped and not job_kind("environment").capped


def test_a_name_taken_by_another_kind_is_refused():
    class Impostor(JobKind):
        name = "measure"

    with pytest.raises(ValueError, match="already registered"):
        register_kind(Impostor())
    assert type(job_kind("measure")).__name__ == "Measure"


def test_a_kind_added_through_the_registry_runs_end_to_end_in_real_workers():
    kind = register_kind(ToySum())
    assert job_kinds()["toy_sum"] is kind
    with Runner() as runner:
        job = runner.submit_job("toy_sum", 1000)
        assert job.estimate is not None  # said when it queued, like any kind's
        value = job.wait(240)
        assert runner.recent()[-1] is job
    assert job.status == "done" and job.kind == "toy_sum" and job.job_kind is kind
    assert value["x32"]["sum"] == value["x64"]["sum"] == 499500.0
    assert (value["x32"]["dtype"], value["x64"]["dtype"]) == ("float32", "float64")  # each in its own worker
    assert value["x32"]["pid"] != value["x64"]["pid"] and value["x32"]["backend"] == "cpu"


def test_the_first_look_up_from_many_threads_finds_the_engines_kinds():
    """A cluster runner's dispatcher threads look up kinds at once in a fresh process: each must wait
    for the engine's kinds to be registered, never find an empty registry."""
    import subprocess
    import sys

    code = ("import threading\n"
            "from jaxcompare.engine.server import jobs\n"
            "barrier, out = threading.Barrier(8), []\n"
            "def look():\n"
            "    barrier.wait()\n"
            "    try: out.append(jobs.job_kind('measure').name)\n"
            "    except ValueError as exc: out.append(str(exc))\n"
            "threads = [threading.Thread(target=look) for _ in range(8)]\n"
            "[t.start() for t in threads]; [t.join() for t in threads]\n"
            "print(sorted(set(out)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "['measure']"
