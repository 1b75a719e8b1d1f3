"""Summaries, targets and the printed table for accuracy.py (pure functions on its JSON)."""

from __future__ import annotations

import math
import statistics
from typing import Any

from accuracy_worker import OVERHEAD_ENGINE

from jaxcompare.model.formatting import format_time

REFERENCES = ("timeit", "ipython", "pyperf")
LABELS = {"jaxcompare": "jaxcompare", "timeit": "timeit", "ipython": "%timeit", "pyperf": "pyperf"}
TOLERANCE = 0.05


def spread(values: list[float]) -> float | None:
    """(max - min) / median: how far apart repeated numbers land (None for fewer than 2)."""
    if len(values) < 2:
        return None
    med = statistics.median(values)
    return (max(values) - min(values)) / med if med > 0 else math.inf


def summarize_row(row: dict[str, Any]) -> dict[str, Any]:
    """Per tool: the median of its runs; per reference: the ratio against the jaxcompare runs around it."""
    tools = {}
    for tool, runs in row["runs"].items():
        medians = [r["median_s"] for r in runs]
        tools[tool] = {"median_s": statistics.median(medians), "wall_s": statistics.median(r["wall_s"] for r in runs),
                       "spread": spread(medians), "runs": len(runs)}
    # Each reference run sits between two jaxcompare runs; their mean is jaxcompare's number for
    # the same stretch of time, and one draw against one draw (a median over all jaxcompare runs
    # would be one-sidedly lower under bursty load than any single reference run).
    ratios = {ref: statistics.median(statistics.mean(r["jaxcompare_adjacent_s"]) / r["median_s"]
                                     for r in row["runs"][ref]) for ref in REFERENCES if ref in row["runs"]}
    refs_ratio = None
    if "timeit" in tools and "ipython" in tools:
        refs_ratio = tools["timeit"]["median_s"] / tools["ipython"]["median_s"]
    within = all(abs(r - 1) <= TOLERANCE for r in ratios.values())
    return {k: row[k] for k in ("precision", "case", "size", "shape", "phase", "statement")} | {
        "tools": tools, "ratios": ratios, "references_ratio": refs_ratio,
        "references_agree": None if refs_ratio is None else abs(refs_ratio - 1) <= TOLERANCE,
        "within_tolerance": within}


def summarize_overhead(entry: dict[str, Any]) -> dict[str, Any]:
    return {"precision": entry["precision"], "variant": entry["variant"],
            "engine_s": statistics.median(e["median_s"] for e in entry["engine"]),
            "bare_s": statistics.median(entry["bare_s"]), "ratio": statistics.median(entry["ratios"]),
            "ratios": entry["ratios"]}


SHOWCASE_LABELS = {"jaxcompare_quick": "jaxcompare measure(), quick timing",
                   "jaxcompare": "jaxcompare measure(), careful timing (default)",
                   "jaxcompare_thorough": "jaxcompare measure(), thorough timing",
                   "ipython": "IPython protocol"}


