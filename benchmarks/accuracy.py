"""Does jaxcompare agree with independent timers, and does it get there faster?

    python benchmarks/accuracy.py            # full run, 5-6.5 minutes on a busy 2-core machine
    python benchmarks/accuracy.py --quick    # ~1.5 minutes
    python benchmarks/accuracy.py --json results.json   (or --json - : one JSON document on stdout)
    python benchmarks/accuracy.py --held-out  # memory-bound cases through the CLI beside timeit

Each precision runs in its own process (jax_enable_x64 is process-global), spawned from
here with JAX_ENABLE_X64 set before JAX is imported. Inside it, for each case and size,
jaxcompare's engine (timing.sample with measure()'s callables and the default TimingConfig),
Python's timeit (autorange + 5 repeats), IPython's %timeit -o and, where asked, pyperf
(--fast, its own processes) time the NumPy call and the blocked JAX call, interleaved.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from accuracy_report import render, summarize  # noqa: E402

DEFAULT_CASES = ("centered_gram", "elementwise")
QUICK_CASES = ("centered_gram",)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="centered_gram at its large size only, 2 showcase "
                   "repeats, no pyperf (~1.5 minutes)")
    p.add_argument("--cases", nargs="+", help=f"catalog cases (default: {' '.join(DEFAULT_CASES)})")
    p.add_argument("--sizes", nargs="+", choices=("small", "large"), help="default: both (quick: large)")
    p.add_argument("--precisions", nargs="+", choices=("x32", "x64"), default=["x32", "x64"])
    p.add_argument("--timing", choices=("quick", "careful", "thorough"), default="careful",
                   help="jaxcompare's timing preset for the runtime rows (default careful, the app's default)")
    p.add_argument("--rounds", type=int, help="interleaved rounds per case and size (default 1)")
    p.add_argument("--overhead-rounds", type=int, help="rounds of the trivial-function overhead test "
                   "(default 5, quick 2)")
    p.add_argument("--pyperf", nargs="*", metavar="PREC:CASE:SIZE", help="rows also timed with pyperf --fast, "
                   "about 15 s a phase (default: x32:centered_gram:large; quick: none)")
    p.add_argument("--pyperf-all", action="store_true", help="pyperf for every case")
    p.add_argument("--showcase-repeats", type=int, help="full centered_gram comparisons, jaxcompare vs "
                   "the JAX docs' IPython protocol (default 5, quick 2; 0 skips)")
    p.add_argument("--showcase-timings", nargs="+", choices=("quick", "careful", "thorough"),
                   default=["careful", "thorough"], help="jaxcompare's timing presets in the showcase "
                   "(default: careful thorough)")
    p.add_argument("--showcase-shape", default="1000x1000")
    p.add_argument("--showcase-precision", choices=("x32", "x64"), default="x32")
    p.add_argument("--reference-repeats", type=int, help="for smoke tests only: timeit/%%timeit repeats "
                   "instead of their defaults (5 and 7)")
    p.add_argument("--reference-loops", type=int, help="for smoke tests only: fixed loops instead of autorange")
    p.add_argument("--json", metavar="PATH", help="write the results as JSON ('-' for stdout; the table "
                   "then goes to stderr)")
    p.add_argument("--from-json", metavar="PATH", help="re-summarize and print a saved --json result instead "
                   "of measuring")
    p.add_argument("--held-out", action="store_true", help="instead: held-out memory-bound cases through "
                   "`jaxcompare run --cases-file` beside timeit in fresh processes (accuracy_held_out.py; its "
                   "own options follow --held-out)")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--precision", choices=("x32", "x64"), help=argparse.SUPPRESS)
    p.add_argument("--out", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    args.cases = args.cases or list(QUICK_CASES if args.quick else DEFAULT_CASES)
    args.sizes = args.sizes or (["large"] if args.quick else ["small", "large"])
    if args.rounds is None:
        args.rounds = 1
    if args.overhead_rounds is None:
        args.overhead_rounds = 2 if args.quick else 5
    if args.pyperf is None:
        args.pyperf = [] if args.quick else ["x32:centered_gram:large"]
    if args.showcase_repeats is None:
        args.showcase_repeats = 2 if args.quick else 5
    from jaxcompare.model.spec import parse_shape

    args.showcase_shape = parse_shape(args.showcase_shape)
    args.showcase_timings = list(dict.fromkeys(args.showcase_timings))
    for name in ("rounds", "overhead_rounds", "reference_repeats", "reference_loops"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1")
    return args


def child_argv(args: argparse.Namespace, precision: str, out: str) -> list[str]:
    argv = [sys.executable, os.path.abspath(__file__), "--child", "--precision", precision, "--out", out,
            "--cases", *args.cases, "--sizes", *args.sizes, "--rounds", str(args.rounds), "--timing", args.timing,
            "--overhead-rounds", str(args.overhead_rounds), "--showcase-repeats", str(args.showcase_repeats),
            "--showcase-shape", "x".join(map(str, args.showcase_shape)),
            "--showcase-precision", args.showcase_precision, "--showcase-timings", *args.showcase_timings,
            "--pyperf", *args.pyperf]
    for name in ("reference_repeats", "reference_loops"):
        if getattr(args, name):
            argv += [f"--{name.replace('_', '-')}", str(getattr(args, name))]
    return argv + (["--pyperf-all"] if args.pyperf_all else [])


def run_precisions(args: argparse.Namespace) -> list[dict[str, Any]]:
    """One child process per precision, one after the other (never two measuring at once)."""
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for precision in args.precisions:
            out = os.path.join(tmp, f"{precision}.json")
            env = dict(os.environ, JAX_ENABLE_X64="1" if precision == "x64" else "0",
                       JAX_PLATFORMS=os.environ.get("JAX_PLATFORMS", "cpu"))
            env["PYTHONPATH"] = os.pathsep.join(filter(None, (ROOT, env.get("PYTHONPATH"))))
            proc = subprocess.run(child_argv(args, precision, out), env=env, stdout=sys.stderr)
            if proc.returncode != 0:
                raise SystemExit(f"accuracy: the {precision} run failed (exit {proc.returncode})")
            with open(out, encoding="utf-8") as fh:
                results.append(json.load(fh))
    return results


def machine() -> dict[str, Any]:
    from jaxcompare.engine.common.host import host_info, versions

    host = host_info()
    return {"cpu_model": host["cpu_model"], "cpu_count": host["cpu_count_logical"],
            "cpu_affinity": host["cpu_affinity"], "platform": host["platform"],
            "versions": versions("ipython", "pyperf")}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--held-out" in argv:
        import accuracy_held_out

        return accuracy_held_out.main([a for a in argv if a != "--held-out"])
    args = parse_args(argv)
    if args.child:
        import accuracy_worker

        data = accuracy_worker.run(args)
        with open(args.out, "w", encoding="utf-8") as fh:
            json.dump(data, fh)
        return 0
    import accuracy_worker

    if args.from_json:
        with open(args.from_json, encoding="utf-8") as fh:
            saved = json.load(fh)
        report = summarize(saved["children"])
        report.update({k: saved[k] for k in ("schema", "machine", "load", "wall_s", "settings", "children")})
    else:
        started = time.monotonic()
        snap = accuracy_worker.cpu_snapshot()
        children = run_precisions(args)
        load = accuracy_worker.load_between(snap, accuracy_worker.cpu_snapshot())
        report = summarize(children)
        report.update(schema="jaxcompare.accuracy/1", machine=machine(), load=load,
                      wall_s=time.monotonic() - started, children=children,
                      settings={k: v for k, v in vars(args).items()
                                if k not in ("child", "precision", "out", "json", "from_json")})
    text = render(report)
    if args.json == "-":
        print(text, file=sys.stderr)
        json.dump(report, sys.stdout, indent=1, default=list)
        print()
    else:
        print(text)
        if args.json:
            with open(args.json, "w", encoding="utf-8") as fh:
                json.dump(report, fh, indent=1, default=list)
    return 0


if __name__ == "__main__":
    sys.exit(main())
