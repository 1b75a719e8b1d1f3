"""What would help most: a few sentences, each with its evidence, from what holds the JAX side
back (the roofline's limit) and what its one-off costs are made of (the break-even).

Derived on read, like the checklist, not stored: every sentence is a pure function of numbers the
Result already records (the roofline, the phases, the device's published peaks), so one fact lives
in one place and a saved result gets a corrected rule too. The JSON documents that carry the
checklist carry ``advice_document`` beside it. Each text is English, filled from an ``N_()``
template (recorded text): a reader sees it through ``translate_text``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from ..i18n import N_
from ..model.formatting import format_bandwidth, format_flops, format_percent, format_time
from ..model.peaks import peak_for
from ..model.platforms import platform
from ..model.result import Result
from ..model.roofline import OVERHEAD_CALLS, RooflineSide
from .summary import break_even_bounds
from .trust import JAX_FASTER, direction, trusted

# The rules, in the order they are offered: what holds the call back comes before its one-off costs.
RULES = ("overhead", "memory", "float64", "transfer", "compile", "numpy_memory")
# A break-even under this many calls is paid back almost at once: no advice about one-off costs.
BREAK_EVEN_WORTH = 10.0

OVERHEAD = N_("JAX's blocked call takes {runtime}, {calls} empty jitted calls ({empty} each), while its work at the "
              "roofline bound would take {ideal}: the call is mostly fixed cost. Do more work per call: vmap over "
              "a batch, jit the outer function, make fewer calls from Python.")
# Over OVERHEAD_CALLS empty calls the call is not mostly fixed cost, yet its work at the bound would take less than
# one (cumsum over 10^4 on this CPU: 149 µs, 35 empty calls, 1.6 µs at the bound): far from its bound, not overhead.
OVERHEAD_FAR = N_("JAX's blocked call takes {runtime}, {calls} empty jitted calls ({empty} each), though its work at "
                  "the roofline bound would take {ideal}: it runs far from its bound, and at this size even a call at "
                  "the bound would be mostly fixed cost. Do more work per call: vmap over a batch, jit the outer "
                  "function, make fewer calls from Python.")
OVERHEAD_NO_BOUND = N_("JAX's blocked call takes {runtime}, {calls} empty jitted calls ({empty} each): the call is "
                       "mostly fixed cost. Do more work per call: vmap over a batch, jit the outer function, make "
                       "fewer calls from Python.")
# The gap's share is of the traced calls, which the tracer slows (87 µs traced beside a 7.84 µs timed call): said
# as theirs, not as a share of the runtime quoted beside it.
OVERHEAD_PROFILED = N_("JAX's call takes {runtime}; in its profile's traced calls (the tracer slows them) the device "
                       "sat idle for {gap} of each: the call is mostly fixed cost on the host. Do more work per call: "
                       "vmap over a batch, jit the outer function, make fewer calls from Python.")
# A call read from its device time whose blocked call is mostly the host's round trip (blocked_limit).
OVERHEAD_ROUND_TRIP = N_("JAX's blocked call takes {runtime}, and the device is busy for {device} of it (the profile): "
                         "the rest, {share}, is the host's round trip. Block once after many calls rather than "
                         "after each (results stay on the device until you fetch them), or do more work per call: "
                         "vmap over a batch, jit the outer function.")
OVERHEAD_BACK_TO_BACK = N_("JAX's blocked call takes {runtime}; back to back, blocking once after the loop, a call "
                           "takes {device}. Block once after many calls rather than after each (results stay on the "
                           "device until you fetch them), or do more work per call: vmap over a batch, jit the "
                           "outer function.")
MEMORY = N_("JAX is memory-bound: it moves {rate}, {share} of the {bandwidth} the device's memory allows, at "
            "{intensity} FLOP/byte (the ridge point is at {ridge}). Make fewer passes over the data: fuse the steps "
            "under one jit and avoid temporaries; a smaller dtype than {dtype} moves fewer bytes where the "
            "accuracy allows.")
FLOAT64 = N_("JAX is compute-bound in float64 on the {device}, whose FP64 peak is {fp64} against {fp32} in float32 "
             "({label}), {factor}x the ceiling: run in x32 where the accuracy allows.")
TRANSFER = N_("Copying the inputs to the device ({transfer}) is {share} of the {one_off} JAX pays before it is "
              "faster ({break_even}): keep the data on the device between calls (jax.device_put "
              "once, then pass device arrays from one JAX function to the next).")
COMPILE = N_("The cold compile ({compile}) is {share} of the {one_off} JAX pays before it is faster ({break_even}): "
             "the persistent compilation cache (jax.config.update(\"jax_compilation_cache_dir\", "
             "...)) lets a restarted process load the executable instead of compiling it again.")
# The break-even as TRANSFER and COMPILE quote it: never a figure the Break-even tile withholds.
BREAK_EVEN_CALLS = N_("{calls} calls to break even")
BREAK_EVEN_RANGE = N_("{calls} calls to break even, the 95% range")
BREAK_EVEN_UNKNOWN = N_("how many calls to break even is not known: this run is not trusted")
NUMPY_MEMORY = N_("NumPy takes {plain} a call as a plain process runs it, and {kept} with freed memory kept ({factor} "
                  "faster): glibc hands the call's freed blocks back and faults them in again on the next call. In "
                  "your program, MALLOC_MMAP_THRESHOLD_=1073741824 and MALLOC_TRIM_THRESHOLD_=1073741824 in its "
                  "environment (or mallopt from ctypes) keep them; the speedup here is against the plain figure.")


@dataclass(frozen=True)
class Advice:
    """One rule that fired and its sentence (English, with the numbers it rests on)."""

    rule: str
    text: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def advice(result: Result) -> list[Advice]:
    """Every rule that fires for ``result``, in RULES order; [] when none does (or, for the limit
    rules, when the result was saved without a roofline)."""
    found = [_limit_advice(result), _break_even_advice(result), _numpy_memory_advice(result)]
    return [a for a in found if a is not None]


def advice_document(result: Result) -> list[dict[str, Any]]:
    """The ``advice`` list of a result's JSON document (docs/json.md)."""
    return [a.to_dict() for a in advice(result)]


