"""The pitfalls lab: each classic benchmarking mistake measured live beside the right way.
Runs in the worker (``fair_float64`` in the x64 one).

Every pitfall returns a ``naive`` and a
``correct`` measurement, each with the seconds measured, their 95% range and the conclusion a
reader would draw from them, so the size of the mistake is a measured number, not a quote.
The proper comparison (JAX blocked on device arrays at the run's shape against NumPy) is measured
once, the lab's baseline, and every section that shows it reads that one figure: re-timed in each
section it read 1.12x faster in one and 1.53x slower in another of one run. Each section still
times the proper call again in turns with its naive side (``proper_again``), and the pitfall's
``effect`` (flatters, hurts, within_noise) is decided from both comparisons' ranges, so a drift of
the machine between the baseline and the section never makes a lesson: one it did not show says so.
"""

from __future__ import annotations

import datetime as dt
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from ...catalog import get_case
from ...i18n import N_
from ...model.cases import Case, as_tuple, format_shape
from ...model.formatting import format_time
from ...model.platforms import error_first_line, interpreted_here, platform
from ...model.spec import Spec
from ...model.stats import Stats
from ..common.fresh import FreshCall, FreshProcesses, fresh_processes
from ..common.lessons import LOAD_PHASES, SECTIONS, _pitfall, _side, lab_timing, load_reading, side_text, speed_words
from ..common.load import LoadMeter, is_busy
from .agreement import compare_outputs, normwise_errors, program_products
from .ceilings import matmul_precision
from .environment import resolve_device
from .inputs import build_inputs
from .jax_phases import user_call
from .measure import check_memory, check_precision
from .plain_numpy import numpy_as_users_run_it
from .profile import profile_jitted
from .timing import (
    BLAS_SETTLE_S,
    Clock,
    Turn,
    blocking_call,
    bound_call,
    sample_round_robin,
    sample_turns,
    unblocked_call,
)


