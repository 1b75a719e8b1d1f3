"""How busy the machine was while a phase was timed: the CPU time other processes used meanwhile.

Contention only ever adds time, and not to both sides alike: OpenBLAS's threads spin at their
barriers and slow 4-5x with one of two cores taken, XLA's about 1.1x (a false speedup). So every
timed phase records its wall time and what the rest of the machine burned in that time: the busy
time of the cores this process may run on (/proc/stat, as psutil reads it) minus this process tree's
own CPU time (every thread to the nanosecond, and children). The cores' busy time ticks at 10 ms,
so a figure is good to about 0.01-0.02 s per phase; "cores' worth" = others_cpu_s / wall_s.
Where the system reports no CPU time for its cores (a gVisor sandbox's /proc/stat, all zeros, on a
TPU VM host), the other processes' own CPU times stand in; where those cannot be read either, what
others used is not measured, never zero. The Result's ``load.others_source`` says which it was.
"""

from __future__ import annotations

import copy
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

try:  # psutil is a dependency; a stripped-down worker without it records no load
    import psutil
except ImportError:  # pragma: no cover
    psutil = None  # type: ignore[assignment]

# A plain process timed while other programs ran counts only its samples that had their cores; where
# too few did, it is timed again, up to this many times in all. It has no JAX beside it to share a
# slowdown, and the worker's figure is the other regime (a TPU host: 5x apart), so it is not skipped
# for a busy machine; only where every attempt was spoilt does the worker's figure stand, and warn.
PLAIN_ATTEMPTS = 3


def _cores() -> list[int]:
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return list(range(os.cpu_count() or 1))


def busy_cpu_s(cores: list[int], path: str = "/proc/stat") -> float:
    """Seconds the given cores spent not idle since boot (user, nice, system, irq, softirq, steal):
    ``path``'s per-core lines as psutil.cpu_times(percpu=True) reads them; psutil's where there is no
    such file (not Linux)."""
    try:
        with open(path, encoding="ascii") as f:
            return stat_busy_s(f.read(), cores)
    except OSError:
        pass
    per_cpu = psutil.cpu_times(percpu=True)
    total = 0.0
    for index in cores:
        if index >= len(per_cpu):
            continue
        t = per_cpu[index]
        total += sum(getattr(t, name, 0.0) for name in ("user", "nice", "system", "irq", "softirq", "steal"))
    return total


_CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100  # /proc/stat's unit: ticks a second


def stat_busy_s(text: str, cores: list[int]) -> float:
    """The busy seconds of ``cores`` in a /proc/stat's text: the cpuN lines' user, nice, system, irq,
    softirq and steal ticks (guest time is inside user), by the core's number."""
    wanted = {f"cpu{index}" for index in cores}
    ticks = 0
    for line in text.splitlines():
        fields = line.split()
        if fields and fields[0] in wanted:
            values = [int(v) for v in fields[1:9]] + [0] * 8
            ticks += sum(values[i] for i in (0, 1, 2, 5, 6, 7))
    return ticks / _CLOCK_TICKS


def own_cpu_s(process: Any = None) -> float:
    """CPU seconds of this process (every thread) and of its children, live or reaped."""
    proc = process or psutil.Process()
    if proc.pid == os.getpid():
        # The kernel's own sum over every thread, ended ones too, in nanoseconds: psutil's 10 ms
        # ticks would add a second tick's error to others_cpu_s beside the busy time's.
        reaped = os.times()
        total = time.process_time() + reaped.children_user + reaped.children_system
    else:
        t = proc.cpu_times()
        total = t.user + t.system + getattr(t, "children_user", 0.0) + getattr(t, "children_system", 0.0)
    for child in proc.children(recursive=True):
        try:
            c = child.cpu_times()
            total += c.user + c.system
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass
    return total


