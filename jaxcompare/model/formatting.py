"""Words and numbers for people: times, speedups, bytes, strict JSON; shared by every front end."""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from typing import Any

from ..i18n import N_, _, ngettext, translate_text
from .cases import format_shape
from .platforms import is_accelerator, platform_label
from .profile import Profile
from .reruns import rerun_range
from .result import Result
from .sides import link_name
from .stats import Stats


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


def format_rerun_range(stats: Stats) -> str:
    """'41.2–46 ms': where a rerun's median falls (reruns.rerun_range), '—' where that is unknown."""
    low, high = rerun_range(stats)
    return format_time_range(low, high) if math.isfinite(low) and math.isfinite(high) else "—"


def format_time_range(low: float | None, high: float | None) -> str:
    """'41.2–46 ms' (one unit when both share it), '850 µs–1.2 ms' otherwise: a 95% range."""
    a, b = format_time(low), format_time(high)
    unit_a, unit_b = a.rpartition(" ")[2], b.rpartition(" ")[2]
    if unit_a == unit_b and " " in a:
        return f"{a.rpartition(' ')[0]}–{b}"
    return f"{a}–{b}"


def format_share(share: float | None) -> str:
    """A fraction as a percentage: '87%', '0.4%', '<0.1%', '—' when unknown."""
    if share is None or not math.isfinite(share):
        return "—"
    if 0 < share < 0.001:
        return "<0.1%"
    return f"{share:.0%}" if share >= 0.01 or share == 0 else f"{share:.1%}"


def gap_sentence(profile: Profile) -> str:
    """'host wall 1.2 ms per call, device busy 0.3 ms (25%); the gap, 0.9 ms (75%), is dispatch,
    launch and sync overhead', its whole-window form for a trace without ``jaxcompare call``
    annotations, or why there is no profile."""
    if not profile.ok:
        if profile.error:
            return _("no profile: {error}").format(error=translate_text(profile.error))
        return _("no profile: the trace held no device ops")
    figures = {"wall": format_time(profile.wall_s), "busy": format_time(profile.device_busy_s),
               "busy_share": format_share(profile.busy_share), "gap": format_time(profile.gap_s),
               "gap_share": format_share(profile.gap_share), "copy": format_time(profile.copy_s),
               "copy_share": format_share(profile.copy_share), "devices": len(profile.devices)}
    if profile.whole_window:
        if len(profile.devices) > 1:
            return _("no 'jaxcompare call' annotation, so the trace's whole window, {wall}, is summarised: the "
                     "{devices} devices were each busy {busy} ({busy_share}) on average running ops and {copy} "
                     "({copy_share}) copying, and idle {gap} ({gap_share})").format(**figures)
        return _("no 'jaxcompare call' annotation, so the trace's whole window, {wall}, is summarised: the device "
                 "was busy {busy} ({busy_share}) running ops and {copy} ({copy_share}) copying, and idle {gap} "
                 "({gap_share})").format(**figures)
    if profile.copy_s > 0:
        return _("host wall {wall} per call, device busy {busy} ({busy_share}), copying {copy} ({copy_share}); the "
                 "gap, {gap} ({gap_share}), is dispatch, launch and sync overhead").format(**figures)
    return _("host wall {wall} per call, device busy {busy} ({busy_share}); the gap, {gap} ({gap_share}), "
             "is dispatch, launch and sync overhead").format(**figures)


# An op's kind as a reader sees it: XLA's opcodes stay as they are, these two are words.
KIND_WORDS = {"kernel": N_("kernel name"), "op": N_("HLO op")}


def op_kind_text(kind: str, holds: tuple[str, ...] | list[str]) -> str:
    """'fusion (dot)', 'custom-call (lapack_sgesdd_ffi)', 'dot'; 'kernel name' for a row named
    by its kernel (no HLO op named it), 'HLO op' for one whose opcode is not known."""
    word = _(KIND_WORDS[kind]) if kind in KIND_WORDS else kind
    return f"{word} ({', '.join(holds)})" if holds else word


# Shown with _(PERFETTO_HINT), in the reader's language.
PERFETTO_HINT = N_("open it in ui.perfetto.dev (Open trace file: your browser reads it, nothing is uploaded) or in "
                   "XProf/TensorBoard (pip install 'jax[xprof]')")


def format_factor(factor: float | None) -> str:
    """A ratio as '1.23x' ('—' when unknown): speedups, slowdowns, how many times. Below 0.01x two
    significant digits ('0.0021x'), so a small workload's speedup on an accelerator never reads 0.00x."""
    if factor is None or not math.isfinite(factor):
        return "—"
    if 0 < factor < 0.01:
        digits = min(1 - math.floor(math.log10(factor)), 7)
        return f"{factor:.{digits}f}x"
    return f"{factor:.2f}x"


