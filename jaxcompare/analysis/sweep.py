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

LADDER_STEPS = (2, 12)  # the fewest and the most sizes a ladder holds


def ladder(case: Case, steps: int = 5, largest: Sequence[int] | None = None) -> list[tuple[int, ...]]:
    """Shapes spaced geometrically from the case's small to its large preset (inclusive)."""
    small = case.small_shape
    large = tuple(largest) if largest is not None else case.large_shape
    if len(small) != len(large):
        return [small, large]
    steps = max(LADDER_STEPS[0], min(int(steps), LADDER_STEPS[1]))
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


def firm(result: Result) -> bool:
    """Whether ``result`` may place a crossover: trusted, and its whole 95% range on one side of 1x
    (trust.direction). A size set aside, or one whose range holds 1x, never places it: a 1.03x whose
    range runs from 0.81x says nothing of where JAX starts to win."""
    return trusted(result) and direction(result).side is not None


def crossover(results: Sequence[Result]) -> float | None:
    """Element count where the speedup crosses 1 (log-log interpolation) between firm points (trusted,
    their ranges excluding 1x: ``firm``); None if it never does, or where a size between the two whose
    range lies wholly on one side of 1x (set aside or not) is on the other side of the interpolated point:
    a crossover at 6.4e3 elements beside a 100x100 whose range is 0.59-0.98x would say both."""
    points = sorted((math.prod(r.shape), r.speedup) for r in results
                    if math.isfinite(r.speedup) and r.speedup > 0 and firm(r))
    for (n0, s0), (n1, s1) in zip(points, points[1:], strict=False):
        if s0 < 1 <= s1 or s0 >= 1 > s1:
            l0, l1 = math.log(s0), math.log(s1)
            t = 0.0 if l1 == l0 else (0 - l0) / (l1 - l0)
            at = float(math.exp(math.log(n0) + t * (math.log(n1) - math.log(n0))))
            below, above = (NUMPY_FASTER, JAX_FASTER) if s0 < 1 else (JAX_FASTER, NUMPY_FASTER)
            between = ((math.prod(r.shape), direction(r).side) for r in results if n0 < math.prod(r.shape) < n1)
            if any((n < at and side == above) or (n > at and side == below) for n, side in between):
                return None
            return at
    return None

def doubtful_directions(results: Sequence[Result]) -> list[Result]:
    """The sizes set aside that still say which side is faster (trust.direction), smallest first:
    where a sweep's verdict and crossover tile read a side from doubtful sizes, these are they."""
    doubtful = (r for r in results if not trusted(r) and direction(r).side is not None)
    return sorted(doubtful, key=lambda r: math.prod(r.shape))


def crossover_bracket(results: Sequence[Result]) -> tuple[tuple[int, ...] | None, tuple[int, ...] | None] | None:
    """Where the crossover lies by the firm sizes (trusted, their ranges excluding 1x): (the largest
    shape NumPy is faster at, the smallest JAX is faster at), either None where no firm size says so;
    None where none does or the sides interleave. A size set aside names its side in the verdict, but
    never places the crossover (a busy 398x398 once put it below a 1000x1000 at 0.70x)."""
    points = sorted(((math.prod(r.shape), r.shape, direction(r).side) for r in results if firm(r)),
                    key=lambda p: p[0])
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
