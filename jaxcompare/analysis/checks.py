"""The credibility checklist: can this Result's comparison be trusted, and if not, why?

Each item is pass / warn / fail, or n/a where it was not checked or does not apply, with a
one-line reason and the pitfall (see pitfalls.py) that explains it. Computed from a Result
alone, so the CLI and the app show the same. ``trusted`` says whether a result's speedup may
lead a page (analysis/trust.py).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np

from ..engine import is_busy
from ..i18n import N_, _, ngettext, translate_text
from ..model.cases import format_shape
from ..model.clocks import SM_DROP_WARN
from ..model.formatting import format_factor, format_time, format_time_range, transfer_rate_text
from ..model.platforms import BASE_RTOL, TF32_RTOL, is_host, may_use_tf32, platform, reduced_precision
from ..model.result import Result
from ..model.stats import Stats
from .checkline import FAIL, NA, PASS, WARN, Check
from .consistency import result_checks

MIN_SAMPLES = 5
# A blocked call over its fixed cost (check_workload): under 2x the fixed cost is most of the call,
# under 10x more than a tenth of it.
DISPATCH_RATIO_WARN = 10.0
DISPATCH_RATIO_FAIL = 2.0
# Each check's title by its id; Check.title is it in the language in force when checklist() runs.
TITLES = {
    "workload": N_("Workload large enough"),
    "precision": N_("Matched precision"),
    "blocked": N_("Blocked timing"),
    "compile": N_("Compile excluded from runtime"),
    "transfer": N_("Inputs already on the device"),
    "agreement": N_("Outputs agree"),
    "stable": N_("Samples stable"),
    "busy": N_("Machine quiet"),
    "steady": N_("Speedup steady"),
    "samples": N_("Enough samples"),
    "threads": N_("CPU thread parity"),
    "tf32": N_("Reduced-precision products"),
    "clocks": N_("GPU clocks steady"),
}
# "Machine quiet" passed on a machine that was not: other programs took cores, and the pair was timed
# again so that they did not count. Its title says so (a "Machine quiet: pass" there read as false).
RETIMED_TITLE = N_("Machine busy, timed again")


def _check(check_id: str, status: str, reason: str, pitfall: str | None) -> Check:
    """A check with its title in the current language (``reason`` already is)."""
    return Check(check_id, _(TITLES[check_id]), status, reason, pitfall)


def _precision_bits(dtype: str | None) -> int | None:
    """float32 and complex64 are both 32-bit precision; None when unknown or not float."""
    if not dtype:
        return None
    try:
        dt = np.dtype(dtype)
    except TypeError:
        return None
    if dt.kind == "c":
        return dt.itemsize * 4
    if dt.kind == "f":
        return dt.itemsize * 8
    return None


def _empty_call(r: Result) -> float | None:
    """The blocked empty jitted call on JAX's device (roofline.empty_call_s: launch, one tiny program,
    synchronisation); None where not recorded. On an accelerator it is a blocked call's fixed cost, the
    host's round trip: the unblocked dispatch there is the host's launch alone, and its samples wander
    (docs/protocol.md)."""
    side = r.roofline.side("jax") if r.roofline is not None else None
    empty = side.empty_call_s if side is not None else None
    return empty if empty is not None and empty > 0 else None


# "Workload large enough" in words, by what JAX's time per call is set against (fail, warn, pass): on
# an accelerator the device's blocked empty call (_empty_call, the host's round trip), on the CPU the
# fastest unblocked dispatch or the empty call, whichever is less. {figure} names where JAX's time per
# call was read (WORK_FIGURES).
WORKLOAD_WORDS = {
    "device": (N_("JAX {work} per call ({figure}) vs {empty} for an empty call on the device, the host's round "
                  "trip ({ratio:.1f}x): the call is mostly fixed cost (launch and synchronisation), not work; try a "
                  "larger shape"),
               N_("JAX {work} per call ({figure}) vs {empty} for an empty call on the device, the host's round "
                  "trip ({ratio:.1f}x): fixed cost (launch and synchronisation) is a large share"),
               N_("JAX {work} per call ({figure}) vs {empty} for an empty call on the device, the host's round "
                  "trip ({ratio:.0f}x)")),
    "host": (N_("JAX {work} per call ({figure}) vs {empty} for an empty jitted call ({ratio:.1f}x): the call is "
                "mostly fixed cost (dispatch and synchronisation), not work; try a larger shape"),
             N_("JAX {work} per call ({figure}) vs {empty} for an empty jitted call ({ratio:.1f}x): fixed cost "
                "(dispatch and synchronisation) is a large share; small inputs favour NumPy"),
             N_("JAX {work} per call ({figure}) vs {empty} for an empty jitted call ({ratio:.0f}x)")),
    "dispatch": (N_("JAX {work} per call ({figure}) vs fastest dispatch {dispatch} ({ratio:.1f}x): the call is "
                    "mostly dispatch overhead; try a larger shape"),
                 N_("JAX {work} per call ({figure}) vs fastest dispatch {dispatch} ({ratio:.1f}x): overhead is "
                    "a large share; small inputs favour NumPy"),
                 N_("JAX {work} per call ({figure}) vs fastest dispatch {dispatch} ({ratio:.0f}x)")),
}
# Where check_workload read JAX's time per call.
WORK_FIGURES = {
    "profile": N_("device time from the profile"),
    "back_to_back": N_("calls back to back"),
    "blocked": N_("blocked runtime"),
    "fastest_blocked": N_("fastest blocked call"),
    "fastest_back_to_back": N_("fastest loop of calls back to back"),
}


def _work_per_call(r: Result) -> tuple[str, float]:
    """JAX's work per call on a GPU or TPU, beside the host's round trip, and where it was read:
    the device's busy time per call in the profile, else the per-call time back to back (the round
    trip overlaps the work there), else (results saved before either) the blocked runtime."""
    return r.device_time or ("blocked", r.jax.runtime.median_s)


def check_workload(r: Result) -> Check:
    """Is the call's work large against its fixed cost? On a GPU or TPU that is the host's round
    trip (a blocked empty call), and the work is read where the round trip is not in it (device
    time, calls back to back); a blocked call pays both, so the work is judged with the round trip
    added, as a blocked runtime is. On the CPU the fixed cost is the fastest dispatch or the blocked
    empty call, whichever is less (a LAPACK custom call, erf over 10^6 float64, runs inside its
    dispatch: there the dispatch is the work, and the empty call, about 5 µs, the fixed cost). The
    work is the fastest loop of calls back to back, each call's own fixed cost in it: a blocked call
    adds a wait for the compute thread that is neither work nor in the empty call (matmul 10x10 here:
    51 µs blocked, 11 µs back to back, 4.4 µs empty), and on a busy machine every blocked call waits
    for a core (a suite run's 10x10 at 134 µs at its fastest against a 6.49 µs dispatch, passed as
    large). Results saved without calls back to back read the fastest blocked call. The fixed cost
    over half a call fails, over a tenth warns."""
    empty = _empty_call(r)
    if empty is not None and not is_host(r.backend):
        basis, overhead, (figure, work) = "device", empty, _work_per_call(r)
    else:
        basis, overhead = "dispatch", r.jax.dispatch.min_s
        b2b = r.jax.back_to_back
        # On a GPU or TPU a loop back to back leaves out the round trip its dispatch is part of.
        on_host = is_host(r.backend) and b2b is not None and b2b.min_s > 0
        figure, work = ("fastest_back_to_back", b2b.min_s) if on_host else ("fastest_blocked", r.jax.runtime.min_s)
        if empty is not None and empty < overhead:
            basis, overhead = "host", empty
    ratio = work / overhead if overhead > 0 else float("inf")
    # On the CPU each call back to back pays its own fixed cost; on a device the round trip is left out.
    blocked_ratio = ratio + 1.0 if basis == "device" and figure not in ("blocked", "fastest_blocked") else ratio
    status = FAIL if blocked_ratio < DISPATCH_RATIO_FAIL else WARN if blocked_ratio < DISPATCH_RATIO_WARN else PASS
    words = WORKLOAD_WORDS[basis][(FAIL, WARN, PASS).index(status)]
    # Each basis's words name the overhead by what it is ({empty} or {dispatch}).
    return _check("workload", status, _(words).format(work=format_time(work), ratio=ratio,
                                                      figure=_(WORK_FIGURES[figure]),
                                                      empty=format_time(overhead), dispatch=format_time(overhead)),
                  "size")


def check_precision(r: Result) -> Check:
    a = r.jax.agreement
    bits = {side: _precision_bits(a.get(f"{side}_dtype")) for side in ("numpy", "jax")}
    want = _precision_bits(r.dtype)
    if bits["numpy"] is None or bits["jax"] is None:
        return _check("precision", WARN, _("output dtypes are unknown"), "dtype")
    if bits["numpy"] != bits["jax"]:
        return _check("precision", FAIL,
                      _("NumPy computed in {numpy_dtype}, JAX in {jax_dtype}: a 64-bit vs 32-bit race, not a "
                        "fair comparison").format(numpy_dtype=a["numpy_dtype"], jax_dtype=a["jax_dtype"]), "dtype")
    internal = _precision_bits(r.case_info.get("numpy_computes_in"))
    if internal is not None and want is not None and internal > want:
        return _check("precision", WARN,
                      _("NumPy returns {numpy_dtype} but computes in {computes_in} internally: it does "
                        "double-precision work here").format(numpy_dtype=a["numpy_dtype"],
                                                             computes_in=r.case_info["numpy_computes_in"]),
                      "dtype")
    if want is not None and bits["jax"] != want:
        return _check("precision", WARN, _("both sides returned {jax_dtype} for {dtype} inputs").format(
            jax_dtype=a["jax_dtype"], dtype=r.dtype), "dtype")
    return _check("precision", PASS, _("both sides in {dtype}").format(dtype=a["jax_dtype"]), "dtype")


def _not_recorded(check_id: str, pitfall: str) -> Check:
    return _check(check_id, WARN, _("not recorded: this result was saved by a version that did not check it"),
                  pitfall)


def check_blocked(r: Result) -> Check:
    if "blocked" not in r.jax.protocol:
        return _not_recorded("blocked", "async")
    if not r.jax.protocol["blocked"]:
        return _check("blocked", FAIL,
                      _("a timed JAX call's output was not ready when its clock stopped: the time is dispatch, "
                        "not the work"), "async")
    if dispatch_above_blocked(r):
        runtime, dispatch = r.jax.runtime, r.jax.dispatch
        return _check("blocked", WARN, _(
            "JAX's blocked runtime, {blocked} ({blocked_range}), is below its dispatch alone, {dispatch} "
            "({dispatch_range}), beyond both ranges: a blocked call dispatches too, so the two cannot both be "
            "true, and the speedup built on the runtime gives no verdict").format(
            blocked=format_time(runtime.median_s), blocked_range=format_time_range(*runtime.range_s),
            dispatch=format_time(dispatch.median_s), dispatch_range=format_time_range(*dispatch.range_s)), "async")
    return _check("blocked", PASS, _("every timed JAX call ends in block_until_ready()"), "async")


def dispatch_above_blocked(r: Result) -> bool:
    """JAX's dispatch alone above its blocked runtime beyond both medians' 95% ranges: figures that cannot
    both be true (trust sets such a result aside). Only beyond the ranges: a call that costs no more than
    its launch (a small one on a GPU) has a blocked runtime equal to its dispatch, and noise puts either first."""
    return _clearly_below(r.jax.runtime, r.jax.dispatch)


def _clearly_below(a: Stats, b: Stats) -> bool:
    """``a``'s median below ``b``'s by more than their 95% ranges allow (medians alone where a
    range is unknown)."""
    high, low = a.ci_high_s, b.ci_low_s
    if math.isfinite(high) and math.isfinite(low):
        return a.median_s < b.median_s and high < low
    return a.median_s < b.median_s


def check_compile_excluded(r: Result) -> Check:
    if "compile_excluded" not in r.jax.protocol:
        return _not_recorded("compile", "jit")
    if not r.jax.protocol["compile_excluded"]:
        return _check("compile", FAIL,
                      _("the function was not compiled before the timed calls, or compiled again during them"),
                      "jit")
    worst = max(r.jax.runtime.samples_s) if r.jax.runtime.samples_s else 0.0
    if r.jax.compile_total_s > 0 and worst > 0.5 * r.jax.compile_total_s and worst > 5 * r.jax.runtime.median_s:
        return _check("compile", WARN, _("one runtime sample ({time}) looks like a recompile").format(
            time=format_time(worst)), "jit")
    return _check("compile", PASS, _("warmed up first; compile ({time}) reported separately").format(
        time=format_time(r.jax.compile_total_s)), "jit")


def check_on_device(r: Result) -> Check:
    if "inputs_on_device" not in r.jax.protocol:
        return _not_recorded("transfer", "transfer")
    if not r.jax.protocol["inputs_on_device"]:
        return _check("transfer", FAIL, _("host arrays were passed in, so every call paid a transfer"), "transfer")
    rate = transfer_rate_text(r)
    transfer = format_time(r.jax.transfer.median_s)
    if rate:
        reason = _("device_put once; transfer ({transfer}) reported separately: {rate}").format(
            transfer=transfer, rate=rate)
    else:
        reason = _("device_put once; transfer ({transfer}) reported separately").format(transfer=transfer)
    return _check("transfer", PASS, reason, "transfer")


# How the outputs were compared (agreement's "method"), as the reason names it.
COMPARED = {"direct": N_("direct"), "invariants": N_("invariants")}


def compared_word(method: str) -> str:
    """Agreement's "method" in the reader's language (as the checklist and the CLI's agreement line say it)."""
    return _(COMPARED.get(method, method))


def outputs_unlike(agreement: dict[str, Any]) -> str | None:
    """Where the two functions returned other outputs (how many, their shapes) or other dtypes, that in
    words ("... NumPy returned 200x200, JAX 100x200"); None where they are alike."""
    shapes = agreement.get("shapes")
    if shapes:
        def outputs(side: list[list[int]]) -> str:
            return _(", ").join(format_shape(s) if s else _("a scalar") for s in side) or _("nothing")

        return _("outputs differ in number or shape: NumPy returned {numpy}, JAX {jax}").format(
            numpy=outputs(shapes["numpy"]), jax=outputs(shapes["jax"]))
    numpy_dtype, jax_dtype = agreement.get("numpy_dtype"), agreement.get("jax_dtype")
    if numpy_dtype and jax_dtype and numpy_dtype != jax_dtype:
        return _("outputs differ: max rel err {err:.2g} (tolerance {rtol:.0e}), NumPy's in {numpy}, JAX's in "
                 "{jax}").format(err=agreement["max_rel_err"], rtol=agreement["rtol"], numpy=numpy_dtype,
                                 jax=jax_dtype)
    return None


def check_agreement(r: Result) -> Check:
    a = r.jax.agreement
    values = {"err": a["max_rel_err"], "rtol": a["rtol"], "method": compared_word(a.get("method", "direct"))}
    if a.get("tf32"):
        # The worker found a matrix product in the program and widened float32's tolerance to TF32's.
        if not a.get("ok"):
            return _check("agreement", FAIL, _("outputs differ: max rel err {err:.2g} (TF32's tolerance {rtol:.0e}, "
                                               "{method})").format(**values), "tf32")
        return _check("agreement", PASS, _("max rel err {err:.2g} (TF32's tolerance {rtol:.0e}, {method}): the GPU "
                                           "ran the float32 products in TF32").format(**values), "tf32")
    reduced = reduced_precision(a.get("products"))
    if reduced is not None:
        # Products at a TPU's bfloat16 pass: judged at that pass's tolerance, which the reason names.
        found = platform(r.backend)
        values |= {"products": _(reduced.label), "device": found.label if found is not None else r.backend}
        if not a.get("ok"):
            return _check("agreement", FAIL, _("outputs differ: max rel err {err:.2g}, beyond even the tolerance of "
                                               "float32 products at {products}, {rtol:.0e} ({method})").format(
                **values), "tf32")
        return _check("agreement", PASS, _("max rel err {err:.2g}, within the tolerance of float32 products at "
                                           "{products}, {rtol:.0e} ({method}): what the {device} runs them at under "
                                           "JAX's default matmul precision").format(**values), "tf32")
    unlike = None if a.get("ok") else outputs_unlike(a)
    if unlike:
        return _check("agreement", FAIL, unlike, "dtype")
    if not a.get("ok"):
        tf32_rtol = _tf32_rtol(r)
        if tf32_rtol is not None and a["max_rel_err"] <= tf32_rtol:
            return _check("agreement", WARN, _(
                "max rel err {err:.2g} is over float32's tolerance {rtol:.0e} but within TF32's ({tf32:.0e}); this "
                "result was saved before jaxcompare recorded whether the program has a matrix product, so TF32 is "
                "the likely cause").format(tf32=tf32_rtol, **values), "tf32")
        return _check("agreement", FAIL, _("outputs differ: max rel err {err:.2g} (tolerance {rtol:.0e}, "
                                           "{method})").format(**values), "dtype")
    if a.get("all_nan"):
        return _check("agreement", WARN, _("both sides' outputs are NaN everywhere: they agree, but nothing was "
                                           "compared; check that the inputs are in the functions' domain"), "dtype")
    return _check("agreement", PASS, _("max rel err {err:.2g} (tolerance {rtol:.0e}, {method})").format(**values),
                  "dtype")


def _matmul_precision(r: Result) -> str:
    """The default matmul precision JAX ran with ("default" where not recorded)."""
    return str(r.jax.protocol.get("matmul_precision", "default")).lower()


def _tf32_rtol(r: Result) -> float | None:
    """TF32's tolerance for a stored float32 GPU record that predates the worker's TF32 decision
    (no "tf32" key), where the GPU may have used TF32; None where it cannot have."""
    a = r.jax.agreement
    if "tf32" in a or not may_use_tf32(r.dtype, r.backend, _matmul_precision(r)):
        return None
    return a["rtol"] * TF32_RTOL / BASE_RTOL["float32"]  # the case's own factor kept


def check_stability(r: Result) -> Check:
    shaky = [(name, s) for name, s in (("NumPy", r.numpy_runtime), ("JAX", r.jax.runtime)) if not s.stable]
    if shaky:
        # Translators: {reason} says why the samples are unstable.
        parts = [(_("NumPy: {reason}") if name == "NumPy" else _("JAX: {reason}")).format(
            reason=translate_text(s.unstable_reason or "")) for name, s in shaky]
        return _check("stable", WARN, _("; ").join(parts), None)
    return _check("stable", PASS, _("median known to ±{ci:.1%} (95% CI)").format(
        ci=max(r.numpy_runtime.rel_ci, r.jax.runtime.rel_ci)), None)


def check_speedup_steady(r: Result) -> Check:
    """With the runtimes timed in pairs of blocks side by side: did the speedup hold from
    pair to pair? A drift of the machine's speed moves both medians, but not their ratio."""
    pairs = r.speedup_pairs
    if not pairs:
        kept = (r.load.get("recheck") or {}).get("kept")
        if kept == "recheck":
            why = _("not checked: the machine was busy during the first timing, so it was timed again, each "
                    "side's fastest block kept (no pairs)")
        elif kept == "clean":
            why = _("not checked: the machine was busy during the first timing, so it was timed again, only "
                    "the samples that had their cores kept (no pairs)")
        elif r.spec.timing.runtime_blocks > 1:
            why = _("not checked: no block medians recorded (measured before jaxcompare kept them)")
        else:
            why = _("not checked: one block a side (the thorough timing times four pairs of blocks)")
        return _check("steady", NA, why, None)
    each = ", ".join(format_factor(p) for p in pairs)
    spread = r.speedup_moved
    tolerance = r.spec.timing.pair_tolerance
    if not r.speedup_steady:
        return _check("steady", WARN,
                      _("the speedup moved by {spread:.0%} between the {n} pairs of blocks ({each}), more than the "
                        "blocks' precision allows ({tolerance:.1%}): rerun when the machine is quieter").format(
                          spread=spread, n=len(pairs), each=each, tolerance=tolerance), None)
    return _check("steady", PASS,
                  _("{n} pairs of NumPy and JAX blocks timed side by side agree within {spread:.1%} "
                    "({each})").format(n=len(pairs), spread=spread, each=each), None)


def check_sample_count(r: Result) -> Check:
    n = min(r.numpy_runtime.n, r.jax.runtime.n)
    if n < 3:
        return _check("samples", FAIL, _("only {n} sample(s) on one side").format(n=n), None)
    if n < MIN_SAMPLES:
        return _check("samples", WARN, _("only {n} samples on one side").format(n=n), None)
    return _check("samples", PASS,
                  _("NumPy {numpy_n} x {numpy_loops} loops, JAX {jax_n} x {jax_loops} loops").format(
                      numpy_n=r.numpy_runtime.n, numpy_loops=r.numpy_runtime.loops, jax_n=r.jax.runtime.n,
                      jax_loops=r.jax.runtime.loops), None)


def check_threads(r: Result) -> Check:
    if not is_host(r.backend):  # NumPy's BLAS and XLA share the host's cores only when JAX runs there
        return _check("threads", NA, _("not applicable: JAX ran on {backend}").format(backend=r.backend), None)
    cores = r.env.get("cpu_affinity") or r.env.get("cpu_count_logical")
    blas = [b for b in r.env.get("blas", []) if b.get("user_api") == "blas"]
    if not blas or not cores:
        return _check("threads", WARN, _("NumPy's BLAS thread count is unknown"), None)
    threads = blas[0].get("num_threads")
    if threads != cores:
        return _check("threads", WARN, _("NumPy's BLAS uses {threads} thread(s), XLA may use {cores} "
                                         "core(s)").format(threads=threads, cores=cores), None)
    return _check("threads", PASS,
                  ngettext("NumPy's BLAS and XLA both use {cores} core; NumPy's non-BLAS code is single-threaded",
                           "NumPy's BLAS and XLA both use {cores} cores; NumPy's non-BLAS code is single-threaded",
                           cores).format(cores=cores), None)


def check_tf32(r: Result) -> Check:
    """Float32 products at a reduced precision: JAX's default on a GPU (TF32) and a TPU (one bfloat16
    pass), model/platforms.py; the CPU keeps float32."""
    found = platform(r.backend)
    reduced = reduced_precision(found.float32_products) if found is not None else None
    if found is None or reduced is None:
        return _check("tf32", NA, _("not applicable on {backend}").format(backend=r.backend), "tf32")
    if r.dtype != "float32":
        return _check("tf32", NA, _("float64 products are never computed at a reduced precision"), "tf32")
    if _matmul_precision(r) in found.full_products_at:  # the precisions the agreement never widens for
        return _check("tf32", PASS, _("matmul precision set to '{precision}'").format(precision=_matmul_precision(r)),
                      "tf32")
    # The worker looked at the lowered program (engine/worker/agreement.reduced_products); older records did not.
    a = r.jax.agreement
    if not (a.get("products") or a.get("tf32")) and ("products" in a or "tf32" in a):
        return _check("tf32", NA, _("not applicable: the program has no matrix product or convolution"), "tf32")
    if reduced.name == "tensorfloat32":
        return _check("tf32", WARN,
                      _("float32 matmuls on this GPU may use TF32 (about 10 mantissa bits); agreement error "
                        "{err:.2g}").format(err=a["max_rel_err"]), "tf32")
    return _check("tf32", WARN, _("float32 products on this {device} run as {products} under JAX's default matmul "
                                  "precision; agreement error {err:.2g}; 'highest' keeps float32").format(
        device=found.label, products=_(reduced.label), err=a["max_rel_err"]), "tf32")


def check_gpu_clocks(r: Result) -> Check:
    """Did the GPU keep its clocks while the runtimes were timed? A GPU that heats up or meets
    its power cap slows down mid-run, and its median then mixes two speeds (model/clocks.py)."""
    found = platform(r.backend)
    if found is None or found.clocks is None:  # the platform table says where a device's clocks are read
        return _check("clocks", NA, _("not applicable on {backend}").format(backend=r.backend), None)
    clocks = r.gpu_clocks
    if clocks is None:
        return _check("clocks", NA, _("not checked: this result was saved before jaxcompare read the GPU's "
                                      "clocks"), None)
    if clocks.error:
        return _check("clocks", NA, _("not applicable: the GPU's clocks could not be read ({error})").format(
            error=clocks.error), None)
    drop = clocks.sm_drop
    if drop is None:
        return _check("clocks", NA, _("not checked: NVML gave no SM clock for this GPU"), None)
    values = {"before": clocks.before.sm_mhz, "after": clocks.after.sm_mhz,  # type: ignore[union-attr]
              "reasons": ", ".join(clocks.throttled), "drop": drop, "limit": SM_DROP_WARN}
    if clocks.throttled:
        return _check("clocks", WARN, _("the GPU was held back by {reasons} while it was timed (SM clock {before} → "
                                        "{after} MHz): its runtime is slower than the GPU can run; let it cool, "
                                        "then rerun").format(**values), None)
    if drop > SM_DROP_WARN:
        return _check("clocks", WARN, _("the SM clock fell from {before} to {after} MHz ({drop:.0%}, more than "
                                        "{limit:.0%}) during the runtime blocks: the median mixes two speeds; "
                                        "rerun").format(**values), None)
    return _check("clocks", PASS, _("SM clock {before} → {after} MHz, no thermal or power limit reached").format(
        **values), None)


# check_busy's words for a busy pair with a side that ran in parallel, by whether it was timed again
# on the free cores (results saved before such a pair was left untimed), then whether both sides were.
UNEQUAL_WORDS = {
    False: (N_("other programs used {cores} cores during the runtime blocks, and only {side} ran on more than one"
               " core: held to the free core(s) it would lose cores the other does not use, so the pair was not "
               "timed again; rerun when the machine is quieter"),
            N_("other programs used {cores} cores during the runtime blocks, and NumPy and JAX both ran on more "
               "than one core: held to the free core(s) they would lose cores unequally, so the pair was not "
               "timed again; rerun when the machine is quieter")),
    True: (N_("other programs used {cores} cores during the runtime blocks; timed again on the {free} free "
              "core(s), but only {side} had run on more than one core, so that changes the comparison: rerun "
              "when the machine is quieter"),
           N_("other programs used {cores} cores during the runtime blocks; timed again on the {free} free "
              "core(s), but NumPy and JAX had both run on more than one core and lose cores unequally, so that "
              "changes the comparison: rerun when the machine is quieter")),
}


def check_busy(r: Result) -> Check:
    """Did other programs take the cores while the runtimes were timed? Contention only adds time,
    and far more to NumPy's BLAS than to XLA (a false speedup), so a busy run is doubtful unless the
    pair was timed again with both sides on the free cores (engine/worker/runtimes._recheck)."""
    source = r.load.get("others_source", "cores")
    if r.load and source is None:  # /proc/stat all zeros and no process times: zero would be a false pass
        return _check("busy", NA, _("not measured here: this system reports no CPU time"), None)
    check = _check_busy(r)
    plain = r.load.get("numpy_plain") or {}
    plain_cores = r.others_cores(("numpy_plain",))
    if plain.get("busy") and check.status != WARN and plain_cores is not None:
        # The headline's NumPy figure comes from a process that has no JAX beside it to share a slowdown.
        check = _check("busy", WARN, _(
            "other programs used {cores} cores while NumPy was timed in its plain process, and too few of its "
            "samples had their cores ({attempts} tries): NumPy's figure is the worker's, with freed memory kept, "
            "not the one a plain process gets; rerun when the machine is quieter").format(
            cores=format_cores(plain_cores), attempts=plain.get("attempts", 1)), None)
    if source == "processes" and check.status != NA:  # the reader learns the figure's other source
        check = replace(check, reason=_("; ").join((check.reason, _(
            "counted from the other programs' own CPU times, as this system reports no CPU time for its "
            "cores"))))
    return check


def _check_busy(r: Result) -> Check:
    """check_busy's verdict from the figure, whichever source it came from."""
    others = r.others_cores()
    if others is None:
        return _check("busy", NA, _("not checked: this result was saved before jaxcompare recorded the "
                                    "machine's load"), None)
    recheck = r.load.get("recheck") or {}
    figure = format_cores(others)
    if "clean_samples" in recheck:  # a side ran in parallel: timed again on every core (runtimes._clean_recheck)
        counts = recheck["clean_samples"]
        values = {"cores": figure, "numpy": counts["numpy"][0], "numpy_all": counts["numpy"][1],
                  "jax": counts["runtime"][0], "jax_all": counts["runtime"][1]}
        if recheck.get("kept") == "clean":
            return _retimed(_(
                "other programs used {cores} cores during the first runtime blocks, so the pair was timed again on "
                "every core in short samples, and only those that had the cores they wanted count (NumPy {numpy} "
                "of {numpy_all}, JAX {jax} of {jax_all})").format(**values))
        return _check("busy", WARN, _(
            "other programs used {cores} cores during the runtime blocks; timed again on every core in short "
            "samples, too few had the cores they wanted (NumPy {numpy} of {numpy_all}, JAX {jax} of {jax_all}): "
            "rerun when the machine is quieter").format(**values), None)
    # A busy pair with a side that ran in parallel: not timed again, or (saved before that) timed
    # again on the free cores all the same.
    timed_again = recheck.get("kept") == "recheck" and recheck.get("pinned")
    untimed = recheck.get("why") == "busy" and recheck.get("kept") == "first"
    if (timed_again or untimed) and recheck.get("equal") is False:
        sides = recheck.get("parallel")
        if sides is None:  # recorded before the sides were named: the one that used more cores
            own = recheck.get("own_cores") or {}
            sides = ["numpy" if own.get("numpy", 0.0) > own.get("runtime", 0.0) else "runtime"]
        words = UNEQUAL_WORDS[bool(timed_again)][len(sides) > 1]
        return _check("busy", WARN, _(words).format(cores=figure, free=recheck.get("cores"),
                                                    side="NumPy" if sides == ["numpy"] else "JAX"), None)
    if recheck.get("kept") == "recheck" and recheck.get("pinned"):
        return _retimed(_("other programs used {cores} cores during the first runtime blocks, so the pair was "
                          "timed again with NumPy and JAX both limited to the {free} free core(s); the figures are "
                          "from that second timing").format(cores=figure, free=recheck.get("cores")))
    if is_busy(others):
        return _check("busy", WARN, _("other programs used {cores} cores during the runtime blocks: contention "
                                      "slows NumPy's BLAS far more than XLA, so the speedup may be false; rerun "
                                      "when the machine is quieter").format(cores=figure), None)
    return _check("busy", PASS, _("other programs used {cores} cores during the runtime blocks").format(
        cores=figure), None)


def _retimed(reason: str) -> Check:
    """Machine quiet's pass where the machine was busy and the pair was timed again (RETIMED_TITLE)."""
    return Check("busy", _(RETIMED_TITLE), PASS, reason, None)


def format_cores(cores: float) -> str:
    """Two decimals: one showed 0.46 and 0.54 alike as "0.5", on either side of BUSY_CORES."""
    return f"{cores:.2f}"


CHECKS = (check_workload, check_precision, check_blocked, check_compile_excluded, check_on_device,
          check_agreement, check_stability, check_busy, check_speedup_steady, check_sample_count,
          check_threads, check_tf32, check_gpu_clocks)


def checklist(result: Result) -> list[Check]:
    """Every check for ``result``, in a fixed order: each figure's own, then the figures that must
    agree with each other (analysis/consistency.py, the one place that holds figures together)."""
    return [check(result) for check in CHECKS] + result_checks(result)


def overall(checks: list[Check]) -> str:
    """fail, else warn, else pass: n/a counts as pass (nothing to hold against the result)."""
    statuses = {c.status for c in checks}
    return FAIL if FAIL in statuses else WARN if WARN in statuses else PASS
