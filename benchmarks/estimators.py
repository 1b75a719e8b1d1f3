"""Which estimate of a runtime holds beside a busy neighbour? The recheck's conditions (every thread
on one core, NumPy's BLAS on one thread), quiet and with a tight-loop neighbour, alternating, each
call timed in blocks as measure() does. Prints each estimator's busy / quiet ratio per side and for
the speedup: the one nearest 1 holds (benchmarks/RESULTS.md, "A busy neighbour").

    JAX_PLATFORMS=cpu .venv/bin/python benchmarks/estimators.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

import numpy as np

from jaxcompare.engine.common.load import share_cores
from jaxcompare.engine.worker.timing import blocking_call, bound_call, lowest_block, sample
from jaxcompare.model.spec import TimingConfig

NEIGHBOUR = "import time\nend = time.time() + 300\nwhile time.time() < end: pass\n"


def estimators(blocks) -> dict[str, float]:
    pooled = np.concatenate([b.samples_s for b in blocks])
    return {"median": float(np.median(pooled)), "q25": float(np.quantile(pooled, 0.25)),
            "min": float(pooled.min()), "lowest block": lowest_block(blocks).median_s}


def main() -> None:
    import jax

    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--n", type=int, default=158)
    args = p.parse_args()
    a = np.random.default_rng(0).random((args.n, args.n), dtype=np.float32)
    f = jax.jit(lambda x: x @ x)
    ja = jax.device_put(a)
    f(ja).block_until_ready()
    calls = {"numpy": bound_call(np.matmul, (a, a)), "jax": blocking_call(f, (ja,))}
    cfg = TimingConfig.quick().for_runtime()
    cfg = type(cfg)(**{**cfg.__dict__, "phase_budget_s": 0.075})
    found: dict[str, dict[str, list[dict[str, float]]]] = {"quiet": {}, "busy": {}}
    core = [max(os.sched_getaffinity(0))]
    for _ in range(args.rounds):
        for condition in ("quiet", "busy"):
            neighbour = subprocess.Popen([sys.executable, "-c", NEIGHBOUR]) if condition == "busy" else None
            try:
                with share_cores(core):
                    for side, call in calls.items():
                        blocks = [sample(call, cfg, settle_s=0.15) for _ in range(2)]
                        found[condition].setdefault(side, []).append(estimators(blocks))
            finally:
                if neighbour is not None:
                    neighbour.kill()
                    neighbour.wait()
    print(f"matmul {args.n}x{args.n}, {args.rounds} rounds; busy / quiet of the mean over rounds (1 = holds)")
    for key in ("median", "q25", "min", "lowest block"):
        ratio = {side: np.mean([e[key] for e in found["busy"][side]]) / np.mean([e[key] for e in found["quiet"][side]])
                 for side in calls}
        speed = {c: np.mean([n[key] / j[key] for n, j in zip(found[c]["numpy"], found[c]["jax"], strict=True)])
                 for c in found}
        print(f"  {key:<13} NumPy {ratio['numpy']:.2f}  JAX {ratio['jax']:.2f}  speedup quiet {speed['quiet']:.2f} "
              f"busy {speed['busy']:.2f} (busy/quiet {speed['busy'] / speed['quiet']:.2f})")


if __name__ == "__main__":
    main()
