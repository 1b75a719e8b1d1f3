"""The plain-text renderings that every front end prints alike (the CLI's tables, a notebook's
text repr): one wording, written once."""

from __future__ import annotations

from ..model.formatting import PERFETTO_HINT, format_share, format_time, gap_sentence, op_kind_text
from ..model.result import Result


def profile_lines(result: Result) -> list[str]:
    """Where the time goes inside the JAX call: the gap, the top ops, the trace file."""
    profile = result.profile
    if profile is None:
        return []
    if not profile.ok:
        return [f"  profile: {gap_sentence(profile)}"]
    lines = [f"  profile ({profile.calls} traced call(s), {profile.where}):", f"    {gap_sentence(profile)}",
             f"    (for comparison, the timed runtime without the tracer: {format_time(result.runtime.median_s)})",
             "", f"    {'XLA op':<32}{'kind':<40}{'per call':>10}{'of wall':>9}"]
    for op in profile.ops:
        lines.append(f"    {clip(op.name, 31):<32}{clip(op_kind_text(op.kind, op.holds), 39):<40}"
                     f"{format_time(op.time_s):>10}{format_share(op.share):>9}")
    if profile.other_ops_s > 0:
        lines.append(f"    {'(all other ops)':<72}{format_time(profile.other_ops_s):>10}"
                     f"{format_share(profile.other_ops_s / profile.wall_s):>9}")
    lines.append(f"  trace: {profile.trace_file}")
    lines.append(f"    {PERFETTO_HINT}")
    return lines


def clip(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters, an ellipsis marking the cut."""
    return text if len(text) <= width else text[:width - 1] + "…"
