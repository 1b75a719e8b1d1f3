"""Pitfall reports built from chosen times, as the engine words them (engine.pitfalls' own
_side and _pitfall), for the view and chart tests: each time a median with a ±``spread`` range."""

from __future__ import annotations

from typing import Any

from jaxcompare.engine.pitfalls import _pitfall, _side
from jaxcompare.model.stats import Stats


def timed(seconds: float, spread: float = 0.02) -> Stats:
    """Three samples around ``seconds``: the median, and a 95% range of ±``spread``."""
    return Stats.from_samples([seconds * (1 - spread), seconds, seconds * (1 + spread)])


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
