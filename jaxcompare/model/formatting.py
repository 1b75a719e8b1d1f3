"""Words and numbers for people: times, speedups, bytes, strict JSON; shared by every front end."""

from __future__ import annotations

import json
import math
from typing import Any

from .cases import format_shape
from .profile import Profile
from .result import Result


def format_time(seconds: float | None) -> str:
    """Seconds with an SI unit and three significant figures: 485 µs, 16.2 ms."""
    if seconds is None or not math.isfinite(seconds):
        return "—"
    if seconds == 0:
        return "0 s"
    seconds = float(f"{seconds:.3g}")  # round first, so 0.9997 ms reads "1 ms", not "1e+03 µs"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9)):
        if abs(seconds) >= scale or unit == "ns":
            value = seconds / scale
            return f"{value:.3g} {unit}" if value < 1000 else f"{value:.0f} {unit}"
    return f"{seconds:.3g} s"


def format_share(share: float | None) -> str:
    """A fraction as a percentage: '87%', '0.4%', '<0.1%', '—' when unknown."""
    if share is None or not math.isfinite(share):
        return "—"
    if 0 < share < 0.001:
        return "<0.1%"
    return f"{share:.0%}" if share >= 0.01 or share == 0 else f"{share:.1%}"


def gap_sentence(profile: Profile) -> str:
    """'host wall 1.2 ms per call, device busy 0.3 ms (25%); the gap, 0.9 ms (75%), is dispatch,
    launch and sync overhead', or why there is no profile."""
    if not profile.ok:
        return f"no profile: {profile.error or 'the trace held no device ops'}"
    return (f"host wall {format_time(profile.wall_s)} per call, device busy {format_time(profile.device_busy_s)} "
            f"({format_share(profile.busy_share)}); the gap, {format_time(profile.gap_s)} "
            f"({format_share(profile.gap_share)}), is dispatch, launch and sync overhead")


def op_kind_text(kind: str, holds: tuple[str, ...] | list[str]) -> str:
    """'fusion (dot)', 'custom-call (lapack_sgesdd_ffi)', 'dot'."""
    return f"{kind} ({', '.join(holds)})" if holds else kind


PERFETTO_HINT = ("open it in ui.perfetto.dev (Open trace file: your browser reads it, nothing is uploaded) or in "
                 "XProf/TensorBoard (pip install 'jax[xprof]')")


def format_factor(factor: float | None) -> str:
    """A ratio as '1.23x' ('—' when unknown): speedups, slowdowns, how many times."""
    if factor is None or not math.isfinite(factor):
        return "—"
    return f"{factor:.2f}x"


def faster_or_slower(speedup: float) -> tuple[str, float]:
    """('faster', 2.0) for a speedup of 2 and ('slower', 2.0) for 0.5: the factor is at least 1,
    so no sentence says '0.5x faster'."""
    if speedup >= 1:
        return "faster", speedup
    return "slower", 1 / speedup if speedup > 0 else math.inf


def format_speedup(speedup: float | None) -> str:
    """'2.50x (JAX faster)' or '0.50x (JAX 2.0x slower)': the number and which side wins."""
    if speedup is None or not math.isfinite(speedup):
        return "—"
    word, factor = faster_or_slower(speedup)
    side = "JAX faster" if word == "faster" else f"JAX {factor:.1f}x slower"
    return f"{format_factor(speedup)} ({side})"


def format_bytes(n: float | None) -> str:
    """Bytes in binary units, three significant figures: 80 GiB, 512 B; '—' when unknown."""
    if n is None:
        return "—"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.3g} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024
    return f"{n:.3g} TiB"


def format_crossover(elements: float | None, ndim: int, *, short: bool = False) -> str:
    """Where the speedup crosses 1x: '≈ 250,000 elements (≈ 500x500)', or for a metric tile
    (``short``) '≈ 500x500' for matrices and '≈ 2.5M elements' for vectors."""
    if elements is None:
        return "none here" if short else "none in this range"
    side = format_shape([round(elements ** (1 / ndim))] * ndim) if ndim >= 2 else None
    if not short:
        return f"≈ {elements:,.0f} elements" + (f" (≈ {side})" if side else "")
    if side:
        return f"≈ {side}"
    for unit, scale in (("M", 1e6), ("k", 1e3)):
        if elements >= scale:
            return f"≈ {elements / scale:.3g}{unit} elements"
    return f"≈ {elements:.0f} elements"


def format_break_even(calls: float | None) -> str:
    if calls is None:
        return "never (JAX is not faster per call)"
    return f"{math.ceil(calls):,} calls"


def _json_safe(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    return value


def dumps(data: Any, indent: int | None = 2) -> str:
    """Strict JSON: infinities and NaN become null."""
    return json.dumps(_json_safe(data), indent=indent, allow_nan=False)


def ipython_lines(result: Result) -> str:
    """IPython lines that reproduce the measurement by hand (the JAX docs' protocol)."""
    spec = result.spec
    info = result.case_info
    shape = tuple(spec.shape)
    x64 = spec.precision == "x64"
    return "\n".join([
        "import numpy as np, jax",
        f'jax.config.update("jax_enable_x64", {x64})  # before any JAX array is created',
        "from jaxcompare.catalog import get_case",
        f"case = get_case({spec.case!r})" + (f"  # from {spec.cases_file}" if spec.cases_file else ""),
        f"x_np = case.make_inputs({shape}, np.dtype({result.dtype!r}), np.random.default_rng({spec.seed}))",
        f"%timeit case.numpy_fn(*x_np)              # NumPy: {info.get('numpy_name', '')}",
        f'dev = jax.devices("{result.backend}")[0]',
        "%time x_jax = jax.block_until_ready(jax.device_put(x_np, dev))  # transfer",
        "f = jax.jit(case.jax_fn)",
        "%time jax.block_until_ready(f(*x_jax))    # first call: compile + run",
        "%timeit jax.block_until_ready(f(*x_jax))  # steady state, blocked",
        "%timeit f(*x_jax)                         # pitfall: dispatch only, not the work",
    ])
