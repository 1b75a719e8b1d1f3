"""What a Result says at a glance, for every front end that shows one (the app's Compare page,
the notebook's display): the headline figures with their help, the verdict and how sure it is,
the third side and the fraction of peak. Plain data and Markdown sentences (``**bold**``,
``*italic*``); each front end renders them its own way."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..i18n import N_, _, sentences
from ..model.cases import format_shape
from ..model.formatting import (
    faster_or_slower,
    format_break_even,
    format_calls,
    format_crossover,
    format_factor,
    format_speedup,
    format_time,
    format_time_range,
    peak_sentence,
    third_side_verdict,
    transfer_rate_text,
)
from ..model.platforms import is_host
from ..model.reruns import rerun_range, rerun_ratio_range
from ..model.result import Result
from ..model.sides import link_name
from ..model.stats import Stats
from .consistency import busy_above_call
from .sweep import doubtful_directions
from .trust import JAX_FASTER, NUMPY_FASTER, WHY, Direction, direction, set_aside_text, set_aside_why, trust, trusted


@dataclass(frozen=True)
class Figure:
    """One headline number: what it is, its value, and what it means (a tooltip in the app)."""

    label: str
    value: str
    help: str
    detail: str = ""  # a line under the value (a speedup's 95% range), "" for none


def one_off_s(result: Result) -> float:
    """What JAX pays once before its first call: the transfer and the cold compile."""
    return result.jax.transfer.median_s + result.jax.compile_total_s


# --- headline figures ---------------------------------------------------------------------------
# "{preset} timing" as a noun, for each TimingConfig.preset_name.
TIMING_NAMES = {"quick": N_("quick timing"), "careful": N_("careful timing"), "thorough": N_("thorough timing"),
                "custom": N_("custom timing")}


def timing_name(preset: str) -> str:
    """'careful timing', in the reader's language: how a result's samples were taken."""
    return _(TIMING_NAMES.get(preset, TIMING_NAMES["custom"]))


def _speedup_range_text(result: Result) -> list[str]:
    low, high = result.speedup_range
    if not (math.isfinite(low) and math.isfinite(high)):
        return []
    preset = result.spec.timing.preset_name
    return [_("With 95% confidence between {low} and {high} (from the two medians' confidence intervals; "
              "{timing}).").format(low=format_factor(low), high=format_factor(high), timing=timing_name(preset)),
            "" if preset == "thorough" else _("Thorough timing narrows it.")]


def headline(result: Result) -> list[Figure]:
    """The six numbers a comparison leads with; a result that is not trusted shows no bare speedup
    or break-even figure (speedup_tile, break_even_tile)."""
    speedup_value, speedup_detail = speedup_tile(result)
    be_value, be_detail = break_even_tile(result)
    return [
        Figure(_("NumPy runtime"), format_time(result.numpy_runtime.median_s),
               _("Median time per call of the NumPy/SciPy function on host arrays.")),
        Figure(_("JAX runtime"), format_time(result.jax.runtime.median_s),
               _("Median time per call of the jitted JAX function, inputs already on the device, "
                 "each call blocked with block_until_ready().")),
        Figure(_("Speedup"), speedup_value, sentences(
            _("{speedup}: NumPy runtime / JAX runtime; above 1x JAX is faster.").format(
                speedup=speedup_words(result)),
            *_speedup_range_text(result), _doubt_help(result)), speedup_detail),
        Figure(_("Compile"), format_time(result.jax.compile_total_s),
               _("Cold trace + lower + XLA compile, paid once per function, shape and dtype.")),
        Figure(_("Transfer"), format_time(result.jax.transfer.median_s), transfer_help(result)),
        Figure(_("Break-even"), be_value, break_even_help(result), be_detail),
    ]


# --- the two tiles that carry the doubt -----------------------------------------------------------
# One place decides what the Speedup and Break-even tiles say, for the app, the notebook's HTML
# and the CLI's summary lines alike: a result that is not trusted never shows a bare point figure.
def speedup_tile(result: Result) -> tuple[str, str]:
    """(value, line under it) of the Speedup tile: trusted, the speedup and its 95% range; not
    trusted, the range itself (or 'not known' without one) and the direction where one stands."""
    if trusted(result):
        return format_factor(result.speedup), range_detail(result)
    low, high = result.speedup_range
    if not (math.isfinite(low) and math.isfinite(high)):
        return _("not known"), _("doubtful")
    side = direction(result).side
    where = {JAX_FASTER: _("JAX faster"), NUMPY_FASTER: _("NumPy faster")}.get(side, _("doubtful"))
    return _("{low}–{high}").format(low=format_factor(low), high=format_factor(high)), \
        _("95% range · {where}").format(where=where)


def break_even_range(result: Result) -> tuple[float, float | None] | None:
    """Break-even calls at the two ends of the runtimes' 95% ranges as a rerun would read them (the most
    NumPy could be slower per call, then the least; None for 'never' at the far end); None where unknown."""
    (n_low, n_high), (j_low, j_high) = rerun_range(result.numpy_runtime), rerun_range(result.jax.runtime)
    bounds = (n_low, n_high, j_low, j_high)
    if not all(math.isfinite(b) and b > 0 for b in bounds) or not math.isfinite(result.speedup_range[0]):
        return None
    most, least = n_high - j_low, n_low - j_high
    if most <= 0:
        return None
    return one_off_s(result) / most, (one_off_s(result) / least if least > 0 else None)


def break_even_bounds(result: Result) -> tuple[int, int] | None:
    """The calls a result that is not trusted may quote: the whole calls (low, high) at the ends of
    its runtimes' 95% ranges where JAX is faster for sure and both are known; None otherwise."""
    ends = break_even_range(result) if direction(result).side == JAX_FASTER else None
    if ends is None or ends[1] is None:
        return None
    return max(math.ceil(ends[0]), 1), max(math.ceil(ends[1]), 1)