class OthersCpu:
    """CPU seconds the other processes used since the first call, from their own CPU times: what
    stands in where the system reports none for its cores. Each call adds what every process used
    since the call before (one born meanwhile, all of its own), leaving out this process tree, on
    every core (not only ours); a process that ended meanwhile loses its last stretch, so short-lived
    ones read low."""

    def __init__(self, process: Any = None) -> None:
        self._process = process or psutil.Process()
        self._last: dict[tuple[int, float], float] | None = None
        self._total = 0.0

    def __call__(self) -> float:
        ours = {self._process.pid} | {c.pid for c in self._process.children(recursive=True)}
        now = {}
        for proc in psutil.process_iter():
            if proc.pid in ours:
                continue
            try:
                t = proc.cpu_times()
                now[(proc.pid, proc.create_time())] = t.user + t.system  # the key tells a reused pid
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
        if self._last is not None:
            self._total += sum(max(cpu - self._last.get(key, 0.0), 0.0) for key, cpu in now.items())
        self._last = now
        return self._total


def thread_cpu_s(process: Any) -> dict[int, float]:
    """CPU seconds of each thread of ``process`` so far."""
    try:
        return {t.id: t.user_time + t.system_time for t in process.threads()}
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return {}


def _schedstat(raw: str | bytes) -> tuple[float, float]:
    """A thread's schedstat line: (seconds on a core, seconds runnable but waiting for one)."""
    ran, waited = raw.split()[:2]
    return int(ran) / 1e9, int(waited) / 1e9


def thread_schedstat(tids: Any) -> dict[int, tuple[float, float]]:
    """For each of this process's threads ``tids``, seconds so far on a core and seconds runnable but
    waiting for one (the kernel's run delay), from /proc/self/task/TID/schedstat; {} where the kernel
    does not say. Nanoseconds, where psutil's thread times tick at 10 ms."""
    values = {}
    for tid in tids:
        try:
            with open(f"/proc/self/task/{tid}/schedstat", encoding="ascii") as f:
                values[tid] = _schedstat(f.read())
        except (OSError, ValueError):
            continue  # a thread that ended, or no schedstat on this kernel
    return values


@dataclass
class Span:
    """One phase's wall time and what other processes burned on our cores meanwhile."""

    wall_s: float = 0.0
    others_cpu_s: float | None = 0.0  # None: not measured (LoadMeter.others_source)
    own_cpu_s: float = 0.0  # this process tree's CPU meanwhile: own_cpu_s / wall_s cores it used
    # CPU seconds of each of this process's threads meanwhile (thread id -> s); {} when not read.
    thread_cpu_s: dict[int, float] = field(default_factory=dict)
    # Seconds those threads waited, runnable, for a core meanwhile; None when the kernel did not say.
    wait_s: float | None = None
    # Seconds the threads other than the one timing ran meanwhile (OpenBLAS's workers in a NumPy
    # call, XLA's in a JAX one), to the nanosecond; None when the kernel did not say.
    helper_s: float | None = None

    @property
    def threads(self) -> int | None:
        """How many threads did the work: those with a fifth or more of the threads' CPU time (None
        when not read). A busy machine hides parallelism in the cores' worth, not in this."""
        total = sum(self.thread_cpu_s.values())
        if total <= 0:
            return None
        return sum(1 for t in self.thread_cpu_s.values() if t >= total / 5)

    @property
    def demand(self) -> float | None:
        """The cores' worth the work wanted: what its threads ran plus what they waited, runnable,
        for a core, over the wall time (None where the waits were not read). Threads that hand the
        work on to each other (JAX's caller, then XLA's) want one core; threads running at once,
        as many as run, even where a busy machine gave them one core's worth."""
        if self.wait_s is None or self.wall_s <= 0:
            return None
        return (sum(self.thread_cpu_s.values()) + self.wait_s) / self.wall_s

    @property
    def parallel(self) -> bool:
        """Whether the work ran on more than one core at once: it wanted more than one core's
        worth (``demand``), or where the waits were not read, used more than one core's worth or
        kept two threads or more busy."""
        if self.demand is not None:
            return self.demand > PARALLEL_DEMAND
        return self.own_cores > PARALLEL_CORES or (self.threads or 0) >= 2

    @property
    def helpers_ran(self) -> bool:
        """Whether threads other than the timing one ran for HELPER_SHARE of the wall time or more,
        and so may spin after the work (OpenBLAS's workers); True when that is unknown."""
        return self.helper_s is None or self.helper_s >= HELPER_SHARE * self.wall_s

    @property
    def others_cores(self) -> float | None:
        if self.others_cpu_s is None:
            return None
        return self.others_cpu_s / self.wall_s if self.wall_s > 0 else 0.0

    def to_dict(self) -> dict[str, float]:
        demand = self.demand
        return ({"wall_s": round(self.wall_s, 6)}
                | ({} if self.others_cpu_s is None else {"others_cpu_s": round(self.others_cpu_s, 4)})
                | {"own_cpu_s": round(self.own_cpu_s, 4)} | ({} if self.threads is None else {"threads": self.threads})
                | ({} if demand is None else {"demand_cores": round(demand, 2)})
                | ({} if self.helper_s is None else {"helper_cpu_s": round(self.helper_s, 4)}))

    @property
    def own_cores(self) -> float:
        return self.own_cpu_s / self.wall_s if self.wall_s > 0 else 0.0