def faster_or_slower(speedup: float) -> tuple[str, float]:
    """('faster', 2.0) for a speedup of 2 and ('slower', 2.0) for 0.5: the factor is at least 1,
    so no sentence says '0.5x faster'. The word is a code to choose a sentence by, not text to
    put in one (each language words 'faster' and 'slower' in its own order)."""
    if speedup >= 1:
        return "faster", speedup
    return "slower", 1 / speedup if speedup > 0 else math.inf


def same_speed(speedup: float) -> bool:
    """Whether a speedup is 1 to three significant figures either way: no side to call faster."""
    return f"{max(speedup, 1 / speedup):.3g}" == "1"


def format_speedup(speedup: float | None) -> str:
    """'2.50x (JAX faster)' or '0.50x (JAX 2.0x slower)': the number and which side wins."""
    if speedup is None or not math.isfinite(speedup):
        return "—"
    word, factor = faster_or_slower(speedup)
    if word == "faster":
        return _("{speedup} (JAX faster)").format(speedup=format_factor(speedup))
    return _("{speedup} (JAX {factor:.1f}x slower)").format(speedup=format_factor(speedup), factor=factor)


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
        return _("none here") if short else _("none in this range")
    side = format_shape([round(elements ** (1 / ndim))] * ndim) if ndim >= 2 else None
    if not short:
        # Two figures: a crossing placed between two measured sizes is no finer ("≈ 7,315" between 1,000 and 100,000).
        elements = float(f"{elements:.2g}")
        if side:
            return _("≈ {elements:,.0f} elements (≈ {side})").format(elements=elements, side=side)
        return _("≈ {elements:,.0f} elements").format(elements=elements)
    if side:
        return f"≈ {side}"
    for unit, scale in (("M", 1e6), ("k", 1e3)):
        if elements >= scale:
            return _("≈ {count:.3g}{unit} elements").format(count=elements / scale, unit=unit)
    return _("≈ {elements:.0f} elements").format(elements=elements)


def format_calls(calls: float | None) -> str:
    """Break-even calls, short: 'never', '1 call', '1,234 calls'."""
    if calls is None:
        return _("never")
    n = max(math.ceil(calls), 1)
    return ngettext("{n:,} call", "{n:,} calls", n).format(n=n)


def format_break_even(calls: float | None) -> str:
    """Break-even calls, saying why there are none: '1,234 calls', 'never (JAX is not faster per call)'."""
    if calls is None:
        return _("never (JAX is not faster per call)")
    return format_calls(calls)


_SCALES = {"P": 1e15, "T": 1e12, "G": 1e9, "M": 1e6, "k": 1e3}


def _with_prefix(value: float | None, unit: str, prefixes: str) -> str:
    """``value`` in ``unit`` under the largest of ``prefixes`` it reaches, three significant
    figures; '—' when unknown."""
    if value is None or not math.isfinite(value):
        return "—"
    for prefix in prefixes:
        if value >= _SCALES[prefix]:
            return f"{value / _SCALES[prefix]:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}"


def format_flops(flops_per_s: float | None) -> str:
    """A FLOP rate with a decimal prefix, three significant figures: 142 GFLOP/s, 495 TFLOP/s."""
    return _with_prefix(flops_per_s, "FLOP/s", "PTGM")


def format_percent(share: float | None) -> str:
    """A share as '61%', '2.4%' or '<0.1%' (small shares keep a digit); '—' when unknown."""
    if share is None or not math.isfinite(share):
        return "—"
    if share >= 0.095:
        return f"{share:.0%}"
    return f"{share:.1%}" if share >= 0.001 else "<0.1%"


