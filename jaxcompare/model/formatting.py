"""Words and numbers for people: times, speedups, bytes, strict JSON; shared by every front end."""

from __future__ import annotations

import json
import math
from typing import Any

from .cases import format_shape
from .profile import Profile
from .result import Result
from .sides import link_name


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


def format_flops(flops_per_s: float | None) -> str:
    """A FLOP rate with a decimal prefix, three significant figures: 142 GFLOP/s, 495 TFLOP/s."""
    if flops_per_s is None or not math.isfinite(flops_per_s):
        return "—"
    for unit, scale in (("PFLOP/s", 1e15), ("TFLOP/s", 1e12), ("GFLOP/s", 1e9), ("MFLOP/s", 1e6)):
        if flops_per_s >= scale:
            return f"{flops_per_s / scale:.3g} {unit}"
    return f"{flops_per_s:.3g} FLOP/s"


def format_percent(share: float | None) -> str:
    """A share as '61%', '2.4%' or '<0.1%' (small shares keep a digit); '—' when unknown."""
    if share is None or not math.isfinite(share):
        return "—"
    if share >= 0.095:
        return f"{share:.0%}"
    return f"{share:.1%}" if share >= 0.001 else "<0.1%"


def peak_sentence(result: Result) -> str | None:
    """How close each side came to its ceiling, in one sentence ("JAX reached 61% of the NVIDIA
    H200's TF32 peak (495 TFLOP/s); NumPy reached 45% of this CPU's measured float32 matmul rate
    (142 GFLOP/s)."); None for a case without a FLOP count."""
    peak = result.peak
    if peak is None:
        return None
    jax, numpy, cpu = (result.peak_fraction(side) for side in ("jax", "numpy", "jax_cpu"))
    cpu_label = f"{result.dtype} matmul"
    # Sides held to the CPU's measured rate at the same dtype share one clause.
    on_cpu = [("NumPy", numpy)] if peak.numpy_label == cpu_label else []
    if cpu is not None:
        on_cpu.append(("JAX on the CPU", cpu))
    if peak.source == "measured":
        on_cpu.insert(0, ("JAX", jax))
    parts = []
    if peak.source == "table":
        parts.append(f"JAX reached {format_percent(jax)} of {peak.describe()} ({format_flops(peak.flops_per_s)})")
    elif peak.source is None:
        parts.append(f"JAX's fraction of peak is unknown (no published {result.dtype} peak for the "
                     f"{peak.device} in the table)")
    if on_cpu:
        rate = peak.flops_per_s if peak.source == "measured" else (
            peak.cpu_flops_per_s or (peak.numpy_flops_per_s if peak.numpy_label == cpu_label else None))
        shares = [f"{name}{' reached' if i == 0 else ''} {format_percent(share)}"
                  for i, (name, share) in enumerate(on_cpu)]
        reached = shares[0] if len(shares) == 1 else f"{', '.join(shares[:-1])} and {shares[-1]}"
        parts.append(f"of this CPU's measured {cpu_label} rate ({format_flops(rate)}), {reached}")
    if peak.numpy_label != cpu_label:
        parts.append(f"NumPy reached {format_percent(numpy)} of {peak.describe_numpy()} "
                     f"({format_flops(peak.numpy_flops_per_s)})")
    text = "; ".join(parts) + "."
    return text[0].upper() + text[1:]


# Two runtimes closer than this factor read as "about as fast" in the three-side verdict.
SAME_WITHIN = 1.1


def third_side_verdict(result: Result) -> str | None:
    """Where a speedup comes from, with JAX on the CPU beside JAX on the accelerator: from XLA
    (JAX on the CPU already beats NumPy), from the device, or nowhere (the CPU beats the GPU at
    latency-bound sizes). None without the third side."""
    side = result.jax_cpu
    if side is None:
        return None
    accel = result.backend.upper() if result.backend in ("gpu", "tpu") else result.device_kind or result.backend
    numpy_s, device_s, cpu_s = result.numpy_runtime.median_s, result.runtime.median_s, side.runtime.median_s
    if not (numpy_s > 0 and device_s > 0 and cpu_s > 0):
        return None
    times = (f"NumPy {format_time(numpy_s)}, JAX on the CPU {format_time(cpu_s)}, "
             f"JAX on the {accel} {format_time(device_s)}")
    if 1 / SAME_WITHIN < cpu_s / device_s < SAME_WITHIN:
        # Within noise of each other: the device adds nothing measurable over XLA on the CPU.
        if max(cpu_s, device_s) < numpy_s:
            return (f"The speedup comes from XLA, not from the {accel}: JAX on the CPU is about as fast as on "
                    f"the {accel} (within {SAME_WITHIN - 1:.0%}) and {format_factor(numpy_s / cpu_s)} faster "
                    f"than NumPy ({times}).")
        numpy_vs = "is faster than both" if numpy_s < min(cpu_s, device_s) else "falls between them"
        return (f"JAX is about as fast on the CPU as on the {accel} (within {SAME_WITHIN - 1:.0%}), and NumPy "
                f"{numpy_vs} ({times}).")
    if cpu_s < device_s:
        vs_numpy = "faster" if cpu_s < numpy_s else "slower"
        return (f"JAX on the CPU is faster than on the {accel} here ({format_factor(device_s / cpu_s)}), and "
                f"{vs_numpy} than NumPy: at this size the {accel}'s launch and synchronisation latency cost more "
                f"than its throughput brings ({times}).")
    if device_s >= numpy_s:
        return (f"The {accel} beats JAX on the CPU ({format_factor(cpu_s / device_s)}) but not NumPy ({times}).")
    if cpu_s >= numpy_s:
        return (f"The speedup comes from the {accel}, not from XLA: JAX on the CPU is "
                f"{format_factor(cpu_s / numpy_s)} slower than NumPy, on the {accel} "
                f"{format_factor(numpy_s / device_s)} faster ({times}).")
    return (f"The speedup comes from XLA and the {accel} together: JAX on the CPU is already "
            f"{format_factor(numpy_s / cpu_s)} faster than NumPy, and the {accel} adds "
            f"{format_factor(cpu_s / device_s)} ({times}).")


def format_bandwidth(bytes_per_s: float | None) -> str:
    """Bytes per second in decimal units, as links are quoted: 12.3 GB/s, 850 MB/s."""
    if bytes_per_s is None or not math.isfinite(bytes_per_s):
        return "—"
    for unit, scale in (("TB/s", 1e12), ("GB/s", 1e9), ("MB/s", 1e6), ("kB/s", 1e3)):
        if bytes_per_s >= scale:
            return f"{bytes_per_s / scale:.3g} {unit}"
    return f"{bytes_per_s:.3g} B/s"


def transfer_rate_text(result: Result) -> str:
    """What the transfer moved and how fast: '12.3 GB/s host→device over PCIe', 'no copy: the
    CPU backend aliased the NumPy buffer', '1.2 GB/s, a copy within host memory'; '' when the
    size was not recorded."""
    if result.transfer_zero_copy:
        return "no copy: the CPU backend aliased the NumPy buffer"
    rate = result.transfer_bytes_per_s
    if rate is None:
        return ""
    link = link_name(result.backend, result.device_kind)
    if link is None:
        return f"{format_bandwidth(rate)}, a copy within host memory"
    return f"{format_bandwidth(rate)} host→device over {link}"


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