def break_even_tile(result: Result) -> tuple[str, str]:
    """(value, line under it) of the Break-even tile: trusted, the calls; not trusted, 'never'
    where NumPy is faster for sure, the calls' range where JAX is, else 'not known'."""
    if trusted(result):
        # The median's side of 1x is not sure where the range holds 1x: "never" or "45 calls" may flip,
        # so no calls are quoted (the verdict says the run cannot tell the two apart).
        if holds_one(result):
            return _("not known"), _("range holds 1x")
        return format_calls(result.break_even_calls), ""
    if direction(result).side == NUMPY_FASTER:
        return _("never"), _("NumPy faster per call")
    bounds = break_even_bounds(result)
    if bounds is None:
        return _("not known"), _("doubtful")
    low, high = bounds
    if low == high:
        return format_calls(low), _("95% range")
    return _("{low:,}–{high:,} calls").format(low=low, high=high), _("95% range")  # high > low ≥ 1: a plural


def break_even_help(result: Result) -> str:
    """The Break-even tile's help: what it counts, then (not trusted) why it is a range or unknown."""
    text = _("Calls before JAX's one-off costs (transfer + compile) are paid back by its faster runtime.")
    if trusted(result) and holds_one(result):
        return sentences(text, _("Not known here: the speedup's 95% range holds 1x, so JAX may be slower per call "
                                 "and never pay them back."))
    if trusted(result):
        return sentences(text, _("Here: {calls}.").format(calls=format_break_even(result.break_even_calls)))
    return sentences(text, _("This run's speedup is not trusted, so the calls are given only as far as its "
                             "95% range allows (JAX faster or NumPy faster for sure), else not known."),
                     _doubt_help(result))


def _doubt_help(result: Result) -> str:
    """'Set aside: the machine was busy.' for a tile's help, '' when the result is trusted."""
    why = doubt_text(result)
    return "" if why is None else _("Set aside: {why}.").format(why=why)


def transfer_help(result: Result) -> str:
    """The Transfer figure's help: what was copied, across which link, how fast."""
    text = _("Host→device copy of the inputs (device_put, blocked).")
    rate = transfer_rate_text(result)  # the one wording of what the transfer did, aliased or copied
    if result.jax.transfer_zero_copy:
        return sentences(text, _("Near zero here: {rate}.").format(rate=rate))
    link = link_name(result.backend, result.jax.device_kind)
    crosses = "" if link is None else _(
        "On a {backend} the copy crosses {link} from host memory to the device's.").format(
        backend=result.backend.upper(), link=link)
    return sentences(text, crosses, _("Achieved: {rate}.").format(rate=rate) if rate else "")