def format_peak_share(share: float | None) -> str:
    """A side's fraction of its ceiling (format_percent); over 100% the ceiling, not the side, is
    wrong (a measured one caught the CPU below its plateau), so that is what it says."""
    if share is not None and math.isfinite(share) and share > 1:
        return _("more than 100% (the ceiling is too low)")
    return format_percent(share)


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
        on_cpu.append((_("JAX on the CPU"), cpu))
    if peak.source == "measured":
        on_cpu.insert(0, ("JAX", jax))
    parts = []
    if peak.source == "table":
        parts.append(_device_peak_clause(result) or _("JAX reached {share} of {ceiling} ({rate})").format(
            share=format_peak_share(jax), ceiling=peak.describe(), rate=format_flops(peak.flops_per_s)))
    elif peak.source is None:
        parts.append(_("JAX's fraction of peak is unknown (no published {dtype} peak for the {device} in the "
                       "table)").format(dtype=result.dtype, device=peak.device))
    if on_cpu:
        rate = peak.flops_per_s if peak.source == "measured" else (
            peak.cpu_flops_per_s or (peak.numpy_flops_per_s if peak.numpy_label == cpu_label else None))
        parts.append(_cpu_clause(cpu_label, format_flops(rate),
                                 [(name, format_peak_share(share)) for name, share in on_cpu]))
    if peak.numpy_label != cpu_label:
        parts.append(_("NumPy reached {share} of {ceiling} ({rate})").format(
            share=format_peak_share(numpy), ceiling=peak.describe_numpy(), rate=format_flops(peak.numpy_flops_per_s)))
    # Each clause is whole (a side, its share, its ceiling); only the punctuation joins them.
    # Translators: the punctuation between two clauses of the fraction-of-peak line.
    between = _("; ")
    # Translators: the punctuation after the last clause of the fraction-of-peak line.
    end = _(".")
    text = between.join(parts) + end
    return text[0].upper() + text[1:]


def _device_peak_clause(result: Result) -> str | None:
    """JAX's share of the device's peak read from its own time on the device, the blocked call's beside
    it, labelled as holding the host's round trip; None where there is no device time (result.device_time)."""
    found, peak = result.device_time, result.peak
    if found is None or peak is None:
        return None
    source, seconds = found
    blocked = result.jax.runtime.median_s
    values = {"share": format_peak_share(result.peak_fraction("jax")), "ceiling": peak.describe(),
              "rate": format_flops(peak.flops_per_s), "time": format_time(seconds), "blocked": format_time(blocked),
              "blocked_share": format_peak_share(result.peak_fraction_blocked("jax")),
              "trip": format_share(max(1.0 - seconds / blocked, 0.0) if blocked > 0 else None)}
    if source == "profile":
        return _("JAX reached {share} of {ceiling} ({rate}) in its time on the device ({time} a call, the profile's "
                 "busy time); {blocked_share} in a blocked call, which holds the host's round trip ({blocked}, "
                 "{trip} of it)").format(**values)
    # A loop of calls lasts at least as long as the device's work in it: a share read there is a floor.
    return _("JAX reached at least {share} of {ceiling} ({rate}) in calls back to back ({time} a call, no less than "
             "its time on the device); {blocked_share} in a blocked call, which holds the host's round trip "
             "({blocked})").format(**values)


def _cpu_clause(label: str, rate: str, shares: list[tuple[str, str]]) -> str:
    """The clause of the sides held to this CPU's measured rate, one to three of them: "of this
    CPU's measured float32 matmul rate (142 GFLOP/s), NumPy reached 45% and JAX on the CPU 30%"."""
    if len(shares) == 1:
        (name, share), = shares
        return _("of this CPU's measured {label} rate ({rate}), {name} reached {share}").format(
            label=label, rate=rate, name=name, share=share)
    if len(shares) == 2:
        (name, share), (name2, share2) = shares
        return _("of this CPU's measured {label} rate ({rate}), {name} reached {share} and {name2} "
                 "{share2}").format(label=label, rate=rate, name=name, share=share, name2=name2, share2=share2)
    (name, share), (name2, share2), (name3, share3) = shares
    return _("of this CPU's measured {label} rate ({rate}), {name} reached {share}, {name2} {share2} and "
             "{name3} {share3}").format(label=label, rate=rate, name=name, share=share, name2=name2,
                                        share2=share2, name3=name3, share3=share3)


# Two runtimes closer than this factor read as "about as fast" in the three-side verdict.
SAME_WITHIN = 1.1


