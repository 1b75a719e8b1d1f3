"""The pitfalls lab's lessons, as every process reads them: each pitfall's id, title, explanation and
the JAX page that teaches it; the words and code of each side it measures; how a pitfall's effect is
judged from the ranges of its figures, and its report put together. The lab measures them in a worker
(worker/pitfalls.py); the server checks a request's sections, guesses the lab's duration and folds the
x64 worker's float64 side in (server/job_kinds.py); the pages and the CLI word them. No JAX here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ...i18n import N_
from ...model.errors import BadInput
from ...model.formatting import format_time, same_speed
from ...model.platforms import platform
from ...model.spec import MIN_SAMPLES_FOR_RANGE, TimingConfig
from ...model.stats import Stats
from .load import SHORTEST_READING_S, is_busy

DOCS = {
    "benchmarking": "https://docs.jax.dev/en/latest/benchmarking.html",
    "async": "https://docs.jax.dev/en/latest/async_dispatch.html",
    "jit": "https://docs.jax.dev/en/latest/jit-compilation.html",
    "x64": "https://docs.jax.dev/en/latest/default_dtypes.html",
    "faq_transfer": "https://docs.jax.dev/en/latest/faq.html#benchmarking-jax-code",
    "precision": "https://docs.jax.dev/en/latest/_autosummary/jax.default_matmul_precision.html",
    "cache": "https://docs.jax.dev/en/latest/persistent_compilation_cache.html",
    "control_flow": "https://docs.jax.dev/en/latest/control-flow.html",
}


def _pitfall_meta(pid: str, doc: str, title: str, explanation: str) -> dict[str, str]:
    """A row of PITFALLS: its id, the JAX page that teaches it (a DOCS key), and its words (N_())."""
    return {"id": pid, "title": title, "explanation": explanation, "doc": DOCS[doc]}


PITFALLS: tuple[dict[str, str], ...] = (
    _pitfall_meta("jit", "benchmarking",
                  N_("1. JIT: the first call includes compilation"),
                  N_("jax.jit traces and compiles on the first call with new shapes and dtypes; "
                     "later calls reuse the executable. Time the first call apart, warm up, and "
                     "jit the outermost function so XLA sees the whole computation.")),
    _pitfall_meta("async", "async",
                  N_("2. Async dispatch: the call returns before the work is done"),
                  N_("JAX returns a future-like array as soon as the work is queued. Without "
                     "block_until_ready() the timer stops before the computation does.")),
    _pitfall_meta("dtype", "x64",
                  N_("3. Dtypes: NumPy defaults to float64, JAX to float32"),
                  N_("A float64 NumPy run against a float32 JAX run compares different amounts of "
                     "work. Compare both in float32, or both in float64 with jax_enable_x64.")),
    _pitfall_meta("transfer", "faq_transfer",
                  N_("4. Transfer: host arrays are copied on every call"),
                  N_("Passing a NumPy array into a jitted function copies it to the device on "
                     "every call. device_put once and time the computation on device arrays; "
                     "report the transfer as a one-off cost.")),
    _pitfall_meta("size", "benchmarking",
                  N_("5. Workload size: tiny inputs measure overhead"),
                  N_("At 10x10 the JAX call is mostly dispatch overhead and NumPy wins; at "
                     "1000x1000 the computation dominates. One size is not a verdict.")),
    _pitfall_meta("tf32", "precision",
                  N_("6. Reduced precision: float32 matmuls run in TF32 on GPUs, one bfloat16 pass on TPUs"),
                  N_("On recent NVIDIA GPUs float32 matmuls and convolutions run in TF32 by "
                     "default: faster, with about 10 mantissa bits; on TPUs they run one bfloat16 pass, "
                     "with about 8. jax.default_matmul_precision('highest') gives the fair float32 comparison.")),
    _pitfall_meta("cache", "cache",
                  N_("7. Restarts: every new process compiles again"),
                  N_("Compiled code lives in the process: a restarted app, a new notebook kernel or a new "
                     "worker traces and compiles again on its first call. With jax_compilation_cache_dir set, "
                     "JAX writes each executable to disk and a later process reads it instead of compiling "
                     "(jax_persistent_cache_min_compile_time_secs=0 lets a function that compiles in under a "
                     "second be cached too). Tracing and lowering still run in every process.")),
    _pitfall_meta("ports", "control_flow",
                  N_("8. Ports: one way of writing it is not JAX's speed"),
                  N_("The same function written another way is another program: jnp as the NumPy code reads, "
                     "lax.scan's loop of steps, associative_scan's tree of partial sums, a matrix-product "
                     "identity, a Pallas kernel. Which one is fastest differs between devices and sizes (a scan "
                     "runs its steps one after another). Time the ways you would write it, each jitted, before "
                     "calling JAX slower or faster.")),
)
SECTIONS = tuple(p["id"] for p in PITFALLS)
# Pitfall 6's title on a known platform names the precision its float32 products run at by default
# (model/platforms.py): a TPU has no TF32, and on a CPU the lesson does not apply.
TF32_TITLES = {
    "tensorfloat32": N_("6. Reduced precision: float32 matmuls on recent NVIDIA GPUs default to TF32"),
    "bfloat16": N_("6. Reduced precision: float32 matmuls on a TPU run one bfloat16 pass"),
    "float32": N_("6. Reduced precision: does not apply on the CPU, where float32 matmuls stay float32"),
}


def pitfall_title(pid: str, backend: str | None = None) -> str:
    """A pitfall's title (recorded English, N_()): pitfall 6's names ``backend``'s reduced precision,
    or GPUs' and TPUs' both where the platform is not known. Shown by id, so a report saved with an
    older title reads as one measured now."""
    entry = platform(backend) if pid == "tf32" else None
    if entry is not None and entry.float32_products in TF32_TITLES:
        return TF32_TITLES[entry.float32_products]
    return next(p["title"] for p in PITFALLS if p["id"] == pid)


def check_sections(sections: Sequence[str] | None) -> tuple[str, ...]:
    """The sections to measure, in the order given (all of SECTIONS for none); BadInput for a
    name that is not a section or is named twice."""
    sections = tuple(sections or SECTIONS)
    unknown = set(sections) - set(SECTIONS)
    if unknown:
        raise BadInput(N_("unknown pitfall section(s): {sections}; the sections are {choices}").format(
            sections=", ".join(sorted(unknown)), choices=", ".join(SECTIONS)))
    twice = sorted({pid for pid in sections if sections.count(pid) > 1})
    if twice:
        raise BadInput(N_("pitfall section(s) named twice: {sections}").format(sections=", ".join(twice)))
    return sections


TINY_S = 1e-12  # the floor of a time in a ratio (a dispatch can read 0 ns)
EFFECTS = ("flatters", "hurts", "within_noise")  # what the naive way does to JAX's speedup
EFFECT_WORDS = {"flatters": N_("flatters JAX"), "hurts": N_("hurts JAX"), "within_noise": N_("within the noise")}


def speed_words(numpy_s: float, jax_s: float) -> str:
    """'JAX 37x faster than NumPy' / 'JAX 3.2x slower than NumPy': recorded English that the CLI
    shows with translate_text (the app words a side from its seconds: app/pitfalls_view.py)."""
    if jax_s <= 0 or numpy_s <= 0:
        return N_("no comparison")
    ratio = numpy_s / jax_s
    if same_speed(ratio):
        return N_("JAX as fast as NumPy")
    if ratio >= 1:
        return N_("JAX {ratio}x faster than NumPy").format(ratio=f"{ratio:.3g}")
    return N_("JAX {ratio}x slower than NumPy").format(ratio=f"{1 / ratio:.3g}")


CACHE_SETTINGS = ('jax.config.update("jax_compilation_cache_dir", "/tmp/jax-cache")\n'
                  'jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)\n'
                  'jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)\n')

PORTS_RACE = ("for name, g in ports.items():  # every port, jitted, timed in turns\n"
              "    %timeit jax.jit(g)(x).block_until_ready()")

# The comments in SIDE_TEXT's code, marked for translation: the page shows them in the reader's language
# (app/pitfalls_view.code_in_language), in code recorded in a lab too.
CODE_COMMENTS = (N_("warm-up"), N_("g not jitted"), N_("float64"), N_("float32 in JAX"), N_("float32 on both sides"),
                 N_("a fresh python process"), N_("nothing cached yet"), N_("every port, jitted, timed in turns"))

# Each measured side's label (recorded English; "{shape}" filled in) and the code it stands for:
# the lab labels its figures from here and the app shows the same before a run (side_roles).
SIDE_TEXT: dict[str, tuple[str, str]] = {
    "first_call": (N_("First call (%time f(x))"), "%time f(x).block_until_ready()"),
    "steady": (N_("Steady state after warm-up"), "f(x).block_until_ready()  # warm-up\n"
               "%timeit f(x).block_until_ready()"),
    "op_by_op": (N_("No jit: op-by-op dispatch"), "%timeit g(x).block_until_ready()  # g not jitted"),
    "dispatch": (N_("Unblocked (dispatch only)"), "%timeit f(x)"),
    "blocked": (N_("Blocked"), "%timeit f(x).block_until_ready()"),
    "fetched": (N_("np.asarray(f(x)): blocked + copy back"), "%timeit np.asarray(f(x))"),
    "mixed": (N_("NumPy float64 vs JAX float32"), "x = np.random.rand(n, n)  # float64\n"
              "%timeit f_np(x); %timeit f(jnp.asarray(x))  # float32 in JAX"),
    "float32": (N_("Both float32"), "x = np.random.rand(n, n).astype(np.float32)\n"
                "%timeit f_np(x); %timeit f(jnp.asarray(x))  # float32 on both sides"),
    "float64": (N_("Both float64 (jax_enable_x64)"), "jax.config.update('jax_enable_x64', True)"),
    "from_host": (N_("Host NumPy array in every call"), "%timeit f(x_np).block_until_ready()"),
    "on_device": (N_("device_put once"), "x = jax.device_put(x_np)\n%timeit f(x).block_until_ready()"),
    "small": (N_("Only a tiny input ({shape})"), "x = rand({shape})"),
    "large": (N_("The workload you care about ({shape})"), "x = rand({shape})"),
    "default_precision": (N_("Default matmul precision"), "f(x)"),
    "highest": ("precision='highest'", "with jax.default_matmul_precision('highest'):\n    f(x)"),
    "cold_restart": (N_("Restarted process, no cache"), "# a fresh python process\n%time f(x).block_until_ready()"),
    "cache_hit": (N_("Restarted process, persistent cache hit"), CACHE_SETTINGS + "%time f(x).block_until_ready()"),
    "cache_fill": (N_("First process, empty cache: compiles and writes it"),
                   CACHE_SETTINGS + "%time f(x).block_until_ready()  # nothing cached yet"),
    "process_start": (N_("Process start: Python, import jax, backend up"), "python -c 'import jax; jax.devices()'"),
    "port_first": (N_("Only the port written first: {port}"),
                   "f = jax.jit(first_port)  # {name}\n%timeit f(x).block_until_ready()"),
    "port_fastest": (N_("The fastest of the ports: {port}"), PORTS_RACE),
    "port_race": (N_("The fastest of {port}"), PORTS_RACE),  # before a run: the ports that will race
    "port_other": (N_("Another port: {port}"), "g = jax.jit(other_port)  # {name}\n%timeit g(x).block_until_ready()"),
}


def side_roles(pid: str, precision: str) -> tuple[str, str, tuple[str, ...]]:
    """The SIDE_TEXT names of a pitfall's naive side, its correct side and the others it shows.
    The fair dtype side is the run's own precision; the other dtype is shown beside it."""
    fair, other = ("float64", "float32") if precision == "x64" else ("float32", "float64")
    return {"jit": ("first_call", "steady", ("op_by_op",)), "async": ("dispatch", "blocked", ("fetched",)),
            "dtype": ("mixed", fair, (other,)), "transfer": ("from_host", "on_device", ()),
            "size": ("small", "large", ()), "tf32": ("default_precision", "highest", ()),
            "cache": ("cold_restart", "cache_hit", ("cache_fill", "process_start")),
            "ports": ("port_first", "port_fastest", ("port_other",))}[pid]