def third_side_figures(result: Result) -> list[Figure]:
    """With JAX on the CPU beside JAX on the accelerator: its runtime, its speedup over NumPy,
    and how much the device adds over XLA on the CPU. [] without the third side."""
    side = result.jax_cpu
    if side is None:
        return []
    accel = result.backend.upper()
    gain = side.runtime.median_s / result.jax.runtime.median_s if result.jax.runtime.median_s > 0 else math.inf
    sure = trusted(result)
    cpu_value, cpu_detail = _ratio_tile(result.cpu_speedup, result.numpy_runtime, side.runtime, sure)
    gain_value, gain_detail = _ratio_tile(gain, side.runtime, result.jax.runtime, sure)
    return [
        Figure(_("JAX on CPU"), format_time(side.runtime.median_s),
               _("The same jitted function on this machine's CPU (XLA's CPU backend), inputs already there, "
                 "each call blocked: tells whether a speedup comes from XLA or from the device.")),
        Figure(_("Speedup on CPU"), cpu_value,
               _("{speedup}: NumPy runtime / JAX-on-CPU runtime.").format(speedup=format_speedup(result.cpu_speedup)),
               cpu_detail),
        Figure(_("{accel} over CPU").format(accel=accel), gain_value,
               _("JAX on the CPU / JAX on the {accel}: what the device adds over XLA on the CPU; below 1x "
                 "the CPU is faster.").format(accel=accel), gain_detail),
    ]


def _ratio_tile(ratio: float | None, over: Stats, under: Stats, sure: bool) -> tuple[str, str]:
    """(value, line under it) of a ratio tile beside the speedup: the ratio where the result is
    trusted; where it is not, the range its runtimes' 95% ranges allow, or 'not known' (as the
    Speedup tile does: no bare point figure from a run set aside)."""
    if sure:
        return format_factor(ratio), ""
    low, high = rerun_ratio_range(over, under)
    if not (math.isfinite(low) and math.isfinite(high)):
        return _("not known"), _("doubtful")
    return _("{low}–{high}").format(low=format_factor(low), high=format_factor(high)), _("doubtful")


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
    # A blocked runtime its own dispatch contradicts feeds no rate either: no fraction of peak from it.
    peak = None if trust(result).why == "disagree" else peak_text(result)
    return [verdict(result, sweep_with), *filter(None, (numpy_speeds_text(result), device_time_text(result),
                                                        third_side_text(result), peak))]


def verdict(result: Result, sweep_with: str | None = None) -> str:
    """One sentence that says what the numbers mean, then how sure it is. ``sweep_with``: what
    runs a size sweep in this front end ("The Size sweep page", in the reader's language),
    pointed to when NumPy wins."""
    s = result.speedup
    one_off = format_time(one_off_s(result))
    if not math.isfinite(s):
        return _("JAX's runtime was too small to measure reliably.")
    word, factor = faster_or_slower(s)
    numpy_time, jax_time = format_time(result.numpy_runtime.median_s), format_time(result.jax.runtime.median_s)
    doubt = doubt_text(result)
    if doubt is not None:
        # Never a verdict from a doubtful number: say what was measured, and why it does not count.
        return sentences(_("**No verdict from this run: {why}.** It measured a speedup of {speedup} ({numpy} vs "
                           "{jax}); see the checklist below.").format(
            why=doubt, speedup=speedup_text(result), numpy=numpy_time, jax=jax_time),
            disagreement_text(result), rerun_text(result),
            # The figures that disagree were just named: "the range lies ..., but they disagree" says it again.
            "" if trust(result).why == "disagree" else direction_text(result),
            *_rangesentences(result, with_range=False))
    if holds_one(result):
        # Trusted, but a range across 1x denies either side: no direction, so no break-even either.
        return sentences(_("**No winner at this size: this run cannot tell JAX and NumPy apart.** It measured a "
                           "speedup of {speedup} ({numpy} vs {jax}), a range that holds 1x, so neither side is faster "
                           "for sure and JAX's one-off costs ({one_off}) have no break-even to quote.").format(
            speedup=speedup_text(result), numpy=numpy_time, jax=jax_time, one_off=one_off),
            rerun_text(result, "range_holds_one"), *_rangesentences(result, with_range=False))
    if word == "faster":
        be = result.break_even_calls
        if be is not None and be <= 1:
            first = _("JAX is **{factor} faster** per call ({numpy} → {jax}); its one-off costs ({one_off}) are "
                      "paid back after **the first call**.").format(
                factor=format_factor(factor), numpy=numpy_time, jax=jax_time, one_off=one_off)
        else:
            first = _("JAX is **{factor} faster** per call ({numpy} → {jax}); its one-off costs ({one_off}) are "
                      "paid back after **{calls}**.").format(
                factor=format_factor(factor), numpy=numpy_time, jax=jax_time, one_off=one_off,
                calls=format_calls(be))
        return sentences(first, *_rangesentences(result))
    first = _("NumPy is **{factor} faster** per call at this size ({numpy} vs {jax}), so JAX never pays back "
              "its {one_off} of one-off costs.").format(
        factor=format_factor(factor), numpy=numpy_time, jax=jax_time, one_off=one_off)
    sweep = "" if not sweep_with else _("{sweep_with} shows whether larger inputs change that.").format(
        sweep_with=sweep_with)
    return sentences(first, *_rangesentences(result), sweep)