class Lab:
    """Shared state for one pitfalls run: the case, inputs, jitted function, timers, and the load
    meter that records how busy the machine was in each phase (the baseline, then each pitfall)."""

    def __init__(self, spec: Spec, clock: Clock, sections: tuple[str, ...] = (), load: LoadMeter | None = None) -> None:
        import jax

        self.jax = jax
        self.spec = spec
        self.cfg = lab_timing(spec.timing)
        self.clock = clock
        self.load = load if load is not None else LoadMeter()
        self.fresh_load: dict[str, Any] = {}  # pitfall 7's processes' meter (FreshProcesses.load)
        self.case: Case = get_case(spec.case, spec.cases_file)
        self.case.check_shape(spec.shape)
        self.device = resolve_device(spec.device)
        check_memory(self.case, spec, self.device)
        self.host = build_inputs(self.case, spec)
        self.dev = jax.block_until_ready(jax.device_put(self.host, self.device))
        self.f = jax.jit(self.case.jax_fn)
        user_call(self.case, "jax_fn", self.f, self.dev, where=(self.device.platform, spec.precision))
        # The NumPy baseline every pitfall's speedups divide (each pitfall times its own JAX
        # sides in turns); with pitfall 3, the other dtype's runtimes join it, timed side by side.
        jax_calls = {"jax": blocking_call(self.f, self.dev)}
        numpy_calls = {"numpy": bound_call(self.case.numpy_fn, self.host)}
        if "dtype" in sections:
            other = "float64" if spec.dtype == "float32" else "float32"
            host = self.inputs_for(spec.shape, other)
            numpy_calls["numpy_other"] = bound_call(self.case.numpy_fn, host)
            if other == "float32":  # float64 JAX exists only in the x64 worker
                dev = jax.block_until_ready(jax.device_put(host, self.device))
                jax.block_until_ready(self.f(*dev))  # compiles the float32 variant
                jax_calls["jax_other"] = blocking_call(self.f, dev)
        with self.load.phase("baseline") as first:
            self.steady = self.side_by_side(jax_calls, numpy_calls)
        if is_busy(first.others_cores):  # the app's page redraws as its job begins: time it once more
            with self.load.phase("baseline again") as again:
                steady = self.side_by_side(jax_calls, numpy_calls)
            del self.load.spans[self.load.prefix + "baseline again"]  # one baseline phase: the timing kept
            quieter = again.others_cores is not None and again.others_cores < first.others_cores
            if quieter:
                self.steady, self.load.spans[self.load.prefix + "baseline"] = steady, again
            self.load.notes["baseline_recheck"] = {"first_others_cores": round(first.others_cores, 3),
                                                   "kept": "again" if quieter else "first"}
        # NumPy's figures as `run` gives them: timed again in a plain process where the allocator matters.
        self.numpy_speeds: dict[tuple[tuple[int, ...], str], dict[str, Any]] = {}
        self.steady["numpy"] = self.users_numpy(self.steady["numpy"], self.host, "baseline")
        if "numpy_other" in self.steady:
            self.steady["numpy_other"] = self.users_numpy(self.steady["numpy_other"], host, "baseline")
        self.numpy, self.blocked = self.steady["numpy"], self.steady["jax"]
        self.small: tuple[Any, float] | None = None  # pitfall 5's small inputs on the device, and their runtime

    def users_numpy(self, kept: Stats, host: tuple[np.ndarray, ...], phase: str) -> Stats:
        """NumPy's figure for a call the lab timed in this worker (``kept``: freed memory kept), as `run`
        gives it (plain_numpy.numpy_as_users_run_it): the plain process's where the allocator matters,
        timed in a load phase named after ``phase`` and the call. Each call once; both figures go in the
        report's numpy_speeds."""
        shape, dtype = tuple(host[0].shape), str(host[0].dtype)
        if (shape, dtype) in self.numpy_speeds:
            return Stats.from_dict(self.numpy_speeds[shape, dtype]["runtime"])
        outputs = as_tuple(self.case.numpy_fn(*host))
        spec = Spec(self.spec.case, shape, cases_file=self.spec.cases_file, seed=self.spec.seed, timing=self.cfg,
                    precision="x64" if dtype == "float64" else "x32")
        meter = self.load.prefixed(f"{self.load.prefix}{phase} {dtype} {format_shape(shape)} ")
        figure, kept_figure, note = numpy_as_users_run_it(self.case, spec, kept, host, outputs, by_value=False,
                                                          load=meter)
        self.numpy_speeds[shape, dtype] = {
            "shape": list(shape), "dtype": dtype, "runtime": figure.to_dict(),
            "kept_memory": None if kept_figure is None else kept_figure.to_dict(), "note": note,
            **({} if kept_figure is None else {"plain_process": meter.notes.pop("numpy_plain")})}
        return figure

    def turns(self, *turns: Turn) -> list[Stats]:
        """JAX calls timed in turns (naive beside correct), after a settle: NumPy ran before."""
        return sample_turns(turns, self.cfg, clock=self.clock, settle_s=BLAS_SETTLE_S)

    def side_by_side(self, jax_calls: dict[str, Callable[[], Any]],
                     numpy_calls: dict[str, Callable[[], Any]]) -> dict[str, Stats]:
        """Stats of each JAX and NumPy call, timed side by side: the JAX calls in turns for
        half a runtime budget, the NumPy calls in turns for a whole one, the JAX calls again
        (a settle at each switch of library), the JAX halves pooled. Calls taken in turns see
        the same slow stretches, and the JAX blocks either side of NumPy's cancel a steady
        drift, so the ratios between these numbers hold where numbers timed seconds apart
        (other pitfalls in between) do not."""
        whole = self.cfg.for_runtime()
        half = replace(self.cfg, runtime_blocks=2).for_runtime_block()
        jax, numpy = list(jax_calls.values()), list(numpy_calls.values())
        blocks = [sample_round_robin(jax, half, clock=self.clock, settle_s=BLAS_SETTLE_S),
                  sample_round_robin(numpy, whole, clock=self.clock,
                                     settle_s=platform(self.device.platform).numpy_settle_s),
                  sample_round_robin(jax, half, clock=self.clock, settle_s=BLAS_SETTLE_S)]
        pooled_jax = [Stats.from_samples(a.samples_s + b.samples_s, loops=a.loops)
                      for a, b in zip(blocks[0], blocks[2], strict=True)]
        return {**dict(zip(jax_calls, pooled_jax, strict=True)), **dict(zip(numpy_calls, blocks[1], strict=True))}

    def inputs_for(self, shape: tuple[int, ...], dtype: str) -> tuple[np.ndarray, ...]:
        return build_inputs(self.case, Spec(self.spec.case, shape, cases_file=self.spec.cases_file,
                                            precision="x64" if dtype == "float64" else "x32",
                                            seed=self.spec.seed, timing=self.cfg))


