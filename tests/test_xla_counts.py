"""XLA's counts for the roofline, from a compiled program (engine/worker/jax_phases.py): none for a program
that loops, whose body XLA's cost analysis counts once whatever the trip count (a lax.scan cumsum read
3 FLOPs for 20,000 elements, and the roofline called it overhead-bound at 1.8% of its bound)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxcompare import Case
from jaxcompare.engine.worker.jax_phases import compiled_counts


def _case(name: str, jax_fn) -> Case:
    return Case(name=name, numpy_fn=np.cumsum, jax_fn=jax_fn,
                make_inputs=lambda shape, dtype, rng: (rng.random(shape).astype(dtype),))


def scan_cumsum(x):
    return jax.lax.scan(lambda total, v: (total + v, total + v), jnp.zeros((), x.dtype), x)[1]


def test_a_looping_program_has_no_xla_counts_and_a_straight_one_keeps_them():
    x = (np.random.default_rng(0).random(20_000).astype(np.float32),)
    device = jax.devices("cpu")[0]
    straight = compiled_counts(_case("jnp", jnp.cumsum), x, device)
    assert straight is not None and straight["flops"] > 1_000 and straight["bytes"] >= x[0].nbytes
    assert compiled_counts(_case("scan", scan_cumsum), x, device) is None