def side_text(name: str, shape: str = "", port: str = "", code_name: str = "") -> tuple[str, str]:
    """A side's (label, code), with the shape of a workload-size side, or a port's name and its function's
    (``code_name``), filled in."""
    label, code = SIDE_TEXT[name]
    return label.format(shape=shape, port=port), code.format(shape=shape, name=code_name)


def _range(stats: Stats | None) -> list[float] | None:
    """A median's 95% range, [low, high] seconds; None when nothing was timed, or one sample
    only (its "range" would be that sample alone: a certainty nothing measured)."""
    return None if stats is None or stats.n < 2 else [stats.ci_low_s, stats.ci_high_s]


def _side(label: str, code: str, jax: Stats, numpy: Stats | None, conclusion: str | None = None,
          **extra: Any) -> dict[str, Any]:
    seconds, numpy_s = jax.median_s, None if numpy is None else numpy.median_s
    if conclusion is None and numpy_s is not None:
        conclusion = N_("{speed} ({jax} vs {numpy})").format(speed=speed_words(numpy_s, seconds),
                                                              jax=format_time(seconds), numpy=format_time(numpy_s))
    return {"label": label, "code": code, "seconds": seconds, "range": _range(jax), "numpy_seconds": numpy_s,
            "numpy_range": _range(numpy), "conclusion": conclusion, **extra}


