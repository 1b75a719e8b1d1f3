"""What the Compare page's Profile tab and the Pitfalls page's workload-size section show of a
profiler trace, as plain data (no Streamlit here): the gap figures, the top ops, the trace
file and how to open it (the trace itself: engine/worker/profile.py)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..analysis.consistency import busy_above_call
from ..analysis.summary import Figure
from ..i18n import N_, _, translate_text
from ..model.formatting import PERFETTO_HINT, format_share, format_time, format_time_range, op_kind_text
from ..model.profile import Profile
from ..model.result import Result

# In English; a page shows not_profiled_text() and open_trace_text(), in the reader's language.
NOT_PROFILED = N_("Not profiled. Turn on **Profile the JAX call** in the sidebar and run again: after the timed "
                  "phases a few calls are traced with `jax.profiler`, and this tab shows which XLA ops take the "
                  "device's time and how much of each call is host overhead.")
OPEN_TRACE = N_("The trace is a Perfetto (Chrome JSON) trace of the traced calls, each marked `jaxcompare call`: "
                "{hint}.")


def not_profiled_text() -> str:
    """The Profile tab's text for a run that was not profiled."""
    return _(NOT_PROFILED)


def open_trace_text() -> str:
    """What the trace file is and how to open it (PERFETTO_HINT: model/formatting's)."""
    return _(OPEN_TRACE).format(hint=_(PERFETTO_HINT))


def gap_figures(result: Result) -> list[Figure]:
    """Host wall time per traced call, the device's busy time in it, and the gap between them."""
    profile = result.profile
    if profile is None or not profile.ok:
        return []
    return [
        Figure(_("Host wall time per call"), format_time(profile.wall_s),
               _("The mean over {calls} traced, blocked calls, from the call's start on the host to "
                 "block_until_ready() returning. The tracer adds host time: the timed (untraced) runtime was "
                 "{runtime}.").format(calls=profile.calls, runtime=format_time(result.jax.runtime.median_s))),
        Figure(_("Device busy"), f"{format_time(profile.device_busy_s)} · {format_share(profile.busy_share)}",
               _("The union of the XLA ops' intervals inside each call ({where}); ops running at once "
                 "on several threads count once.").format(where=translate_text(profile.where))),
        *_copy_figures(profile),
        Figure(_("Gap: host overhead"), f"{format_time(profile.gap_s)} · {format_share(profile.gap_share)}",
               _("Wall time minus device busy time: Python and C++ dispatch, argument handling, launching the "
                 "executable and waiting for it. Why tiny inputs lose: this part does not shrink with the input.")),
    ]


def _copy_figures(profile: Profile) -> list[Figure]:
    """The copies' time, on a device whose trace shows any (memcpy events, copy kernels)."""
    if not profile.copies and not profile.copy_s:
        return []
    return [Figure(_("Copying"), f"{format_time(profile.copy_s)} · {format_share(profile.copy_share)}",
                   _("{copies} copy event(s) (memcpy, copy kernels) in the traced calls: transfer, not compute, so "
                     "neither in the busy time nor in the gap; counted while no op ran.").format(
                       copies=profile.copies))]


def op_rows(profile: Profile) -> list[dict[str, str]]:
    """The top ops as a table: name, kind, time per call, share of the wall time per call."""
    op, kind, per_call, share = _("XLA op"), _("Kind"), _("Per call"), _("Share of the call")
    rows = [{op: o.name, kind: op_kind_text(o.kind, o.holds), per_call: format_time(o.time_s),
             share: format_share(o.share)} for o in profile.ops]
    if profile.other_ops_s > 0 and profile.wall_s:
        rows.append({op: _("(all other ops)"), kind: "", per_call: format_time(profile.other_ops_s),
                     share: format_share(profile.other_ops_s / profile.wall_s)})
    return rows


def trace_file(profile: Profile, *, private: bool = False) -> tuple[Path | None, str]:
    """The trace file when it is on this machine, and a line saying where it is (or was);
    ``private``: the line names the file, not the server's folder (a hosted demo's visitors)."""
    if not profile.trace_file:
        return None, _("This profile kept no trace file.")
    path = Path(profile.trace_file)
    if path.is_file():
        if private:  # its folder is the server's, and the profiler names the file after the host
            return path, _("The trace is kept on this server: download it below.")
        return path, _("Trace file: `{path}`").format(path=path)
    if private:
        return None, _("The trace file is not on this server (any more).")
    return None, _("The trace file `{path}` is not on this machine (any more): measured elsewhere, or "
                   "deleted.").format(path=path)


def trace_download_name(result: Result) -> str:
    """'matmul_1000x1000_x32_<id8>.perfetto.json.gz': what the trace is saved as."""
    shape = "x".join(str(n) for n in result.shape)
    return f"{result.case}_{shape}_{result.precision}_{result.id[:8]}.perfetto.json.gz"


# --- the Pitfalls page's workload-size section -------------------------------------------------
def side_profile(side: Mapping[str, Any]) -> Profile | None:
    """A pitfall side's profile (pitfall 5 profiles its small and large shape), else None."""
    try:
        return Profile.from_dict(side.get("profile"))
    except Exception:  # a report from another version: no profile rather than no page
        return None


def profile_disagrees(side: Mapping[str, Any]) -> bool:
    """Whether a pitfall side's profile had the device busy longer than its timed call (consistency's rule)."""
    profile = side_profile(side)
    return bool(profile is not None and profile.ok and busy_above_call(profile.device_busy_s, side.get("range")))


def side_gap_text(side: Mapping[str, Any]) -> str | None:
    """'Profiled: device busy **12 µs** of **150 µs** per call; gap **92%** (host overhead).'"""
    profile = side_profile(side)
    if profile is None:
        return None
    if not profile.ok:
        return _("Not profiled: {error}").format(error=translate_text(profile.error))
    if profile_disagrees(side):  # the split would explain a call the profile did not see
        return _("Profiled, but not as timed: the device was busy **{busy}** per traced call, longer than the whole "
                 "timed call ({seconds}, {range}), so the traced calls ran at another speed and their split into "
                 "device time and host overhead is withheld.").format(
            busy=format_time(profile.device_busy_s), seconds=format_time(side.get("seconds")),
            range=format_time_range(*side["range"]))
    return _("Profiled: the device was busy **{busy}** of **{wall}** per call; the gap, **{gap}**, is host "
             "overhead.").format(busy=format_time(profile.device_busy_s), wall=format_time(profile.wall_s),
                                 gap=format_share(profile.gap_share))