def pitfall_jit(lab: Lab) -> dict[str, Any]:
    jax, case = lab.jax, lab.case
    first, steady, op_by_op = lab.turns(
        Turn(lambda: jax.block_until_ready(jax.jit(case.jax_fn)(*lab.dev)), setup=jax.clear_caches,
             min_samples=lab.cfg.compile_samples, budget_s=lab.cfg.phase_budget_s * 2),
        Turn(blocking_call(lab.f, lab.dev)),  # its untimed switch call recompiles after the clear
        Turn(blocking_call(case.jax_fn, lab.dev)))
    return _pitfall(
        "jit",
        _side(*side_text("first_call"), first, lab.numpy),
        _side(*side_text("steady"), lab.blocked, lab.numpy),
        ((first, lab.numpy), (lab.blocked, lab.numpy)),
        [_side(*side_text("op_by_op"), op_by_op, lab.numpy)],
        again=(lab.blocked, steady),
    )


def pitfall_async(lab: Lab) -> dict[str, Any]:
    jax, f, dev = lab.jax, lab.f, lab.dev
    dispatch, blocked, fetched = lab.turns(
        Turn(unblocked_call(f, dev)),  # as the dispatch phase times it: a short loop a sample
        Turn(blocking_call(f, dev)),
        Turn(lambda: jax.tree_util.tree_map(np.asarray, f(*dev))))
    return _pitfall(
        "async",
        _side(*side_text("dispatch"), dispatch, lab.numpy),
        _side(*side_text("blocked"), lab.blocked, lab.numpy),
        ((dispatch, lab.numpy), (lab.blocked, lab.numpy)),
        [_side(*side_text("fetched"), fetched, lab.numpy)],
        again=(lab.blocked, blocked),
    )


def pitfall_dtype(lab: Lab) -> dict[str, Any]:
    """Naive: NumPy float64 vs JAX float32. Fair in this worker: both at the worker's dtype.
    The lab timed both dtypes' runtimes side by side (Lab.side_by_side), so the naive and
    the fair speedups differ by the dtypes, not by the machine's drift between two timings."""
    t = lab.steady
    if "numpy_other" not in t:
        raise ValueError("pitfall 3 needs a Lab built with 'dtype' in its sections")
    if lab.spec.dtype == "float32":
        jax32, numpy32, numpy64 = t["jax"], t["numpy"], t["numpy_other"]
    else:
        jax32, numpy32, numpy64 = t["jax_other"], t["numpy_other"], t["numpy"]
    fair = [(_side(*side_text("float32"), jax32, numpy32, dtype="float32"), (jax32, numpy32))]
    if lab.spec.precision == "x64":
        fair.append((_side(*side_text("float64"), t["jax"], numpy64, dtype="float64"), (t["jax"], numpy64)))
    correct, correct_timing = fair[-1] if lab.spec.precision == "x64" else fair[0]
    return _pitfall(
        "dtype",
        _side(*side_text("mixed"), jax32, numpy64, dtype="mixed"),
        correct,
        ((jax32, numpy64), correct_timing),
        [side for side, _ in fair if side is not correct],
    )