def _limit_advice(result: Result) -> Advice | None:
    roofline = result.roofline
    if roofline is None or roofline.jax is None:
        return None
    limit, side = roofline.limit("jax"), roofline.jax
    if side.device_s and roofline.blocked_limit("jax") == "overhead":  # the round trip, beside the device's time
        return _round_trip_advice(side)
    if limit == "overhead" and side.host_gap_share is not None:  # the profile's own evidence
        return Advice("overhead", OVERHEAD_PROFILED.format(runtime=format_time(side.runtime_s),
                                                           gap=format_percent(side.host_gap_share)))
    if limit == "overhead" and side.empty_call_s:
        values = {"runtime": format_time(side.runtime_s), "empty": format_time(side.empty_call_s),
                  "calls": f"{side.runtime_s / side.empty_call_s:.1f}"}
        bound, work = roofline.bound_flops_per_s("jax"), roofline.work
        if bound and work is not None:
            far = side.runtime_s >= OVERHEAD_CALLS * side.empty_call_s
            return Advice("overhead", (OVERHEAD_FAR if far else OVERHEAD).format(ideal=format_time(work / bound),
                                                                                 **values))
        return Advice("overhead", OVERHEAD_NO_BOUND.format(**values))
    if limit == "memory":
        rate, bandwidth = roofline.bytes_per_s("jax"), side.bandwidth_bytes_per_s
        # The memory limit needs both ceilings, so the ridge point (peak / bandwidth) is known here.
        return Advice("memory", MEMORY.format(
            rate=format_bandwidth(rate), bandwidth=format_bandwidth(bandwidth),
            share=format_percent(rate / bandwidth if rate is not None and bandwidth else None),
            intensity=f"{roofline.side_intensity('jax'):.3g}", ridge=f"{side.peak_flops_per_s / bandwidth:.3g}",
            dtype=result.dtype))
    if limit == "compute":
        return _float64_advice(result)
    return None