def direction_text(result: Result) -> str:
    """For a result set aside: which side is faster all the same, where that stands (trust.direction),
    or why a range wholly on one side of 1x does not say; '' otherwise."""
    found = direction(result)
    if found.side == NUMPY_FASTER:
        return _("Only the size of the gap is in doubt: **NumPy is faster** at this size ({why}).").format(
            why=found.reason())
    if found.side == JAX_FASTER:
        return _("Only the size of the gap is in doubt: **JAX is faster** at this size ({why}).").format(
            why=found.reason())
    doubt = found.doubt()
    return _("Not even the side is sure: the range lies {why}.").format(why=doubt) if doubt else ""


def speedup_words(result: Result) -> str:
    """'2.50x (JAX faster)' where a side stands (trust.direction), else the figure alone ('1.03x'): a
    range across 1x, or checks that set the run aside, deny the side its median names."""
    if direction(result).side is None:
        return format_factor(result.speedup)
    return format_speedup(result.speedup)


def holds_one(result: Result) -> bool:
    """Whether the speedup's 95% range is known and holds 1x: it then denies either side being faster."""
    low, high = result.speedup_range
    return math.isfinite(low) and math.isfinite(high) and low <= 1 <= high


def disagreement_text(result: Result) -> str:
    """For a result set aside because its JAX figures contradict each other, which figures: '' otherwise."""
    if trust(result).why != "disagree":
        return ""
    runtime, dispatch = result.jax.runtime, result.jax.dispatch
    return _("JAX's dispatch alone took {dispatch} ({dispatch_range}) and its blocked call {blocked} "
             "({blocked_range}): a blocked call dispatches too, so the two cannot both be true (see *Blocked "
             "timing* below).").format(dispatch=format_time(dispatch.median_s),
                                       dispatch_range=format_time_range(*dispatch.range_s),
                                       blocked=format_time(runtime.median_s),
                                       blocked_range=format_time_range(*runtime.range_s))


def _rangesentences(result: Result, with_range: bool = True) -> list[str]:
    """How sure: the speedup's 95% range, whether it still allows 'no difference', and
    whether the speedup held from one pair of runtime blocks to the next (a sentence each,
    none when there is nothing to say)."""
    low, high = result.speedup_range
    sentences = []
    ranged = with_range and math.isfinite(low) and math.isfinite(high)
    if ranged:
        if low <= 1 <= high:
            sentences.append(_("With 95% confidence the speedup is between {low} and {high}, so this run cannot "
                               "tell the two apart.").format(low=format_factor(low), high=format_factor(high)))
        else:
            sentences.append(_("With 95% confidence the speedup is between {low} and {high}.").format(
                low=format_factor(low), high=format_factor(high)))
    pairs = result.speedup_pairs
    least, most = (format_factor(min(pairs)), format_factor(max(pairs))) if pairs else ("—", "—")
    if result.speedup_steady is False:
        if ranged:
            template = _("But the speedup moved from one pair of blocks to the next ({least} to {most}): "
                         "see *Speedup steady* below.")
        else:
            template = _("The speedup moved from one pair of blocks to the next ({least} to {most}): "
                         "see *Speedup steady* below.")
        sentences.append(template.format(least=least, most=most))
    elif not (result.numpy_runtime.stable and result.jax.runtime.stable):
        if result.speedup_steady and len(pairs) == 2:
            sentences.append(_("The machine's speed drifted during the run (see *Samples stable* below), but the "
                               "speedup held in both pairs of blocks timed side by side ({least} to "
                               "{most}).").format(least=least, most=most))
        elif result.speedup_steady:
            sentences.append(_("The machine's speed drifted during the run (see *Samples stable* below), but the "
                               "speedup held in all {n} pairs of blocks timed side by side ({least} to "
                               "{most}).").format(n=len(pairs), least=least, most=most))
        elif ranged:
            sentences.append(_("That range assumes the machine held still, and it did not: see *Samples stable* "
                               "below."))
    return sentences


