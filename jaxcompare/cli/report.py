"""The CLI's text renderings: the result table (from analysis/text's shared lines) and JSON
written to a path or stdout."""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..analysis.checks import compared_word
from ..analysis.summary import break_even_tile, doubt_text, holds_one, speedup_tile, speedup_words, timing_name
from ..analysis.text import (
    advice_lines,
    back_to_back_line,
    first_call_line,
    note_lines,
    numpy_speeds_line,
    phase_table_lines,
    roofline_lines,
)
from ..analysis.trust import trusted
from ..i18n import N_, _, translate_text
from ..model.cases import format_shape
from ..model.errors import BadInput
from ..model.formatting import (
    dumps,
    format_break_even,
    format_speedup,
    format_time,
    matmul_precision_line,
    peak_sentence,
    third_side_verdict,
    transfer_rate_text,
    with_detail,
)
from ..model.platforms import reduced_precision
from ..model.result import Result


def check_outputs(args: Any) -> None:
    """Each file a command will write (--json, --markdown, --html; '-' is stdout) can be: its folder exists
    and it is not a folder. Said before the work, which would otherwise be measured and then not written."""
    for option in ("json", "markdown", "html"):
        target = getattr(args, option, None)
        if not target or target == "-":
            continue
        path = Path(target)
        try:
            reason = (N_("Is a directory") if path.is_dir()
                      else None if path.parent.is_dir()
                      else N_("Not a directory") if path.parent.exists() else N_("No such file or directory"))
        except OSError as exc:  # a folder on the way this user may not look into
            reason = exc.strerror or str(exc)
        if reason is not None:
            raise BadInput(N_("cannot write {path}: {reason}").format(path=repr(target), reason=reason))


def disagreed_status(results: Iterable[Result]) -> int:
    """The exit status of a measuring command that measured: 1 where a result's JAX side computed something
    else than NumPy's (a script checking a port must not read a wrong answer as a pass), else 0."""
    return 1 if any(r.jax.agreement.get("ok") is False for r in results) else 0


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
        reason = exc.strerror or exc
        raise BadInput(N_("cannot write {path}: {reason}").format(path=repr(target), reason=reason)) from None
    print(_("wrote {path}").format(path=target), file=sys.stderr)


def result_table(result: Result) -> str:
    """The readable table the CLI prints for one comparison, in the current language."""
    spec = result.spec
    info = result.case_info
    lines = [
        f"{translate_text(info.get('title', spec.case))}  [{spec.case}]",
        "  " + _("{numpy}  vs  {jax}").format(numpy=info.get("numpy_name", ""), jax=info.get("jax_name", "")),
        "  " + _("shape {shape}, {precision} ({dtype}), device {device} ({backend}), {timing}").format(
            shape=format_shape(spec.shape), precision=spec.precision, dtype=result.dtype, device=result.jax.device,
            backend=result.backend, timing=timing_name(spec.timing.preset_name)),
        *(["  " + line] if (line := matmul_precision_line(result)) else []),
        "",
        *phase_table_lines(result),
    ]
    agreement = result.jax.agreement
    lines += [
        "",
        _speedup_line(result),
        *_pairs(result),
        *("  " + line for line in (first_call_line(result), numpy_speeds_line(result),
                                                  back_to_back_line(result)) if line),
        "  " + _("compile total: {compile};  break-even: {break_even}").format(
            compile=format_time(result.jax.compile_total_s), break_even=_break_even(result)),
        "  " + _agreement_line(agreement),
    ]
    rate = transfer_rate_text(result)
    if rate:
        lines.append("  " + _("transfer: {rate}").format(rate=rate))
    if result.gflops("jax") is not None:
        rates = {"numpy": f"{result.gflops('numpy'):.3g}", "jax": f"{result.gflops('jax'):.3g}"}
        if result.jax_cpu is None:
            lines.append("  " + _("throughput: NumPy {numpy} GFLOP/s, JAX {jax} GFLOP/s").format(**rates))
        else:
            lines.append("  " + _("throughput: NumPy {numpy} GFLOP/s, JAX {jax} GFLOP/s, JAX on the CPU {cpu} "
                                  "GFLOP/s").format(**rates, cpu=f"{result.gflops('jax_cpu'):.3g}"))
    peak = peak_sentence(result)
    if peak:
        lines.append("  " + _("fraction of peak: {text}").format(text=peak))
    lines += roofline_lines(result)
    lines += advice_lines(result)
    if result.jax_cpu is not None:
        lines.append("  " + _("speedup on the CPU (NumPy / JAX on the CPU): {speedup}").format(
            speedup=format_speedup(result.cpu_speedup)))
        verdict = third_side_verdict(result)
        if verdict:
            lines.append(f"  {verdict}")
    lines += note_lines(result)
    return "\n".join(lines)


def _speedup_line(result: Result) -> str:
    """The speedup with its range; not trusted, the range alone as the Speedup tile shows it
    (summary.speedup_tile), never the bare point figure."""
    if trusted(result):
        return "  " + _("speedup (NumPy / JAX runtime): {speedup}").format(
            speedup=speedup_words(result)) + _range(result.speedup_range)
    value, detail = speedup_tile(result)
    return "  " + _("speedup (NumPy / JAX runtime): {speedup}").format(speedup=value) + "  " + _(
        "({detail}; set aside: {why})").format(detail=detail, why=doubt_text(result))


def _agreement_line(agreement: dict) -> str:
    """The agreement and its tolerance, with the reduced precision float32 products ran at, if any."""
    values = {"verdict": _("OK") if agreement["ok"] else _("MISMATCH"), "abs_err": f"{agreement['max_abs_err']:.3g}",
              "rel_err": f"{agreement['max_rel_err']:.3g}", "rtol": f"{agreement['rtol']:.0e}",
              "method": compared_word(agreement["method"])}
    reduced = reduced_precision(agreement.get("products"))
    if reduced is not None:
        return _("agreement: {verdict}  max abs err {abs_err}, max rel err {rel_err} (rtol {rtol} for float32 products "
                 "at {products}, {method})").format(products=_(reduced.label), **values)
    return _("agreement: {verdict}  max abs err {abs_err}, max rel err {rel_err} (rtol {rtol}, {method})").format(
        **values)


def _break_even(result: Result) -> str:
    """Break-even as the tile says it (summary.break_even_tile), with why where there are no calls."""
    if trusted(result) and not holds_one(result):
        return format_break_even(result.break_even_calls)
    value, detail = break_even_tile(result)  # not trusted, or a range across 1x: no calls quoted
    return with_detail(value, detail)


def _pairs(result: Result) -> list[str]:
    """The speedup of each pair of runtime blocks, when they were timed in pairs."""
    pairs = result.speedup_pairs
    if not pairs:
        return []
    tolerance = f"{result.spec.timing.pair_tolerance:.1%}"
    verdict = (_("steady: within {tolerance}") if result.speedup_steady else
               _("NOT steady: more than {tolerance}")).format(tolerance=tolerance)
    return ["  " + _("speedup per pair of blocks timed side by side: {pairs}  (moved {moved}, {verdict})").format(
        pairs=" ".join(f"{p:.3g}x" for p in pairs), moved=f"{result.speedup_moved:.1%}", verdict=verdict)]


def _range(low_high: tuple[float, float]) -> str:
    low, high = low_high
    if not (math.isfinite(low) and math.isfinite(high)):
        return ""
    return "  " + _("(95% range {low}x to {high}x: where a rerun's speedup falls)").format(
        low=f"{low:.3g}", high=f"{high:.3g}")
