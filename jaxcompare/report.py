"""Plain-text and JSON renderings of results, shared by the CLI and the app."""

from __future__ import annotations

import json
import math
from typing import Any

from .result import Result

PHASE_LABELS = {
    "numpy": "NumPy runtime",
    "transfer": "Transfer host→device",
    "trace": "Compile: trace",
    "lower": "Compile: lower",
    "compile": "Compile: XLA compile",
    "first_call": "First call (cold, naive)",
    "runtime": "JAX runtime (blocked)",
    "dispatch": "Dispatch only (unblocked)",
    "fetch": "Fetch device→host",
}
ONE_OFF_PHASES = ("transfer", "trace", "lower", "compile")
PER_CALL_PHASES = ("runtime", "numpy", "dispatch", "fetch")


def format_time(seconds: float | None) -> str:
    """Seconds with an SI unit and three significant figures: 485 µs, 16.2 ms."""
    if seconds is None or not math.isfinite(seconds):
        return "—"
    if seconds == 0:
        return "0 s"
    seconds = float(f"{seconds:.3g}")  # round first, so 0.9997 ms reads "1 ms", not "1e+03 µs"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9)):
        if abs(seconds) >= scale or unit == "ns":
            value = seconds / scale
            return f"{value:.3g} {unit}" if value < 1000 else f"{value:.0f} {unit}"
    return f"{seconds:.3g} s"


def format_speedup(speedup: float | None) -> str:
    if speedup is None or not math.isfinite(speedup):
        return "—"
    if speedup >= 1:
        return f"{speedup:.2f}x (JAX faster)"
    return f"{speedup:.2f}x (JAX {1 / speedup:.1f}x slower)"


def format_break_even(calls: float | None) -> str:
    if calls is None:
        return "never (JAX is not faster per call)"
    return f"{math.ceil(calls):,} calls"


def _json_safe(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    return value


def dumps(data: Any, indent: int | None = 2) -> str:
    """Strict JSON: infinities and NaN become null."""
    return json.dumps(_json_safe(data), indent=indent, allow_nan=False)


def write_json(target: str, data: Any) -> None:
    """Strict JSON to a path, or to stdout for '-' (then nothing else goes to stdout)."""
    import sys
    from pathlib import Path

    from .errors import BadInput

    text = dumps(data)
    if target == "-":
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
        return
    try:
        Path(target).write_text(text + "\n", encoding="utf-8")
    except OSError as exc:
        raise BadInput(f"cannot write {target!r}: {exc.strerror or exc}") from None
    print(f"wrote {target}", file=sys.stderr)


def result_table(result: Result) -> str:
    """The readable table the CLI prints for one comparison."""
    spec = result.spec
    lines = [
        f"{result.case_info.get('title', spec.case)}  [{spec.case}]",
        f"  {result.case_info.get('numpy_name', '')}  vs  {result.case_info.get('jax_name', '')}",
        f"  shape {'x'.join(map(str, spec.shape))}, {spec.precision} ({result.dtype}), "
        f"device {result.device} ({result.backend}), {spec.timing.preset_name} timing",
        "",
        f"  {'phase':<28}{'median':>11}{'min':>11}{'IQR':>11}{'n':>5}{'loops':>7}  stable",
    ]
    for name in ("numpy", "transfer", "trace", "lower", "compile", "first_call", "runtime",
                 "dispatch", "fetch"):
        s = result.phase(name)
        flag = "yes" if s.stable else f"no: {s.unstable_reason}"
        lines.append(
            f"  {PHASE_LABELS[name]:<28}{format_time(s.median_s):>11}{format_time(s.min_s):>11}"
            f"{format_time(s.iqr_s):>11}{s.n:>5}{s.loops:>7}  {flag}"
        )
    agreement = result.agreement
    lines += [
        "",
        f"  speedup (NumPy / JAX runtime): {format_speedup(result.speedup)}{_range(result.speedup_range)}",
        *_pairs(result),
        f"  compile total: {format_time(result.compile_total_s)};  "
        f"break-even: {format_break_even(result.break_even_calls)}",
        f"  agreement: {'OK' if agreement['ok'] else 'MISMATCH'}  max abs err "
        f"{agreement['max_abs_err']:.3g}, max rel err {agreement['max_rel_err']:.3g} "
        f"(rtol {agreement['rtol']:.0e}, {agreement['method']})",
    ]
    if result.gflops("jax") is not None:
        lines.append(f"  throughput: NumPy {result.gflops('numpy'):.3g} GFLOP/s, "
                     f"JAX {result.gflops('jax'):.3g} GFLOP/s")
    lines += [f"  note: {note}" for note in result.notes]
    return "\n".join(lines)


def _pairs(result: Result) -> list[str]:
    """The speedup of each pair of runtime blocks, when they were timed in pairs."""
    pairs = result.speedup_pairs
    if not pairs:
        return []
    moved = result.speedup_moved
    tolerance = result.spec.timing.pair_tolerance
    verdict = f"steady: within {tolerance:.1%}" if result.speedup_steady else f"NOT steady: more than {tolerance:.1%}"
    return [f"  speedup per pair of blocks timed side by side: {' '.join(f'{p:.3g}x' for p in pairs)}"
            f"  (moved {moved:.1%}, {verdict})"]


def _range(low_high: tuple[float, float]) -> str:
    low, high = low_high
    if not (math.isfinite(low) and math.isfinite(high)):
        return ""
    return f"  (95% range {low:.3g}x to {high:.3g}x, from the two medians' CIs)"


def ipython_lines(result: Result) -> str:
    """IPython lines that reproduce the measurement by hand (the JAX docs' protocol)."""
    spec = result.spec
    info = result.case_info
    shape = tuple(spec.shape)
    x64 = spec.precision == "x64"
    return "\n".join([
        "import numpy as np, jax",
        f'jax.config.update("jax_enable_x64", {x64})  # before any JAX array is created',
        "from jaxcompare.catalog import get_case",
        f"case = get_case({spec.case!r})" + (f"  # from {spec.cases_file}" if spec.cases_file else ""),
        f"x_np = case.make_inputs({shape}, np.dtype({result.dtype!r}), np.random.default_rng({spec.seed}))",
        f"%timeit case.numpy_fn(*x_np)              # NumPy: {info.get('numpy_name', '')}",
        f'dev = jax.devices("{result.backend}")[0]',
        "%time x_jax = jax.block_until_ready(jax.device_put(x_np, dev))  # transfer",
        "f = jax.jit(case.jax_fn)",
        "%time jax.block_until_ready(f(*x_jax))    # first call: compile + run",
        "%timeit jax.block_until_ready(f(*x_jax))  # steady state, blocked",
        "%timeit f(*x_jax)                         # pitfall: dispatch only, not the work",
    ])