def pitfall_transfer(lab: Lab) -> dict[str, Any]:
    from_host, on_device = lab.turns(Turn(blocking_call(lab.f, lab.host)), Turn(blocking_call(lab.f, lab.dev)))
    return _pitfall(
        "transfer",
        _side(*side_text("from_host"), from_host, lab.numpy),
        _side(*side_text("on_device"), lab.blocked, lab.numpy),
        ((from_host, lab.numpy), (lab.blocked, lab.numpy)),
        again=(lab.blocked, on_device),
    )


def pitfall_size(lab: Lab) -> dict[str, Any]:
    """Both shapes timed side by side (JAX at both in turns, then NumPy at both), so the two
    speedups compared come from the same stretch of the machine's time; the large shape's shown
    figures are the lab's proper comparison, and its JAX call timed here is its proper_again."""
    jax, case = lab.jax, lab.case
    small = case.small_shape
    host = lab.inputs_for(small, lab.spec.dtype)
    dev = jax.device_put(host, lab.device)
    jax.block_until_ready(lab.f(*dev))
    t = lab.side_by_side({"small": blocking_call(lab.f, dev), "large": blocking_call(lab.f, lab.dev)},
                         {"numpy_small": bound_call(case.numpy_fn, host),
                          "numpy_large": bound_call(case.numpy_fn, lab.host)})
    lab.small = (dev, t["small"].median_s)  # profiled after every section is timed (profile_size)
    # NumPy as `run` gives it: the small one timed plain where it matters (the large is the baseline's).
    t["numpy_small"] = lab.users_numpy(t["numpy_small"], host, "size")
    # The run's shape is the proper comparison: the baseline's figures (users_numpy's large one is the
    # baseline's already); the JAX call timed here beside the small one is its proper_again.
    return _pitfall(
        "size",
        _side(*side_text("small", format_shape(small)), t["small"], t["numpy_small"], shape=list(small)),
        _side(*side_text("large", format_shape(lab.spec.shape)), lab.blocked, lab.numpy,
              shape=list(lab.spec.shape)),
        ((t["small"], t["numpy_small"]), (lab.blocked, lab.numpy)),
        again=(lab.blocked, t["large"]),
    )


def profile_size(lab: Lab, pitfall: dict[str, Any]) -> None:
    """Pitfall 5's 'why': a profiler trace of a few calls at each shape (after every timed
    section), so each side shows how much of its wall time the device was busy. The traces
    are summarised and dropped (the Compare page's Profile keeps its trace file)."""
    if lab.small is None:
        return
    small_dev, small_s = lab.small
    with tempfile.TemporaryDirectory(prefix="jaxcompare-size-profile-") as folder:
        for side, (dev, seconds), name in ((pitfall["naive"], (small_dev, small_s), "small"),
                                           (pitfall["correct"], (lab.dev, pitfall["correct"]["seconds"]), "large")):
            profile = profile_jitted(lab.f, dev, f"{folder}/{name}", seconds)
            side["profile"] = replace(profile, trace_file=None).to_dict()


