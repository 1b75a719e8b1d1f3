"""The measuring half of accuracy.py: runs in one process per precision (JAX_ENABLE_X64 set
before JAX is imported) and times each case with jaxcompare's engine and with independent
references, interleaved so that drift on a shared machine hits every tool alike."""

from __future__ import annotations

import contextlib
import io
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import timeit
from collections.abc import Callable
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

TOOLS = ("jaxcompare", "timeit", "ipython", "pyperf")
# Only --reference-repeats / --reference-loops (smoke tests) change these from the tools' defaults.
REFERENCE_SETTINGS: dict[str, int | None] = {"repeats": None, "loops": None}
OVERHEAD_TODAY = "lambda: jax.block_until_ready(f(x))  (measure.py before this benchmark)"
OVERHEAD_ENGINE = "timing.blocking_call(f, (x,))"
_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}


# ---------------------------------------------------------------- machine load


def cpu_snapshot() -> dict[str, float]:
    """Busy CPU seconds of the whole machine and of this process (with reaped children)."""
    with open("/proc/stat", encoding="ascii") as fh:
        fields = [int(v) for v in fh.readline().split()[1:]]
    tick = os.sysconf("SC_CLK_TCK")
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    times = os.times()
    return {
        "wall": time.monotonic(),
        "machine_busy_s": (sum(fields[:8]) - idle) / tick,
        "own_s": times.user + times.system + times.children_user + times.children_system,
    }


def load_between(start: dict[str, float], end: dict[str, float]) -> dict[str, float]:
    """Average cores kept busy by everything else on the machine while we measured."""
    wall = max(end["wall"] - start["wall"], 1e-9)
    busy = (end["machine_busy_s"] - start["machine_busy_s"]) / wall
    own = (end["own_s"] - start["own_s"]) / wall
    return {"wall_s": wall, "busy_cores": busy, "own_cores": own, "other_cores": max(busy - own, 0.0),
            "loadavg_1min": os.getloadavg()[0]}


# ---------------------------------------------------------------- the tools


def time_jaxcompare(call: Callable[[], Any], cfg: Any) -> dict[str, Any]:
    from jaxcompare.engine.worker.timing import sample

    start = time.perf_counter()
    stats = sample(call, cfg)
    wall = time.perf_counter() - start
    return {"median_s": stats.median_s, "wall_s": wall, "n": stats.n, "loops": stats.loops,
            "stable": stats.stable}


def time_timeit(stmt: str, namespace: dict[str, Any], repeats: int | None = None,
                loops: int | None = None) -> dict[str, Any]:
    """What `python -m timeit` does: autorange to >= 0.2 s, then 5 repeats (it prints the best)."""
    start = time.perf_counter()
    timer = timeit.Timer(stmt, globals=namespace)
    number = loops or timer.autorange()[0]
    runs = [t / number for t in timer.repeat(repeat=repeats or 5, number=number)]
    wall = time.perf_counter() - start
    return {"median_s": statistics.median(runs), "min_s": min(runs), "wall_s": wall, "n": len(runs),
            "loops": number}


def ipython_shell(namespace: dict[str, Any]) -> Any:
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.user_ns.update(namespace)
    return shell


def time_ipython(stmt: str, namespace: dict[str, Any], repeats: int | None = None,
                 loops: int | None = None) -> dict[str, Any]:
    """`%timeit -o`: loops by powers of ten to >= 0.2 s, 7 runs; it prints the mean ± std of the runs."""
    shell = ipython_shell(namespace)
    options = (f"-r {repeats} " if repeats else "") + (f"-n {loops} " if loops else "")
    start = time.perf_counter()
    result = shell.run_line_magic("timeit", f"-o -q {options}{stmt}")
    wall = time.perf_counter() - start
    runs = [t / result.loops for t in result.all_runs]
    return {"median_s": statistics.median(runs), "mean_s": result.average, "wall_s": wall, "n": len(runs),
            "loops": result.loops}


def ipython_time(stmt: str, namespace: dict[str, Any]) -> float:
    """`%time stmt`: the wall time IPython prints (parsed; our own clock if it cannot be)."""
    shell = ipython_shell(namespace)
    buf = io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stdout(buf):
        shell.run_line_magic("time", stmt)
    ours = time.perf_counter() - start
    match = re.search(r"Wall time:\s*([\d.]+)\s*(s|ms|us|µs|ns)", buf.getvalue())
    return float(match.group(1)) * _UNITS[match.group(2)] if match else ours


