"""pyperf's view of one side (``numpy``, or ``jax`` blocked) of one catalog case.

Run by accuracy.py as a separate program, because pyperf spawns its own worker processes
(each re-imports this script). The precision comes from JAX_ENABLE_X64, which accuracy.py
passes through with ``--inherit-environ``.
"""

from __future__ import annotations

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import pyperf  # noqa: E402


def add_cmdline_args(cmd: list[str], args) -> None:
    cmd.extend(("--case", args.case, "--shape", args.shape, "--side", args.side))


def main() -> None:
    runner = pyperf.Runner(add_cmdline_args=add_cmdline_args)
    runner.argparser.add_argument("--case", required=True)
    runner.argparser.add_argument("--shape", required=True)
    runner.argparser.add_argument("--side", choices=("numpy", "jax"), required=True)
    args = runner.parse_args()

    import jax

    from jaxcompare import Spec, get_case
    from jaxcompare.engine.worker.inputs import build_inputs

    jax.config.update("jax_enable_compilation_cache", False)
    precision = "x64" if jax.config.jax_enable_x64 else "x32"
    case = get_case(args.case)
    spec = Spec(case.name, args.shape, precision=precision, device="cpu")
    host = build_inputs(case, spec)
    dev = jax.block_until_ready(jax.device_put(host))
    f = jax.jit(case.jax_fn)
    single = isinstance(jax.block_until_ready(f(*dev)), jax.Array)
    numpy_fn = case.numpy_fn

    def time_numpy(loops: int) -> float:
        start = time.perf_counter()
        for _ in range(loops):
            numpy_fn(*host)
        return time.perf_counter() - start

    def time_jax(loops: int) -> float:
        start = time.perf_counter()
        if single:
            for _ in range(loops):
                f(*dev).block_until_ready()
        else:
            for _ in range(loops):
                jax.block_until_ready(f(*dev))
        return time.perf_counter() - start

    runner.bench_time_func(f"{case.name} {args.shape} {args.side}", time_numpy if args.side == "numpy" else time_jax)


if __name__ == "__main__":
    main()