def pitfall_tf32(lab: Lab) -> dict[str, Any]:
    jax, case = lab.jax, lab.case
    inputs64 = tuple(a.astype(np.float64) for a in lab.host)
    reference = case.canonical(as_tuple(case.numpy_fn(*inputs64)), inputs64)

    def error(out: Any) -> float:
        got = case.canonical(as_tuple(jax.tree_util.tree_leaves(out)), lab.host)
        return normwise_errors(reference, got)[1]

    default_err = error(lab.f(*lab.dev))
    with jax.default_matmul_precision("highest"):
        # Compiled ahead of time: the executable keeps the precision outside the context, so
        # the two can be timed in turns (a jitted call there would retrace at the default).
        fh = jax.jit(case.jax_fn).lower(*lab.dev).compile()
    highest_err = error(fh(*lab.dev))
    # The default precision is the lab's proper figure; timed again here beside 'highest' (proper_again).
    again, highest = lab.turns(Turn(blocking_call(lab.f, lab.dev)), Turn(blocking_call(fh, lab.dev)))
    default = lab.blocked
    # What a float32 product runs at by default here (model/platforms.py): TF32 on a GPU, one bfloat16
    # pass on a TPU, float32 on a CPU. Recorded English from templates, shown in the reader's language.
    products = getattr(platform(lab.device.platform), "float32_products", "float32")
    worded = {"tensorfloat32": N_("{speed}, error vs float64 {error}"),
              "bfloat16": N_("{speed}, error vs float64 {error} (one bfloat16 pass per product on this TPU)"),
              }.get(products, N_("{speed}, error vs float64 {error} (no TF32 on this backend: both should match)"))
    return _pitfall(
        "tf32",
        _side(*side_text("default_precision"), default, lab.numpy, rel_error=default_err,
              conclusion=worded.format(speed=speed_words(lab.numpy.median_s, default.median_s),
                                       error=f"{default_err:.2g}")),
        _side(*side_text("highest"), highest, lab.numpy, rel_error=highest_err,
              conclusion=N_("{speed}, error vs float64 {error}").format(
                  speed=speed_words(lab.numpy.median_s, highest.median_s), error=f"{highest_err:.2g}")),
        ((default, lab.numpy), (highest, lab.numpy)),
        applicable=products != "float32",
        backend=lab.device.platform,
        again=(lab.blocked, again),
    )


def pitfall_cache(lab: Lab, fresh: FreshProcesses | None = None) -> dict[str, Any]:
    """Fresh processes, one first call each: one with an empty cache folder (it compiles and
    fills it), then in turns one without the cache (the naive restart) and one with the filled
    cache (the hit), compile_samples of each; the folder is removed afterwards. ``fresh``: those
    processes already run (by the runner, while a single-holder device's worker let go of it)."""
    fresh = fresh or fresh_processes(lab.spec, lab.cfg.compile_samples)
    lab.fresh_load = fresh.load
    fill, entries, cold, hit = fresh.fill, fresh.entries, list(fresh.cold), list(fresh.hit)

    def stats(calls: list[FreshCall], attr: str = "first_call_s") -> Stats:
        return Stats.from_samples([getattr(c, attr) for c in calls])

    def compile_median(calls: list[FreshCall]) -> float | None:
        times = [c.compile_s for c in calls if c.compile_s is not None]
        return float(np.median(times)) if times else None

    def figures(calls: list[FreshCall]) -> dict[str, Any]:
        return {"compile_seconds": compile_median(calls), "cache_hits": sum(c.cache_hits for c in calls),
                "processes": len(calls)}

    cold_s, hit_s, numpy_s = stats(cold), stats(hit), lab.numpy.median_s
    hits = sum(c.cache_hits for c in hit)
    if hits == len(hit):
        correct_words = N_("{speed}; compiled code read from the cache: {compile} of it")
    else:  # a backend without executable serialisation, or a cache that failed to write: said, not hidden
        correct_words = N_("{speed}; the cache was not hit ({hits} of {processes} processes), so it compiled again")
    return _pitfall(
        "cache",
        _side(*side_text("cold_restart"), cold_s, lab.numpy,
              conclusion=N_("{speed}; compiling: {compile} of it").format(
                  speed=speed_words(numpy_s, cold_s.median_s), compile=format_time(compile_median(cold))),
              samples=list(cold_s.samples_s), **figures(cold)),  # where the first process's one sample should fall
        _side(*side_text("cache_hit"), hit_s, lab.numpy,
              conclusion=correct_words.format(
                  speed=speed_words(numpy_s, hit_s.median_s), compile=format_time(compile_median(hit)),
                  hits=hits, processes=len(hit)),
              **figures(hit)),
        ((cold_s, lab.numpy), (hit_s, lab.numpy)),
        [_side(*side_text("cache_fill"), stats([fill]), lab.numpy,
               conclusion=N_("{speed}; compiling and writing {entries} cache file(s): {compile} of it").format(
                   speed=speed_words(numpy_s, fill.first_call_s), entries=entries,
                   compile=format_time(fill.compile_s)),
               cache_files=entries, **figures([fill])),
         _side(*side_text("process_start"), stats([fill, *cold, *hit], "start_s"), None,
               conclusion=N_("paid by every restart, cache or not (median of {processes} processes)").format(
                   processes=1 + len(cold) + len(hit)))],
    )


