"""Probe (not part of the tool): on the TPU host the tool's back-to-back figure reads 1.13-1.26x the docs'
200-call loop typed by hand (20-30 µs a call more), while on a 2-core CPU the two agree within 3%. Is it the
worker process's state after the protocol, or the way the tool times its loop? One process:

1. the docs' example typed by hand, 200 calls then one block, median of seven (idle, fresh process);
2. the tool's whole protocol in this process (``measure``, quick timing), its back-to-back figure;
3. the hand loop again, now after the protocol, on the same inputs;
4. the tool's ``back_to_back`` timing the hand's jitted function and inputs (and the calls it timed);
   3b and 4b: the hand loop with the garbage collector on, the tool's with it off (timeit turns it off);
5. the hand loop on inputs committed to the device (``device_put(x, device)``, as the worker makes them);
6. the hand loop once more;
7. the tool's ``back_to_back`` on the case's own function and inputs as the worker builds them, after a pause:
   if it reads like (4), the gap of (2) comes with the moment it is timed in the protocol, not what it times;
8. the hand loop right after a NumPy call of the docs' example, then 0.15 s (the tool's settle) and 0.5 s
   after one: how long NumPy's BLAS threads slow the dispatching thread on this host;
9. the same after a call of the jitted example on the host's CPU (XLA's threads; an accelerator host only);
10. the hand loop after 0.45 s of the same loop untimed (the tool's warm-up and calibration dispatch that long
    before its first sample), and 11. its median over 31 loops (as long as the tool samples): whether calls
    queued for that long cost more each than the hand's eight loops;
12. the tool's protocol again with its loops held at the hand's 200 calls (rows 2, 4 and 7 also give the calls
    a loop of the tool's held, as its probe sized them; 2b the protocol twice more, and ``probes`` every sizing
    probe's loops, calls and seconds).

If (3) reads like (2), the process's state after the protocol is the cause; if (4) reads like (2) while (3)
reads like (1), the tool's loop is. Prints one JSON line.

    python benchmarks/tpu_b2b_probe.py [--shape 1000x1000] [--case centered_gram]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time
import timeit

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def hand_loop(f, args, calls: int = 200, repeat: int = 7, gc_on: bool = False, warm: bool = True) -> float:
    """Seconds a call: loops of ``calls`` calls then one block, the median of ``repeat`` (the hand protocol's);
    ``gc_on``: with the garbage collector on while timed, as the tool's sampler leaves it (timeit turns it off);
    ``warm``: one untimed loop first (off where the moment right after other work is the point)."""
    import jax

    def loop() -> None:
        out = None
        for _ in range(calls):
            out = f(*args)
        jax.block_until_ready(out)

    if warm:
        loop()
    timer = timeit.Timer(loop, setup="gc.enable()" if gc_on else "pass")
    return sorted(t / calls for t in timer.repeat(repeat, 1))[repeat // 2]


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--case", default="centered_gram")
    p.add_argument("--shape", default="1000x1000")
    args = p.parse_args()
    shape = tuple(int(n) for n in args.shape.split("x"))

    import jax
    import jax.numpy as jnp

    def f(x):  # the JAX docs' example, as typed there
        return x.T @ (x - x.mean(axis=0))

    out: dict = {"backend": jax.default_backend(), "shape": list(shape)}
    f_jax = jax.jit(f)
    x_np = np.ones(shape, dtype=np.float32)
    x_jax = jnp.asarray(x_np)
    out["1_hand_idle_s"] = hand_loop(f_jax, (x_jax,))

    from jaxcompare.catalog import get_case
    from jaxcompare.engine.worker import runtimes
    from jaxcompare.engine.worker.measure import measure
    from jaxcompare.engine.worker.run_state import Progress, _Run
    from jaxcompare.engine.worker.runtimes import back_to_back
    from jaxcompare.model.spec import Spec, TimingConfig

    sized = runtimes.back_to_back_calls
    chosen: list[int] = []

    probes: list[dict] = []

    def recording(time_loop, blocked_s):  # the calls a loop of the tool's holds, as its probe sized it
        loops: list[list[float]] = []

        def timed(n):  # each probe loop's calls and seconds, to read the sizing offline
            loops.append([n, time_loop(n)])
            return loops[-1][1]

        chosen.append(sized(timed, blocked_s))
        probes.append({"blocked_s": blocked_s, "loops": loops, "calls": chosen[-1]})
        return chosen[-1]

    runtimes.back_to_back_calls = recording
    timing = TimingConfig.preset("quick")
    start = time.perf_counter()
    result = measure(Spec(case=args.case, shape=shape, timing=timing))
    out["protocol_s"] = time.perf_counter() - start
    out["2_tool_back_to_back_s"] = result.jax.back_to_back.median_s
    out["2_tool_calls_a_loop"] = chosen[-1]
    # 2b: the protocol twice more, each sizing probe's loops recorded (what made a loop hold 9 calls).
    out["2b_tool_back_to_back_again_s"] = [
        measure(Spec(case=args.case, shape=shape, timing=timing)).jax.back_to_back.median_s for _ in range(2)]
    # 12: the protocol again, its loops held at the hand's 200 calls: what the loop's length alone explains.
    runtimes.back_to_back_calls = lambda time_loop, blocked_s: 200
    out["12_tool_back_to_back_200_calls_s"] = measure(
        Spec(case=args.case, shape=shape, timing=timing)).jax.back_to_back.median_s
    runtimes.back_to_back_calls = recording
    out["tool_blocked_s"] = result.jax.runtime.median_s
    out["3_hand_after_protocol_s"] = hand_loop(f_jax, (x_jax,))

    run = _Run(get_case(args.case), timing, time.perf_counter_ns, Progress(lambda *_: None, timing))
    tool = back_to_back(run, f_jax, (x_jax,), result.jax.runtime.median_s)
    out["4_tool_loop_on_hand_fn_s"], out["4_tool_calls_a_loop"] = tool.median_s, chosen[-1]
    # Is it the garbage collector, which timeit turns off while it times and the tool's sampler does not?
    out["3b_hand_gc_on_s"] = hand_loop(f_jax, (x_jax,), gc_on=True)
    gc.disable()
    out["4b_tool_loop_gc_off_s"] = back_to_back(run, f_jax, (x_jax,), result.jax.runtime.median_s).median_s
    gc.enable()
    device = jax.devices()[0]
    committed = jax.device_put(x_np, device)
    out["5_hand_on_committed_inputs_s"] = hand_loop(f_jax, (committed,))
    out["6_hand_again_s"] = hand_loop(f_jax, (x_jax,))

    from jaxcompare.engine.worker.inputs import build_inputs

    spec = Spec(case=args.case, shape=shape, timing=timing)
    case_fn = jax.jit(get_case(args.case).jax_fn)
    case_inputs = jax.block_until_ready(jax.device_put(build_inputs(get_case(args.case), spec), device))
    jax.block_until_ready(case_fn(*case_inputs))
    time.sleep(0.5)
    out["7_tool_loop_on_case_fn_s"] = back_to_back(run, case_fn, case_inputs, result.jax.runtime.median_s).median_s
    out["7_tool_calls_a_loop"] = chosen[-1]
    for settle in (0.0, 0.15, 0.5):
        f(x_np)  # NumPy's BLAS threads busy, then idle for ``settle`` seconds
        time.sleep(settle)
        out[f"8_hand_after_numpy_{settle}_s"] = hand_loop(f_jax, (x_jax,), repeat=1, warm=False)
    # The same after XLA on the host's CPU (the protocol's third side runs just before its back to back).
    cpu = jax.devices("cpu")[0] if jax.default_backend() != "cpu" else None
    if cpu is not None:
        x_cpu = jax.device_put(x_np, cpu)
        for settle in (0.0, 0.15, 0.5):
            jax.block_until_ready(f_jax(x_cpu))
            time.sleep(settle)
            out[f"9_hand_after_xla_cpu_{settle}_s"] = hand_loop(f_jax, (x_jax,), repeat=1, warm=False)
    warm_until = time.perf_counter() + 0.45
    while time.perf_counter() < warm_until:
        hand_loop(f_jax, (x_jax,), repeat=1, warm=False)
    out["10_hand_after_sustained_s"] = hand_loop(f_jax, (x_jax,), warm=False)
    out["11_hand_31_loops_s"] = hand_loop(f_jax, (x_jax,), repeat=31)
    out["probes"] = probes
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