def third_side_verdict(result: Result) -> str | None:
    """Where a speedup comes from, with JAX on the CPU beside JAX on the accelerator: from XLA
    (JAX on the CPU already beats NumPy), from the device, or nowhere (the CPU beats the GPU at
    latency-bound sizes). None without the third side."""
    side = result.jax_cpu
    if side is None:
        return None
    backend = result.backend
    accel = platform_label(backend) if is_accelerator(backend) else result.jax.device_kind or backend
    numpy_s, device_s, cpu_s = result.numpy_runtime.median_s, result.jax.runtime.median_s, side.runtime.median_s
    if not (numpy_s > 0 and device_s > 0 and cpu_s > 0):
        return None
    # Translators: the three runtimes; {accel} is the device (GPU, TPU).
    times = _("NumPy {numpy}, JAX on the CPU {cpu}, JAX on the {accel} {device}").format(
        numpy=format_time(numpy_s), cpu=format_time(cpu_s), accel=accel, device=format_time(device_s))
    within = f"{SAME_WITHIN - 1:.0%}"
    if 1 / SAME_WITHIN < cpu_s / device_s < SAME_WITHIN:
        # Within noise of each other: the device adds nothing measurable over XLA on the CPU.
        if max(cpu_s, device_s) < numpy_s:
            # Translators: {accel} and {accel_again} name the same device (GPU, TPU).
            return _("The speedup comes from XLA, not from the {accel}: JAX on the CPU is about as fast as on "
                     "the {accel_again} (within {within}) and {factor} faster than NumPy ({times}).").format(
                accel=accel, accel_again=accel, within=within, factor=format_factor(numpy_s / cpu_s), times=times)
        if numpy_s < min(cpu_s, device_s):
            return _("JAX is about as fast on the CPU as on the {accel} (within {within}), and NumPy is faster "
                     "than both ({times}).").format(accel=accel, within=within, times=times)
        return _("JAX is about as fast on the CPU as on the {accel} (within {within}), and NumPy falls between "
                 "them ({times}).").format(accel=accel, within=within, times=times)
    if cpu_s < device_s:
        if cpu_s < numpy_s:
            # Translators: {accel} and {accel_again} name the same device (GPU, TPU).
            template = _("JAX on the CPU is faster than on the {accel} here ({factor}), and faster than NumPy: at "
                         "this size the {accel_again}'s launch and synchronisation latency cost more than its "
                         "throughput brings ({times}).")
        else:
            # Translators: {accel} and {accel_again} name the same device (GPU, TPU).
            template = _("JAX on the CPU is faster than on the {accel} here ({factor}), and slower than NumPy: at "
                         "this size the {accel_again}'s launch and synchronisation latency cost more than its "
                         "throughput brings ({times}).")
        return template.format(accel=accel, accel_again=accel, factor=format_factor(device_s / cpu_s), times=times)
    if device_s >= numpy_s:
        return _("The {accel} beats JAX on the CPU ({factor}) but not NumPy ({times}).").format(
            accel=accel, factor=format_factor(cpu_s / device_s), times=times)
    if 1 / SAME_WITHIN < cpu_s / numpy_s < SAME_WITHIN:
        # Translators: {accel} and {accel_again} name the same device (GPU, TPU).
        return _("The speedup comes from the {accel}: JAX on the CPU is about as fast as NumPy (within {within}), "
                 "and on the {accel_again} {faster} faster ({times}).").format(
            accel=accel, accel_again=accel, within=within, faster=format_factor(numpy_s / device_s), times=times)
    if cpu_s >= numpy_s:
        # Translators: {accel} and {accel_again} name the same device (GPU, TPU).
        return _("The speedup comes from the {accel}, not from XLA: JAX on the CPU is {slower} slower than NumPy, "
                 "on the {accel_again} {faster} faster ({times}).").format(
            accel=accel, accel_again=accel, slower=format_factor(cpu_s / numpy_s),
            faster=format_factor(numpy_s / device_s), times=times)
    # Translators: {accel} and {accel_again} name the same device (GPU, TPU).
    return _("The speedup comes from XLA and the {accel} together: JAX on the CPU is already {faster} faster than "
             "NumPy, and the {accel_again} adds {adds} ({times}).").format(
        accel=accel, accel_again=accel, faster=format_factor(numpy_s / cpu_s),
        adds=format_factor(cpu_s / device_s), times=times)


def format_bandwidth(bytes_per_s: float | None) -> str:
    """Bytes per second in decimal units, as links are quoted: 12.3 GB/s, 850 MB/s."""
    return _with_prefix(bytes_per_s, "B/s", "TGMk")


def transfer_rate_text(result: Result) -> str:
    """What the transfer did and how fast, the one wording every front end and check uses: '12.3 GB/s
    host→device over PCIe'; on the CPU backend whether it aliased the NumPy buffer or copied it, and
    why (XLA uses a buffer in place only when it is 64-byte aligned, and where NumPy's allocator put
    the inputs varies from process to process, so two runs of one case may differ); '' when the
    size was not recorded."""
    if result.jax.transfer_zero_copy:
        return _("no copy: the CPU backend used the NumPy buffer in place, as it does when the buffer is 64-byte "
                 "aligned (where NumPy put it varies from run to run; an unaligned one is copied)")
    rate = result.jax.transfer_bytes_per_s
    if rate is None:
        return ""
    link = link_name(result.backend, result.jax.device_kind)
    if link is None:
        return _("{rate}, a copy within host memory: the CPU backend uses a NumPy buffer in place only when it is "
                 "64-byte aligned, and where NumPy put this one varies from run to run").format(
            rate=format_bandwidth(rate))
    return _("{rate} host→device over {link}").format(rate=format_bandwidth(rate), link=link)


