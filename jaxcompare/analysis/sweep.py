"""Size sweeps: a ladder of shapes from small to large, and where JAX starts to win."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ..model.cases import Case
from ..model.errors import BadInput
from ..model.result import Result
from ..model.spec import parse_shape
from .trust import JAX_FASTER, NUMPY_FASTER, direction, trust, trusted


def ladder(case: Case, steps: int = 5, largest: Sequence[int] | None = None) -> list[tuple[int, ...]]:
    """Shapes spaced geometrically from the case's small to its large preset (inclusive)."""
    small = case.small_shape
    large = tuple(largest) if largest is not None else case.large_shape
    if len(small) != len(large):
        return [small, large]
    steps = max(2, min(int(steps), 12))
    shapes: list[tuple[int, ...]] = []
    for i in range(steps):
        t = i / (steps - 1)
        shape = tuple(max(1, round(a * (b / a) ** t)) for a, b in zip(small, large, strict=True))
        if shape not in shapes:
            shapes.append(shape)
    return shapes


def parse_sizes(case: Case, sizes: Sequence[str]) -> list[tuple[int, ...]]:
    """'--sizes 10 100 1000' (a plain n fills every dimension of the large preset's rank)
    or '--sizes 10x10 100x100'; each checked against the case's shape rule."""
    shapes = []
    for text in sizes:
        text = str(text).strip()
        if text.isdecimal() or (text.replace("_", "").isdecimal()):
            shape = (int(text.replace("_", "")),) * len(case.large_shape)
            shape = parse_shape(list(shape))
        else:
            shape = parse_shape(text)
        case.check_shape(shape)
        shapes.append(shape)
    if not shapes:
        raise BadInput("--sizes needs at least one size")
    return sorted(set(shapes), key=math.prod)


def crossover(results: Sequence[Result]) -> float | None:
    """Element count where the speedup crosses 1 (log-log interpolation) between trusted points
    (analysis/trust.py); None if it never does. A doubtful point never places the crossover."""
    points = sorted((math.prod(r.shape), r.speedup) for r in results
                    if math.isfinite(r.speedup) and r.speedup > 0 and trusted(r))
    for (n0, s0), (n1, s1) in zip(points, points[1:], strict=False):
        if s0 < 1 <= s1 or s0 >= 1 > s1:
            l0, l1 = math.log(s0), math.log(s1)
            if l1 == l0:
                return float(n0)
            t = (0 - l0) / (l1 - l0)
            return float(math.exp(math.log(n0) + t * (math.log(n1) - math.log(n0))))
    return None

def doubtful_directions(results: Sequence[Result]) -> list[Result]:
    """The sizes set aside that still say which side is faster (trust.direction), smallest first:
    where a sweep's verdict and crossover tile read a side from doubtful sizes, these are they."""
    doubtful = (r for r in results if not trusted(r) and direction(r).side is not None)
    return sorted(doubtful, key=lambda r: math.prod(r.shape))


def crossover_bracket(results: Sequence[Result]) -> tuple[tuple[int, ...] | None, tuple[int, ...] | None] | None:
    """Where the crossover lies by the sizes whose side is sure (trust.direction), doubtful or not:
    (the largest shape NumPy is faster at, the smallest JAX is faster at), either None where no
    size says so; None where no size has a direction or the sides interleave."""
    points = sorted(((math.prod(r.shape), r.shape, direction(r).side) for r in results), key=lambda p: p[0])
    numpy = [shape for _n, shape, side in points if side == NUMPY_FASTER]
    jax = [shape for _n, shape, side in points if side == JAX_FASTER]
    if not (numpy or jax) or (numpy and jax and math.prod(numpy[-1]) > math.prod(jax[0])):
        return None
    return (numpy[-1] if numpy else None), (jax[0] if jax else None)


def sweep_document(case: str, precision: str, results: Sequence[Result], cross: float | None) -> dict[str, Any]:
    """The JSON of a sweep (``jaxcompare sweep --json``, the notebook's Sweep.to_json): each point
    says whether it is trusted and, if not, why it was set aside (a trust.WHY key), and which side
    is faster for sure (trust.direction), trusted or not."""
    points = []
    for r in results:
        verdict = trust(r)
        points.append(r.to_dict() | {"trusted": verdict.trusted, "set_aside": verdict.why,
                                     "direction": direction(r).side})
    return {"case": case, "precision": precision, "crossover_elements": cross, "results": points}
