"""How long a run will take, said before it starts. A first guess from what is known beforehand
(the timing preset's budgets per phase, the processes it starts, the case's size, whether its
worker is running yet), then the durations the runner has seen: the same request's, else a
learnt scale for its kind. Runs in the runner's process and never imports JAX (docs/protocol.md,
"How long a run takes").
"""

from __future__ import annotations

import math
import statistics
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from ...model.cases import Case
from ...model.phases import MEASURING
from ...model.platforms import float64_emulated
from ...model.spec import UNTIMED_CALL_MAX_S, Spec, TimingConfig
from ..common.footprint import GLIBC_MMAP_THRESHOLD
from ..common.footprint import estimate as memory_estimate
from ..common.load import PLAIN_ATTEMPTS
from .jobs import Estimate, kind_for_key

__all__ = ["Durations", "Estimate", "LoadReading", "pitfalls_kind"]

# The first guess's parts (benchmarks/RESULTS.md, "How long a run takes": what they were measured at).
WORKER_START_S = 1.2  # an interpreter that imports NumPy and JAX and opens its backend
FRESH_WORKER_S = 0.5  # a fresh worker's first job: JAX's first compile, BLAS's threads, lazy imports
CEILINGS_S = 4.0  # the CPU's matmul rate and bandwidth, measured once per host and dtype (ceilings.py)
PROCESS_S = 1.5  # a fresh interpreter that imports JAX, compiles and calls once (the first call)
PLAIN_PROCESS_S = 0.4  # a plain interpreter that imports NumPy and the case (plain_numpy.py)
COMPILE_S = 0.06  # one cold compile of a catalog case on the CPU
FIXED_S = 0.3  # inputs, agreement, the roofline's empty calls, the ceilings read from their cache
# Other programs' load slows a run, by how much of this process's cores they took just before it (busy,
# 0 to 1): 1 + 0.6 busy, and 1 + 4 busy² for LAPACK's calls, whose OpenBLAS threads spin at their
# barriers once no core is free.
CONTENTION_SLOPE = 0.6
LAPACK_CONTENTION_SLOPE = 4.0
# A fresh interpreter (the first call's process, NumPy's plain one) slows more than a sampled phase, whose
# time budget does not stretch: 1 + 1.0 busy on top of the above. With every core taken by others, a fresh
# first call took 4.1-4.3 s against the 1.6 s guessed quiet (2026-12-06, busy 1.0; benchmarks/RESULTS.md).
PROCESS_CONTENTION_SLOPE = 1.0
LOAD_SAMPLE_S = 0.3  # a fresh reading of the others' load takes this long...
LOAD_FRESH_S = 30.0  # ...where the last is older than this
LOAD_SMOOTH_S = 10.0  # readings are averaged over about this long
RECHECK_SHARE = 0.5  # how often a one-pair run times its runtimes again (busy or unstable): often, here
PITFALLS_MEASURES = 5.0  # the lab's pitfalls each time about a measurement's worth of phases
CALL_FLOPS_PER_S = 1e11  # a guess at one call's time from the catalog's FLOP count...
LAPACK_FLOPS_PER_S = 4e10  # a factorisation (numpy.linalg, scipy.linalg) runs well below a matrix product
CALL_BYTES_PER_S = 2e9  # ...or from its inputs' bytes
# A first guess is worth a factor of two either way; a learnt one at least this much around it.
GUESS_SPREAD = (0.5, 2.0)
LEARNT_SPREAD = (0.75, 1.35)
SEEN_PER_REQUEST = 5  # durations kept per request (the median leads)
MAX_REQUESTS = 64  # requests remembered, so a long-running server's memory stays flat
KIND_RATIOS = 16  # seen/guessed ratios kept per kind and preset


def call_s(case: Case | None, spec: Spec) -> float:
    """A guess at one call's time, from the catalog's FLOP count or the inputs' bytes."""
    if case is None:
        return 0.01
    flops = case.flop_count(spec.shape)
    if flops:
        rate = LAPACK_FLOPS_PER_S if is_lapack(case) else CALL_FLOPS_PER_S
        return flops / rate * (2 if spec.precision == "x64" else 1)
    try:
        return memory_estimate(case, spec.shape, spec.dtype, backend="unknown").input_bytes \
            / CALL_BYTES_PER_S
    except Exception:  # a user's case whose inputs cannot be sized here: its worker says
        return 0.01