# What a matmul precision other than JAX's default did to float32 products (jax.lax.Precision).
MATMUL_PRECISION_EFFECTS = {
    "high": N_("a TPU: three bfloat16 passes; an NVIDIA GPU: TF32"),
    "highest": N_("a TPU: six bfloat16 passes; an NVIDIA GPU: float32"),
}


def matmul_precision_line(result: Result) -> str | None:
    """The matmul precision JAX ran at, when it was not the default ("matmul precision: highest
    (...)"); None at the default. What the worker recorded leads; the Spec's for older results."""
    precision = str(result.jax.protocol.get("matmul_precision") or result.spec.matmul_precision).lower()
    if precision == "default":
        return None
    effect = MATMUL_PRECISION_EFFECTS.get(precision)
    if effect is None:  # a precision a worker was configured with by hand (e.g. 'bfloat16')
        return _("matmul precision: {precision}").format(precision=precision)
    return _("matmul precision: {precision} ({effect})").format(precision=precision, effect=_(effect))


# Every ASCII punctuation mark may be backslash-escaped in CommonMark, so escaping them all makes
# text literal: no link, image, code span, emphasis, autolinked URL or e-mail, or Streamlit directive.
_MARKDOWN_ESCAPES = {ord(c): "\\" + c for c in "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"}
SHOWN_CHARS = 80  # what a page echoes of a value it did not write (a URL parameter, say)


def cut(text: Any, limit: int = SHOWN_CHARS) -> str:
    """``text`` as one line of at most ``limit`` characters (an ellipsis ends a longer one)."""
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[:limit - 1] + "…"


# GFM links bare URLs, www. names and e-mail addresses in the text itself, after escapes are undone:
# an invisible word joiner inside each (https:⁠//, www⁠., a⁠@b) keeps them text.
_AUTOLINKS = re.compile(r"(?i)(?<=https:)(?=//)|(?<=http:)(?=//)|(?<=www)(?=\.)|(?=@)")
WORD_JOINER = "\u2060"


def markdown_literal(text: Any, limit: int | None = None) -> str:
    """``text`` made safe to put in Markdown (Streamlit's st.markdown, st.warning...): it shows
    as written (no link, image or formatting), on one line, cut to ``limit`` characters when given."""
    line = cut(text, limit) if limit is not None else " ".join(str(text).split())
    return _AUTOLINKS.sub(WORD_JOINER, line).translate(_MARKDOWN_ESCAPES)


def code_text(text: Any) -> str:
    """``text`` for inside a Markdown code span (`...`): on one line, its backticks, which would end the span and
    let what follows render (a link, an image), replaced by a look-alike."""
    return " ".join(str(text).split()).replace("`", "\u02cb")


def with_detail(value: str, detail: str | None) -> str:
    """'value (detail)', its brackets the reader's ('（…）' in Chinese); ``value`` alone without a detail."""
    return _("{value} ({detail})").format(value=value, detail=detail) if detail else value


def seconds_text(seconds: float) -> str:
    """'8 s', '35 s', '2.5 min': two figures at most, since an estimate is no finer than that."""
    if seconds < 10:
        return _("{n} s").format(n=max(round(seconds), 1))
    if seconds < 100:
        return _("{n} s").format(n=round(seconds / 5) * 5 if seconds >= 30 else round(seconds))
    minutes = seconds / 60
    return _("{n} min").format(n=f"{minutes:.1f}".rstrip("0").rstrip(".") if minutes < 10 else round(minutes))


def markdown_code(text: Any, limit: int | None = None) -> str:
    """``text`` as a Markdown code span on one line (a library's own message, quoted verbatim in a
    page of another language): the fence is one backtick longer than any run inside it."""
    line = cut(text, limit) if limit is not None else " ".join(str(text).split())
    fence = "`" * (max((len(run) for run in re.findall(r"`+", line)), default=0) + 1)
    pad = " " if line.startswith("`") or line.endswith("`") else ""
    return f"{fence}{pad}{line}{pad}{fence}"


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


def utc_minute(created: Any) -> str | None:
    """'2026-11-29 21:58', an ISO 8601 time (a result's or a lab run's ``created``) to the minute in UTC;
    None where it is not one."""
    try:
        when = dt.datetime.fromisoformat(str(created))
    except ValueError:
        return None
    return (when.astimezone(dt.UTC) if when.tzinfo is not None else when).strftime("%Y-%m-%d %H:%M")