def summarize_showcase(show: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {k: show[k] for k in ("precision", "case", "shape")}
    out["tools"] = [tool for tool in SHOWCASE_LABELS if show.get(tool)]
    for tool in out["tools"]:
        runs = show[tool]
        speedups = [r["speedup"] for r in runs]
        walls = [r["wall_s"] for r in runs]
        out[tool] = {"speedups": speedups, "speedup_median": statistics.median(speedups),
                     "speedup_spread": spread(speedups),
                     "speedup_cv": statistics.stdev(speedups) / statistics.mean(speedups) if len(runs) > 1 else None,
                     "wall_s": walls, "wall_median_s": statistics.median(walls),
                     "numpy_s": statistics.median(r["numpy_s"] for r in runs),
                     "jax_s": statistics.median(r["jax_s"] for r in runs),
                     "first_call_s": statistics.median(r["first_call_s"] for r in runs)}
        if all("stable" in r for r in runs):  # jaxcompare says which of its runs to trust
            # Timed in pairs of blocks, a run is judged by whether its speedup held from pair to
            # pair (Speedup steady); otherwise by whether both samples were stable.
            unsteady = [r for r in runs if r.get("steady") is False]
            trusted = [r["speedup"] for r in runs
                       if (r["steady"] if r.get("steady") is not None else r["stable"])]
            out[tool].update(flagged=sum(not r["stable"] for r in runs), trusted_spread=spread(trusted),
                             trusted=len(trusted))
            if any(r.get("steady") is not None for r in runs):
                out[tool]["unsteady"] = len(unsteady)
    return out


def _typical_deviation(rows: list[dict], pair: tuple[str, str]) -> float:
    a, b = pair
    devs = [abs(r["tools"][a]["median_s"] / r["tools"][b]["median_s"] - 1) for r in rows
            if a in r["tools"] and b in r["tools"]]
    return statistics.median(devs) if devs else math.nan


def targets(rows: list[dict], overhead: list[dict], showcase: dict | None) -> list[dict[str, Any]]:
    """Each target of issue 7 with what this run reached (ratios within this one run)."""
    found = []
    stable = [r for r in rows if r["references_agree"]]
    hit = [r for r in stable if r["within_tolerance"]]
    worst = max((abs(v - 1) for r in stable for v in r["ratios"].values()), default=None)
    found.append({"id": "medians", "title": "runtime medians within ±5% of the references (stable rows: timeit "
                  "and %timeit agree within 5%)", "met": bool(stable) and len(hit) == len(stable),
                  "reached": f"{len(hit)}/{len(stable)} stable rows within ±5% (worst {worst:.1%}); "
                             f"{sum(r['within_tolerance'] for r in rows)}/{len(rows)} of all rows"
                  if worst is not None else "no stable rows"})
    dev = {pair: _typical_deviation(rows, pair) for pair in (("jaxcompare", "timeit"), ("jaxcompare", "ipython"),
                                                             ("timeit", "ipython"))}
    found.append({"id": "context", "title": "context, not a target: typical (median over all rows) |a/b - 1|, "
                  "jaxcompare against each reference and the two references against each other",
                  "met": None,
                  "reached": ", ".join(f"{LABELS[a]}/{LABELS[b]} {d:.1%}" for (a, b), d in dev.items())})
    engine = [o for o in overhead if o["variant"] == OVERHEAD_ENGINE]
    if engine:
        ratios = ", ".join(f"{o['precision']} {o['ratio'] - 1:+.1%}" for o in engine)
        found.append({"id": "overhead", "title": "harness overhead on a trivial jitted x + 1 within 5% of a bare "
                      "loop of f(x).block_until_ready()", "met": all(abs(o["ratio"] - 1) <= TOLERANCE for o in engine),
                      "reached": ratios})
    if showcase:
        ipy = showcase["ipython"]
        modes = [t for t in showcase["tools"] if t != "ipython"]
        n = len(ipy["speedups"])

        def name(tool: str) -> str:
            return tool.replace("jaxcompare_", "").replace("jaxcompare", "careful")

        if ipy["speedup_spread"] is not None:
            found.append({"id": "speedup_spread", "title": f"spread of the reported speedup over {n} repeats no "
                          "wider than %timeit's, in some timing mode",
                          "met": any(showcase[t]["speedup_spread"] <= ipy["speedup_spread"] for t in modes),
                          "reached": ", ".join(f"{name(t)} {showcase[t]['speedup_spread']:.1%}" for t in modes)
                          + f" vs %timeit {ipy['speedup_spread']:.1%} ((max - min) / median)"})
        shape = "x".join(map(str, showcase["shape"]))

        def full(tool: str) -> bool:
            x = showcase[tool]
            return x["wall_median_s"] < ipy["wall_median_s"] and (x["speedup_spread"] or 0) <= (
                ipy["speedup_spread"] or 0)

        found.append({"id": "full_comparison", "title": f"a full centered_gram {shape} comparison in less wall time "
                      "than %timeit + %time + %timeit, at equal or better spread, in some timing mode",
                      "met": any(full(t) for t in modes),
                      "reached": ", ".join(f"{name(t)} {showcase[t]['wall_median_s']:.2f} s "
                                           f"({showcase[t]['wall_median_s'] / ipy['wall_median_s']:.2f}x)"
                                           + (" and as tight" if full(t) else "") for t in modes)
                      + f" vs {ipy['wall_median_s']:.2f} s"})
    return found


def summarize(children: list[dict[str, Any]]) -> dict[str, Any]:
    rows = [summarize_row(r) for c in children for r in c["rows"]]
    overhead = [summarize_overhead(o) for c in children for o in c["overhead"]]
    shows = [c["showcase"] for c in children if c.get("showcase")]
    showcase = summarize_showcase(shows[0]) if shows else None
    return {"rows": rows, "overhead": overhead, "showcase": showcase,
            "timing": children[0].get("timing", "careful") if children else "careful",
            "targets": targets(rows, overhead, showcase),
            "loads": {c["precision"]: c["load"] for c in children}}


def _ratio(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def render(report: dict[str, Any]) -> str:
    """The plain-text table (Markdown-compatible, so RESULTS.md can quote it as is)."""
    lines = []
    m = report["machine"]
    load = report["load"]
    lines.append(f"Machine: {m['cpu_model']}, {m['cpu_affinity']} of {m['cpu_count']} cores; "
                 f"{m['platform']}; jax {m['versions'].get('jax')}, numpy {m['versions'].get('numpy')}")
    lines.append(f"Load from other processes while measuring: {load['other_cores']:.2f} cores busy on average "
                 f"(1-min loadavg at the end {load['loadavg_1min']:.2f}); this run used {load['own_cores']:.2f} cores; "
                 f"total wall {report['wall_s']:.0f} s")
    lines.append("")
    lines.append(f"Runtime medians, jaxcompare in its {report.get('timing', 'careful')} timing preset. "
                 "jaxcompare ran before, between and after the references (column: the median "
                 "of those runs); ratio = mean of the two jaxcompare runs around that reference / the reference; "
                 "wall = seconds one tool took to reach its number; timeit/%timeit: how far the two references "
                 "are apart")
    lines.append("")
    head = ["prec", "case", "size", "phase", "jaxcompare", "timeit", "ratio", "%timeit", "ratio", "pyperf", "ratio",
            "wall jc", "timeit", "%timeit", "pyperf", "timeit/%timeit"]
    table = [head]
    for r in report["rows"]:
        t = r["tools"]

        def med(tool: str, t: dict = t) -> str:
            return format_time(t[tool]["median_s"]) if tool in t else "—"

        def wall(tool: str, t: dict = t) -> str:
            return f"{t[tool]['wall_s']:.2f}" if tool in t else "—"

        table.append([r["precision"], r["case"], "x".join(map(str, r["shape"])), r["phase"], med("jaxcompare"),
                      med("timeit"), _ratio(r["ratios"].get("timeit")), med("ipython"),
                      _ratio(r["ratios"].get("ipython")), med("pyperf"), _ratio(r["ratios"].get("pyperf")),
                      wall("jaxcompare"), wall("timeit"), wall("ipython"), wall("pyperf"),
                      _ratio(r["references_ratio"])])
    lines.extend(_markdown(table))
    if report["overhead"]:
        lines.append("")
        lines.append("Harness overhead on a trivial jitted x + 1 (scalar): sample() vs a bare loop of "
                     "f(x).block_until_ready(), interleaved")
        lines.append("")
        table = [["prec", "timed call", "jaxcompare", "bare loop", "ratio", "ratio per round"]]
        for o in report["overhead"]:
            table.append([o["precision"], o["variant"], format_time(o["engine_s"]), format_time(o["bare_s"]),
                          f"{o['ratio']:.3f}", " ".join(f"{x:.2f}" for x in o["ratios"])])
        lines.extend(_markdown(table))
    s = report["showcase"]
    if s:
        lines.append("")
        lines.append(f"Full comparison, centered_gram {'x'.join(map(str, s['shape']))} {s['precision']}: "
                     "jaxcompare measure() (every phase) vs the JAX docs' IPython protocol "
                     "(%timeit NumPy, %time first call, %timeit JAX)")
        lines.append("")
        table = [["tool", "speedup (median)", "speedups per repeat", "spread", "flagged unstable",
                  "speedup not steady", "spread of the trusted", "wall per comparison", "NumPy", "JAX",
                  "first call"]]
        for tool in s["tools"]:
            x = s[tool]
            table.append([SHOWCASE_LABELS[tool], f"{x['speedup_median']:.2f}x",
                          " ".join(f"{v:.2f}" for v in x["speedups"]),
                          "—" if x["speedup_spread"] is None else f"{x['speedup_spread']:.1%}",
                          f"{x['flagged']} of {len(x['speedups'])}" if "flagged" in x else "—",
                          f"{x['unsteady']} of {len(x['speedups'])}" if "unsteady" in x else "—",
                          "—" if x.get("trusted_spread") is None
                          else f"{x['trusted_spread']:.1%} ({x['trusted']} runs)",
                          f"{x['wall_median_s']:.2f} s", format_time(x["numpy_s"]), format_time(x["jax_s"]),
                          format_time(x["first_call_s"])])
        lines.extend(_markdown(table))
        lines.append("")
        lines.append("spread = (max - min) / median of the speedups over the repeats; flagged unstable = runs whose "
                     "NumPy or JAX runtime jaxcompare itself marked unstable (the checklist's \"Samples stable\" "
                     "warns); speedup not steady = runs timed in pairs of blocks whose speedup moved from pair to "
                     "pair (\"Speedup steady\" warns); spread of the trusted = the spread over the runs "
                     "jaxcompare would have you trust: a steady speedup where it was timed in pairs, else "
                     "stable samples")
    lines.append("")
    lines.append("Targets")
    lines.append("")
    for t in report["targets"]:
        label = {True: "met", False: "MISSED", None: "info"}[t["met"]]
        lines.append(f"- [{label}] {t['title']}: {t['reached']}")
    return "\n".join(lines)


def _markdown(table: list[list[str]]) -> list[str]:
    widths = [max(len(str(row[i])) for row in table) for i in range(len(table[0]))]
    out = []
    for k, row in enumerate(table):
        out.append("| " + " | ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)) + " |")
        if k == 0:
            out.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return out