def plain_process(case: Case | None, spec: Spec) -> bool:
    """Whether NumPy is timed again in a plain process (an input as large as glibc's mmap threshold)."""
    if case is None:
        return False
    try:
        inputs = memory_estimate(case, spec.shape, spec.dtype, backend="unknown").input_bytes
    except Exception:
        return False
    return inputs >= GLIBC_MMAP_THRESHOLD


def measure_guess(timing: TimingConfig, call: float, *, plain: bool) -> float:
    """A measurement's seconds in a worker that has run before, from the preset's budgets per phase:
    a sampled phase stops between half its budget and all of it, or after its fewest samples."""
    return measure_parts(timing, call, plain=plain)[0]


def measure_parts(timing: TimingConfig, call: float, *, plain: bool) -> tuple[float, float, float]:
    """measure_guess's seconds, and of them the fresh first-call processes' and one try of NumPy's plain
    process (0 where it has none): the parts a busy machine stretches most (job_slowdown). Each phase of
    the protocol's table (model/phases.MEASURING) counts as its ``guess`` says (GUESSES)."""
    seconds = {phase.name: GUESSES[phase.guess](timing, call, plain) for phase in MEASURING}
    fresh = sum(seconds[phase.name] for phase in MEASURING if phase.guess == "fresh")
    plain_try = sum(seconds[phase.name] for phase in MEASURING if phase.guess == "plain")
    rest = sum(seconds[phase.name] for phase in MEASURING if phase.guess not in ("fresh", "plain"))
    return rest + fresh + plain_try, fresh, plain_try  # in this order: job_slowdown takes them apart again


def _sampled(timing: TimingConfig, call: float, budget: float) -> float:
    """A sampled phase stops between half its budget and all of it; a long call takes its fewest samples
    whatever the budget, each after an untimed call where the call is short (spec.UNTIMED_CALL_MAX_S)."""
    untimed = call if call < UNTIMED_CALL_MAX_S else 0.0
    return (max(timing.min_samples * (max(timing.target_sample_s, call) + untimed), budget * 0.4)
            + timing.warmup_s + call)


def _runtime_block(timing: TimingConfig, call: float) -> float:
    return _sampled(timing, call, timing.runtime_budget_s or timing.phase_budget_s)


# How a phase's first guess is counted, by its table's ``guess``: (timing, one call's seconds, whether NumPy
# is timed again in a plain process) -> seconds.
GUESSES: dict[str, Callable[[TimingConfig, float, bool], float]] = {
    "inputs": lambda timing, call, plain: FIXED_S + call,
    "agreement": lambda timing, call, plain: 2 * call,  # the outputs compared, and the float64 reference
    "budget": lambda timing, call, plain: _sampled(timing, call, timing.phase_budget_s),
    "runtime": lambda timing, call, plain: _runtime_block(timing, call),  # more than one pair share the budget
    "recheck": lambda timing, call, plain: (RECHECK_SHARE * 2 * _runtime_block(timing, call)
                                            if timing.runtime_blocks == 1 else 0.0),
    "compile": lambda timing, call, plain: timing.compile_samples * (COMPILE_S + call),
    "first_call": lambda timing, call, plain: COMPILE_S + call,  # the worker's, a recompile
    "fresh": lambda timing, call, plain: timing.first_call_processes * (PROCESS_S + COMPILE_S + call),
    "plain": lambda timing, call, plain: PLAIN_PROCESS_S + _runtime_block(timing, call) if plain else 0.0,
    "none": lambda timing, call, plain: 0.0,
}


def pitfalls_kind(sections: Sequence[str] | None) -> str:
    """What a pitfalls job is guessed and learnt as: "pitfalls" for the whole lab, else "pitfalls:"
    and its sections (one section takes a part of the lab's time: learnt as the whole, a run of one
    section made the next whole lab's estimate 15x too short)."""
    from ..common.lessons import SECTIONS

    if not sections or set(sections) >= set(SECTIONS):
        return "pitfalls"
    return "pitfalls:" + ",".join(s for s in SECTIONS if s in sections)


