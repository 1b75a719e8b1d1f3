"""Altair charts of profiler traces: pure functions, no Streamlit. A call's wall time is a
whole that its ops and the host's overhead share, so these are linear bars of shares (0–100%
of the wall time per call), not log-scale lollipops (see charts.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import altair as alt

from ..i18n import N_, _, translate_text
from ..model.cases import format_shape
from ..model.formatting import format_share, format_time, op_kind_text
from ..model.profile import Profile
from ..model.result import Result
from .charts import FIT_WIDTH, JAX_COLOR, _subtitle
from .profile_view import profile_disagrees, side_profile

GAP_COLOR = "#9AA0A6"
OTHER_COLOR = "#F2A48F"
BUSY_COLOR = "#54A24B"
COPY_COLOR = "#B279A2"
# English here, translated where a bar is drawn.
GAP_LABEL = N_("Gap: host overhead (dispatch, launch, sync)")
ROLE_COLORS = {N_("XLA op"): JAX_COLOR, N_("other ops"): OTHER_COLOR, N_("copying"): COPY_COLOR,
               N_("gap"): GAP_COLOR}
OTHER_OPS_LABEL = N_("(all other ops)")
COPIES_LABEL = N_("Copies (memcpy, copy kernels): transfer, not compute")
# Pitfall 5's two parts of a call, and their colours.
BUSY_PART, GAP_PART = N_("device busy"), N_("gap: host overhead")
PART_COLORS = {BUSY_PART: BUSY_COLOR, GAP_PART: GAP_COLOR}
ROW_PX = 30


def op_share_rows(profile: Profile) -> list[dict[str, Any]]:
    """One bar per top op, one for the other ops and one for copies (if any), and the gap last;
    each its share of the host's wall time per call, so the bars add up to 100%. Labels and
    roles are in the reader's language (the roles are the legend's entries)."""
    rows = [{"label": op.name, "role": _("XLA op"), "share": op.share, "kind": op_kind_text(op.kind, op.holds),
             "time": format_time(op.time_s)} for op in profile.ops]
    wall = profile.wall_s or 0.0
    if profile.other_ops_s > 0 and wall > 0:
        rows.append({"label": _(OTHER_OPS_LABEL), "role": _("other ops"),
                     "share": min(profile.other_ops_s / wall, 1.0), "kind": "",
                     "time": format_time(profile.other_ops_s)})
    if profile.copy_s > 0 and wall > 0:
        rows.append({"label": _(COPIES_LABEL), "role": _("copying"), "share": profile.copy_share or 0.0, "kind": "",
                     "time": format_time(profile.copy_s)})
    rows.append({"label": _(GAP_LABEL), "role": _("gap"), "share": profile.gap_share or 0.0, "kind": "",
                 "time": format_time(profile.gap_s)})
    for row in rows:
        row["text"] = f"{row['time']} · {format_share(row['share'])}"
    return rows


def profile_chart(result: Result) -> alt.LayerChart:
    """The top XLA ops and the host's overhead as shares of one call's wall time."""
    profile = result.profile
    if profile is None or not profile.ok:
        raise ValueError("profile_chart needs a result with a profile")
    rows = op_share_rows(profile)
    order = [r["label"] for r in rows]
    roles = list(dict.fromkeys(r["role"] for r in rows))  # the legend names only what is drawn
    colors = {_(role): color for role, color in ROLE_COLORS.items()}
    y = alt.Y("label:N", title=None, sort=order, axis=alt.Axis(labelLimit=320, labelFontSize=12, ticks=False))
    x = alt.X("share:Q", title=_("share of the host's wall time per call"),
              scale=alt.Scale(domain=[0, 1.18]), axis=alt.Axis(format="%", values=[0, 0.25, 0.5, 0.75, 1]))
    tooltip = [alt.Tooltip("label:N", title=_("what")), alt.Tooltip("kind:N", title=_("kind")),
               alt.Tooltip("time:N", title=_("per call")), alt.Tooltip("share:Q", title=_("share"), format=".1%")]
    bars = alt.Chart(alt.Data(values=rows)).mark_bar(height={"band": 0.7}).encode(
        x=x, y=y, tooltip=tooltip,
        color=alt.Color("role:N", scale=alt.Scale(domain=roles, range=[colors[r] for r in roles]),
                        legend=alt.Legend(title=None, orient="top", direction="horizontal")))
    text = alt.Chart(alt.Data(values=rows)).mark_text(align="left", dx=4, fontSize=12, color="#333").encode(
        x=x, y=y, text="text:N")
    return alt.layer(bars, text).properties(
        autosize=FIT_WIDTH, width="container", height=ROW_PX * len(rows) + 20,
        title=alt.TitleParams(_("Where one JAX call's time goes"), anchor="start",
                              subtitle=[_subtitle(result),
                                        _("mean of {calls} traced call(s) of {wall}; {where}").format(
                                            calls=profile.calls, wall=format_time(profile.wall_s),
                                            where=translate_text(profile.where))]))


# --- the Pitfalls page's workload-size section -------------------------------------------------
def size_gap_rows(pitfall: Mapping[str, Any]) -> list[dict[str, Any]]:
    """For each profiled side of pitfall 5 (small, then large shape): the device-busy part and
    the gap, as shares of that shape's wall time per call, with where each bar starts; none where a
    side's profile disagrees with its timing (profile_view.profile_disagrees: the run's findings say so)."""
    rows: list[dict[str, Any]] = []
    if any(profile_disagrees(side) for side in (pitfall["naive"], pitfall["correct"])):
        return rows  # a profile that ran at another speed than its timing explains neither shape's call
    for side in (pitfall["naive"], pitfall["correct"]):
        profile = side_profile(side)
        if profile is None or not profile.ok:
            continue
        shape = format_shape(tuple(side.get("shape") or ()))
        label = _("{shape} · {time} per call").format(shape=shape, time=format_time(profile.wall_s))
        busy = profile.busy_share or 0.0
        rows.append({"label": label, "part": _(BUSY_PART), "start": 0.0, "end": busy, "share": busy,
                     "time": format_time(profile.device_busy_s)})
        gap = profile.gap_share or 0.0
        rows.append({"label": label, "part": _(GAP_PART), "start": busy + (profile.copy_share or 0.0), "end": 1.0,
                     "share": gap, "time": format_time(profile.gap_s)})
    for row in rows:
        row["text"] = f"{row['part']} {format_share(row['share'])}" if row["share"] >= 0.12 else ""
    return rows


def size_gap_chart(pitfall: Mapping[str, Any]) -> alt.LayerChart | None:
    """The small and the large shape's wall time per call, split into device busy and the gap
    (None when the section carries no profile)."""
    rows = size_gap_rows(pitfall)
    if not rows:
        return None
    order = list(dict.fromkeys(r["label"] for r in rows))
    y = alt.Y("label:N", title=None, sort=order, axis=alt.Axis(labelLimit=320, labelFontSize=12, ticks=False))
    x = alt.X("start:Q", title=_("share of the wall time per call (profiled)"), scale=alt.Scale(domain=[0, 1]),
              axis=alt.Axis(format="%", values=[0, 0.25, 0.5, 0.75, 1]))
    color = alt.Color("part:N", scale=alt.Scale(domain=[_(part) for part in PART_COLORS],
                                                range=list(PART_COLORS.values())),
                      legend=alt.Legend(title=None, orient="top", direction="horizontal"))
    tooltip = [alt.Tooltip("label:N", title=_("shape")), alt.Tooltip("part:N", title=_("part")),
               alt.Tooltip("time:N", title=_("per call")), alt.Tooltip("share:Q", title=_("share"), format=".1%")]
    bars = alt.Chart(alt.Data(values=rows)).mark_bar(height={"band": 0.6}).encode(
        x=x, x2="end:Q", y=y, color=color, tooltip=tooltip)
    text = alt.Chart(alt.Data(values=rows)).mark_text(align="left", dx=6, fontSize=12, color="white",
                                                      fontWeight="bold").encode(x="start:Q", y=y, text="text:N")
    return alt.layer(bars, text).properties(
        autosize=FIT_WIDTH, width="container", height=44 * len(order) + 20,
        title=alt.TitleParams(_("Why tiny inputs lose: the device is idle for most of a tiny call"), anchor="start",
                              subtitle=_("each shape's blocked call, traced with jax.profiler: the device's busy "
                                         "time and the gap (Python and C++ dispatch, launch, sync)")))
