"""NumPy as the user's own program runs it: the worker keeps freed memory (engine/worker/memory.py), a plain
process does not, and where the allocator can matter the headline is the plain process's figure,
with the worker's beside it. glibc's trimming is forced here through its own environment variables
(a tiny mmap threshold, no trim threshold), which the plain process inherits as a user's would and
the worker's mallopt overrides."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
from support import QUICK

from jaxcompare import Result, Spec
from jaxcompare.analysis.advice import advice
from jaxcompare.analysis.summary import verdict_lines
from jaxcompare.analysis.text import numpy_speeds_line
from jaxcompare.engine.worker.inputs import build_inputs
from jaxcompare.engine.worker.measure import measure
from jaxcompare.engine.worker.plain_numpy import plain_numpy_runtime
from jaxcompare.model.cases import Case

# Every 1 MB temporary of the elementwise case at 250000 is mmapped and unmapped on each call: 4.4x
# slower than with freed memory kept, measured here (no BLAS: its threads' own modes stay out of it).
TRIMMING = {"MALLOC_MMAP_THRESHOLD_": "65536", "MALLOC_TRIM_THRESHOLD_": "0"}


def busy_plain(notes) -> bool:
    """Whether NumPy's plain process was timed while other programs ran (its note says so)."""
    return any("plain process ran while other programs used" in note for note in notes)


def quiet(spec, case=None):
    """measure(); on a busy machine the plain process's figure may be slow (its note says so), so it
    is measured again, up to three times, until other programs left it alone."""
    for _ in range(3):
        result = measure(spec, case=case)
        if not busy_plain(result.notes):
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


def test_small_arrays_are_timed_once(tiny_result):
    # No array reaches glibc's 128 KiB threshold: the two speeds are one, and no plain process runs.
    r = tiny_result  # centered Gram 10x10, quick (conftest)
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


# The JAX docs' benchmarking lines, typed as the docs type them (x_np = np.ones(..., float32), %timeit
# as timeit's autorange and seven repeats), for an elementwise chain whose two 4 MB temporaries glibc
# keeps in the heap or hands back each call, depending on what the process freed before: 2.2 ms plain,
# 0.84 ms with its inputs made in float64 and cast, on this machine class. No jaxcompare import.
LITERAL = """
import timeit
import numpy as np

def f(x):
    return (x * 2.0 + 1.0) * x

x_np = np.ones((1000, 1000), dtype=np.float32)
timer = timeit.Timer(lambda: f(x_np))
loops, _ = timer.autorange()
print(sorted(timer.repeat(7, loops))[3] / loops)
"""
KEPT_ENV = {"MALLOC_MMAP_THRESHOLD_": str(1 << 30), "MALLOC_TRIM_THRESHOLD_": str(1 << 30)}


def _literal_seconds(extra_env: dict[str, str]) -> float:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")} | extra_env
    out = subprocess.run([sys.executable, "-c", LITERAL], env=env, capture_output=True, text=True, check=True)
    return float(out.stdout.split()[-1])


def _chain(x):
    return (x * 2.0 + 1.0) * x


def _cast(shape, dtype, rng):
    return (rng.standard_normal(shape).astype(dtype),)  # frees a float64 block twice the input's size


def _direct(shape, dtype, rng):
    return (rng.standard_normal(shape, dtype=dtype),)


@pytest.fixture(scope="module")
def literal():
    """The docs' lines in a plain process, and under glibc's thresholds at 1 GiB (freed memory kept)."""
    return {"plain": _literal_seconds({}), "kept": _literal_seconds(KEPT_ENV)}


def _nearer_plain(seconds: float, literal: dict[str, float]) -> bool:
    return abs(math.log(seconds / literal["plain"])) < abs(math.log(seconds / literal["kept"]))


def test_the_plain_figure_is_the_docs_lines_figure_however_the_inputs_were_built(literal, monkeypatch):
    for key in [k for k in os.environ if k.startswith("MALLOC_")]:
        monkeypatch.delenv(key)
    # The two regimes the test tells apart must be apart on this machine, or it decides nothing.
    assert literal["plain"] > 1.5 * literal["kept"], literal
    import jax.numpy as jnp

    spec = Spec("chain", (1000, 1000), timing=QUICK)
    figures = {}
    for route, make in (("float64 then cast", _cast), ("float32 directly", _direct)):
        case = Case(name="chain", numpy_fn=_chain, jax_fn=_chain, make_inputs=make)
        figures[route] = plain_numpy_runtime(case, spec, build_inputs(case, spec), by_value=True).runtime.median_s
    # A notebook's arrays, made in float64 and cast in this process, sent to the worker by value.
    from jaxcompare.notebook import compare

    x = np.random.default_rng(0).standard_normal((1000, 1000)).astype(np.float32)
    for _ in range(3):  # busy, the plain figure may be slow (its note says so): again, up to three times
        result = compare(_chain, lambda a: (a * 2.0 + 1.0) * jnp.asarray(a), x, timing="quick")
        if not busy_plain(result.notes):
            break
    assert result.numpy_kept is not None, result.notes
    figures["received from a notebook"] = result.numpy_runtime.median_s
    wrong = {route: seconds for route, seconds in figures.items() if not _nearer_plain(seconds, literal)}
    assert not wrong, (wrong, literal)
    # The worker's own figure, freed memory kept, is the other regime's.
    assert not _nearer_plain(result.numpy_kept.median_s, literal), (result.numpy_kept.median_s, literal)


CHAIN_CASES = '''
import numpy as np
from jaxcompare import Case

def chain(x):
    return (x * 2.0 + 1.0) * x

def make_inputs(shape, dtype, rng):
    return (rng.standard_normal(shape).astype(dtype),)

CASES = [Case(name="chain", numpy_fn=chain, jax_fn=chain, make_inputs=make_inputs)]
'''


def test_the_pitfalls_lab_gives_the_numpy_figure_run_gives(tmp_path, literal, monkeypatch):
    # The lab's baseline NumPy is the figure every section's speedup divides: the plain one, as `run` has it.
    for key in [k for k in os.environ if k.startswith("MALLOC_")]:
        monkeypatch.delenv(key)
    from jaxcompare.engine.worker.pitfalls import measure_pitfalls

    path = tmp_path / "chain_cases.py"
    path.write_text(CHAIN_CASES)
    spec = Spec("chain", (1000, 1000), timing=QUICK, cases_file=str(path))
    # A busy machine may slow either plain process, and this VM's speed moves by half between two moments
    # (1.53x between the two, a clean clone's serial part): measured again, up to three times.
    for _ in range(3):
        result = measure(spec)
        report = measure_pitfalls(spec, ("jit",))
        [entry] = report["numpy_speeds"]
        ratio = entry["runtime"]["median_s"] / result.numpy_runtime.median_s
        if not busy_plain(result.notes) and not entry["plain_process"]["busy"] and 1 / 1.3 < ratio < 1.3:
            break
    assert result.numpy_kept is not None and entry["kept_memory"] is not None, (result.notes, entry["note"])
    lab_plain = entry["runtime"]["median_s"]
    assert _nearer_plain(lab_plain, literal) and _nearer_plain(result.numpy_runtime.median_s, literal), (
        lab_plain, result.numpy_runtime.median_s, literal)
    assert 1 / 1.3 < lab_plain / result.numpy_runtime.median_s < 1.3
    # Every section's speedup divides that figure.
    assert report["pitfalls"][0]["correct"]["numpy_seconds"] == lab_plain
