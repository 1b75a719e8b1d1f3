"""Is jaxcompare true to the JAX docs' protocol typed by hand? Each case is measured by the tool as a
user runs it (the CLI's `run --json -`, or `jaxcompare.compare()` for a function passed in), and by a
witness: a fresh plain `python3` process that types the docs' lines as the docs type them and imports
nothing of jaxcompare (`x_np = np.ones(..., dtype=np.float32)`, `%timeit` as timeit's autorange and
seven repeats, `%time` as perf_counter around one call). The witness runs twice: as a plain process,
and under glibc's thresholds at 1 GiB (`MALLOC_MMAP_THRESHOLD_`, `MALLOC_TRIM_THRESHOLD_`), where
freed memory is kept, the regime of the tool's `kept_memory` figure.

    python benchmarks/hand_protocol.py                         # the docs' example, a matmul, a layernorm
    python benchmarks/hand_protocol.py --cases centered_gram:1000x1000 --rounds 2

It prints each figure side by side with the tool's over the witness's ratio, and a line per round:
whether NumPy's plain and kept figures are within 15% of the witness's (benchmarks/RESULTS.md,
"Held to the hand protocol"). Tool and witness run one after the other, never together.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
WITHIN = 0.15  # how close the tool's NumPy figures must come to the witness's (issue 48)
KEPT_ENV = {"MALLOC_MMAP_THRESHOLD_": str(1 << 30), "MALLOC_TRIM_THRESHOLD_": str(1 << 30)}

# Each case's lines as a user types them: the function(s), then how the inputs are made.
FUNCTIONS = {
    "centered_gram": (  # the JAX docs' example, word for word
        "def f(x):  # function we're benchmarking (works in both NumPy & JAX)\n"
        "  return x.T @ (x - x.mean(axis=0))\n"
        "f_np = f_jax = f\n"),
    "matmul": (
        "def f(a, b):\n"
        "  return a @ b\n"
        "f_np = f_jax = f\n"),
    "layernorm": (  # two functions, as a notebook user passes them to jaxcompare.compare()
        "def f_np(x):\n"
        "  mu = x.mean(axis=-1, keepdims=True)\n"
        "  var = x.var(axis=-1, keepdims=True)\n"
        "  return (x - mu) / np.sqrt(var + 1e-5)\n"
        "def f_jax(x):\n"
        "  mu = jnp.mean(x, axis=-1, keepdims=True)\n"
        "  var = jnp.var(x, axis=-1, keepdims=True)\n"
        "  return (x - mu) / jnp.sqrt(var + 1e-5)\n"),
}
ARITY = {"centered_gram": 1, "matmul": 2, "layernorm": 1}

# The docs' protocol in a new interpreter, nothing else imported. {functions}, {shape}, {arity}, {dtype}.
WITNESS = r"""
import json, sys, time, timeit
import numpy as np
import jax.numpy as jnp
import jax

{functions}
x_np = tuple(np.ones({shape}, dtype=np.{dtype}) for _ in range({arity}))  # same as JAX default dtype

def per_call(stmt):  # %timeit: autorange, then 7 repeats; the median of the per-loop times
    timer = timeit.Timer(stmt)
    loops, _ = timer.autorange()
    return sorted(t / loops for t in timer.repeat(7, loops))[3]

out = {{"numpy_s": per_call(lambda: f_np(*x_np))}}  # %timeit f(x_np)
if sys.argv[1] == "numpy":
    out["imported"] = sorted(name for name in sys.modules if name.split(".")[0] == "jaxcompare")
    print(json.dumps(out)); sys.exit()
start = time.perf_counter()
x_jax = jax.block_until_ready(jax.device_put(x_np))  # %time x_jax = jax.device_put(x_np)
out["transfer_s"] = time.perf_counter() - start
f_jit = jax.jit(f_jax)
start = time.perf_counter()
f_jit(*x_jax).block_until_ready()  # %time f_jit(x_jax).block_until_ready(): the first call
out["first_call_s"] = time.perf_counter() - start
out["runtime_s"] = per_call(lambda: f_jit(*x_jax).block_until_ready())  # %timeit ... .block_until_ready()
one = jax.device_put(np.zeros(1, dtype=np.{dtype}))
plus = jax.jit(lambda a: a + 1)
plus(one).block_until_ready()
out["empty_call_s"] = per_call(lambda: plus(one).block_until_ready())

def loop():  # 200 calls queued, one block at the end (JAX's benchmarks/api_benchmark.py)
    y = None
    for _ in range(200):
        y = f_jit(*x_jax)
    y.block_until_ready()

out["back_to_back_s"] = per_call(loop) / 200
print(json.dumps(out))
"""

# jaxcompare.compare() on the same functions, as a notebook user calls it.
NOTEBOOK = r"""
import sys
import numpy as np
import jax.numpy as jnp
import jaxcompare