# A port whose one warm call outlasts this is left out of pitfall 8's turns with its line: the lab times each
# side several times, and lax.scan over 10^6 steps ran 1.72 s a call on the TPU v5e (tests/data/tpu/ports).
PORT_CALL_LIMIT_S = 2.0
INTERPRETED = N_("a Pallas kernel runs only interpreted here: its time is no speed figure")


def pitfall_ports(lab: Lab) -> dict[str, Any]:
    """The case's first port (the lab's proper figure) beside its other ports, each jitted and timed in turns
    on the same device arrays; the fastest is the correct side (the lowest median of the turns: with several
    ports alike, chance picks among them, and the effect's range says "within the noise"). A port left out
    has its line: a Pallas kernel only interpreted here, one that fails, one that disagrees with NumPy, one
    whose call outlasts PORT_CALL_LIMIT_S. With no other port left, or a first port only interpreted here,
    the section times nothing more and is not applicable."""
    jax, case = lab.jax, lab.case
    platform_name = lab.device.platform
    timed, left_out = [], []
    numpy_out = as_tuple(case.numpy_fn(*lab.host))
    # The first figure is the interpreter's where the first port is a kernel only interpreted: no lesson in it.
    first_interpreted = interpreted_here(case.pallas, platform_name)
    if first_interpreted:
        left_out.append({"port": case.default_port, "why": INTERPRETED})
    for port in case.all_ports[1:] if not first_interpreted else ():
        if interpreted_here(port.pallas, platform_name):
            left_out.append({"port": port.name, "why": INTERPRETED})
            continue
        f = jax.jit(port.fn)
        try:
            out = jax.block_until_ready(f(*lab.dev))  # compiles
            start = time.perf_counter()
            jax.block_until_ready(f(*lab.dev))
            took = time.perf_counter() - start
            products = program_products(case.for_port(port.name), lab.spec.dtype, platform_name, matmul_precision(),
                                        f, lab.dev)
            agreement = compare_outputs(case, lab.spec.dtype, lab.host, numpy_out,
                                        as_tuple(jax.tree_util.tree_leaves(out)), products=products)
        except Exception as exc:  # a block size the chip refuses, a missing primitive: the port's own line
            left_out.append({"port": port.name, "why": N_("failed here: {error}").format(
                error=error_first_line(str(exc)))})
            continue
        if not agreement["ok"]:
            left_out.append({"port": port.name, "why": N_("disagrees with NumPy (relative error {error}, tolerance "
                                                          "{rtol}): a fast wrong answer is no speed").format(
                error=f"{agreement['max_rel_err']:.2g}", rtol=f"{agreement['rtol']:.2g}")})
        elif took > PORT_CALL_LIMIT_S:
            left_out.append({"port": port.name, "why": N_("one call took {time}, over the lab's limit of {limit} "
                                                          "a call").format(
                time=format_time(took), limit=format_time(PORT_CALL_LIMIT_S))})
        else:
            timed.append((port, f))

    def side(name: str, port_name: str, code_name: str, stats: Stats) -> dict[str, Any]:
        return _side(*side_text(name, port=port_name, code_name=code_name), stats, lab.numpy, port=port_name)

    first = side("port_first", case.default_port, case.jax_name, lab.blocked)
    if not timed:
        only = side("port_fastest", case.default_port, case.jax_name, lab.blocked)  # the only one that runs here
        return _pitfall("ports", first, only, ((lab.blocked, lab.numpy), (lab.blocked, lab.numpy)),
                        applicable=False, left_out=left_out, first_fastest=False)
    again, *others = lab.turns(Turn(blocking_call(lab.f, lab.dev)),
                               *(Turn(blocking_call(f, lab.dev)) for _, f in timed))
    # Chosen from the turns (one stretch of the machine's time); the first port's shown figure is the baseline.
    ranked = sorted([(again.median_s, case.default_port, case.jax_name, lab.blocked)]
                    + [(s.median_s, p.name, p.jax_name, s) for (p, _), s in zip(timed, others, strict=True)],
                    key=lambda row: row[0])
    _, best, best_code, best_stats = ranked[0]
    correct = side("port_fastest", best, best_code, best_stats)
    extra = [side("port_other", name, code, stats) for _, name, code, stats in ranked[1:]
             if name != case.default_port]
    return _pitfall("ports", first, correct, ((lab.blocked, lab.numpy), (best_stats, lab.numpy)), extra,
                    again=(lab.blocked, again), left_out=left_out, first_fastest=best == case.default_port)


