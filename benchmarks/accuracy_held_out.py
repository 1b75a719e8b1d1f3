"""Held-out, memory-bound cases: does `jaxcompare run` (a user's CLI, its workers and plain processes)
agree with timeit typed in a fresh process, as closely as timeit agrees with itself?

    python benchmarks/accuracy.py --held-out              # five cases, x32, 1000x1000, two rounds
    python benchmarks/accuracy_held_out.py --rounds 3 --json held-out.json

For each case (row-wise reductions, normalisations, elementwise chains; none is in the catalog) and
round: the reference (a fresh plain process typing the lines, `%timeit f(x_np)` and `%timeit
f_jit(x).block_until_ready()` as timeit's autorange and seven repeats, importing nothing of
jaxcompare), then the tool (`jaxcompare run --cases-file F --case C --json -`), then the control (the
reference's process again). Each side's deviation is |figure / reference - 1|: the control's is what
the machine's drift alone gives, and the tool should stay within it plus five points on average, and
within 35% everywhere (issue 48).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MARGIN = 0.05  # the tool's mean deviation may exceed the control's by this much
WORST = 0.35  # and no figure may be further off than this

# Each case's NumPy and JAX lines (np and jnp are the modules in scope).
CASES = {
    "row_divide": ("x / x.sum(axis=1, keepdims=True)", "x / jnp.sum(x, axis=1, keepdims=True)"),
    "layernorm": ("(x - x.mean(axis=-1, keepdims=True)) / np.sqrt(x.var(axis=-1, keepdims=True) + 1e-5)",
                  "(x - jnp.mean(x, axis=-1, keepdims=True)) / jnp.sqrt(jnp.var(x, axis=-1, keepdims=True) + 1e-5)"),
    "chain": ("(x * 2.0 + 1.0) * x", "(x * 2.0 + 1.0) * x"),
    "softmax_rows": ("np.exp(x - x.max(axis=1, keepdims=True)) / np.exp(x - x.max(axis=1, keepdims=True)).sum("
                     "axis=1, keepdims=True)",
                     "jnp.exp(x - x.max(axis=1, keepdims=True)) / jnp.exp(x - x.max(axis=1, keepdims=True)).sum("
                     "axis=1, keepdims=True)"),
    "col_center": ("x - x.mean(axis=0)", "x - jnp.mean(x, axis=0)"),
}

CASES_FILE = '''import numpy as np
import jax.numpy as jnp
from jaxcompare import Case


def make_inputs(shape, dtype, rng):
    return (rng.standard_normal(shape, dtype=dtype),)


CASES = [
{cases}]
'''

# The lines as a user types them in a new interpreter; {numpy}, {jax}, {shape}, {dtype}.
REFERENCE = r"""
import json, sys, timeit
import numpy as np
import jax
import jax.numpy as jnp

def f_np(x):
    return {numpy}

def f_jax(x):
    return {jax}

x_np = np.random.default_rng(0).standard_normal({shape}, dtype=np.{dtype})

def per_call(stmt):  # %timeit: autorange, then 7 repeats; the median of the per-loop times
    timer = timeit.Timer(stmt)
    loops, _ = timer.autorange()
    return sorted(t / loops for t in timer.repeat(7, loops))[3]

