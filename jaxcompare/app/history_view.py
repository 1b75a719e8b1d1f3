"""What the History page shows, as plain data (no Streamlit here): run labels, table rows,
filter options, and the words for a two-run verdict."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

from ..analysis import compare
from ..history.exchange import summary
from ..model.formatting import format_factor, format_time
from ..model.result import Result, finite_or_none

MAX_COMPARE = 10  # runs drawn side by side; one letter each
LETTERS = "ABCDEFGHIJ"
FIELD_NAMES = {
    "case": "case", "shape": "shape", "precision": "precision", "dtype": "dtype", "backend": "device",
    "device_kind": "device kind", "host": "host", "cpu_model": "CPU", "jax": "jax", "jaxlib": "jaxlib",
    "numpy": "numpy", "scipy": "scipy",
}
VERDICT_LEVEL = {compare.FASTER: "success", compare.SLOWER: "error", compare.SAME: "info",
                 compare.TOO_FEW: "warning"}


# --- labels ------------------------------------------------------------------------------------
def when_text(created: str) -> str:
    """'2026-11-29 21:58' in UTC (saved times are UTC ISO 8601)."""
    try:
        when = dt.datetime.fromisoformat(created)
    except (TypeError, ValueError):
        return str(created)
    if when.tzinfo is not None:
        when = when.astimezone(dt.UTC)
    return when.strftime("%Y-%m-%d %H:%M")


def device_text(backend: str, device_kind: str) -> str:
    """'cpu', or 'gpu · NVIDIA H200' when the kind says more than the backend."""
    kind = (device_kind or "").strip()
    return backend if not kind or kind.lower() == backend.lower() else f"{backend} · {kind}"


def _row(item: Result | Mapping[str, Any]) -> Mapping[str, Any]:
    # Duck-typed: Streamlit may reload jaxcompare.model.result while the server runs (two Result classes).
    return item if isinstance(item, Mapping) else summary(item)


def run_label(item: Result | Mapping[str, Any]) -> str:
    """'svd 500x500 x64 · gpu · host · 2026-11-29 21:58' from a Result or a summary row."""
    row = _row(item)
    parts = [f"{row['case']} {row['shape']} {row['precision']}", row["backend"]]
    if row.get("host"):
        parts.append(str(row["host"]))
    parts.append(when_text(row["created"]))
    return " · ".join(parts)


def run_labels(items: Sequence[Result | Mapping[str, Any]]) -> list[str]:
    """Labels that tell the runs apart: two alike (same minute) get their short ids."""
    labels = [run_label(i) for i in items]
    counts = {label: labels.count(label) for label in labels}
    return [f"{label} · {_row(i)['id'][:6]}" if counts[label] > 1 else label
            for label, i in zip(labels, items, strict=True)]


def lettered_labels(items: Sequence[Result | Mapping[str, Any]]) -> list[str]:
    """'A · matmul 10x10 x32 · cpu · ...': letters tie the charts to the verdict."""
    return [f"{LETTERS[i]} · {label}" if i < len(LETTERS) else label
            for i, label in enumerate(run_labels(items))]


def oldest_first(results: Sequence[Result]) -> list[Result]:
    """Comparison order: the older run is A (the baseline), the newer B. By the full creation
    time (the store's summary keeps whole seconds, and runs at tiny shapes finish faster)."""
    def when(r: Result) -> dt.datetime:
        try:
            t = dt.datetime.fromisoformat(r.created)
        except (TypeError, ValueError):
            return dt.datetime.min.replace(tzinfo=dt.UTC)
        return t if t.tzinfo is not None else t.replace(tzinfo=dt.UTC)

    return sorted(results, key=lambda r: (when(r), r.id))


# --- table and filters ---------------------------------------------------------------------------
def table_rows(rows: Sequence[Mapping[str, Any]], *, host: bool = True) -> list[dict[str, Any]]:
    """One table row per saved result (times as text: they span six decades); ``host=False``
    leaves the machine's name out (a hosted demo's visitors)."""
    out = []
    for row in rows:
        out.append({
            "Measured (UTC)": when_text(row["created"]),
            "Case": row["case"],
            "Shape": row["shape"],
            "Precision": row["precision"],
            "Device": device_text(row["backend"], row["device_kind"]),
            "Host": row["host"] or "—",
            "JAX": row["jax_version"] or "—",
            "NumPy runtime": format_time(row["numpy_median_s"]),
            "JAX runtime": format_time(row["jax_median_s"]),
            "Speedup": finite_or_none(row.get("speedup")),
            "ID": row["id"][:8],
        })
        if not host:
            del out[-1]["Host"]
    return out


def device_options(facets: Mapping[str, Sequence[str]]) -> list[str]:
    """Backends first (cpu, gpu), then device kinds that say more (NVIDIA H200)."""
    backends = list(facets.get("backend", []))
    known = {b.lower() for b in backends}
    kinds = [k for k in facets.get("device_kind", []) if k and k.lower() not in known]
    return backends + sorted(set(kinds))


def date_bounds(value: Any) -> tuple[dt.date | None, dt.date | None]:
    """A date_input range (empty, one end picked, or both) as inclusive since/until."""
    if isinstance(value, dt.date):
        return value, value
    dates = [d for d in (value or ()) if isinstance(d, dt.date)]
    if not dates:
        return None, None
    return dates[0], dates[1] if len(dates) > 1 else None


# --- messages ------------------------------------------------------------------------------------
def import_message(added: int, present: int, source: str) -> str:
    noun = "result" if added == 1 else "results"
    return f"Imported {added} {noun} ({present} already present) from {source}."


def showing_text(shown: int, total: int, most: int) -> str:
    """The table's caption: how many of the saved results it lists, and how to use it."""
    count = f"{shown} of {total} results" if shown < total else "1 result" if total == 1 else f"all {total} results"
    return (f"Showing {count}, newest first. Tick rows (the boxes on the left) to compare two or more side by "
            f"side, download or delete them." + (f" Only the newest {most} are listed; filter to see older ones."
                                                 if shown == most else ""))


def delete_question(names: Sequence[str], count: int) -> str:
    """Asks before deleting ``count`` results, listing the first eight of ``names``."""
    listing = "".join(f"\n- {name}" for name in names[:8]) + (f"\n- … and {count - 8} more" if count > 8 else "")
    return (f"Delete {count} saved result{'s' if count != 1 else ''} for good? This cannot be undone; download "
            f"them first to keep a copy.{listing}")


def which_is_which(labels: Sequence[str]) -> str:
    """'**A** (older): ...  **B** (newer): ...' from lettered labels (markdown, two lines)."""
    return (f"**A** (older): {labels[0].split(' · ', 1)[-1]}  \n"
            f"**B** (newer): {labels[1].split(' · ', 1)[-1]}")


def comparison_warning(cmp: compare.Comparison) -> str | None:
    """Why to read the two verdicts with care, as a markdown list; None when nothing is amiss."""
    items = "".join(f"\n- {w}" for w in cmp.warnings)
    if not cmp.comparable:
        return "These two runs are not the same measurement, so read the verdicts with care:" + items
    return items.strip() or None


def setup_line(differences: Sequence[Mapping[str, Any]]) -> str:
    changes = difference_lines(differences)
    if changes:
        return "**What differs:** " + " · ".join(changes)
    return "**Same setup:** case, shape, precision, device, host and versions all match."


def difference_lines(differences: Sequence[Mapping[str, Any]]) -> list[str]:
    """'jax 0.10.2 → 0.11.0', 'device cpu → gpu' from compare.differences()."""
    return [f"{FIELD_NAMES.get(d['field'], d['field'])} {_text(d['a'])} → {_text(d['b'])}"
            for d in differences]


def runtime_verdicts(cmp: compare.Comparison) -> list[tuple[str, str, compare.Verdict]]:
    """(box title, subject for the explanation, verdict) for the JAX and the NumPy runtime."""
    return [("JAX runtime (blocked)", "JAX runtime", cmp.jax_runtime),
            ("NumPy runtime", "NumPy runtime", cmp.numpy_runtime)]


def verdict_headline(v: compare.Verdict) -> tuple[str, str]:
    """(level, text) for a verdict about B against A: level picks the colour of the box."""
    level = VERDICT_LEVEL.get(v.direction, "info")
    if v.direction in (compare.FASTER, compare.SLOWER) and v.factor:
        return level, f"B is {format_factor(v.factor)} {v.direction} than A"
    if v.direction == compare.SAME:
        return level, "No significant difference"
    return level, "Too few samples to judge"


def verdict_explanation(v: compare.Verdict, subject: str = "") -> str:
    """One paragraph: the verdict about "B's <subject>" against "A's <subject>", and why."""
    name_a, name_b = (f"A's {subject}", f"B's {subject}") if subject else ("A", "B")
    if v.p_value is None or v.ci_low is None or v.ci_high is None or v.ratio is None:  # too few samples
        return (f"Too few samples to judge: {name_a} has {v.n_a} and {name_b} has {v.n_b}; at least "
                f"{compare.MIN_SAMPLES} positive samples each are needed (medians {format_time(v.median_a_s)} "
                f"vs {format_time(v.median_b_s)}).")
    level = f"{1 - v.alpha:.0%}"
    if v.shift == compare.FASTER:
        ci_text = f"{level} CI of the speedup {format_factor(1 / v.ci_high)}–{format_factor(1 / v.ci_low)}"
    else:
        ci_text = f"{level} CI of the slowdown {format_factor(v.ci_low)}–{format_factor(v.ci_high)}"
    stats_text = (f"median {format_time(v.median_b_s)} vs {format_time(v.median_a_s)}; {_p_value(v.p_value)}; "
                  f"{ci_text}")
    moved = f"{name_b} is {format_factor(v.factor)} {v.shift} than {name_a}"
    if v.direction != compare.SAME:
        return f"{moved} ({stats_text})."
    if v.significant:
        why = f"{moved}, statistically significant but under the {v.min_effect:.0%} that counts as a real difference"
    elif v.rank_test_differs:
        why = (f"the rank test differs ({_p_value(v.p_value)}) but the {level} CI of the ratio of medians "
               f"({v.ci_low:.3g}–{v.ci_high:.3g}) includes 1")
    elif v.ci_excludes_one:
        why = f"the medians differ by {abs(v.ratio - 1):.1%} but the rank test does not confirm it"
    else:
        why = f"the {abs(v.ratio - 1):.1%} difference in medians is within the noise"
    if not v.rank_test_can_decide:
        why += (f"; with {v.n_a} and {v.n_b} samples a rank test cannot reach p<{v.alpha:g} at all — "
                f"take more samples")
    return f"No significant difference: {why} ({stats_text})."


def verdict_stats(v: compare.Verdict) -> str:
    """The numbers behind a verdict: p-value, ratio of medians with its CI, sample counts."""
    parts = []
    if v.p_value is not None:
        parts.append("p < 0.001" if v.p_value < 0.001 else f"p = {v.p_value:.3f}")
    if v.ratio is not None:
        text = f"median B / A = {v.ratio:.3g}"
        if v.ci_low is not None and v.ci_high is not None:
            text += f" ({1 - v.alpha:.0%} CI {v.ci_low:.3g}–{v.ci_high:.3g})"
        parts.append(text)
    parts.append(f"medians A {format_time(v.median_a_s)}, B {format_time(v.median_b_s)}")
    parts.append(f"samples A {v.n_a}, B {v.n_b}")
    return " · ".join(parts)


def speedup_line(speedups: Mapping[str, float | None]) -> str:
    return f"Speedup (NumPy / JAX): A {format_factor(speedups.get('a'))} → B {format_factor(speedups.get('b'))}"


def _p_value(p: float) -> str:
    return "p<0.001" if p < 0.001 else f"p={p:.3f}"


def _text(value: Any) -> str:
    return "—" if value is None or value == "" else str(value)
