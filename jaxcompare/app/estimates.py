"""How long a run will take, in words (no Streamlit here): the timing presets' labels, the Run
button's hint, and a running job's time left, from the runner's estimates (engine/server/durations.py)."""

from __future__ import annotations

from collections.abc import Mapping

from ..engine import Estimate
from ..i18n import N_, _, sentences
from ..model.formatting import seconds_text

# The timing presets by name, in the reader's language: the Timing control's labels, which stay
# fixed (a label that changed with its estimate could leave the browser holding a stale option).
TIMING_NAMES = {"careful": N_("Careful"), "quick": N_("Quick"), "thorough": N_("Thorough")}


def timing_label(mode: str) -> str:
    """'Careful': the Timing control's format_func."""
    return _(TIMING_NAMES[mode])


def presets_caption(durations: Mapping[str, Estimate]) -> str:
    """Under the Timing control: 'About 20 s careful, 4 s quick, 1 min 5 s thorough.', the estimate
    of each preset in ``durations`` (in the control's order)."""
    parts = [_("{duration} {preset}").format(duration=seconds_text(estimate.seconds),
                                             preset=timing_label(mode).lower()) for mode, estimate in durations.items()]
    return _("About {list}.").format(list=_(", ").join(parts)) if parts else ""


def run_hint(estimate: Estimate, wait_s: float = 0.0, ahead: int = 0) -> str:
    """Under a Run button: about how long, its range, and what the figure rests on; the queue's wait
    before it where other measurements are ahead."""
    if estimate.basis == "seen":
        basis = _("from {runs} run(s) of this case at this shape and timing").format(runs=estimate.runs)
    elif estimate.basis == "like":
        basis = _("from {runs} run(s) of this case at this shape with another timing").format(runs=estimate.runs)
    elif estimate.basis == "scaled":
        basis = _("a first guess, scaled by {runs} earlier run(s) of other cases").format(runs=estimate.runs)
    else:
        basis = _("a first guess: nothing like it has run on this server yet")
    text = _("Takes about {duration} ({low}–{high}), {basis}.").format(
        duration=seconds_text(estimate.seconds), low=seconds_text(estimate.low), high=seconds_text(estimate.high),
        basis=basis)
    if ahead:
        text = sentences(text, _("First it waits about {wait} behind {ahead} other measurement(s).").format(
            wait=seconds_text(wait_s), ahead=ahead))
    return text


def time_left_text(estimate: Estimate | None, elapsed_s: float) -> str:
    """A running job's time: '12 s, about 20 s left', or past its estimate, that it is taking longer.
    The time so far is measured, so it is said to the second."""
    elapsed = _("{n} s").format(n=round(elapsed_s))
    if estimate is None:
        return elapsed
    if estimate.overdue(elapsed_s):
        return _("{elapsed}, longer than the {duration} expected").format(
            elapsed=elapsed, duration=seconds_text(estimate.seconds))
    return _("{elapsed}, about {left} left").format(elapsed=elapsed, left=seconds_text(estimate.left_s(elapsed_s)))


def past_limit_text(estimate: Estimate, limit_s: float) -> str | None:
    """A clear warning where even the low end of a run's estimate passes the time a job may take (the
    runner stops it there, so the run would end in an error, not a result); None where it may finish."""
    if estimate.low <= limit_s:
        return None
    return _("This run would take about {duration} ({low}–{high}), longer than the {limit} a job may take on "
             "this server: it would be stopped at {limit} with no result. Pick a smaller shape.").format(
        duration=seconds_text(estimate.seconds), low=seconds_text(estimate.low), high=seconds_text(estimate.high),
        limit=seconds_text(limit_s))

