"""`jaxcompare pitfalls --json`: all seven sections from the CLI, and pitfall 7 (fresh
processes with and without the persistent compilation cache) checked on that one run. Beside
other tests: reading a cached executable against compiling it is several times apart."""

from __future__ import annotations

import json

import pytest
from _pitfalls import check_ranges_and_effect
from support import cli

from jaxcompare.engine.pitfalls import DECIDING_SAMPLES, EFFECTS, SECTIONS

pytestmark = pytest.mark.slow  # 20 s or more (45 s beside other tests): collected first, so workers end together


@pytest.fixture(scope="module")
def cli_doc() -> dict:
    proc = cli("pitfalls", "--shape", "200x200", "--quick", "--json", "-", timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_pitfalls_cli_json(cli_doc):
    doc = cli_doc
    assert [p["id"] for p in doc["pitfalls"]] == ["jit", "async", "dtype", "transfer", "size", "tf32", "cache"]
    for pitfall in doc["pitfalls"]:
        assert {"id", "title", "naive", "correct"} <= set(pitfall)
        assert pitfall["effect"] in EFFECTS
        for side in ("naive", "correct"):
            assert {"seconds", "range", "conclusion"} <= set(pitfall[side])
    cache = doc["pitfalls"][-1]
    assert cache["doc"].endswith("/persistent_compilation_cache.html")
    assert cache["correct"]["compile_seconds"] < cache["naive"]["compile_seconds"]


def test_a_restarted_process_compiles_again_unless_the_persistent_cache_is_hit(cli_doc):
    p = cli_doc["pitfalls"][SECTIONS.index("cache")]
    cold, hit = p["naive"], p["correct"]
    fill, start = p["extra"]
    assert cold["cache_hits"] == 0 and hit["cache_hits"] == hit["processes"]  # every cached process hit
    assert cold["processes"] == hit["processes"] >= DECIDING_SAMPLES  # quick's two a side decide nothing
    assert fill["cache_hits"] == 0 and fill["cache_files"] >= 1  # the first process wrote what the others read
    # Same run, processes taken in turns: reading the executable costs less than compiling it.
    assert hit["compile_seconds"] < cold["compile_seconds"]
    assert p["effect"] != "flatters", p  # a restart without the cache never makes JAX look faster
    assert start["numpy_seconds"] is None and start["seconds"] > 0
    jit = cli_doc["pitfalls"][SECTIONS.index("jit")]
    assert cold["numpy_seconds"] == hit["numpy_seconds"] == jit["naive"]["numpy_seconds"]  # the lab's baseline
    check_ranges_and_effect(p)