MEASURE = {"jit": pitfall_jit, "async": pitfall_async, "dtype": pitfall_dtype,
           "transfer": pitfall_transfer, "size": pitfall_size, "tf32": pitfall_tf32, "cache": pitfall_cache,
           "ports": pitfall_ports}


def measure_pitfalls(spec: Spec, sections: tuple[str, ...] = SECTIONS,
                     progress: Callable[[str, float], None] | None = None,
                     clock: Clock = time.perf_counter_ns, fresh: FreshProcesses | None = None,
                     load: LoadMeter | None = None) -> dict[str, Any]:
    """Measure the chosen pitfall sections for ``spec`` (in a worker of matching precision);
    ``fresh``: pitfall 7's processes, already run (pitfall_cache); ``load``: the meter (tests inject
    its counters)."""
    check_precision(spec.precision)
    lab = Lab(spec, clock, sections, load)
    out = []
    for i, pid in enumerate(sections):
        if progress is not None:
            progress(pid, i / len(sections))
        if pid == "cache":  # its processes carry their own meter's phase (FreshProcesses.load)
            out.append(pitfall_cache(lab, fresh))
        else:
            with lab.load.phase(pid):
                out.append(MEASURE[pid](lab))
    for pitfall in out:
        if pitfall["id"] == "size":
            if progress is not None:
                progress("size profile", 0.99)
            profile_size(lab, pitfall)
    if progress is not None:
        progress("done", 1.0)
    load = lab.load.to_dict()
    if load and lab.fresh_load.get("phases"):
        load["phases"] |= lab.fresh_load["phases"]
    for pitfall in out:
        pitfall["load"] = load_reading(load.get("phases") or {}, LOAD_PHASES[pitfall["id"]])
    return {"case": spec.case, "shape": list(spec.shape), "precision": spec.precision,
            "dtype": spec.dtype, "backend": lab.device.platform, "device": str(lab.device),
            "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "load": load, "pitfalls": out, "numpy_speeds": list(lab.numpy_speeds.values())}


def fair_float64(spec: Spec, clock: Clock = time.perf_counter_ns) -> dict[str, Any]:
    """Pitfall 3's float64 fair side, measured in the x64 worker for an x32 run."""
    check_precision("x64")
    lab = Lab(spec, clock)
    reading = load_reading(lab.load.to_dict().get("phases") or {}, ("baseline",))
    return _side(*side_text("float64"), lab.blocked, lab.numpy, dtype="float64", load=reading,
                 numpy_speeds=list(lab.numpy_speeds.values()), jax_stats=lab.blocked.to_dict())