def separation_decides(n_a: int, n_b: int) -> bool:
    """Whether a set of n_a samples lying wholly above (or below) one of n_b is a 95% result
    when both ranges are min-max (fewer than MIN_SAMPLES_FOR_RANGE samples: 50% coverage with
    two): from one distribution that happens with probability 1 / C(n_a + n_b, n_a) each way
    (1/6 for two against two, 1/70 for four against four)."""
    if n_a >= MIN_SAMPLES_FOR_RANGE or n_b >= MIN_SAMPLES_FOR_RANGE:
        return True  # at least one range is a true 95% range of its median
    return 2 / math.comb(n_a + n_b, n_a) <= 0.05


# The fewest samples a side whose ranges, wholly apart, decide: the lab takes at least this many
# of every figure (a cold call, a fresh process too), so a tenfold effect is not "within the noise".
DECIDING_SAMPLES = next(n for n in range(2, MIN_SAMPLES_FOR_RANGE + 1) if separation_decides(n, n))


def effect_range(naive: tuple[Stats, Stats], correct: tuple[Stats, Stats]) -> tuple[float, float]:
    """The 95% range of naive speedup / correct speedup, each side given as (JAX, NumPy).
    From the medians' ranges, the worst case of each; a timing both sides share (one NumPy
    baseline, one JAX float32 run) is the same number on both and cancels, not a double
    uncertainty."""
    top = [naive[1], correct[0]]  # (naive NumPy / naive JAX) / (correct NumPy / correct JAX)
    bottom = [naive[0], correct[1]]
    for t in list(top):
        for b in bottom:
            if t is b:
                top.remove(t)
                bottom.remove(b)
                break

    if any(x.n < 2 for x in top + bottom):
        return 0.0, math.inf  # a single sample has no range: the effect cannot be told from noise
    if len(top) == len(bottom) == 1 and not separation_decides(top[0].n, bottom[0].n):
        return 0.0, math.inf  # two min-max ranges of a few samples apart is a coin toss, not 95%

    def prod(stats: list[Stats], attr: str) -> float:
        return math.prod(max(getattr(x, attr), TINY_S) for x in stats)  # a zero time stays a finite ratio

    return (prod(top, "ci_low_s") / prod(bottom, "ci_high_s"),
            prod(top, "ci_high_s") / prod(bottom, "ci_low_s"))


