"""Pitfall reports built from chosen times, as the engine words them (engine/common/lessons.py's own
_side and _pitfall), for the view and chart tests: each time a median with a ±``spread`` range.
And the check every measured pitfall passes: medians inside their ranges, the effect they decide."""

from __future__ import annotations

from typing import Any

from jaxcompare.engine.common.lessons import DECIDING_SAMPLES, EFFECTS, _pitfall, _side
from jaxcompare.model.stats import Stats


def timed(seconds: float, spread: float = 0.02) -> Stats:
    """Four samples around ``seconds`` (as few as the lab takes: DECIDING_SAMPLES): the median,
    and a range of ±``spread``."""
    return Stats.from_samples([seconds * (1 - spread), seconds, seconds, seconds * (1 + spread)])


def side(label: str, code: str, jax_s: float, numpy_s: float, spread: float = 0.02, **extra: Any):
    """A side dict and its (JAX, NumPy) timings."""
    timing = (timed(jax_s, spread), timed(numpy_s, spread))
    return _side(label, code, *timing, **extra), timing


def made_pitfall(pid: str, naive: tuple[float, float], correct: tuple[float, float], *,
                 extra: tuple[tuple[float, float], ...] = (), spread: float = 0.02, labels=("naive", "correct"),
                 **kwargs: Any) -> dict[str, Any]:
    """A pitfall whose sides took (JAX, NumPy) seconds; one NumPy time on both sides is one
    shared measurement, as the lab's baseline is."""
    naive_side, naive_t = side(labels[0], "n()", *naive, spread)
    correct_side, correct_t = side(labels[1], "c()", *correct, spread)
    if naive[1] == correct[1]:
        correct_t = (correct_t[0], naive_t[1])
    also = [side(f"also {i}", "a()", *e, spread)[0] for i, e in enumerate(extra)]
    return _pitfall(pid, naive_side, correct_side, (naive_t, correct_t), also, **kwargs)


def check_ranges_and_effect(pitfall: dict) -> None:
    """Each median inside its 95% range, and the effect the one its range decides."""
    ranged = True
    for side in [pitfall["naive"], pitfall["correct"], *pitfall["extra"]]:
        for key, median in (("range", "seconds"), ("numpy_range", "numpy_seconds")):
            if side[key] is None:  # a single sample (a very busy machine): no range to claim
                ranged = ranged and side not in (pitfall["naive"], pitfall["correct"])
                continue
            low, high = side[key]
            assert 0 <= low <= side[median] <= high, (pitfall["id"], side["label"], key)
    assert pitfall["effect"] in EFFECTS
    if not ranged or pitfall["effect_range"] is None:
        assert pitfall["effect"] == "within_noise" and pitfall["effect_range"] is None
        return
    low, high = pitfall["effect_range"]
    assert low <= pitfall["effect_factor"] <= high
    assert (pitfall["effect"] == "flatters") == (low > 1) and (pitfall["effect"] == "hurts") == (high < 1)


def check_restarts(p: dict, jit: dict) -> None:
    """Pitfall 7 as a run of all eight measured it (``jit``: pitfall 1 of the same run): a
    restart compiles again unless the persistent cache is hit, and it never flatters JAX."""
    cold, hit = p["naive"], p["correct"]
    fill, start = p["extra"]
    assert cold["cache_hits"] == 0 and hit["cache_hits"] == hit["processes"]  # every cached process hit
    assert cold["processes"] == hit["processes"] >= DECIDING_SAMPLES  # quick's two a side decide nothing
    assert fill["cache_hits"] == 0 and fill["cache_files"] >= 1  # the first process wrote what the others read
    # Same run, processes taken in turns: reading the executable costs less than compiling it.
    assert hit["compile_seconds"] < cold["compile_seconds"]
    assert p["effect"] != "flatters", p  # a restart without the cache never makes JAX look faster
    assert start["numpy_seconds"] is None and start["seconds"] > 0
    assert cold["numpy_seconds"] == hit["numpy_seconds"] == jit["naive"]["numpy_seconds"]  # the lab's baseline
    assert p["doc"].endswith("/persistent_compilation_cache.html")
    check_ranges_and_effect(p)