def numpy_speeds_text(result: Result) -> str | None:
    """NumPy's two speeds where they differ beyond their ranges: as a plain process runs it (the
    headline's) and with freed memory kept (engine/worker/plain_numpy.py); None where they agree."""
    factor = result.numpy_memory_speedup
    if factor is None or result.numpy_kept is None:
        return None
    return _("**NumPy's two speeds.** As a plain process runs it, NumPy took {plain} a call; with freed memory "
             "kept, {kept} ({factor} faster). The speedup is against the plain figure, as your own program "
             "would see it unless it sets the allocator.").format(
        plain=format_time(result.numpy_runtime.median_s), kept=format_time(result.numpy_kept.median_s),
        factor=format_factor(factor))


def device_time_text(result: Result) -> str | None:
    """On a GPU or TPU: JAX's time per call blocked, back to back and (with a profile) on the device,
    and the host's round trip, side by side; None on the CPU, or for a result without back to back."""
    pipelined = result.jax.back_to_back
    if is_host(result.backend) or pipelined is None:
        return None
    trip = result.roofline.jax.empty_call_s if result.roofline is not None and result.roofline.jax else None
    profile = result.profile
    busy = profile.device_busy_s if profile is not None and profile.ok and profile.calls > 0 else None
    text = _("**The device's own time.** Per call, JAX took {blocked} blocked (the speedup's figure) and {pipelined} "
             "back to back (one block after a loop of calls: {speedup} against NumPy)").format(
        blocked=format_time(result.jax.runtime.median_s), pipelined=format_time(pipelined.median_s),
        speedup=format_factor(result.speedup_back_to_back))
    parts = [text]
    if busy and busy_above_call(busy, result.jax.runtime.range_s):  # two figures that cannot both be true
        parts.append(_("the profile had the device busy {busy} a traced call, longer than the whole blocked call, "
                       "so its calls ran at another speed and its device time is not this call's").format(
            busy=format_time(busy)))
    elif busy:
        parts.append(_("the device was busy {busy} of it (profile)").format(busy=format_time(busy)))
    if trip:
        parts.append(_("the host's round trip, a blocked empty call, is {trip}").format(trip=format_time(trip)))
    joined = parts[0]
    for part in parts[1:]:
        joined = _("{first}; {then}").format(first=joined, then=part)  # Chinese joins with its own semicolon
    return _("{sentence}.").format(sentence=joined)


def third_side_text(result: Result) -> str | None:
    """The one-line verdict with three sides (formatting.third_side_verdict), or None."""
    text = third_side_verdict(result)
    return _("**JAX on the CPU.** {text}").format(text=text) if text else None


def peak_text(result: Result) -> str | None:
    """The fraction-of-peak line (formatting.peak_sentence), or None without a FLOP count."""
    text = peak_sentence(result)
    return _("**Fraction of peak.** {text}").format(text=text) if text else None


# --- what a speedup figure says, range and all ----------------------------------------------------
def speedup_text(result: Result) -> str:
    """'2.65x (95%: 2.10x–3.31x)': a headline speedup never without its 95% range (where known)."""
    low, high = result.speedup_range
    if not (math.isfinite(low) and math.isfinite(high)):
        return format_factor(result.speedup)
    return _("{speedup} (95%: {low}–{high})").format(speedup=format_factor(result.speedup),
                                                     low=format_factor(low), high=format_factor(high))


def range_detail(result: Result) -> str:
    """A trusted speedup tile's line under its value: the 95% range ('95%: 2.10x–3.31x'; '' where
    unknown). The value holds the speedup alone, so a laptop-wide column shows it whole."""
    low, high = result.speedup_range
    if not (math.isfinite(low) and math.isfinite(high)):
        return ""
    return _("95%: {low}–{high}").format(low=format_factor(low), high=format_factor(high))


