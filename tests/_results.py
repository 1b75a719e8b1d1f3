"""Synthetic Results for tests that need exact numbers (no worker, no JAX)."""

from __future__ import annotations

import dataclasses

from support import QUICK

from jaxcompare import Result, Spec, Stats, get_case
from jaxcompare.analysis.checks import Check, checklist
from jaxcompare.model.sides import JaxSide


def stats(median_s: float, spread: float = 0.02, n: int = 7) -> Stats:
    samples = [median_s * (1 + spread * (i - n // 2) / n) for i in range(n)]
    return Stats.from_samples(samples, loops=10)


def make_result(case: str = "matmul", shape: tuple[int, ...] = (10, 10), precision: str = "x32", *,
                numpy_s: float = 1e-3, jax_s: float = 2e-4, compile_s: float = 0.02,
                transfer_s: float = 1e-4) -> Result:
    spec = Spec(case, shape, precision=precision, timing=QUICK)
    dtype = spec.dtype
    return Result(
        id=f"test-{case}-{'x'.join(map(str, shape))}-{precision}", created="2026-01-01T00:00:00+00:00",
        spec=spec, case_info=get_case(case).summary(), dtype=dtype, backend="cpu",
        numpy_runtime=stats(numpy_s),
        jax=JaxSide(
            device="cpu:0", device_kind="cpu", transfer=stats(transfer_s),
            trace=stats(compile_s * 0.1), lower=stats(compile_s * 0.3), compile=stats(compile_s * 0.6),
            first_call=stats(compile_s + jax_s), runtime=stats(jax_s), dispatch=stats(jax_s / 10),
            fetch=stats(jax_s / 20),
            agreement={"ok": True, "max_abs_err": 1e-7, "max_rel_err": 1e-8, "rtol": 1e-4, "atol": 1e-7,
                       "method": "direct", "numpy_dtype": dtype, "jax_dtype": dtype},
            protocol={"blocked": True, "compile_excluded": True, "inputs_on_device": True}),
        env={"cpu_model": "Test CPU", "cpu_count_logical": 2, "cpu_affinity": 2, "blas": []},
        notes=("a synthetic result",),
    )


def with_jax(result: Result, **changes) -> Result:
    """``result`` with its JAX side's fields changed (dataclasses.replace one level down)."""
    return dataclasses.replace(result, jax=dataclasses.replace(result.jax, **changes))


def by_id(result: Result) -> dict[str, Check]:
    """``result``'s checklist, each item under its id."""
    return {c.id: c for c in checklist(result)}
