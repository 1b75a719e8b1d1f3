"""Where a roofline chart's lines go, apart from how they are drawn: the app's Altair charts and
the notebook's inline SVG (which may not import Altair) place roofs, ridge points and log decades
with these same functions, so one roof never gets two shapes."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..model.roofline import ROOFLINE_SIDES, Roofline

# A roof is drawn this far (in decades) either side of the points and ridge points it frames.
MARGIN_DECADES = 1


@dataclass(frozen=True)
class Roof:
    """One pair of ceilings (either may be unknown, not both) and the sides it holds: on a
    CPU-only host NumPy and JAX share one. ``peak`` is the flat roof at the call's mix."""

    peak: float | None
    bandwidth: float | None
    sides: tuple[str, ...]

    @property
    def ridge(self) -> float | None:
        """The intensity where the memory slope meets the flat (FLOP/byte); None without both."""
        return self.peak / self.bandwidth if self.peak and self.bandwidth else None

    def corners(self, x_lo: float, x_hi: float) -> list[tuple[float, float]]:
        """The roof's polyline across ``x_lo``..``x_hi`` as (intensity, FLOP/s) corners."""
        if self.peak and self.bandwidth:
            return [(x_lo, self.bandwidth * x_lo), (self.peak / self.bandwidth, self.peak), (x_hi, self.peak)]
        if self.bandwidth:
            return [(x_lo, self.bandwidth * x_lo), (x_hi, self.bandwidth * x_hi)]
        return [(x_lo, self.peak), (x_hi, self.peak)]


def roofs(roofline: Roofline) -> list[Roof]:
    """One roof per distinct pair of ceilings, with the side keys (numpy, jax, jax_cpu) it holds.
    The flat roof is the compute roof at this call's mix: lower than the peak where its
    transcendentals bound it."""
    found: dict[tuple[float | None, float | None], list[str]] = {}
    for name in ROOFLINE_SIDES:
        side = roofline.side(name)
        if side is None or not (side.peak_flops_per_s or side.bandwidth_bytes_per_s):
            continue
        flat = roofline.compute_roof_flops_per_s(name) or side.peak_flops_per_s
        found.setdefault((flat or None, side.bandwidth_bytes_per_s or None), []).append(name)
    return [Roof(peak, bandwidth, tuple(sides)) for (peak, bandwidth), sides in found.items()]


def decades(lo: float, hi: float, margin: int = 0) -> tuple[float, float, list[float]]:
    """The powers of ten around ``lo`` and ``hi``, ``margin`` decades wider each way, and the
    ticks between them."""
    low = math.floor(math.log10(lo)) - margin
    high = math.ceil(math.log10(hi)) + margin
    high = max(high, low + 1)
    return 10.0**low, 10.0**high, [10.0**e for e in range(low, high + 1)]


def intensity_domain(intensities: list[float], roof_list: list[Roof]) -> tuple[float, float, list[float]]:
    """The x axis: the points' intensities and every ridge, MARGIN_DECADES wider each way."""
    xs = [*intensities, *(roof.ridge for roof in roof_list if roof.ridge)]
    return decades(min(xs), max(xs), MARGIN_DECADES)
