"""Statistics of one timed phase: the median, its distribution-free CI, and the samples."""

from __future__ import annotations

import fractions
import functools
import math
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np


@functools.lru_cache(maxsize=4096)
def _ci_rank(n: int, confidence: float) -> int:
    """The smallest k with P(Binomial(n, 1/2) <= k) >= (1 - confidence) / 2 (binom.ppf),
    exactly, in integers. Not scipy.stats: its slow import would land inside a timed phase."""
    q = (1 - confidence) / 2
    if n > 1000:  # the normal approximation is exact to a rank or so here, and O(1)
        z = statistics.NormalDist().inv_cdf(q)
        return max(0, math.floor(n / 2 + z * math.sqrt(n) / 2 + 0.5))
    target = fractions.Fraction(q) * (1 << n)
    cumulative = 0
    for k in range(n + 1):
        cumulative += math.comb(n, k)
        if cumulative >= target:
            return k
    return n


def median_ci(samples: Sequence[float], confidence: float = 0.95) -> tuple[float, float]:
    """Distribution-free confidence interval of the median from order statistics."""
    xs = np.sort(np.asarray(samples, dtype=float))
    n = xs.size
    if n == 0:
        return math.nan, math.nan
    k = _ci_rank(n, confidence)
    return float(xs[max(k - 1, 0)]), float(xs[min(n - k, n - 1)])


@dataclass(frozen=True)
class Stats:
    """Statistics of one phase; every time is seconds per call."""

    median_s: float
    min_s: float
    mean_s: float
    std_s: float
    iqr_s: float
    n: int
    loops: int
    samples_s: tuple[float, ...] = field(repr=False)
    stable: bool = True
    unstable_reason: str | None = None
    ci_low_s: float = math.nan
    ci_high_s: float = math.nan
    # Sampled in several blocks (combine_blocks): each block's median, in the order timed.
    block_medians_s: tuple[float, ...] = ()

    @classmethod
    def from_samples(
        cls,
        samples_s: Sequence[float],
        loops: int = 1,
        stable: bool = True,
        unstable_reason: str | None = None,
    ) -> Stats:
        xs = np.asarray(samples_s, dtype=float)
        if xs.size == 0:
            raise ValueError("no samples")
        q1, med, q3 = np.percentile(xs, [25, 50, 75])
        lo, hi = median_ci(xs)
        return cls(
            median_s=float(med),
            min_s=float(xs.min()),
            mean_s=float(xs.mean()),
            std_s=float(xs.std(ddof=1)) if xs.size > 1 else 0.0,
            iqr_s=float(q3 - q1),
            n=int(xs.size),
            loops=int(loops),
            samples_s=tuple(float(x) for x in xs),
            stable=bool(stable),
            unstable_reason=unstable_reason,
            ci_low_s=lo,
            ci_high_s=hi,
        )

    @property
    def rel_ci(self) -> float:
        """Half-width of the median's 95% CI relative to the median."""
        if not self.median_s > 0:
            return math.inf
        return (self.ci_high_s - self.ci_low_s) / 2 / self.median_s

    @property
    def range_s(self) -> tuple[float, float]:
        """Where the median lies: its 95% CI, or the samples' range where the CI is unknown."""
        if math.isfinite(self.ci_low_s) and math.isfinite(self.ci_high_s):
            return self.ci_low_s, self.ci_high_s
        return self.min_s, max(self.samples_s, default=self.median_s)

    def below(self, other: Stats) -> bool:
        """Whether this median is below ``other``'s beyond both ranges (the ranges do not meet)."""
        return self.range_s[1] < other.range_s[0]

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["samples_s"] = list(self.samples_s)
        data["block_medians_s"] = list(self.block_medians_s)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Stats:
        data = dict(data)
        data["samples_s"] = tuple(float(x) for x in data.get("samples_s", ()))
        data["block_medians_s"] = tuple(float(x) for x in data.get("block_medians_s") or ())
        for key in ("ci_low_s", "ci_high_s"):
            if data.get(key) is None:
                data[key] = math.nan
        return cls(**data)
