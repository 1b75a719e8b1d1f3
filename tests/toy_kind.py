"""A job kind from outside the engine (tests/test_job_kinds.py): the sum of 0..n-1 in JAX, in the x32 and
the x64 worker, combined into one value. Its worker function is named by import path: the worker
imports this module, the server only registers the kind."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from jaxcompare.engine import Job, JobKind, Step


@dataclass(frozen=True)
class SumRequest:
    n: int


def sum_in_jax(request: SumRequest, report: Callable[[str, float], None]) -> dict[str, Any]:
    import jax
    import jax.numpy as jnp

    report("summing", 0.5)
    total = jnp.arange(request.n, dtype=jnp.float64 if jax.config.jax_enable_x64 else jnp.float32).sum()
    return {"sum": float(total), "dtype": str(total.dtype), "backend": jax.default_backend(), "pid": os.getpid()}


class ToySum(JobKind):
    name = "toy_sum"

    def steps(self, n: int) -> tuple[Step, ...]:
        return tuple(Step(precision, f"{__name__}:sum_in_jax", SumRequest(n))
                     for precision in self.precisions(None, self.name))

    def precisions(self, spec, key: str) -> tuple[str, ...]:  # both workers, for its estimate too
        return ("x32", "x64")

    def combine(self, job: Job, values: list[Any]) -> Any:
        return dict(zip(("x32", "x64"), values, strict=True))
