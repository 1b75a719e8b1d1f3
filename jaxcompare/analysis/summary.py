"""What a Result says at a glance, for every front end that shows one (the app's Compare page,
the notebook's display): the headline figures with their help, the verdict and how sure it is,
the third side and the fraction of peak. Plain data and Markdown sentences (``**bold**``,
``*italic*``); each front end renders them its own way."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..model.formatting import (
    faster_or_slower,
    format_break_even,
    format_factor,
    format_speedup,
    format_time,
    peak_sentence,
    third_side_verdict,
    transfer_rate_text,
)
from ..model.result import Result
from ..model.sides import link_name


@dataclass(frozen=True)
class Figure:
    """One headline number: what it is, its value, and what it means (a tooltip in the app)."""

    label: str
    value: str
    help: str


def one_off_s(result: Result) -> float:
    """What JAX pays once before its first call: the transfer and the cold compile."""
    return result.transfer.median_s + result.compile_total_s


def calls_text(calls: float | None) -> str:
    """Break-even calls as the pages say it: 'never', '1 call', '1,234 calls'."""
    if calls is None:
        return "never"
    n = max(math.ceil(calls), 1)
    return f"{n:,} call{'s' if n != 1 else ''}"


# --- headline figures ---------------------------------------------------------------------------
def _speedup_range_text(result: Result) -> str:
    low, high = result.speedup_range
    if not (math.isfinite(low) and math.isfinite(high)):
        return ""
    preset = result.spec.timing.preset_name
    return (f" With 95% confidence between {format_factor(low)} and {format_factor(high)} (from the two "
            f"medians' confidence intervals; {preset} timing)."
            + ("" if preset == "thorough" else " Thorough timing narrows it."))


def headline(result: Result) -> list[Figure]:
    """The six numbers a comparison leads with."""
    s = result.speedup
    be = result.break_even_calls
    return [
        Figure("NumPy runtime", format_time(result.numpy_runtime.median_s),
               "Median time per call of the NumPy/SciPy function on host arrays."),
        Figure("JAX runtime", format_time(result.runtime.median_s),
               "Median time per call of the jitted JAX function, inputs already on the device, "
               "each call blocked with block_until_ready()."),
        Figure("Speedup", format_factor(s), format_speedup(s) + ": NumPy runtime / JAX runtime; above 1x JAX is faster."
               + _speedup_range_text(result)),
        Figure("Compile", format_time(result.compile_total_s),
               "Cold trace + lower + XLA compile, paid once per function, shape and dtype."),
        Figure("Transfer", format_time(result.transfer.median_s), transfer_help(result)),
        Figure("Break-even", calls_text(be),
               "Calls before JAX's one-off costs (transfer + compile) are paid back by its faster "
               "runtime: " + format_break_even(be) + "."),
    ]


def transfer_help(result: Result) -> str:
    """The Transfer figure's help: what was copied, across which link, how fast."""
    text = "Host→device copy of the inputs (device_put, blocked)."
    if result.transfer_zero_copy:
        return text + " Near zero here: the CPU backend aliased the NumPy buffer (no copy)."
    link = link_name(result.backend, result.device_kind)
    if link is not None:
        text += f" On a {result.backend.upper()} the copy crosses {link} from host memory to the device's."
    rate = transfer_rate_text(result)
    return text + (f" Achieved: {rate}." if rate else "")


def third_side_figures(result: Result) -> list[Figure]:
    """With JAX on the CPU beside JAX on the accelerator: its runtime, its speedup over NumPy,
    and how much the device adds over XLA on the CPU. [] without the third side."""
    side = result.jax_cpu
    if side is None:
        return []
    accel = result.backend.upper()
    gain = side.runtime.median_s / result.runtime.median_s if result.runtime.median_s > 0 else math.inf
    return [
        Figure("JAX on CPU", format_time(side.runtime.median_s),
               "The same jitted function on this machine's CPU (XLA's CPU backend), inputs already there, "
               "each call blocked: tells whether a speedup comes from XLA or from the device."),
        Figure("Speedup on CPU", format_factor(result.cpu_speedup),
               format_speedup(result.cpu_speedup) + ": NumPy runtime / JAX-on-CPU runtime."),
        Figure(f"{accel} over CPU", format_factor(gain),
               f"JAX on the CPU / JAX on the {accel}: what the device adds over XLA on the CPU; below 1x "
               f"the CPU is faster."),
    ]