def work_guess(kind: str, spec: Spec | None, case: Case | None) -> float:
    """The first guess at a job's own work (no worker start, no one-off ceilings)."""
    return work_parts(kind, spec, case)[0]


def work_parts(key: str, spec: Spec | None, case: Case | None) -> tuple[float, float, float]:
    """work_guess's seconds, its fresh processes' part and one try of NumPy's plain process (measure_parts):
    the first guess of the job kind that ``key`` names (server/jobs.JobKind.work_parts)."""
    return kind_for_key(key).work_parts(key, spec, case)


def pitfalls_parts(sections: Sequence[str], spec: Spec, case: Case | None) -> tuple[float, float, float]:
    """The pitfalls lab's first guess (work_parts): the lab's own timing, and pitfall 7's fresh processes,
    one per compile sample."""
    from ..common.lessons import SECTIONS, lab_timing

    timing = replace(lab_timing(spec.timing), first_call_processes=0, runtime_blocks=1, runtime_budget_s=None)
    one = measure_guess(timing, call_s(case, spec), plain=plain_process(case, spec))
    processes = timing.compile_samples * PROCESS_S if "cache" in sections else 0.0
    return PITFALLS_MEASURES * one * len(sections) / len(SECTIONS) + processes, processes, 0.0


def job_slowdown(kind: str, spec: Spec | None, case: Case | None, busy: float) -> float:
    """What other programs taking ``busy`` of this process's cores do to a whole job: its sampled phases
    slow as slowdown() says, its fresh interpreters by PROCESS_CONTENTION_SLOPE more, and NumPy's plain
    process is tried again while busy (common/load.PLAIN_ATTEMPTS in all: a busy 1000x1000 matmul took three
    tries, 10.9 s, against one guessed at 0.7 s)."""
    busy = min(max(busy, 0.0), 1.0)
    total, processes, plain_try = work_parts(kind, spec, case)
    if total <= 0:
        return slowdown(busy, case)
    stretch = 1.0 + PROCESS_CONTENTION_SLOPE * busy
    tries = 1.0 + (PLAIN_ATTEMPTS - 1) * busy  # each try busy or not as the machine is
    slowed = total - processes - plain_try + (processes + plain_try * tries) * stretch
    return slowdown(busy, case) * slowed / total


def request_key(kind: str, spec: Spec | None) -> tuple[Any, ...]:
    """The same request takes alike long: its kind, case, shape, precision and timing settings."""
    if spec is None:
        return (kind,)
    return (kind, spec.case, spec.cases_file, tuple(spec.shape), spec.precision, spec.timing)


def case_key(kind: str, spec: Spec | None) -> tuple[Any, ...]:
    """The same case, shape and precision at any timing: how far the first guess is off for it."""
    return request_key(kind, spec)[:-1]


def kind_key(kind: str, spec: Spec | None) -> tuple[Any, ...]:
    """What a first guess's error is learnt per: the kind and the timing preset, and apart where the spec
    names a device that only emulates float64 (the default device's platform is not known here): a TPU's
    float64 cells compile for seconds to minutes, and an atlas that scaled them by its float32 cells said
    "about 1.9 min" for 48 that took over half an hour."""
    if spec is None:
        return (kind, None)
    emulated = float64_emulated(spec.device, spec.precision)
    return (kind, spec.timing.preset_name) + (("float64 emulated",) if emulated else ())