def _round_trip_advice(side: RooflineSide) -> Advice:
    """JAX's blocked call mostly the host's round trip, its device time beside it (the profile's busy
    time, or calls back to back)."""
    values = {"runtime": format_time(side.runtime_s), "device": format_time(side.device_s)}
    if side.device_source == "profile":
        share = 1.0 - side.device_s / side.runtime_s if side.device_s and side.runtime_s > 0 else None
        return Advice("overhead", OVERHEAD_ROUND_TRIP.format(share=format_percent(share), **values))
    return Advice("overhead", OVERHEAD_BACK_TO_BACK.format(**values))


def _float64_advice(result: Result) -> Advice | None:
    """float64 on a GPU: the device's FP64 peak against the float32 one at the worker's matmul
    precision (TF32 on recent NVIDIA parts); only where the table knows both and float32 is faster."""
    found = platform(result.backend)
    # An accelerator with float64 units of its own (the GPU): one that emulates float64 (a TPU) publishes no
    # FP64 peak, and the host's peaks are measured, not published.
    if found is None or found.host or found.float64 != "native" or result.dtype != "float64":
        return None
    kind = result.jax.device_kind
    precision = str(result.jax.protocol.get("matmul_precision") or "default")
    try:
        fp64, fp32 = peak_for(kind, "float64", precision), peak_for(kind, "float32", precision)
    except ValueError:  # a precision the table does not name: no evidence, no advice
        return None
    if fp64 is None or fp32 is None or fp32[0] <= fp64[0]:
        return None
    return Advice("float64", FLOAT64.format(device=kind, fp64=format_flops(fp64[0]), fp32=format_flops(fp32[0]),
                                            label=fp32[1], factor=f"{fp32[0] / fp64[0]:.3g}"))


def _break_even_advice(result: Result) -> Advice | None:
    """Transfer or compile, whichever is the larger part of the one-off cost, when JAX is faster
    per call for sure (trust.direction: its whole 95% range above 1x; the sentences say "before it is
    faster") but needs BREAK_EVEN_WORTH calls or more to pay that cost back."""
    calls = result.break_even_calls
    if calls is None or not math.isfinite(calls) or calls < BREAK_EVEN_WORTH:
        return None
    if direction(result).side != JAX_FASTER:  # a range across 1x, or no verdict: nothing to pay back
        return None
    transfer, compile_s = result.jax.transfer.median_s, result.jax.compile_total_s
    one_off = transfer + compile_s
    if one_off <= 0:
        return None
    values = {"one_off": format_time(one_off), "break_even": _break_even_text(result)}
    if transfer > compile_s:
        return Advice("transfer", TRANSFER.format(transfer=format_time(transfer),
                                                  share=format_percent(transfer / one_off), **values))
    return Advice("compile", COMPILE.format(compile=format_time(compile_s),
                                            share=format_percent(compile_s / one_off), **values))


def _break_even_text(result: Result) -> str:
    """The break-even the Break-even tile shows (summary.break_even_tile): the calls where the result is
    trusted, their 95% range where JAX is faster for sure, else that it is not known."""
    if trusted(result):
        return BREAK_EVEN_CALLS.format(calls=f"{math.ceil(result.break_even_calls or 0):,}")
    bounds = break_even_bounds(result)
    if bounds is None:
        return BREAK_EVEN_UNKNOWN
    low, high = bounds
    return BREAK_EVEN_RANGE.format(calls=f"{low:,}" if low == high else f"{low:,}–{high:,}")


def _numpy_memory_advice(result: Result) -> Advice | None:
    """NumPy's two speeds (engine/worker/plain_numpy.py), where keeping freed memory made it faster beyond
    both ranges."""
    factor = result.numpy_memory_speedup
    if factor is None or result.numpy_kept is None:
        return None
    return Advice("numpy_memory", NUMPY_MEMORY.format(plain=format_time(result.numpy_runtime.median_s),
                                                      kept=format_time(result.numpy_kept.median_s),
                                                      factor=f"{factor:.2f}x"))
