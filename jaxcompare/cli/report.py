"""The CLI's text renderings: the result table and JSON written to a path or stdout."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

from ..model.cases import format_shape
from ..model.errors import BadInput
from ..model.formatting import (
    dumps,
    format_break_even,
    format_speedup,
    format_time,
    peak_sentence,
    third_side_verdict,
    transfer_rate_text,
)
from ..model.phases import PHASE_LABELS, PHASES
from ..model.result import Result
from ..model.sides import JaxSide


def write_json(target: str, data: Any) -> None:
    """Strict JSON to a path, or to stdout for '-' (then nothing else goes to stdout)."""
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
        f"  shape {format_shape(spec.shape)}, {spec.precision} ({result.dtype}), "
        f"device {result.device} ({result.backend}), {spec.timing.preset_name} timing",
        "",
        f"  {'phase':<28}{'median':>11}{'min':>11}{'IQR':>11}{'n':>5}{'loops':>7}  stable",
    ]
    for name in PHASES:
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
    rate = transfer_rate_text(result)
    if rate:
        lines.append(f"  transfer: {rate}")
    if result.gflops("jax") is not None:
        cpu = f", JAX on the CPU {result.gflops('jax_cpu'):.3g} GFLOP/s" if result.jax_cpu is not None else ""
        lines.append(f"  throughput: NumPy {result.gflops('numpy'):.3g} GFLOP/s, "
                     f"JAX {result.gflops('jax'):.3g} GFLOP/s{cpu}")
    peak = peak_sentence(result)
    if peak:
        lines.append(f"  fraction of peak: {peak}")
    if result.jax_cpu is not None:
        lines += _third_side(result, result.jax_cpu)
    lines += [f"  note: {note}" for note in result.notes]
    return "\n".join(lines)


def _third_side(result: Result, side: JaxSide) -> list[str]:
    """JAX on the CPU beside JAX on the accelerator: its phases and where the speedup comes from."""
    lines = ["", f"  JAX on the CPU ({side.device}), the third side:"]
    for name in PHASES:
        if name == "numpy":
            continue
        s = getattr(side, name)
        flag = "yes" if s.stable else f"no: {s.unstable_reason}"
        lines.append(f"  {PHASE_LABELS[name]:<28}{format_time(s.median_s):>11}{format_time(s.min_s):>11}"
                     f"{format_time(s.iqr_s):>11}{s.n:>5}{s.loops:>7}  {flag}")
    lines.append(f"  speedup on the CPU (NumPy / JAX on the CPU): {format_speedup(result.cpu_speedup)}")
    verdict = third_side_verdict(result)
    if verdict:
        lines.append(f"  {verdict}")
    return lines




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