class Durations:
    """The durations a runner has seen, of each job's own work (its worker's start-up and the one-off
    ceilings apart), and each worker precision's start-up time. Not thread-safe: the runner calls
    it with its lock held."""

    def __init__(self) -> None:
        self._seen: OrderedDict[tuple[Any, ...], deque[float]] = OrderedDict()
        self._ratios: dict[tuple[Any, ...], deque[float]] = {}
        self._case_ratios: OrderedDict[tuple[Any, ...], deque[float]] = OrderedDict()
        self._starts: dict[str, deque[float]] = {}

    def start_s(self, precision: str) -> float:
        """A worker's start-up: the median seen for its precision, else WORKER_START_S."""
        seen = self._starts.get(precision)
        return statistics.median(seen) if seen else WORKER_START_S

    def estimate(self, kind: str, spec: Spec | None, case: Case | None, *, cold: tuple[str, ...] = (),
                 ceilings: bool = False, busy: float = 0.0) -> Estimate:
        """How long a job will take once it starts. ``cold``: the precisions whose worker it starts
        (their start-up and first job); ``ceilings``: it measures the CPU's ceilings first;
        ``busy``: the share of the cores other programs take now (LoadReading)."""
        slow = job_slowdown(kind, spec, case, busy)
        overhead = sum(self.start_s(p) + FRESH_WORKER_S for p in cold) + (CEILINGS_S if ceilings else 0.0)
        estimate = self._work(kind, spec, case)
        return Estimate(estimate.seconds * slow + overhead, estimate.low * slow + overhead * GUESS_SPREAD[0],
                        estimate.high * slow + overhead * GUESS_SPREAD[1], estimate.basis, estimate.runs)

    def _work(self, kind: str, spec: Spec | None, case: Case | None) -> Estimate:
        """A job's own work on a quiet machine: seen before, else a first guess scaled by its kind's runs."""
        seen = self._seen.get(request_key(kind, spec))
        if seen:
            work = statistics.median(seen)
            low, high = min(seen) * LEARNT_SPREAD[0], max(seen) * LEARNT_SPREAD[1]
            return Estimate(work, low, high, "seen", len(seen))
        guess = work_guess(kind, spec, case)
        like = self._case_ratios.get(case_key(kind, spec)) if spec is not None else None
        if like:  # this case at another timing: its error is this one's, near enough
            scale = statistics.median(like)
            return Estimate(guess * scale, guess * min(like) * GUESS_SPREAD[0] ** 0.5,
                            guess * max(like) * GUESS_SPREAD[1] ** 0.5, "like", len(like))
        ratios = self._ratios.get(kind_key(kind, spec))
        if not ratios:
            return Estimate(guess, guess * GUESS_SPREAD[0], guess * GUESS_SPREAD[1], "guess", 0)
        # Other cases' runs say how this machine compares with the guess, but not how this case does:
        # shrink their mean log-ratio toward 1 by how many there are, and keep a guess's range around it.
        logs = [math.log(r) for r in ratios]
        scale = math.exp(sum(logs) / (len(logs) + 1))
        work = guess * scale
        low = min(work * GUESS_SPREAD[0], guess * min(ratios) * LEARNT_SPREAD[0])
        high = max(work * GUESS_SPREAD[1], guess * max(ratios) * LEARNT_SPREAD[1])
        return Estimate(work, low, high, "scaled", len(ratios))

    def learn(self, kind: str, spec: Spec | None, case: Case | None, work_s: float, busy: float = 0.0) -> None:
        """Record a finished job's own work, in seconds (its worker's start-up and the ceilings apart),
        as on a quiet machine: divided by the slowdown other programs' load (``busy``) was said to cause."""
        work_s = max(work_s, 0.05) / job_slowdown(kind, spec, case, busy)
        key = request_key(kind, spec)
        self._seen.setdefault(key, deque(maxlen=SEEN_PER_REQUEST)).append(work_s)
        self._seen.move_to_end(key)
        while len(self._seen) > MAX_REQUESTS:
            self._seen.popitem(last=False)
        ratio = work_s / work_guess(kind, spec, case)
        self._ratios.setdefault(kind_key(kind, spec), deque(maxlen=KIND_RATIOS)).append(ratio)
        if spec is not None:
            like = case_key(kind, spec)
            self._case_ratios.setdefault(like, deque(maxlen=SEEN_PER_REQUEST)).append(ratio)
            self._case_ratios.move_to_end(like)
            while len(self._case_ratios) > MAX_REQUESTS:
                self._case_ratios.popitem(last=False)

    def learn_start(self, precision: str, seconds: float) -> None:
        """Record how long a worker of ``precision`` took to start."""
        self._starts.setdefault(precision, deque(maxlen=SEEN_PER_REQUEST)).append(max(seconds, 0.0))


def is_lapack(case: Case | None) -> bool:
    """A factorisation or solver from numpy.linalg or scipy.linalg: LAPACK's calls, slower than a product."""
    return case is not None and ".linalg." in case.numpy_name