def figure_rows(result: Result) -> list[list[Figure]]:
    """The figures as every front end lays them out: the six headline ones in two rows of three
    (six in one row truncate the values in a laptop-wide window), and a third row with JAX on
    the CPU when the run had a GPU or TPU."""
    figures = headline(result)
    return [row for row in (figures[:3], figures[3:], third_side_figures(result)) if row]


# --- sentences (Markdown) -----------------------------------------------------------------------
def verdict_lines(result: Result, sweep_with: str | None = None) -> list[str]:
    """What the figures mean, a paragraph each: the verdict, then the third side's line and the
    fraction of peak's where the run has them (``sweep_with``: as for ``verdict``)."""
    return [verdict(result, sweep_with), *filter(None, (third_side_text(result), peak_text(result)))]


def verdict(result: Result, sweep_with: str | None = None) -> str:
    """One sentence that says what the numbers mean, then how sure it is. ``sweep_with``: what
    runs a size sweep in this front end ("The Size sweep page"), pointed to when NumPy wins."""
    s = result.speedup
    one_off = format_time(one_off_s(result))
    if not math.isfinite(s):
        return "JAX's runtime was too small to measure reliably."
    word, factor = faster_or_slower(s)
    if word == "faster":
        be = result.break_even_calls
        calls = "the first call" if be is not None and be <= 1 else calls_text(be)
        return (f"JAX is **{format_factor(factor)} faster** per call ({format_time(result.numpy_runtime.median_s)} → "
                f"{format_time(result.runtime.median_s)}); its one-off costs ({one_off}) are paid back "
                f"after **{calls}**." + _range_sentence(result))
    return (f"NumPy is **{format_factor(factor)} faster** per call at this size "
            f"({format_time(result.numpy_runtime.median_s)} vs {format_time(result.runtime.median_s)}), "
            f"so JAX never pays back its {one_off} of one-off costs." + _range_sentence(result)
            + (f" {sweep_with} shows whether larger inputs change that." if sweep_with else ""))


def _range_sentence(result: Result) -> str:
    """How sure: the speedup's 95% range, whether it still allows 'no difference', and
    whether the speedup held from one pair of runtime blocks to the next ("" when there is
    nothing to say; otherwise it starts with a space, to follow the verdict)."""
    low, high = result.speedup_range
    text = ""
    ranged = math.isfinite(low) and math.isfinite(high)
    if ranged:
        text = f" With 95% confidence the speedup is between {format_factor(low)} and {format_factor(high)}"
        text += ", so this run cannot tell the two apart." if low <= 1 <= high else "."
    pairs = result.speedup_pairs
    if result.speedup_steady is False:
        text += (f" {'But the' if ranged else 'The'} speedup moved from one pair of blocks to the next "
                 f"({format_factor(min(pairs))} to {format_factor(max(pairs))}): see *Speedup steady* below.")
    elif not (result.numpy_runtime.stable and result.runtime.stable):
        if result.speedup_steady:
            every = "both" if len(pairs) == 2 else f"all {len(pairs)}"
            text += (f" The machine's speed drifted during the run (see *Samples stable* below), but the "
                     f"speedup held in {every} pairs of blocks timed side by side "
                     f"({format_factor(min(pairs))} to {format_factor(max(pairs))}).")
        elif ranged:
            text += " That range assumes the machine held still, and it did not: see *Samples stable* below."
    return text


def third_side_text(result: Result) -> str | None:
    """The one-line verdict with three sides (formatting.third_side_verdict), or None."""
    text = third_side_verdict(result)
    return f"**JAX on the CPU.** {text}" if text else None


def peak_text(result: Result) -> str | None:
    """The fraction-of-peak line (formatting.peak_sentence), or None without a FLOP count."""
    text = peak_sentence(result)
    return f"**Fraction of peak.** {text}" if text else None
