"""Quiet machine vs a busy neighbour (one core kept busy by a tight loop): which estimate of the
speedup holds? Prints, per case and condition, the speedup from the medians and from lower
estimators, and how many cores' worth other processes used (benchmarks/RESULTS.md).

    JAX_PLATFORMS=cpu .venv/bin/python benchmarks/contention.py [--reps 3] [--timing quick]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys

import numpy as np

from jaxcompare.engine.worker.measure import measure
from jaxcompare.model.spec import Spec, TimingConfig

CASES = (("matmul", (158, 158)), ("matmul", (398, 398)), ("centered_gram", (1000, 1000)), ("cumsum", (1000000,)))
NEIGHBOUR = "import time\nend = time.time() + 600\nwhile time.time() < end: pass\n"


def estimates(r) -> dict[str, float]:
    n, j = np.asarray(r.numpy_runtime.samples_s), np.asarray(r.jax.runtime.samples_s)
    out = {"median": r.speedup, "min": n.min() / j.min(),
           "q10": np.quantile(n, 0.1) / np.quantile(j, 0.1), "q25": np.quantile(n, 0.25) / np.quantile(j, 0.25)}
    if r.numpy_runtime.block_medians_s:
        out["minblock"] = min(r.numpy_runtime.block_medians_s) / min(r.jax.runtime.block_medians_s)
    return out


def first_pass(r) -> float:
    """The speedup the first pass's medians gave (before any recheck): the median of its samples."""
    return (r.load.get("recheck") or {}).get("first_speedup") or r.speedup


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--timing", default="quick")
    args = p.parse_args()
    timing = TimingConfig.preset(args.timing)
    for condition in ("quiet", "busy"):
        neighbour = subprocess.Popen([sys.executable, "-c", NEIGHBOUR]) if condition == "busy" else None
        try:
            for case, shape in CASES:
                rows = []
                for _ in range(args.reps):
                    r = measure(Spec(case=case, shape=shape, timing=timing))
                    rows.append((estimates(r), r.others_cores(("numpy", "runtime")), r))
                keys = rows[0][0].keys()
                meds = {k: statistics.median(e[k] for e, _, _ in rows) for k in keys}
                print(f"{condition:<6}{case:<15}{'x'.join(map(str, shape)):<10}"
                      + " ".join(f"{k}={v:.3g}" for k, v in meds.items())
                      + f"  others={statistics.median(o or 0 for _, o, _ in rows):.2f} cores"
                      + "  each median: " + " ".join(f"{e['median']:.3g}" for e, _, _ in rows)
                      + "  numpy ms: " + " ".join(f"{r.numpy_runtime.median_s * 1e3:.3g}" for _, _, r in rows)
                      + "  recheck: " + " ".join(str((r.load.get("recheck") or {}).get("kept", "-"))
                                                 for _, _, r in rows)
                      + "  first-pass medians: " + " ".join(f"{first_pass(r):.3g}" for _, _, r in rows),
                      flush=True)
        finally:
            if neighbour is not None:
                neighbour.kill()
                neighbour.wait()


if __name__ == "__main__":
    main()