# What would settle a run set aside, by why (trust.WHY; "range_holds_one": trusted, its range across 1x),
# then by the run's timing preset: a quieter machine, or more samples from a preset longer than the one it
# ran (never "Careful" to a careful run); a failed check is the checklist's to explain.
QUIETER = N_("Rerun when the machine is quieter.")
RERUN = {
    "interpreted": {"": N_("On a GPU or TPU, where Pallas compiles the kernel, its time is a speed figure.")},
    "busy": {"": QUIETER},
    "disagree": {"": QUIETER},
    "steady": {"": N_("Rerun when the machine is quieter, or with Thorough timing, whose pairs of blocks show it."),
               "thorough": QUIETER},
    "range": {"": N_("A longer timing preset (Careful, Thorough) narrows the range."),
              "careful": N_("Thorough timing narrows the range."),
              "thorough": N_("Even thorough timing left it this wide: rerun when the machine is quieter.")},
    "range_holds_one": {"": N_("A longer timing preset (Careful, Thorough) narrows the range; a gap this small "
                               "may stay within it."),
                        "careful": N_("Thorough timing narrows the range; a gap this small may stay within it."),
                        "thorough": N_("A gap this small lies within what even thorough timing can tell.")},
    "no_range": {"": N_("A longer timing preset (Careful, Thorough) takes enough samples for a range."),
                 "careful": N_("Thorough timing takes enough samples for a range."),
                 "thorough": N_("Even thorough timing took too few samples for a range: rerun when the machine "
                                "is quieter.")},
    "fail": {"": ""},
}


def rerun_text(result: Result, why: str | None = None) -> str:
    """What would settle ``result`` (``why``: a RERUN key, else why it was set aside), for the preset it
    ran: '' where nothing would but the checklist's own advice."""
    by_preset = RERUN[why or trust(result).why or "fail"]
    text = by_preset.get(result.spec.timing.preset_name, by_preset[""])
    return _(text) if text else ""


def doubt_text(result: Result) -> str | None:
    """Why a result's speedup is not headlined ('the machine was busy'), or None when it is trusted."""
    why = set_aside_why(result)
    return None if why is None else _(WHY[why])


# --- a size sweep's headline ----------------------------------------------------------------------
def best_trusted(results: Sequence[Result]) -> Result | None:
    """The trusted point with the highest speedup (None when no point is trusted)."""
    kept = [r for r in results if trusted(r) and math.isfinite(r.speedup)]
    return max(kept, key=lambda r: r.speedup) if kept else None


def sweep_verdict(results: Sequence[Result], crossover_elements: float | None) -> str:
    """Where JAX starts to win, from trusted points only; where no trusted point places it, which
    side is faster where, from the sizes whose whole range lies on one side of 1x (trust.direction,
    trusted or not), naming those set aside that it used and why; then how many were set aside and why."""
    kept = [r for r in results if trusted(r)]
    ndim = len(results[0].shape) if results else 1
    ordered = sorted(results, key=lambda r: math.prod(r.shape))
    sides = {id(r): direction(r) for r in ordered}
    used = doubtful_directions(results)
    if crossover_elements is not None:
        first = _("JAX starts to win at {where}.").format(where=format_crossover(crossover_elements, ndim))
        used = []
    elif any(d.side is not None for d in sides.values()):
        first = direction_sentence([(r.shape, sides[id(r)].side) for r in ordered],
                                   [trusted(r) for r in ordered])
    elif not kept:
        first = _("No size could be trusted, so this sweep has no verdict.")
    elif all(r.speedup >= 1 for r in kept):
        first = _("No crossover: JAX is faster at every trusted size.")
    elif all(r.speedup < 1 for r in kept):
        first = _("No crossover: JAX is not faster at any trusted size; try larger sizes.")
    else:
        first = _("No single crossover in this range.")
    best = best_trusted(results)
    best_line = "" if best is None else _("Best trusted speedup: {speedup} at {shape}.").format(
        speedup=speedup_text(best), shape=format_shape(best.shape))
    unsure = [] if crossover_elements is not None else [r for r in ordered if sides[id(r)].doubt()]
    return sentences(first, used_text(used, sides), unsure_text(unsure, sides), best_line,
                     set_aside_text(results) or "")


def _shapes(shapes: Sequence[tuple[int, ...]]) -> str:
    return _(", ").join(format_shape(shape) for shape in shapes)  # Chinese lists take 、