def time_pyperf(case: str, shape: str, side: str) -> dict[str, Any] | None:
    """pyperf's `--fast` preset in its own processes (pyperf spawns a worker per run)."""
    import pyperf

    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "pyperf.json")
        cmd = [sys.executable, os.path.join(HERE, "pyperf_case.py"), "--case", case, "--shape", shape,
               "--side", side, "--fast", "--quiet", "--output", out,
               "--inherit-environ", "JAX_ENABLE_X64,JAX_PLATFORMS,PYTHONPATH"]
        env = dict(os.environ, PYTHONPATH=ROOT)
        start = time.perf_counter()
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
        wall = time.perf_counter() - start
        if proc.returncode != 0:
            print(f"pyperf failed for {case} {shape} {side}: {proc.stderr.strip()[-500:]}", file=sys.stderr)
            return None
        bench = pyperf.Benchmark.load(out)
        values = bench.get_values()
        return {"median_s": bench.median(), "mean_s": bench.mean(), "wall_s": wall, "n": len(values),
                "loops": bench.get_loops(), "processes": bench.get_nrun()}


# ---------------------------------------------------------------- one case at one size


def _setup(case: Any, shape: tuple[int, ...], precision: str) -> dict[str, Any]:
    """Inputs exactly as jaxcompare's measure() builds them, plus the statements a user types."""
    import jax

    from jaxcompare import Spec
    from jaxcompare.engine.worker.inputs import build_inputs
    from jaxcompare.engine.worker.timing import blocking_call, bound_call

    spec = Spec(case.name, shape, precision=precision, device="cpu")
    host = build_inputs(case, spec)
    dev = jax.block_until_ready(jax.device_put(host, jax.devices("cpu")[0]))
    f = jax.jit(case.jax_fn)
    single = isinstance(jax.block_until_ready(f(*dev)), jax.Array)
    names = ", ".join(f"x{i}" for i in range(len(host)))
    namespace: dict[str, Any] = {"jax": jax, "np_fn": case.numpy_fn, "f": f}
    namespace.update({f"x{i}": a for i, a in enumerate(host)})
    dev_namespace = dict(namespace)
    dev_namespace.update({f"x{i}": a for i, a in enumerate(dev)})
    jax_stmt = f"f({names}).block_until_ready()" if single else f"jax.block_until_ready(f({names}))"
    return {
        "host": host, "dev": dev, "f": f,
        "numpy": {"stmt": f"np_fn({names})", "namespace": namespace,
                  "engine_call": bound_call(case.numpy_fn, host)},
        "jax": {"stmt": jax_stmt, "namespace": dev_namespace, "engine_call": blocking_call(f, dev)},
    }


def measure_case(case: Any, size: str, precision: str, rounds: int, cfg: Any, pyperf: bool,
                 log: Callable[[str], None]) -> list[dict[str, Any]]:
    """Rows for the NumPy and JAX runtime phases of one case at one size.

    Each reference run is bracketed by jaxcompare runs (jc, ref, jc, ref, jc, ...), so every
    reference has a jaxcompare number from just before and just after it: on a machine whose
    speed drifts, their mean is jaxcompare's number for the same moment (an ABA design).
    """
    from jaxcompare.model.cases import format_shape

    shape = case.small_shape if size == "small" else case.large_shape
    setup = _setup(case, shape, precision)
    rows = []
    for index, phase in enumerate(("numpy", "jax")):
        info = setup[phase]
        references = {
            "timeit": lambda info=info: time_timeit(info["stmt"], info["namespace"], **REFERENCE_SETTINGS),
            "ipython": lambda info=info: time_ipython(info["stmt"], info["namespace"], **REFERENCE_SETTINGS),
        }
        if pyperf:
            references["pyperf"] = lambda phase=phase: time_pyperf(case.name, format_shape(shape), phase)
        runs: dict[str, list[dict[str, Any]]] = {tool: [] for tool in TOOLS}
        order = list(references)
        settle(info["engine_call"])  # NumPy ran last: wait out BLAS's spinning threads, for every tool
        for r in range(rounds):
            shift = (r + index) % len(order)  # rotate which reference comes first
            runs["jaxcompare"].append(time_jaxcompare(info["engine_call"], cfg))
            for tool in order[shift:] + order[:shift]:
                got = references[tool]()
                before = runs["jaxcompare"][-1]["median_s"]
                runs["jaxcompare"].append(time_jaxcompare(info["engine_call"], cfg))
                if got is not None:
                    got["jaxcompare_adjacent_s"] = [before, runs["jaxcompare"][-1]["median_s"]]
                    runs[tool].append(got)
        row = {"precision": precision, "case": case.name, "size": size, "shape": list(shape), "phase": phase,
               "statement": info["stmt"], "runs": {tool: runs[tool] for tool in TOOLS if runs[tool]}}
        rows.append(row)
        meds = "  ".join(f"{t} {statistics.median(x['median_s'] for x in v):.3g}" for t, v in row["runs"].items())
        log(f"{precision} {case.name} {format_shape(shape)} {phase}: {meds}")
    return rows