{functions}
x = np.random.default_rng(0).standard_normal({shape}).astype(np.{dtype})
result = jaxcompare.compare(f_np, f_jax, x, precision="{precision}", name="{case}")
sys.stdout.write(result.to_json())
"""

FIGURES = (("NumPy runtime, plain process", "numpy_s"), ("NumPy runtime, freed memory kept", "kept_numpy_s"),
           ("first call", "first_call_s"), ("JAX runtime, blocked", "runtime_s"),
           ("empty jitted call, blocked", "empty_call_s"), ("back to back, per call", "back_to_back_s"))


def _shape(text: str) -> tuple[int, ...]:
    return tuple(int(n) for n in text.lower().split("x"))


def tool(case: str, shape: str, precision: str, keep: str | None = None) -> dict:
    """The tool as a user runs it: the CLI for a catalog case, compare() for a notebook's function."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p)}
    if case in ("centered_gram", "matmul"):
        cmd = [sys.executable, "-m", "jaxcompare", "run", "--case", case, "--shape", shape,
               "--precision", precision, "--json", "-"]
    else:
        script = NOTEBOOK.format(functions=FUNCTIONS[case], shape=_shape(shape), case=case, precision=precision,
                                 dtype="float64" if precision == "x64" else "float32")
        cmd = [sys.executable, "-c", script]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    if proc.returncode:
        sys.exit(f"jaxcompare on {case} {shape} failed ({proc.returncode}):\n{proc.stderr}")
    doc = json.loads(proc.stdout)
    if keep:
        os.makedirs(keep, exist_ok=True)
        with open(os.path.join(keep, f"{case}-{shape}-{precision}.json"), "w") as f:
            f.write(proc.stdout)
    jax = doc["jax"]
    numpy_s, kept_s = doc["numpy"]["runtime"]["median_s"], (doc["numpy"].get("kept_memory") or {}).get("median_s")
    if kept_s is None and any("with freed memory kept" in note for note in doc.get("notes", [])):
        numpy_s, kept_s = None, numpy_s  # no plain process ran (a busy machine, a failure): the headline is kept
    return {"numpy_s": numpy_s, "kept_numpy_s": kept_s,
            "first_call_s": jax["first_call"]["median_s"], "runtime_s": jax["runtime"]["median_s"],
            "empty_call_s": ((doc.get("roofline") or {}).get("jax") or {}).get("empty_call_s"),
            "back_to_back_s": (jax.get("back_to_back") or {}).get("median_s"),
            "recompile_s": (jax.get("first_call_recompile") or {}).get("median_s"), "notes": doc.get("notes", [])}


def witness(case: str, shape: str, precision: str, *, numpy_only: bool = False, kept: bool = False) -> dict:
    """The docs' lines in a fresh plain process: no jaxcompare on its path, no MALLOC_ setting of ours
    unless ``kept`` (both thresholds at 1 GiB)."""
    script = WITNESS.format(functions=FUNCTIONS[case], shape=_shape(shape), arity=ARITY[case],
                            dtype="float64" if precision == "x64" else "float32")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in env.get("PYTHONPATH", "").split(os.pathsep)
                                        if p and os.path.abspath(p) != ROOT)
    if precision == "x64":
        env["JAX_ENABLE_X64"] = "1"
    if kept:
        env |= KEPT_ENV
    proc = subprocess.run([sys.executable, "-c", script, "numpy" if numpy_only else "all"], env=env, cwd=HERE,
                          capture_output=True, text=True)
    if proc.returncode:
        sys.exit(f"the witness failed ({proc.returncode}):\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def fmt(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    for unit, scale in (("s", 1), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds * 1e9:.3g} ns"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cases", nargs="+", default=["centered_gram:1000x1000", "matmul:2048x2048",
                                                  "layernorm:4096x1024"],
                   help="CASE:SHAPE pairs; CASE one of " + ", ".join(FUNCTIONS))
    p.add_argument("--precision", default="x32", choices=("x32", "x64"))
    p.add_argument("--rounds", type=int, default=2, help="fresh rounds of tool then witness (default 2)")
    p.add_argument("--keep", metavar="DIR", help="also write each run's JSON from the tool here (CASE-SHAPE.json)")
    p.add_argument("--json", metavar="FILE", help="also write every round's figures here")
    args = p.parse_args(argv)
    rounds, misses = [], 0
    for item in args.cases:
        case, _, shape = item.partition(":")
        if case not in FUNCTIONS:
            p.error(f"unknown case {case!r}: one of {', '.join(FUNCTIONS)}")
        for number in range(1, args.rounds + 1):
            measured = tool(case, shape, args.precision, args.keep)
            typed = witness(case, shape, args.precision)
            typed["kept_numpy_s"] = witness(case, shape, args.precision, numpy_only=True, kept=True)["numpy_s"]
            print(f"\n{case} {shape} {args.precision}, round {number}\n")
            print("| figure | the docs' lines | jaxcompare | ratio |\n|---|---|---|---|")
            for label, key in FIGURES:
                ours, theirs = measured.get(key), typed.get(key)
                ratio = f"{ours / theirs:.2f}" if ours and theirs else "—"
                print(f"| {label} | {fmt(theirs)} | {fmt(ours)} | {ratio} |")
            held = {key: measured.get(key) is not None and abs(measured[key] / typed[key] - 1) <= WITHIN
                    for key in ("numpy_s", "kept_numpy_s")}
            misses += not all(held.values())
            print(f"\nNumPy within {WITHIN:.0%} of the docs' lines: plain {'yes' if held['numpy_s'] else 'NO'}, "
                  f"freed memory kept {'yes' if held['kept_numpy_s'] else 'NO'}; the worker's recompile "
                  f"{fmt(measured['recompile_s'])}; the transfer typed by hand {fmt(typed.get('transfer_s'))}")
            for note in measured["notes"]:
                print(f"- note: {note}")
            rounds.append({"case": case, "shape": shape, "precision": args.precision, "round": number,
                           "tool": measured, "witness": typed, "within": held})
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rounds, f, indent=1)
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
