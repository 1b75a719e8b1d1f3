"""Measures this host's CPU ceilings (the matmul rates, the bandwidth, the transcendental rates:
engine/worker/ceilings.py) into the file named on the command line, before `make test` starts its test
processes, so that both of its parts read rates measured on a quiet machine, as on a user's host.

Measured first beside the other test processes, every rate read busy and was measured again on
later runs, up to ceilings_cache.BUSY_RETRIES times each (benchmarks/RESULTS.md). One process a
precision: float64's XLA rate needs x64."""

from __future__ import annotations

import os
import subprocess
import sys


def measure(precision: str) -> None:
    from jaxcompare.engine.worker.ceilings import cpu_bandwidth, cpu_device_or_none, cpu_rate, cpu_transcendental_rate
    from jaxcompare.model.spec import DTYPES

    device = cpu_device_or_none()
    dtype = DTYPES[precision]
    cpu_rate(dtype, device)
    cpu_transcendental_rate(dtype, device)
    if precision == "x32":
        cpu_bandwidth(device)


def main(argv: list[str]) -> int:
    if len(argv) == 3:
        measure(argv[2])
        return 0
    if len(argv) != 2:
        print("usage: quiet_ceilings.py FILE", file=sys.stderr)
        return 2
    for precision in ("x32", "x64"):
        env = {**os.environ, "JAXCOMPARE_CPU_PEAKS": argv[1], "JAX_ENABLE_X64": "1" if precision == "x64" else "0"}
        subprocess.run([sys.executable, __file__, argv[1], precision], env=env, check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