def effect_of(low: float, high: float) -> str:
    """'flatters' when the naive way makes JAX look faster whatever the noise (the whole range
    above 1), 'hurts' when slower, else 'within_noise': this run does not show the pitfall."""
    if low > 1:
        return "flatters"
    if high < 1:
        return "hurts"
    return "within_noise"


def _pitfall(pid: str, naive: dict[str, Any], correct: dict[str, Any], timings: tuple[tuple[Stats, Stats], ...],
             extra: list[dict[str, Any]] | None = None, applicable: bool = True,
             backend: str | None = None, again: tuple[Stats, Stats] | None = None,
             **more: Any) -> dict[str, Any]:
    """``timings``: (JAX, NumPy) Stats of the naive side, then of the correct one. ``again``: (the
    lab's proper JAX figure, the same call timed again in turns with the naive side): the effect's
    range then spans both comparisons, the one shown (against the baseline) and the drift-free one.
    ``more``: a pitfall's own fields (pitfall 8's ``left_out`` ports)."""
    meta = next(p for p in PITFALLS if p["id"] == pid) | {"title": pitfall_title(pid, backend)}
    low, high = effect_range(*timings)
    proper_again = None
    if again is not None:
        baseline, retimed = again
        in_turns = tuple(tuple(retimed if t is baseline else t for t in pair) for pair in timings)
        turns_low, turns_high = effect_range(*in_turns)
        low, high = min(low, turns_low), max(high, turns_high)
        proper_again = {"seconds": retimed.median_s, "range": _range(retimed),
                        "side": "naive" if timings[0][0] is baseline else "correct"}  # the side it times again
    effect = effect_of(low, high)
    factor = ((timings[0][1].median_s / max(timings[0][0].median_s, TINY_S))
              / (timings[1][1].median_s / max(timings[1][0].median_s, TINY_S)))
    spread = f"95% range {low:.3g}-{high:.3g}x" if math.isfinite(high) else "one sample: no range"
    return {**meta, "naive": naive, "correct": correct, "extra": extra or [], "applicable": applicable, **more,
            **({} if proper_again is None else {"proper_again": proper_again}),
            "effect": effect, "effect_factor": factor,
            "effect_range": [low, high] if math.isfinite(high) and low > 0 else None,
            "verdict": f"naive: {naive['conclusion']}; measured properly: {correct['conclusion']}; "
                       f"effect: {EFFECT_WORDS[effect]} ({factor:.3g}x, {spread})"}