def settle(call: Callable[[], Any]) -> None:
    """Run ``call`` for BLAS_SETTLE_S: after NumPy work, JAX timings start once OpenBLAS's
    idle threads have stopped spinning (see jaxcompare.engine.worker.timing.BLAS_SETTLE_S)."""
    from jaxcompare.engine.worker.timing import BLAS_SETTLE_S

    end = time.perf_counter() + BLAS_SETTLE_S
    while time.perf_counter() < end:
        call()


# ---------------------------------------------------------------- harness overhead


def measure_overhead(precision: str, rounds: int, cfg: Any) -> list[dict[str, Any]]:
    """sample() against a bare loop of f(x).block_until_ready() on a trivial jitted `x + 1`.

    After each of the engine's samples (outside its timed region, through ``on_sample``) a
    bare chunk of the same calls runs, so both see the same moment of a drifting machine.
    """
    import jax
    import jax.numpy as jnp

    from jaxcompare.engine.worker.timing import blocking_call, calibrate_loops, sample

    f = jax.jit(lambda x: x + 1)
    x = jax.device_put(jnp.asarray(1.0, dtype=jnp.float64 if precision == "x64" else jnp.float32))
    f(x).block_until_ready()
    variants = {
        OVERHEAD_TODAY: lambda: jax.block_until_ready(f(x)),
        "lambda: f(x).block_until_ready()": lambda: f(x).block_until_ready(),
        OVERHEAD_ENGINE: blocking_call(f, (x,)),
    }
    loops = calibrate_loops(lambda: f(x).block_until_ready(), cfg.target_sample_s, time.perf_counter_ns)

    def bare_chunk(chunks: list[float]) -> None:
        start = time.perf_counter_ns()
        for _ in range(loops):
            f(x).block_until_ready()
        chunks.append((time.perf_counter_ns() - start) * 1e-9 / loops)

    out = []
    for label, call in variants.items():
        engine, bare, ratios = [], [], []
        for _ in range(rounds):
            chunks: list[float] = []
            start = time.perf_counter()
            stats = sample(call, cfg, on_sample=lambda n, chunks=chunks: bare_chunk(chunks))
            engine.append({"median_s": stats.median_s, "loops": stats.loops, "n": stats.n,
                           "wall_s": time.perf_counter() - start})
            bare.append(statistics.median(chunks))
            ratios.append(stats.median_s / bare[-1])
        out.append({"precision": precision, "variant": label, "engine": engine, "bare_s": bare,
                    "bare_loops": loops, "ratios": ratios})
    return out


# ---------------------------------------------------------------- the JAX docs' protocol vs measure()