out = {{"numpy_s": per_call(lambda: f_np(x_np))}}
x = jax.device_put(x_np)
f_jit = jax.jit(f_jax)
f_jit(x).block_until_ready()
out["jax_s"] = per_call(lambda: f_jit(x).block_until_ready())
print(json.dumps(out))
"""


def _env(precision: str, *, with_repo: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and os.path.abspath(p) != ROOT]
    env["PYTHONPATH"] = os.pathsep.join(([ROOT] if with_repo else []) + paths)
    env["JAX_PLATFORMS"] = env.get("JAX_PLATFORMS", "cpu")
    if precision == "x64":
        env["JAX_ENABLE_X64"] = "1"
    return env


def reference(case: str, shape: tuple[int, ...], precision: str) -> dict[str, float]:
    numpy_line, jax_line = CASES[case]
    script = REFERENCE.format(numpy=numpy_line, jax=jax_line, shape=shape,
                              dtype="float64" if precision == "x64" else "float32")
    proc = subprocess.run([sys.executable, "-c", script], env=_env(precision, with_repo=False), cwd=HERE,
                          capture_output=True, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def tool(cases_file: str, case: str, shape: tuple[int, ...], precision: str, timing: str) -> dict[str, float]:
    proc = subprocess.run([sys.executable, "-m", "jaxcompare", "run", "--cases-file", cases_file, "--case", case,
                           "--shape", "x".join(map(str, shape)), "--precision", precision, "--timing", timing,
                           "--json", "-"], env=_env(precision, with_repo=True), cwd=ROOT, capture_output=True,
                          text=True)
    if proc.returncode:
        raise SystemExit(f"jaxcompare run {case} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    doc = json.loads(proc.stdout)
    return {"numpy_s": doc["numpy"]["runtime"]["median_s"], "jax_s": doc["jax"]["runtime"]["median_s"],
            "notes": doc.get("notes", []), "plain_process": doc["numpy"].get("kept_memory") is not None}


def write_cases(folder: str) -> str:
    entries = "".join(f"    Case(name={name!r}, numpy_fn=lambda x: {np_line}, jax_fn=lambda x: {jax_line}, "
                      f"make_inputs=make_inputs),\n" for name, (np_line, jax_line) in CASES.items())
    path = os.path.join(folder, "held_out_cases.py")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(CASES_FILE.format(cases=entries))
    return path


def run(cases: list[str], shape: tuple[int, ...], precision: str, rounds: int, timing: str) -> dict:
    rows = []
    with tempfile.TemporaryDirectory(prefix="jaxcompare-held-out-") as folder:
        path = write_cases(folder)
        for number in range(rounds):
            for case in cases:
                ref = reference(case, shape, precision)
                ours = tool(path, case, shape, precision, timing)
                control = reference(case, shape, precision)
                for side in ("numpy_s", "jax_s"):
                    rows.append({"case": case, "round": number + 1, "side": side[:-2], "reference_s": ref[side],
                                 "tool_s": ours[side], "control_s": control[side],
                                 "tool_dev": abs(ours[side] / ref[side] - 1),
                                 "control_dev": abs(control[side] / ref[side] - 1),
                                 "plain_process": ours["plain_process"] if side == "numpy_s" else None,
                                 "notes": ours["notes"]})
                print(f"{case} round {number + 1}: NumPy {ours['numpy_s'] * 1e3:.3g} ms against "
                      f"{ref['numpy_s'] * 1e3:.3g} (control {control['numpy_s'] * 1e3:.3g}); JAX "
                      f"{ours['jax_s'] * 1e3:.3g} ms against {ref['jax_s'] * 1e3:.3g} (control "
                      f"{control['jax_s'] * 1e3:.3g})", file=sys.stderr)
    tool_mean = statistics.fmean(r["tool_dev"] for r in rows)
    control_mean = statistics.fmean(r["control_dev"] for r in rows)
    worst = max(rows, key=lambda r: r["tool_dev"])
    return {"schema": "jaxcompare.held-out/1", "shape": list(shape), "precision": precision, "timing": timing,
            "rows": rows, "tool_mean_dev": tool_mean, "control_mean_dev": control_mean,
            "worst": {k: worst[k] for k in ("case", "round", "side", "tool_dev")},
            "within": tool_mean <= control_mean + MARGIN and worst["tool_dev"] <= WORST}


def render(report: dict) -> str:
    lines = [f"Held-out memory-bound cases at {'x'.join(map(str, report['shape']))}, {report['precision']}, "
             f"{report['timing']} timing", "",
             "| case | round | side | reference (timeit) | jaxcompare | control (timeit again) | tool off | "
             "control off |", "|---|---|---|---|---|---|---|---|"]
    for r in report["rows"]:
        lines.append(f"| {r['case']} | {r['round']} | {r['side']} | {r['reference_s'] * 1e3:.3g} ms | "
                     f"{r['tool_s'] * 1e3:.3g} ms | {r['control_s'] * 1e3:.3g} ms | {r['tool_dev']:.1%} | "
                     f"{r['control_dev']:.1%} |")
    worst = report["worst"]
    lines += ["", f"Mean deviation: jaxcompare {report['tool_mean_dev']:.1%}, the control "
              f"{report['control_mean_dev']:.1%} (allowed: the control's + {MARGIN:.0%}); worst: {worst['case']} "
              f"{worst['side']} round {worst['round']}, {worst['tool_dev']:.1%} (allowed {WORST:.0%}). Within: "
              f"{'yes' if report['within'] else 'NO'}."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cases", nargs="+", choices=sorted(CASES), default=list(CASES))
    p.add_argument("--shape", default="1000x1000")
    p.add_argument("--precision", choices=("x32", "x64"), default="x32")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--timing", choices=("quick", "careful", "thorough"), default="careful")
    p.add_argument("--json", metavar="PATH", help="also write the rows and the summary here")
    args = p.parse_args(argv)
    shape = tuple(int(n) for n in args.shape.lower().split("x"))
    report = run(args.cases, shape, args.precision, args.rounds, args.timing)
    print(render(report))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(report, fh, indent=1)
    return 0 if report["within"] else 1


if __name__ == "__main__":
    sys.exit(main())