class LoadMeter:
    """Records a Span per phase name (a phase timed in several blocks adds up its blocks).
    ``sources``: the counters, injectable for tests (busy CPU s of the given cores, our own CPU s);
    ``others``: the other processes' CPU s so far (OthersCpu), read where the cores' busy time is not."""

    def __init__(self, sources: tuple[Callable[[list[int]], float], Callable[[], float]] | None = None,
                 clock: Callable[[], float] = time.perf_counter, others: Callable[[], float] | None = None) -> None:
        self.cores = _cores()
        if sources is None and psutil is not None:
            process = psutil.Process()
            sources = (busy_cpu_s, lambda: own_cpu_s(process))
            others = others or OthersCpu(process)
            self._threads: Callable[[], dict[int, float]] | None = lambda: thread_cpu_s(process)
        else:
            self._threads = None
        self._sources = sources
        self._others = others
        self._clock = clock
        self.others_source = self._others_source() if sources is not None else None
        self.spans: dict[str, Span] = {}
        self.notes: dict[str, Any] = {}  # shared by prefixed views, like spans
        self.prefix = ""

    def prefixed(self, prefix: str, cores: list[int] | None = None) -> LoadMeter:
        """The same meter, its phases named ``prefix + name`` (the third side's "jax_cpu."),
        optionally counting only ``cores`` (a recheck pinned to the free ones)."""
        view = copy.copy(self)
        view.prefix = prefix
        view.cores = list(cores) if cores else self.cores
        return view

    def _others_source(self) -> str | None:
        """Where the others' CPU time comes from: "cores" (our cores' busy time less our own),
        "processes" (their own CPU times, where the cores' busy time reads zero since boot: the
        system reports none), or None (neither can be read: not measured)."""
        assert self._sources is not None
        if self._sources[0](self.cores) > 0:
            return "cores"
        if self._others is not None:
            try:
                self._others()  # the first reading: proof that it reads here
                return "processes"
            except Exception:  # psutil.Error or OSError alike: no process times here either
                pass
        return None

    @property
    def available(self) -> bool:
        return self._sources is not None

    def reading(self) -> tuple[float, float, float]:
        """(wall clock, the counter others' CPU s come from, our CPU s) now: our cores' busy CPU s
        (others': its rise less ours), or the others' own CPU s (``others_source``)."""
        counter = own = 0.0
        if self._sources is not None:
            if self.others_source == "cores":
                counter = self._sources[0](self.cores)
            elif self.others_source == "processes" and self._others is not None:
                counter = self._others()
            own = self._sources[1]()
        return self._clock(), counter, own

    def add(self, phase: str, start: tuple[float, float, float], end: tuple[float, float, float]) -> Span:
        """Count the interval between two readings into ``phase``."""
        span = self.spans.setdefault(phase, Span())
        span.wall_s += end[0] - start[0]
        # Never below zero: the two counters tick independently, so a short span can read -10 ms.
        if self.others_source == "cores" and span.others_cpu_s is not None:
            span.others_cpu_s += max((end[1] - start[1]) - (end[2] - start[2]), 0.0)
        elif self.others_source == "processes" and span.others_cpu_s is not None:
            span.others_cpu_s += max(end[1] - start[1], 0.0)
        else:
            span.others_cpu_s = None
        span.own_cpu_s += max(end[2] - start[2], 0.0)
        return span

    @contextmanager
    def phase(self, name: str) -> Iterator[Span]:
        threads_before = self._threads() if self._threads is not None else {}
        sched_before = thread_schedstat(threads_before) if self._threads is not None else {}
        caller = threading.get_native_id()
        start = self.reading()
        span = self.spans.setdefault(self.prefix + name, Span())
        try:
            yield span
        finally:
            self.add(self.prefix + name, start, self.reading())
            if self._threads is not None:
                threads_after = self._threads()
                for tid, seconds in threads_after.items():
                    used = seconds - threads_before.get(tid, 0.0)
                    if used > 0:
                        span.thread_cpu_s[tid] = span.thread_cpu_s.get(tid, 0.0) + used
                sched_after = thread_schedstat(threads_after)
                if sched_after:  # a thread born meanwhile ran and waited all its life inside the span
                    ran = waited = 0.0
                    for tid, (run_s, wait_s) in sched_after.items():
                        run_before, wait_before = sched_before.get(tid, (0.0, 0.0))
                        waited += max(wait_s - wait_before, 0.0)
                        if tid != caller:
                            ran += max(run_s - run_before, 0.0)
                    span.wait_s = (span.wait_s or 0.0) + waited
                    span.helper_s = (span.helper_s or 0.0) + ran

    def to_dict(self) -> dict[str, Any]:
        """The Result's ``load`` object (docs/json.md); {} when psutil is missing."""
        if not self.available:
            return {}
        return {"cores": len(self.cores), "others_source": self.others_source,
                "phases": {name: s.to_dict() for name, s in self.spans.items()}, **self.notes}



