"""NumPy as the user's own program runs it: the worker keeps freed memory (engine/memory.py), a plain
process does not, and where the allocator can matter the headline is the plain process's figure,
with the worker's beside it. glibc's trimming is forced here through its own environment variables
(a tiny mmap threshold, no trim threshold), which the plain process inherits as a user's would and
the worker's mallopt overrides."""

from __future__ import annotations

import json
import os

import pytest
from support import QUICK

from jaxcompare import Result, Spec
from jaxcompare.analysis.advice import advice
from jaxcompare.analysis.summary import verdict_lines
from jaxcompare.analysis.text import numpy_speeds_line
from jaxcompare.engine.measure import measure
from jaxcompare.model.cases import Case

# Every 1 MB temporary of the elementwise case at 250000 is mmapped and unmapped on each call: 4.4x
# slower than with freed memory kept, measured here (no BLAS: its threads' own modes stay out of it).
TRIMMING = {"MALLOC_MMAP_THRESHOLD_": "65536", "MALLOC_TRIM_THRESHOLD_": "0"}


def quiet(spec, case=None):
    """measure(); a busy machine keeps NumPy's figure the worker's (its note says so), so it is
    measured again, up to three times, until other programs left the runtime pairs alone."""
    for _ in range(3):
        result = measure(spec, case=case)
        if not any("machine was busy" in note for note in result.notes):
            break
    return result


@pytest.fixture(scope="module")
def trimmed():
    with pytest.MonkeyPatch.context() as mp:
        for key, value in TRIMMING.items():
            mp.setenv(key, value)
        return quiet(Spec("elementwise", (250000,), timing=QUICK))


def test_forced_trimming_gives_two_numpy_speeds_and_the_headline_from_the_plain_one(trimmed):
    r = trimmed
    plain, kept = r.numpy_runtime, r.numpy_kept
    assert kept is not None and kept.below(plain), (plain.range_s, kept.range_s)
    assert r.numpy_memory_speedup > 1
    # The speedup is against the plain process's NumPy: above what the worker's own would give.
    assert r.speedup == pytest.approx(plain.median_s / r.jax.runtime.median_s)
    assert r.speedup > kept.median_s / r.jax.runtime.median_s
    # Both are kept in the JSON, and read back.
    doc = json.loads(json.dumps(r.to_dict()))
    assert doc["numpy"]["kept_memory"]["median_s"] == kept.median_s
    assert Result.from_dict(doc).numpy_kept == kept
    # Each front end says which is which, and what would keep the memory.
    assert "as a plain process runs it" in numpy_speeds_line(r) and "faster" in numpy_speeds_line(r)
    assert any(line.startswith("**NumPy's two speeds.**") for line in verdict_lines(r))
    [rule] = [a for a in advice(r) if a.rule == "numpy_memory"]
    assert "MALLOC_MMAP_THRESHOLD_" in rule.text


def test_small_arrays_are_timed_once():
    # No array reaches glibc's 128 KiB threshold: the two speeds are one, and no plain process runs.
    r = measure(Spec("centered_gram", (16, 16), timing=QUICK))
    assert r.numpy_kept is None and r.numpy_memory_speedup is None and numpy_speeds_line(r) is None
    assert "kept_memory" not in r.to_dict()["numpy"]


def _columns(shape, dtype, rng):
    return (rng.standard_normal(shape).astype(dtype),)


def test_a_users_own_function_is_timed_in_the_plain_process_too():
    # A notebook's case travels by value (cloudpickle); the catalog has no "spread", so a plain or a
    # fresh process that looked it up by name would fail and leave a note.
    import jax.numpy as jnp

    case = Case(name="spread", numpy_fn=lambda x: x - x.mean(axis=0), jax_fn=lambda x: x - jnp.mean(x, axis=0),
                make_inputs=_columns)
    r = quiet(Spec("spread", (300, 300)), case)  # careful: its first call in a fresh process too
    assert r.numpy_kept is not None and not any("plain process" in note for note in r.notes), r.notes
    assert r.jax.protocol["first_call"]["process"] == "fresh", r.notes


def test_a_plain_process_that_fails_leaves_the_workers_figure_and_says_why():
    parent = os.getpid()

    def only_here(x):
        if os.getpid() != parent:
            raise RuntimeError("not in this process")
        return x - x.mean(axis=0)

    import jax.numpy as jnp

    case = Case(name="only_here", numpy_fn=only_here, jax_fn=lambda x: x - jnp.mean(x, axis=0),
                make_inputs=_columns)
    r = quiet(Spec("only_here", (300, 300), timing=QUICK), case)
    assert r.numpy_kept is None and r.jax.agreement["ok"]
    [note] = [note for note in r.notes if "plain process" in note]
    assert "worker's, with freed memory kept" in note and "RuntimeError: not in this process" in note
