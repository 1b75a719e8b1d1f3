"""What the History page shows, as plain data (no Streamlit here): run labels, table rows,
filter options, and the words for a two-run verdict."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

from ..analysis import compare
from ..analysis.summary import doubt_text, speedup_tile
from ..analysis.text import roofline_lines
from ..analysis.trust import trusted
from ..analysis.versions import release_key
from ..history.exchange import summary
from ..i18n import N_, _, language, ngettext, sentences
from ..model.formatting import format_factor, format_time, markdown_literal, utc_minute
from ..model.result import Result, finite_or_none
from ..model.spec import MIN_SAMPLES_FOR_RANGE

MAX_COMPARE = 10  # runs drawn side by side; one letter each
LETTERS = "ABCDEFGHIJ"
# What differs between two runs, named in the reader's language (difference_lines); dtype, CPU and the
# package names are the same in every language.
FIELD_NAMES = {
    "case": N_("case"), "port": N_("port"), "shape": N_("shape"), "precision": N_("precision"), "dtype": "dtype",
    "backend": N_("device"), "device_kind": N_("device kind"), "host": N_("host"), "cpu_model": "CPU",
    "jax": "jax", "jaxlib": "jaxlib", "numpy": "numpy", "scipy": "scipy",
}
VERDICT_LEVEL = {compare.FASTER: "success", compare.SLOWER: "error", compare.SAME: "info",
                 compare.TOO_FEW: "warning"}


# --- labels ------------------------------------------------------------------------------------
def when_text(created: str) -> str:
    """'2026-11-29 21:58' in UTC (saved times are UTC ISO 8601), else as saved."""
    return utc_minute(created) or str(created)


def device_text(backend: str, device_kind: str) -> str:
    """'cpu', or 'gpu · NVIDIA H200' when the kind says more than the backend."""
    kind = (device_kind or "").strip()
    return backend if not kind or kind.lower() == backend.lower() else f"{backend} · {kind}"


def _row(item: Result | Mapping[str, Any]) -> Mapping[str, Any]:
    # Duck-typed: Streamlit may reload jaxcompare.model.result while the server runs (two Result classes).
    return item if isinstance(item, Mapping) else summary(item)


def run_label(item: Result | Mapping[str, Any], *, port: bool = False) -> str:
    """'svd 500x500 x64 · gpu · host · 2026-11-29 21:58' from a Result or a summary row; ``port``: naming
    the JAX port measured ('cumsum scan 1000 x32 ...'), where runs of several ports are told apart."""
    row = _row(item)
    named = f" {row['port']}" if port and row.get("port") else ""
    parts = [f"{row['case']}{named} {row['shape']} {row['precision']}", row["backend"]]
    if row.get("host"):
        parts.append(str(row["host"]))
    parts.append(when_text(row["created"]))
    return " · ".join(parts)


def run_labels(items: Sequence[Result | Mapping[str, Any]]) -> list[str]:
    """Labels that tell the runs apart: two ports of one case name their ports (two configurations), two
    alike (same minute) get their short ids."""
    ports: dict[str, set[Any]] = {}
    for i in items:
        ports.setdefault(_row(i)["case"], set()).add(_row(i).get("port"))
    labels = [run_label(i, port=len(ports[_row(i)["case"]]) > 1) for i in items]
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
def set_aside(store: Any, ids: Sequence[str]) -> dict[str, str]:
    """The saved results among ``ids`` whose speedup is not trusted, each with what its Speedup tile
    shows instead of the bare figure and why ('0.19x–0.24x · the machine was busy'). A saved result
    never changes, so each id is judged once per server process and language."""
    lang = language()  # the tile's words are the reader's
    missing = [i for i in ids if (lang, i) not in _SET_ASIDE]
    if missing:
        results = store.load_readable(missing)[0]  # a row deleted meanwhile, or unreadable: the others
        if len(_SET_ASIDE) > 20_000:  # a long-lived server's cache stays bounded
            _SET_ASIDE.clear()
        for result in results:
            why = doubt_text(result)
            _SET_ASIDE[lang, result.id] = None if why is None else _("{value} · {why}").format(
                value=speedup_tile(result)[0], why=why)
    return {i: text for i in ids if (text := _SET_ASIDE.get((lang, i)))}


_SET_ASIDE: dict[tuple[str, str], str | None] = {}


def table_rows(rows: Sequence[Mapping[str, Any]], *, host: bool = True,
               doubts: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """One table row per saved result (times as text: they span six decades); ``host=False``
    leaves the machine's name out (a hosted demo's visitors); ``doubts`` (set_aside): a result not
    trusted has no bare Speedup ("set aside"), its tile's range instead, in a column of its own. NumPy has two
    columns: as a plain process runs it (the speedup's), and with freed memory kept, blank where it
    was timed once. The columns are named in the reader's language: the page finds them as
    ``_("Speedup")`` and ``_("ID")``."""
    out = []
    host_column = _("Host")
    doubts = doubts or {}
    for row in rows:
        kept = row.get("numpy_kept_median_s")
        out.append({
            _("Measured (UTC)"): when_text(row["created"]),
            _("Case"): row["case"],
            # "—": saved before cases had ports (it measured the case's one JAX function, today's default).
            _("Port"): row.get("port") or "—",
            _("Shape"): row["shape"],
            _("Precision"): row["precision"],
            _("Device"): device_text(row["backend"], row["device_kind"]),
            host_column: row["host"] or "—",
            "JAX": row["jax_version"] or "—",
            _("NumPy runtime (plain process)"): format_time(row["numpy_median_s"]),
            # Blank where NumPy was timed once: "—" would read as a figure that is missing.
            _("NumPy (freed memory kept)"): "" if kept is None else format_time(kept),
            _("JAX runtime"): format_time(row["jax_median_s"]),
            # Text, as the times are: a number column shows "None" for a run set aside, a figure it withholds.
            _("Speedup"): _("set aside") if row["id"] in doubts else speedup_cell(row.get("speedup")),
            **({_("Set aside"): doubts.get(row["id"], "")} if doubts else {}),
            _("ID"): row["id"][:8],
        })
        if not host:
            del out[-1][host_column]
    return out


def speedup_cell(speedup: Any) -> str:
    """A trusted run's Speedup cell: '2.00x', or '—' where it was not finite (a zero JAX runtime)."""
    value = finite_or_none(speedup)
    return "—" if value is None else format_factor(value)


def device_options(facets: Mapping[str, Sequence[str]]) -> list[str]:
    """Backends first (cpu, gpu), then device kinds that say more (NVIDIA H200)."""
    backends = list(facets.get("backend", []))
    known = {b.lower() for b in backends}
    kinds = [k for k in facets.get("device_kind", []) if k and k.lower() not in known]
    return backends + sorted(set(kinds))


def jax_options(facets: Mapping[str, Sequence[str]]) -> list[str]:
    """The saved JAX versions, newest release first (a result that recorded none is left out)."""
    return sorted((v for v in facets.get("jax_version", []) if v), key=release_key, reverse=True)


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
    return ngettext("Imported {added} result ({present} already present) from {source}.",
                    "Imported {added} results ({present} already present) from {source}.", added).format(
        added=added, present=present, source=source)


def showing_text(shown: int, total: int, most: int, editable: bool = True) -> str:
    """The table's caption: how many of the saved results it lists, and how to use it (``editable``: the reader
    may delete; a hosted demo's visitor may not, and is not told to)."""
    if shown < total:
        text = _("Showing {shown} of {total} results, newest first.").format(shown=shown, total=total)
    elif total == 1:
        text = _("Showing 1 result, newest first.")
    else:
        text = _("Showing all {total} results, newest first.").format(total=total)
    text = sentences(text, _("Tick rows (the boxes on the left) to compare two or more side by side, download or "
                             "delete them.") if editable else
                     _("Tick rows (the boxes on the left) to compare two or more side by side or download them."))
    if shown == most:
        text = sentences(text, _("Only the newest {most} are listed; filter to see older ones.").format(most=most))
    return text


def delete_question(names: Sequence[str], count: int) -> str:
    """Asks before deleting ``count`` results, listing the first eight of ``names``."""
    listing = "".join(f"\n- {markdown_literal(name)}" for name in names[:8])
    if count > 8:
        listing += "\n- " + _("… and {more} more").format(more=count - 8)
    return ngettext("Delete {count} saved result for good? This cannot be undone; download them first to keep "
                    "a copy.",
                    "Delete {count} saved results for good? This cannot be undone; download them first to keep "
                    "a copy.", count).format(count=count) + listing


def which_is_which(labels: Sequence[str]) -> str:
    """'**A** (older): ...  **B** (newer): ...' from lettered labels (markdown, two lines)."""
    return _("**A** (older): {a}  \n**B** (newer): {b}").format(
        a=markdown_literal(labels[0].split(" · ", 1)[-1]), b=markdown_literal(labels[1].split(" · ", 1)[-1]))


def comparison_warning(cmp: compare.Comparison) -> str | None:
    """Why to read the two verdicts with care, as a markdown list; None when nothing is amiss."""
    # compare_results words them for the reader, with the runs' own strings (case names) in them: plain text.
    items = "".join(f"\n- {markdown_literal(w)}" for w in cmp.warnings)
    if not cmp.comparable:
        return _("These two runs are not the same measurement, so read the verdicts with care:") + items
    return items.strip() or None


def setup_line(differences: Sequence[Mapping[str, Any]]) -> str:
    changes = difference_lines(differences)
    if changes:
        return _("**What differs:** {changes}").format(changes=" · ".join(changes))
    return _("**Same setup:** case, shape, precision, device, host and versions all match.")


def difference_lines(differences: Sequence[Mapping[str, Any]]) -> list[str]:
    """'jax 0.10.2 → 0.11.0', 'device cpu → gpu' from compare.differences(), as Markdown that shows
    the recorded values as they are."""
    return [f"{field_name(d['field'])} {_text(d['a'])} → {_text(d['b'])}" for d in differences]


def field_name(field: str) -> str:
    """A setup field as difference_lines names it, in the reader's language ('device')."""
    return _(FIELD_NAMES.get(field, field))


def runtime_verdicts(cmp: compare.Comparison) -> list[tuple[str, str, compare.Verdict]]:
    """(box title, subject for the explanation, verdict) for the JAX and the NumPy runtime."""
    return [(_("JAX runtime (blocked)"), _("JAX runtime"), cmp.jax_runtime),
            (_("NumPy runtime"), _("NumPy runtime"), cmp.numpy_runtime)]


def verdict_headline(v: compare.Verdict) -> tuple[str, str]:
    """(level, text) for a verdict about B against A: level picks the colour of the box."""
    level = VERDICT_LEVEL.get(v.direction, "info")
    if v.direction == compare.FASTER and v.factor:
        return level, _("B is {factor} faster than A").format(factor=format_factor(v.factor))
    if v.direction == compare.SLOWER and v.factor:
        return level, _("B is {factor} slower than A").format(factor=format_factor(v.factor))
    if v.direction == compare.SAME:
        return level, _("No significant difference")
    return level, _("Too few samples to judge")


def verdict_explanation(v: compare.Verdict, subject: str = "") -> str:
    """One paragraph: the verdict about "B's <subject>" against "A's <subject>", and why."""
    if subject:
        name_a, name_b = _("A's {subject}").format(subject=subject), _("B's {subject}").format(subject=subject)
    else:
        name_a, name_b = "A", "B"
    if v.p_value is None or v.ci_low is None or v.ci_high is None or v.ratio is None:  # too few samples
        return _("Too few samples to judge: {name_a} or {name_b} has no 95% range, which needs at least "
                 "{min_samples} samples (medians {median_a} vs {median_b}).").format(
            name_a=name_a, name_b=name_b, min_samples=MIN_SAMPLES_FOR_RANGE,
            median_a=format_time(v.median_a_s), median_b=format_time(v.median_b_s))
    level = f"{1 - v.alpha:.0%}"
    if v.shift == compare.FASTER:
        ci_text = _("{level} CI of the speedup {low}–{high}").format(
            level=level, low=format_factor(1 / v.ci_high), high=format_factor(1 / v.ci_low))
    else:
        ci_text = _("{level} CI of the slowdown {low}–{high}").format(
            level=level, low=format_factor(v.ci_low), high=format_factor(v.ci_high))
    # B first, as the sentence is about B; each median named, as the stats line under it names them.
    stats_text = _("median B {median_b} vs A {median_a}; {p_value}; {ci}").format(
        median_b=format_time(v.median_b_s), median_a=format_time(v.median_a_s), p_value=_p_value(v.p_value),
        ci=ci_text)
    moved = {"name_a": name_a, "name_b": name_b, "factor": format_factor(v.factor)}
    faster = v.shift == compare.FASTER
    if v.direction != compare.SAME:
        if faster:
            return _("{name_b} is {factor} faster than {name_a} ({stats}).").format(stats=stats_text, **moved)
        return _("{name_b} is {factor} slower than {name_a} ({stats}).").format(stats=stats_text, **moved)
    if v.significant:
        if faster:
            why = _("{name_b} is {factor} faster than {name_a}, statistically significant but under the "
                    "{min_effect:.0%} that counts as a real difference").format(min_effect=v.min_effect, **moved)
        else:
            why = _("{name_b} is {factor} slower than {name_a}, statistically significant but under the "
                    "{min_effect:.0%} that counts as a real difference").format(min_effect=v.min_effect, **moved)
    else:
        why = _("the {difference:.1%} difference in medians is within what a rerun moves them").format(
            difference=abs(v.ratio - 1))
    return _("No significant difference: {why} ({stats}).").format(why=why, stats=stats_text)


def verdict_stats(v: compare.Verdict) -> str:
    """The numbers behind a verdict: p-value, ratio of medians with its range, the runs each side pools."""
    parts = []
    if v.p_value is not None:
        parts.append("p < 0.001" if v.p_value < 0.001 else f"p = {v.p_value:.3f}")
    if v.ratio is not None:
        if v.ci_low is not None and v.ci_high is not None:
            text = _("median B / A = {ratio:.3g} ({level} CI {low:.3g}–{high:.3g})").format(
                ratio=v.ratio, level=f"{1 - v.alpha:.0%}", low=v.ci_low, high=v.ci_high)
        else:
            text = _("median B / A = {ratio:.3g}").format(ratio=v.ratio)
        parts.append(text)
    parts.append(_("medians A {median_a}, B {median_b}").format(
        median_a=format_time(v.median_a_s), median_b=format_time(v.median_b_s)))
    parts.append(_("runs A {n_a}, B {n_b}").format(n_a=v.n_a, n_b=v.n_b))
    return " · ".join(parts)


def speedup_line(speedups: Mapping[str, float | None], a: Result | None = None, b: Result | None = None) -> str:
    """Both runs' speedups; a run its checklist sets aside (``a``, ``b``: the runs) marked ?."""
    set_aside = {run for run, result in (("a", a), ("b", b)) if result is not None and not trusted(result)}
    figures = {run: format_factor(speedups.get(run)) + ("?" if run in set_aside else "") for run in ("a", "b")}
    line = _("Speedup (NumPy / JAX): A {a} → B {b}").format(**figures)
    return line + (" · " + _("?: set aside (see above)") if set_aside else "")


def numpy_kept_line(cmp: compare.Comparison) -> str | None:
    """Each run's NumPy with freed memory kept, where either has one, and which figure the NumPy
    verdict compares (the plain process's); None where both timed NumPy once."""
    kept = cmp.numpy_kept
    if kept.get("a") is None and kept.get("b") is None:
        return None
    return _("NumPy with freed memory kept: A {a} → B {b}; the NumPy runtime verdict compares the figures of "
             "NumPy as a plain process runs it").format(a=format_time(kept.get("a")), b=format_time(kept.get("b")))


def _p_value(p: float) -> str:
    return "p<0.001" if p < 0.001 else f"p={p:.3f}"


def _text(value: Any) -> str:
    return "—" if value is None or value == "" else markdown_literal(value, 60)


def unreadable_text(ids: Sequence[str]) -> str:
    """Why some ticked rows are not shown: deleted meanwhile, or saved in a form this version cannot read."""
    return ngettext("{count} selected result cannot be shown ({ids}): deleted since the table was drawn, or "
                    "saved in a form this version cannot read. `python -m jaxcompare history` lists it.",
                    "{count} selected results cannot be shown ({ids}): deleted since the table was drawn, or "
                    "saved in a form this version cannot read. `python -m jaxcompare history` lists them.",
                    len(ids)).format(count=len(ids), ids=", ".join(markdown_literal(i[:8]) for i in ids[:8]))


def roofline_line(result: Result, label: str) -> str:
    """A selected run's roofline in one line: each side's limit and the share of its bound it
    reached (analysis/text's line, as the CLI prints it), "not recorded" for an old result."""
    # The label carries recorded names (case, device kind): shown as written, never as Markdown.
    line = " ".join(part.strip() for part in roofline_lines(result))
    return f"**{markdown_literal(label)}** · {markdown_literal(line)}"


# --- a saved run reopened on the Compare page --------------------------------------------------------
RESULT_PARAM = "result"  # Compare's URL parameter: the id of a saved result to show
MAX_ID_CHARS = 80  # anyone can write a link: an id is quoted in a message, never at any length


def compare_query(result: Result) -> dict[str, str]:
    """The Compare page's URL parameters that set its sidebar to what ``result`` measured (the
    settings a Run comparison would measure it again with); read by controls.compare_config_from_query."""
    spec = result.spec
    query = {"case": result.case, "shape": "x".join(str(n) for n in result.shape), "precision": result.precision,
             "device": spec.device, "timing": spec.timing.preset_name}
    if spec.matmul_precision != "default":
        query["matmul_precision"] = spec.matmul_precision
    if spec.port:  # the port it measured (a URL naming a port the case lacks warns and takes the default)
        query["ports"] = spec.port
    return query


def saved_run_note(result: Result) -> str:
    """The Compare page's line over a result reopened from History: when and where it was measured."""
    where = device_text(result.backend, result.jax.device_kind)
    host = result.env.get("hostname")  # gone from a result a hosted demo's visitor sees (access.visible)
    if host:
        where += f" · {host}"
    return _("A saved run (`{id}`) from History, measured {when} UTC on {where}. **Run comparison** measures it "
             "again here.").format(id=result.id[:8], when=when_text(result.created), where=markdown_literal(where))


def not_opened_text(raw_id: str) -> str:
    """English from an N_() template (shown with translate_text, like the page's other errors): the
    saved result a link asked for is not there, or cannot be read."""
    return N_("No saved result with the id {id} can be opened; pick a run on the History page.").format(
        id=markdown_literal(raw_id, MAX_ID_CHARS) or '""')