def lab_timing(timing: TimingConfig) -> TimingConfig:
    """The lab's timing: at least DECIDING_SAMPLES of every figure, whatever the preset."""
    return replace(timing, min_samples=max(timing.min_samples, DECIDING_SAMPLES),
                   max_samples=max(timing.max_samples, DECIDING_SAMPLES),
                   compile_samples=max(timing.compile_samples, DECIDING_SAMPLES))


# The load meter's phases each pitfall's figures were timed in: the lab's shared baseline (the
# proper comparison every section shows, and pitfall 3's runtimes) and the pitfall's own turns.
# Pitfall 7's phase covers its fresh processes.
LOAD_PHASES = {"jit": ("baseline", "jit"), "async": ("baseline", "async"), "dtype": ("baseline",),
               "transfer": ("baseline", "transfer"), "size": ("baseline", "size"), "tf32": ("baseline", "tf32"),
               "cache": ("baseline", "cache"), "ports": ("baseline", "ports")}


def fold_load(reading: dict[str, Any], other: dict[str, Any], prefix: str) -> dict[str, Any]:
    """A pitfall's ``load`` with that of a side timed elsewhere (an x32 run's float64 side, timed in
    the x64 worker) folded in: its phases listed, named with ``prefix``, and the busiest of the two
    read, by load_reading's rule (an unmeasured phase leaves a quiet reading unknown)."""
    cores = [r.get("others_cores") for r in (reading, other)]
    known = [c for c in cores if c is not None]
    busiest = max(known, default=None)
    if busiest is not None and len(known) < len(cores) and not is_busy(busiest):
        busiest = None
    return {"phases": [*reading.get("phases", []), *(f"{prefix} {name}" for name in other.get("phases", []))],
            "others_cores": busiest, "busy": bool(reading.get("busy") or other.get("busy") or is_busy(busiest))}


def load_reading(phases: dict[str, dict[str, Any]], names: Sequence[str]) -> dict[str, Any]:
    """A pitfall's ``load``: the phases its figures were timed in (``phases``: the run's load
    phases, Span.to_dict each), the cores' worth other programs used in the busiest of them, and
    whether that is busy (engine.common.load.is_busy, the checklist's rule). ``others_cores`` is None where
    it was not measured, unless a phase that was is busy already. A phase too short to read (a pitfall
    that timed nothing) is left out."""
    spans = [s for s in (phases.get(name) or {} for name in names)
             if not ("others_cpu_s" in s and 0 < s.get("wall_s", 0) < SHORTEST_READING_S)]
    known = [s["others_cpu_s"] / s["wall_s"] for s in spans if "others_cpu_s" in s and s.get("wall_s", 0) > 0]
    busiest = max(known, default=None)
    if busiest is not None and len(known) < len(spans) and not is_busy(busiest):
        busiest = None  # a quiet phase says nothing about the one that was not measured
    return {"phases": list(names), "others_cores": None if busiest is None else round(busiest, 3),
            "busy": is_busy(busiest)}


def join_fair_float64(report: dict[str, Any], fair: dict[str, Any]) -> None:
    """Pitfall 3's float64 fair side (fair_float64, from the x64 worker) into an x32 run's ``report``: one
    NumPy figure a call, so where the x32 lab already timed NumPy's float64 call as `run` gives it, the fair
    side divides that one (its own, from the x64 worker, would be a second figure of the same call)."""
    speeds = report.setdefault("numpy_speeds", [])
    known = {(tuple(e["shape"]), e["dtype"]): e for e in speeds}
    for entry in fair.pop("numpy_speeds", []):
        same = known.get((tuple(entry["shape"]), entry["dtype"]))
        if same is None:
            speeds.append(entry)
        elif entry["dtype"] == fair.get("dtype"):
            numpy = Stats.from_dict(same["runtime"])
            fair |= {k: v for k, v in _side(fair["label"], fair["code"], Stats.from_dict(fair["jax_stats"]), numpy
                                            ).items() if k in ("numpy_seconds", "numpy_range", "conclusion")}
    fair.pop("jax_stats", None)
    for pitfall in report["pitfalls"]:
        if pitfall["id"] == "dtype":
            pitfall["extra"].append(fair)
            if pitfall.get("load") and fair.get("load"):  # its machine was read too: the busiest counts
                pitfall["load"] = fold_load(pitfall["load"], fair["load"], "x64")