def direction_sentence(points: Sequence[tuple[tuple[int, ...], str | None]], trusted_at: Sequence[bool] = ()) -> str:
    """Which side is faster where: ``points`` (shape, trust.direction's side or None), smallest
    first; ``trusted_at``: whether each was trusted (none, where not given).
    'NumPy is faster up to 63x63; above, no size could be trusted.'"""
    numpy = [i for i, (_shape, side) in enumerate(points) if side == NUMPY_FASTER]
    jax = [i for i, (_shape, side) in enumerate(points) if side == JAX_FASTER]
    shapes = [shape for shape, _side in points]
    if numpy and jax and max(numpy) > min(jax):
        return _("No single crossover in this range: NumPy is faster at {numpy}, JAX at {jax}.").format(
            numpy=_shapes([shapes[i] for i in numpy]), jax=_shapes([shapes[i] for i in jax]))
    # "up to" / "from ... up" only where every size on that side of the last one says the same.
    numpy_where = jax_where = ""
    if numpy:
        numpy_where = (_("up to {shape}").format(shape=format_shape(shapes[max(numpy)])) if len(numpy) == max(numpy) + 1
                       else _("at {shapes}").format(shapes=_shapes([shapes[i] for i in numpy])))
    if jax:
        jax_where = (_("from {shape} up").format(shape=format_shape(shapes[min(jax)]))
                     if len(jax) == len(points) - min(jax)
                     else _("at {shapes}").format(shapes=_shapes([shapes[i] for i in jax])))
    if numpy and jax:
        values = {"numpy": numpy_where, "jax": jax_where, "last": format_shape(shapes[max(numpy)]),
                  "first": format_shape(shapes[min(jax)])}
        if trusted_at and trusted_at[max(numpy)] and trusted_at[min(jax)]:
            return _("NumPy is faster {numpy} and JAX {jax}, so JAX starts to win between {last} and "
                     "{first}.").format(**values)
        # A crossover rests on trusted sizes only (sweep.firm): a size set aside names its side, no more.
        return _("NumPy is faster {numpy} and JAX {jax}, but no crossover is placed between {last} and {first}: "
                 "a size set aside never places it.").format(**values)
    if numpy:
        if len(numpy) == len(points):
            return _("NumPy is faster at every size; try larger sizes.")
        if max(numpy) < len(points) - 1:
            if any(trusted_at[max(numpy) + 1:]):  # trusted, but with no side: ranges that hold 1x
                return _("NumPy is faster {where}; above, the trusted sizes cannot tell the two apart.").format(
                    where=numpy_where)
            return _("NumPy is faster {where}; above, no size could be trusted.").format(where=numpy_where)
        return _("NumPy is faster {where}.").format(where=numpy_where)
    if len(jax) == len(points):
        return _("JAX is faster at every size.")
    if min(jax) > 0:
        if any(trusted_at[:min(jax)]):
            return _("JAX is faster {where}; below, the trusted sizes cannot tell the two apart.").format(
                where=jax_where)
        return _("JAX is faster {where}; below, no size could be trusted.").format(where=jax_where)
    return _("JAX is faster {where}.").format(where=jax_where)


def _grouped(results: Sequence[Result], why: Callable[[Result], str]) -> str:
    """'10x10, 20x20 (why); 40x40 (why)': sizes that share a reason named once, in order."""
    groups: dict[str, list[tuple[int, ...]]] = {}
    for r in results:
        groups.setdefault(why(r), []).append(r.shape)
    return _("; ").join(_("{shapes} ({why})").format(shapes=_shapes(shapes), why=text)  # Chinese: its semicolon
                        for text, shapes in groups.items())


def used_text(used: Sequence[Result], sides: dict[int, Direction]) -> str:
    """Which sizes set aside the verdict used and why each still says which side is faster; '' for none."""
    if not used:
        return ""
    return _("Used although set aside: {each}.").format(each=_grouped(used, lambda r: sides[id(r)].reason()))


def unsure_text(unsure: Sequence[Result], sides: dict[int, Direction]) -> str:
    """The sizes whose range lies on one side of 1x that the verdict did not use, and why; '' for none."""
    if not unsure:
        return ""
    return _("Not used: {each}.").format(each=_grouped(unsure, lambda r: sides[id(r)].doubt()))
