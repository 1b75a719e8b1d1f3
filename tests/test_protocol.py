"""The protocol checked against the work itself, not against what the Spec asked for: each test
fails when JAX is broken in one of the ways tests/breakjax can break it (test_breakages.py)."""

from __future__ import annotations

import pytest
from support import QUICK

from jaxcompare import Runner, Spec
from jaxcompare.engine.worker.measure import measure


@pytest.fixture(scope="module")
def matmul_result():
    """A BLAS-bound call, large enough that its work dwarfs dispatch (~2.5 ms on 2 cores)."""
    return measure(Spec("matmul", (400, 400), device="cpu", timing=QUICK))


def test_every_timed_jax_call_was_finished_when_the_clock_stopped(matmul_result):
    """measure() checks each runtime sample's last output is ready the moment its clock stops;
    an unblocked timer stops while XLA still works on a 400x400 product (~2.5 ms)."""
    assert matmul_result.jax.protocol["blocked"] is True, matmul_result.jax.protocol


def test_no_compile_inside_the_timed_runtime(matmul_result):
    """The jitted function was compiled before the runtime phase and not again during it."""
    assert matmul_result.jax.protocol["compile_excluded"] is True, matmul_result.jax.protocol


def test_runtime_inputs_were_device_arrays(matmul_result):
    """measure() records what the JAX runtime was called with, and the checklist reads that."""
    assert matmul_result.jax.protocol["inputs_on_device"] is True, matmul_result.jax.protocol


def test_x32_and_x64_run_in_different_worker_processes_with_their_own_dtypes():
    with Runner(timeout_s=240) as runner:
        jobs = {p: runner.submit(Spec("matmul", (32, 32), precision=p, timing=QUICK)) for p in ("x32", "x64")}
        results = {p: job.wait() for p, job in jobs.items()}
        assert jobs["x32"].worker_pid != jobs["x64"].worker_pid
    for precision, want in (("x32", "float32"), ("x64", "float64")):
        r = results[precision]
        # Read off arrays in the worker: a default-dtype array, and both functions' outputs.
        assert r.env["jax"]["default_float"] == want, (precision, r.env["jax"])
        agreement = r.jax.agreement
        assert agreement["jax_dtype"] == want and agreement["numpy_dtype"] == want, (precision, agreement)