# A phase whose other threads ran this share of its wall time or more was multithreaded. Measured
# in a NumPy block after JAX's: OpenBLAS's matmul at 200x200 and 400x400 0.95-0.99 (its worker
# computes, then spins), at 10x10-100x100 and NumPy's elementwise work 0.0 (benchmarks/RESULTS.md).
HELPER_SHARE = 0.05


# The runtimes count as timed on a busy machine when other processes used this many cores' worth
# or more meanwhile. Half a core, not a whole one: OpenBLAS spinning at its barriers made a 398x398
# matmul look 9.6x faster in JAX with others at 1.0 cores of two. Not lower: the app's own page
# (its server and the browser) takes about 0.2 cores while it follows a job (benchmarks/RESULTS.md).
BUSY_CORES = 0.5


def is_busy(others_cores: float | None) -> bool:
    return others_cores is not None and others_cores >= BUSY_CORES


# Others' CPU comes in clock ticks (10 ms): over a shorter span than this, two ticks of another program read as a
# busy machine (pitfall 8 with one port, timed for 9 ms: one tick read 1.16 cores).
SHORTEST_READING_S = 2 / _CLOCK_TICKS / BUSY_CORES


# A side that used more than this many cores' worth in its runtime blocks ran in parallel: pinned
# to fewer cores it slows, where a serial side does not. Serial against parallel is no equal recheck.
# Just above one core. Beside a neighbour a parallel side reads about one core all the same (XLA's
# elementwise at 1e6: 1.00-1.06, NumPy's serial 0.97-1.04), so Span.parallel asks what it wanted.
PARALLEL_CORES = 1.05
# A side that wanted more than this many cores (Span.demand) ran in parallel. Pinned to one core a
# side wanting d slows by at most d, so two sides under 1.2 keep their ratio within 1.2x. Measured
# beside a neighbour: serial sides 0.95-1.12 (NumPy's, JAX's sort), parallel 1.5-3.5 (RESULTS.md).
PARALLEL_DEMAND = 1.2


# A sample ran as on a quiet machine when this process's threads waited, runnable, for a core less
# than CLEAN_WAIT_SHARE of its wall time (serial work beside a neighbour on another core), or kept
# all but CLEAN_SLACK_CORES of its cores busy themselves (no room left for another program: parallel
# work that won every core). Beside a one-core neighbour, the samples so judged gave XLA's
# elementwise at 1e6 4.0 ms (quiet: 4.0; all samples: 7.9) and none where two neighbours held both
# cores (benchmarks/RESULTS.md, "Samples that had their cores").
CLEAN_WAIT_SHARE = 0.05
CLEAN_SLACK_CORES = 0.2


