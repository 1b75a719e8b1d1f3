"""Do the ranges hold when you run it again? Each case is run again and again with `jaxcompare run
--json -` in fresh processes, the cases in turn (so a slow stretch of the machine falls on all of them),
and each run's 95% speedup range is held against the other runs' medians.

    python benchmarks/calibration.py                                   # 4 cases x 10 runs, careful
    python benchmarks/calibration.py --cases matmul:400x400 --runs 6 --json calibration.json

Reported per case: how often a rerun's speedup falls inside the first run's range (the issue's
measure, at least 85% wanted) and inside any other run's range (every ordered pair: the same
question asked of every run, a steadier estimate), the range's width, and any two trusted runs whose
ranges lie apart on opposite sides of 1x (none wanted). Then an A/A test: consecutive runs of a case
compared as the Versions page compares two JAX releases, which should rarely read "different".
benchmarks/RESULTS.md, "Ranges that hold".
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

DEFAULT_CASES = ("centered_gram:1000x1000", "matmul:400x400", "elementwise:1000000", "cumsum:1000000")
WANTED = 0.85


def one_run(case: str, shape: str, precision: str, timing: str) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p)}
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "jaxcompare", "run", "--case", case, "--shape", shape,
                           "--precision", precision, "--timing", timing, "--json", "-"], cwd=ROOT, env=env,
                          capture_output=True, text=True)
    if proc.returncode:
        raise SystemExit(f"jaxcompare run {case} {shape} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    from jaxcompare.analysis.trust import trust
    from jaxcompare.model.reruns import rerun_range
    from jaxcompare.model.result import Result

    doc = json.loads(proc.stdout)
    result = Result.from_dict(doc)
    low, high = result.speedup_range
    verdict = trust(result)
    return {"doc": doc, "speedup": result.speedup, "range": [low, high], "trusted": verdict.trusted, "why": verdict.why,
            "numpy_s": result.numpy_runtime.median_s, "jax_s": result.jax.runtime.median_s,
            "numpy_range": list(rerun_range(result.numpy_runtime)), "jax_range": list(rerun_range(result.jax.runtime)),
            "numpy_ci": [result.numpy_runtime.ci_low_s, result.numpy_runtime.ci_high_s],
            "jax_ci": [result.jax.runtime.ci_low_s, result.jax.runtime.ci_high_s],
            "wall_s": time.monotonic() - started}


def inside(value: float, bounds: list[float]) -> bool:
    return bounds[0] <= value <= bounds[1]


def _opposite(a: dict, b: dict) -> bool:
    """Two ranges that each lie wholly on one side of 1x, not the same side."""
    (a_low, a_high), (b_low, b_high) = a["range"], b["range"]
    return (a_low > 1 and b_high < 1) or (a_high < 1 and b_low > 1)


def summarize(runs: list[dict]) -> dict:
    """Coverage of the first run's range and of every run's, for the speedup and each side."""
    out: dict = {"runs": len(runs)}
    for name, value, bounds in (("speedup", "speedup", "range"), ("numpy", "numpy_s", "numpy_range"),
                                ("jax", "jax_s", "jax_range")):
        first = [inside(r[value], runs[0][bounds]) for r in runs[1:]]
        pairs = [inside(b[value], a[bounds]) for i, a in enumerate(runs) for j, b in enumerate(runs) if i != j]
        out[name] = {"first": sum(first) / len(first) if first else math.nan,
                     "pairs": sum(pairs) / len(pairs) if pairs else math.nan}
    out["width"] = statistics.median(r["range"][1] / r["range"][0] for r in runs if r["range"][0] > 0)
    out["trusted"] = sum(r["trusted"] for r in runs)
    trusted = [r for r in runs if r["trusted"]]
    out["contradictions"] = sum(1 for i, a in enumerate(trusted) for b in trusted[i + 1:] if _opposite(a, b))
    speedups = [r["speedup"] for r in runs]
    out["speedup_spread"] = max(speedups) / min(speedups)
    return out


def aa_pairs(runs: list[dict]) -> list[dict]:
    """Consecutive runs of one case as two 'versions' of one environment, compared as the Versions page
    compares two releases (analysis/versions.compare_versions): an A/A test, which should read
    'different' in at most 5% of pairs."""
    from jaxcompare.analysis.compare import SAME
    from jaxcompare.analysis.versions import compare_versions, pool_rounds
    from jaxcompare.model.result import Result

    out = []
    for a, b in zip(runs[::2], runs[1::2], strict=False):
        [found] = compare_versions([("0.0.1", pool_rounds([Result.from_dict(a["doc"])])),
                                    ("0.0.2", pool_rounds([Result.from_dict(b["doc"])]))])
        out.append({"ratio": found["ratio"], "p_value": found["p_value"], "different": found["direction"] != SAME})
    return out


def render(report: dict) -> str:
    lines = [f"Ranges against reruns: {report['timing']} timing, {report['precision']}, {report['runs']} runs a case",
             "", "| case | speedups (min-median-max) | range width | rerun in the first run's range | in any "
             "run's range | NumPy / JAX in any run's range (model/reruns.rerun_range) | trusted | trusted runs apart "
             "across 1x |",
             "|---|---|---|---|---|---|---|---|"]
    for case, entry in report["cases"].items():
        s, speedups = entry["summary"], sorted(r["speedup"] for r in entry["runs"])
        lines.append(f"| {case} | {speedups[0]:.3g}-{statistics.median(speedups):.3g}-{speedups[-1]:.3g}x | "
                     f"{s['width']:.2f}x | {s['speedup']['first']:.0%} | {s['speedup']['pairs']:.0%} | "
                     f"{s['numpy']['pairs']:.0%} / {s['jax']['pairs']:.0%} | {s['trusted']} of {s['runs']} | "
                     f"{s['contradictions']} |")
    held = all(e["summary"]["speedup"]["first"] >= WANTED and not e["summary"]["contradictions"]
               for e in report["cases"].values())
    lines += ["", f"Every case at least {WANTED:.0%} in its first run's range, and no trusted runs apart across "
              f"1x: {'yes' if held else 'NO'}."]
    aa = [pair for entry in report["cases"].values() for pair in entry["aa"]]
    if aa:
        worst = min(aa, key=lambda pair: pair["p_value"] if pair["p_value"] is not None else 1.0)
        lines += [f"A/A (consecutive runs of one case compared as two JAX versions): {sum(p['different'] for p in aa)} "
                  f"of {len(aa)} pairs read 'different' (lowest p = {worst['p_value']:.3g}, at {worst['ratio']:.3g})."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cases", nargs="+", default=list(DEFAULT_CASES), help="CASE:SHAPE pairs")
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--precision", choices=("x32", "x64"), default="x32")
    p.add_argument("--timing", choices=("quick", "careful", "thorough"), default="careful")
    p.add_argument("--json", metavar="PATH")
    args = p.parse_args(argv)
    pairs = [tuple(item.split(":", 1)) for item in args.cases]
    runs: dict[str, list[dict]] = {f"{c}:{s}": [] for c, s in pairs}
    for number in range(args.runs):
        for case, shape in pairs:
            run = one_run(case, shape, args.precision, args.timing)
            runs[f"{case}:{shape}"].append(run)
            print(f"{case} {shape} run {number + 1}: {run['speedup']:.3g}x ({run['range'][0]:.3g}-"
                  f"{run['range'][1]:.3g}x){'' if run['trusted'] else ', set aside: ' + str(run['why'])}",
                  file=sys.stderr)
    report = {"schema": "jaxcompare.calibration/1", "timing": args.timing, "precision": args.precision,
              "runs": args.runs, "cases": {k: {"runs": v, "summary": summarize(v), "aa": aa_pairs(v)}
                                           for k, v in runs.items()}}
    print(render(report))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(report, fh, indent=1)
    for entry in report["cases"].values():  # the results themselves are kept only in the JSON
        for run in entry["runs"]:
            run.pop("doc", None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