def slowdown(busy: float, case: Case | None) -> float:
    """What other programs taking ``busy`` of this process's cores (0 to 1) do to a run of ``case``."""
    busy = min(max(busy, 0.0), 1.0)
    return 1.0 + (LAPACK_CONTENTION_SLOPE * busy**2 if is_lapack(case) else CONTENTION_SLOPE * busy)


def others_counter() -> Callable[[], float]:
    """Other programs' CPU seconds so far, counted as load.LoadMeter counts them: this process's cores'
    busy time less this process tree's own (a runner's workers are its children), or where the cores'
    busy time reads nothing, the other processes' own CPU times."""
    from ..common.load import LoadMeter

    meter = LoadMeter()
    if meter.others_source is None:
        raise RuntimeError("no load source")

    def others() -> float:
        _, counter, own = meter.reading()
        return counter - own if meter.others_source == "cores" else counter

    return others


class LoadReading:
    """Other programs' load on this process's cores, read while the runner was idle (a run of its own
    hides theirs: both cannot take more than every core). Thread-safe."""

    def __init__(self, others: Callable[[], float] | None = None, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        """``others``: other programs' CPU seconds so far (others_counter(); tests replay counters)."""
        from ..common.load import _cores

        self.cores = len(_cores())
        self._lock = threading.Lock()
        self._clock, self._sleep = clock, sleep
        try:
            self._others: Callable[[], float] | None = others if others is not None else others_counter()
        except Exception:  # nothing says what other programs use here: no load is known, none is added
            self._others = None
        self._last: tuple[float, float] | None = None  # (monotonic time, others' CPU seconds)
        self._since: tuple[float, float] | None = None  # the same, as the runner's last job started
        self._updated = 0.0  # when others_cores was last read
        self.others_cores: float | None = None

    def _used(self) -> float:
        if self._others is None:
            raise RuntimeError("no load source")
        return self._others()

    def restart(self) -> None:
        """A job of the runner's starts or ends: the interval read next begins now, and so does the
        one during() reads."""
        with self._lock:
            self._last = None
            try:
                self._since = (self._clock(), self._used())
            except Exception:
                self._since = None

    def during(self, busy_before: float) -> float:
        """The share of the cores other programs took while a job ran (since restart()), as far as a
        reading during it can tell: with every core wanted, they get about half of what they asked
        for, so twice their share, and never more than ``busy_before`` (a load that went away)."""
        with self._lock:
            since = self._since
            try:
                if since is None or self._clock() - since[0] < LOAD_SAMPLE_S:
                    return busy_before
                share = (self._used() - since[1]) / (self._clock() - since[0]) / max(self.cores, 1)
            except Exception:
                return busy_before
        return min(busy_before, max(2 * share, 0.0))

    def read(self, *, wait: bool) -> float:
        """The share of the cores other programs take now: from the time since the last reading (the runner
        idle meanwhile), else, with ``wait``, a fresh LOAD_SAMPLE_S reading, else the last one."""
        with self._lock:
            now = self._clock()
            return self._read(now, wait)

    def _read(self, now: float, wait: bool) -> float:
        try:
            if self._last is None or now - self._last[0] > LOAD_FRESH_S:
                if not wait:
                    return self.busy()
                start = (now, self._used())
                self._sleep(LOAD_SAMPLE_S)  # the reading's interval, not a synchronisation
                now = self._clock()
                self._last = start
            if now - self._last[0] >= LOAD_SAMPLE_S:
                used = self._used()
                fresh = (used - self._last[1]) / (now - self._last[0])
                # Smoothed over about LOAD_SMOOTH_S: a browser drawing the page is a moment's load, not the
                # run's; the older the last reading, the less it counts.
                keep = math.exp(-(now - self._updated) / LOAD_SMOOTH_S) if self.others_cores is not None else 0.0
                self.others_cores = keep * (self.others_cores or 0.0) + (1 - keep) * fresh
                self._last, self._updated = (now, used), now
        except Exception:  # a system that does not say (no /proc/stat, no psutil): no load known
            return 0.0
        return self.busy()

    def busy(self) -> float:
        """The last reading as a share of the cores (0 to 1); 0 before any."""
        return min(max((self.others_cores or 0.0) / max(self.cores, 1), 0.0), 1.0)