class SampleWatch:
    """Judges each sample, between ``begin()`` and ``end()`` (its untimed first call too): did this
    process's threads get the cores they wanted (CLEAN_WAIT_SHARE, CLEAN_SLACK_CORES)? ``clean`` holds one verdict a
    sample, in order; ``block_done()`` ends a block once the side has ``per_block`` such samples
    for each block so far. Unavailable where the kernel gives no run delays (no schedstat)."""

    def __init__(self, cores: int, per_block: int) -> None:
        self.cores = cores
        self.per_block = per_block
        self.clean: list[bool] = []
        self._start: tuple[float, float, dict[int, float]] = (0.0, 0.0, {})
        self._wanted = per_block
        # Each thread's schedstat file, kept open: re-read in place it costs about 1 us a thread,
        # opened afresh 15 (a 1 ms sample read 17 threads twice for 0.5 ms).
        self._files: dict[int, int] = {}

    def _waits(self) -> dict[int, float]:
        """Each live thread of this process: seconds it has waited, runnable, for a core."""
        try:
            tids = {int(t) for t in os.listdir("/proc/self/task")}
        except OSError:
            return {}
        for tid in self._files.keys() - tids:
            os.close(self._files.pop(tid))
        for tid in tids - self._files.keys():
            try:
                self._files[tid] = os.open(f"/proc/self/task/{tid}/schedstat", os.O_RDONLY)
            except OSError:  # a thread that ended meanwhile
                pass
        waits = {}
        for tid, fd in self._files.items():
            try:
                waits[tid] = _schedstat(os.pread(fd, 128, 0))[1]
            except (OSError, ValueError):
                continue
        return waits

    def close(self) -> None:
        for fd in self._files.values():
            os.close(fd)
        self._files.clear()

    @property
    def available(self) -> bool:
        """Whether the kernel keeps schedstats: a kernel without them reads all zeros, and every
        sample would count."""
        ran = thread_schedstat([threading.get_native_id()]).get(threading.get_native_id(), (0.0, 0.0))[0]
        return ran > 0

    def begin(self) -> None:
        waits = self._waits()
        self._start = (time.perf_counter(), time.process_time(), waits)

    def end(self) -> None:
        wall, cpu = time.perf_counter(), time.process_time()
        start_wall, start_cpu, start_waits = self._start
        wall -= start_wall
        waited = sum(max(w - start_waits.get(tid, 0.0), 0.0) for tid, w in self._waits().items())
        self.clean.append(wall > 0 and (waited < CLEAN_WAIT_SHARE * wall
                                        or cpu - start_cpu >= (self.cores - CLEAN_SLACK_CORES) * wall))

    def block_done(self) -> bool:
        """Whether the block being timed may end early: the side has enough samples that count."""
        if sum(self.clean) < self._wanted:
            return False
        self._wanted += self.per_block
        return True


def free_cores(cores: list[int], others_cores: float) -> list[int]:
    """The cores left when other processes keep ``others_cores`` busy (at least one): the last
    ones of our affinity set, so the scheduler moves the others to the first ones."""
    taken = min(len(cores) - 1, max(1, round(others_cores)))
    return cores[taken:]


def _pin_all_threads(cores: set[int]) -> None:
    """Every thread of this process on ``cores`` (os.sched_setaffinity(0) moves only the calling
    thread; XLA's and BLAS's pools are already running)."""
    for tid in os.listdir("/proc/self/task"):
        try:
            os.sched_setaffinity(int(tid), cores)
        except (OSError, ValueError):  # a thread that ended meanwhile
            pass


@contextmanager
def share_cores(cores: list[int] | None) -> Iterator[dict[str, Any]]:
    """Give both libraries only ``cores``, equally: every thread (XLA's pool included) pinned to
    them and NumPy's BLAS limited to that many threads (threadpoolctl); restored afterwards.
    None: leave everything as it is. Yields what was done, for the Result."""
    if not cores or not hasattr(os, "sched_setaffinity") or not os.path.isdir("/proc/self/task"):
        yield {}
        return
    from threadpoolctl import threadpool_limits

    before = set(os.sched_getaffinity(0))
    _pin_all_threads(set(cores))
    try:
        with threadpool_limits(len(cores), user_api="blas"):
            yield {"cores": len(cores), "blas_threads": len(cores)}
    finally:
        _pin_all_threads(before)