def measure_showcase(precision: str, shape: tuple[int, ...], repeats: int, log: Callable[[str], None],
                     timings: tuple[str, ...] = ("careful", "thorough")) -> dict:
    """A full centered_gram comparison, `repeats` times: jaxcompare's measure() in each timing
    preset against the JAX docs' IPython protocol (%timeit NumPy, %time the first JAX call,
    %timeit JAX blocked). The order of the tools alternates from one repeat to the next."""
    import jax

    from jaxcompare import Spec, TimingConfig, get_case
    from jaxcompare.engine.worker.measure import measure

    case = get_case("centered_gram")
    setup = _setup(case, shape, precision)
    runs: dict[str, list[dict[str, Any]]] = {showcase_tool(t): [] for t in timings} | {"ipython": []}

    def run_jaxcompare(timing: str) -> None:
        start = time.perf_counter()
        result = measure(Spec(case.name, shape, precision=precision, device="cpu",
                              timing=TimingConfig.preset(timing)))
        runs[showcase_tool(timing)].append({
            "wall_s": time.perf_counter() - start, "speedup": result.speedup,
            "numpy_s": result.numpy_runtime.median_s, "jax_s": result.jax.runtime.median_s,
            "first_call_s": result.jax.first_call.median_s, "speedup_range": list(result.speedup_range),
            "stable": result.numpy_runtime.stable and result.jax.runtime.stable,
            "steady": result.speedup_steady, "speedup_pairs": list(result.speedup_pairs),
            "unstable_reasons": [s.unstable_reason for s in (result.numpy_runtime, result.jax.runtime)
                                 if not s.stable]})

    def run_ipython() -> None:
        ns = dict(setup["numpy"]["namespace"])
        start = time.perf_counter()
        numpy = time_ipython(setup["numpy"]["stmt"], ns, **REFERENCE_SETTINGS)
        jax.clear_caches()  # a fresh jit, as in a new notebook session
        ns_dev = dict(setup["jax"]["namespace"], f=jax.jit(case.jax_fn))
        first = ipython_time(setup["jax"]["stmt"], ns_dev)
        runtime = time_ipython(setup["jax"]["stmt"], ns_dev, **REFERENCE_SETTINGS)
        runs["ipython"].append({"wall_s": time.perf_counter() - start, "speedup": numpy["mean_s"] / runtime["mean_s"],
                                "speedup_median": numpy["median_s"] / runtime["median_s"],
                                "numpy_s": numpy["mean_s"], "jax_s": runtime["mean_s"], "first_call_s": first})

    actions = [lambda t=t: run_jaxcompare(t) for t in timings] + [run_ipython]
    for r in range(repeats):
        for action in (actions if r % 2 == 0 else actions[::-1]):
            action()
        log(f"{precision} showcase {r + 1}/{repeats}: " + ", ".join(
            f"{tool} {v[-1]['speedup']:.2f}x in {v[-1]['wall_s']:.1f} s" for tool, v in runs.items()))
    return {"precision": precision, "case": case.name, "shape": list(shape)} | runs


def showcase_tool(timing: str) -> str:
    """The showcase's key for jaxcompare in one timing preset ('jaxcompare' is the default one)."""
    return "jaxcompare" if timing == "careful" else f"jaxcompare_{timing}"


# ---------------------------------------------------------------- the whole child run


def run(args: Any) -> dict[str, Any]:
    """Everything for one precision; the parent merges the precisions."""
    import jax

    from jaxcompare import TimingConfig, get_case
    from jaxcompare.engine.worker.measure import check_precision

    jax.config.update("jax_enable_compilation_cache", False)  # as jaxcompare's worker does
    check_precision(args.precision)

    def log(text: str) -> None:
        print(f"[accuracy] {text}", file=sys.stderr, flush=True)

    cfg = TimingConfig()  # the harness-overhead check: the default preset
    rows_cfg = TimingConfig.preset(args.timing).for_runtime()  # the runtimes' settings, in one block
    REFERENCE_SETTINGS.update(repeats=args.reference_repeats, loops=args.reference_loops)
    start = cpu_snapshot()
    overhead = measure_overhead(args.precision, args.overhead_rounds, cfg)
    for o in overhead:
        log(f"{args.precision} overhead {o['variant']}: {statistics.median(o['ratios']):.3f}")
    rows = []
    for name in args.cases:
        case = get_case(name)
        for size in args.sizes:
            rows.extend(measure_case(case, size, args.precision, args.rounds, rows_cfg,
                                     pyperf=args.pyperf_all or f"{args.precision}:{name}:{size}" in args.pyperf,
                                     log=log))
    showcase = None
    if args.showcase_repeats > 0 and args.precision == args.showcase_precision:
        showcase = measure_showcase(args.precision, tuple(args.showcase_shape), args.showcase_repeats, log,
                                    tuple(args.showcase_timings))
    return {"precision": args.precision, "timing": args.timing, "timing_config": rows_cfg.__dict__,
            "overhead": overhead, "rows": rows, "showcase": showcase, "load": load_between(start, cpu_snapshot())}
