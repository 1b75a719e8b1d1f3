"""Is jaxcompare true to the JAX docs' protocol typed by hand? Each case and shape is measured
twice on this machine: by the CLI (`jaxcompare run --json -`, its workers and fresh processes, as a
user runs it), and by a fresh plain Python process that types the protocol as the docs do
(`timeit` for NumPy and for the blocked jitted call, `time.perf_counter` around the first call,
an empty jitted call, 200 calls back to back), with nothing set that a user would not set.

    python benchmarks/hand_protocol.py                         # the docs' example and a matmul
    python benchmarks/hand_protocol.py --cases matmul:2048x2048 --precision x32

It prints each figure side by side with the tool's over the hand's ratio (benchmarks/RESULTS.md,
"Held to the hand protocol"). The hand process runs after the tool, so neither competes with the other.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# The protocol as a user types it in a new interpreter: inputs built as the catalog builds them
# (the same seed), so both measure the same arrays.
HAND = r"""
import json, sys, time, timeit
import numpy as np
from jaxcompare.catalog import get_case
from jaxcompare.model.spec import Spec
from jaxcompare.engine.inputs import build_inputs
spec = Spec.from_dict(json.loads(sys.argv[1]))
case = get_case(spec.case)
x = build_inputs(case, spec)
import jax
jax.config.update("jax_enable_x64", spec.precision == "x64")
jax.config.update("jax_enable_compilation_cache", False)

def per_call(stmt):  # %timeit: autorange, then 7 repeats; the median of the per-loop times
    timer = timeit.Timer(stmt)
    loops, _ = timer.autorange()
    return sorted(t / loops for t in timer.repeat(7, loops))[3]

out = {"numpy_s": per_call(lambda: case.numpy_fn(*x))}
dev = jax.block_until_ready(jax.device_put(x))
f = jax.jit(case.jax_fn)
start = time.perf_counter()
jax.block_until_ready(f(*dev))  # %time f(x): the first call of this process
out["first_call_s"] = time.perf_counter() - start
out["runtime_s"] = per_call(lambda: jax.block_until_ready(f(*dev)))
one = jax.device_put(np.zeros(1, dtype=spec.dtype))
plus = jax.jit(lambda a: a + 1)
jax.block_until_ready(plus(one))
out["empty_call_s"] = per_call(lambda: plus(one).block_until_ready())

def loop():
    y = None
    for _ in range(200):
        y = f(*dev)
    jax.block_until_ready(y)

out["back_to_back_s"] = per_call(loop) / 200
print(json.dumps(out))
"""

FIGURES = (("NumPy runtime", "numpy_s"), ("first call", "first_call_s"), ("JAX runtime, blocked", "runtime_s"),
           ("empty jitted call, blocked", "empty_call_s"), ("back to back, per call", "back_to_back_s"))


def tool(case: str, shape: str, precision: str, keep: str | None = None) -> dict:
    proc = subprocess.run([sys.executable, "-m", "jaxcompare", "run", "--case", case, "--shape", shape,
                           "--precision", precision, "--json", "-"], cwd=ROOT, capture_output=True, text=True)
    if proc.returncode:
        sys.exit(f"jaxcompare run {case} {shape} failed ({proc.returncode}):\n{proc.stderr}")
    doc = json.loads(proc.stdout)
    if keep:
        os.makedirs(keep, exist_ok=True)
        with open(os.path.join(keep, f"{case}-{shape}-{precision}.json"), "w") as f:
            f.write(proc.stdout)
    jax = doc["jax"]
    return {"numpy_s": doc["numpy"]["runtime"]["median_s"], "first_call_s": jax["first_call"]["median_s"],
            "runtime_s": jax["runtime"]["median_s"], "empty_call_s": (doc["roofline"] or {}).get("jax", {}).get(
                "empty_call_s"), "back_to_back_s": (jax.get("back_to_back") or {}).get("median_s"),
            "spec": doc["spec"], "kept_numpy_s": (doc["numpy"].get("kept_memory") or {}).get("median_s"),
            "recompile_s": (jax.get("first_call_recompile") or {}).get("median_s")}


def hand(spec: dict) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p)}
    proc = subprocess.run([sys.executable, "-c", HAND, json.dumps(spec)], env=env, capture_output=True, text=True)
    if proc.returncode:
        sys.exit(f"the hand-typed protocol failed ({proc.returncode}):\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def fmt(seconds: float | None) -> str:
    from jaxcompare.model.formatting import format_time

    return "—" if seconds is None else format_time(seconds)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cases", nargs="+", default=["centered_gram:1000x1000", "matmul:1000x1000"],
                   help="CASE:SHAPE pairs (default: the docs' example and a matmul)")
    p.add_argument("--precision", default="x32", choices=("x32", "x64"))
    p.add_argument("--keep", metavar="DIR", help="also write each run's JSON from the tool here (CASE-SHAPE.json), "
                                                 "for `jaxcompare import` and its checklist")
    args = p.parse_args(argv)
    sys.path.insert(0, ROOT)
    for item in args.cases:
        case, _, shape = item.partition(":")
        measured = tool(case, shape, args.precision, args.keep)
        typed = hand(measured["spec"])
        print(f"\n{case} {shape} {args.precision}\n")
        print("| figure | typed by hand | jaxcompare | ratio |\n|---|---|---|---|")
        for label, key in FIGURES:
            ours, theirs = measured.get(key), typed.get(key)
            ratio = f"{ours / theirs:.2f}" if ours and theirs else "—"
            print(f"| {label} | {fmt(theirs)} | {fmt(ours)} | {ratio} |")
        print(f"\njaxcompare beside them: NumPy with freed memory kept {fmt(measured['kept_numpy_s'])}, "
              f"the worker's recompile {fmt(measured['recompile_s'])}")


if __name__ == "__main__":
    main()
