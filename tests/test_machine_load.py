"""The load accounting (what other programs used while a phase was timed), the estimator kept
under one-sided noise, the recheck on the free cores, and the trust rule every headline uses."""

from __future__ import annotations

import dataclasses
import hashlib
import math
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from functools import partial
from pathlib import Path

import psutil
import pytest
from _results import by_id, make_result, stats, with_jax

from jaxcompare.analysis import summary
from jaxcompare.analysis.checks import NA, checklist
from jaxcompare.analysis.sweep import crossover, sweep_document
from jaxcompare.analysis.trust import set_aside_text, trust, trusted
from jaxcompare.engine.common.load import LoadMeter, OthersCpu, busy_cpu_s, free_cores, is_busy, own_cpu_s, share_cores
from jaxcompare.engine.worker.timing import lowest_block
from jaxcompare.model.result import Result
from jaxcompare.model.stats import Stats


class Counters:
    """Fake /proc counters: the cores' busy time and this process's own, advanced by hand."""

    def __init__(self) -> None:
        self.wall = self.own = 0.0
        self.busy = 1000.0  # since boot: a system that reports CPU time never reads zero

    def sources(self):
        return (lambda cores: self.busy, lambda: self.own)

    def advance(self, wall: float, ours: float, others: float) -> None:
        self.wall += wall
        self.own += ours
        self.busy += ours + others


def test_the_meter_counts_what_others_used_per_phase_and_adds_up_blocks():
    c = Counters()
    meter = LoadMeter(sources=c.sources(), clock=lambda: c.wall)
    with meter.phase("numpy"):
        c.advance(wall=1.0, ours=2.0, others=0.5)
    with meter.phase("runtime"):
        c.advance(wall=1.0, ours=1.0, others=1.5)
    with meter.phase("numpy"):  # a second block of the same phase adds up
        c.advance(wall=2.0, ours=1.0, others=0.0)
    doc = meter.to_dict()
    assert doc["phases"]["numpy"] == {"wall_s": 3.0, "others_cpu_s": 0.5, "own_cpu_s": 3.0}
    assert doc["phases"]["runtime"] == {"wall_s": 1.0, "others_cpu_s": 1.5, "own_cpu_s": 1.0}
    assert meter.spans["numpy"].own_cores == pytest.approx(1.0)  # the cores' worth we used ourselves
    r = dataclasses.replace(make_result(), load=doc)
    assert r.others_cores() == pytest.approx(2.0 / 4.0)  # cores' worth: others' CPU s over wall s
    assert r.others_cores(("runtime",)) == pytest.approx(1.5)
    assert Result.from_dict(r.to_dict()).load == doc  # it round-trips through JSON


def test_a_tick_read_backwards_never_counts_as_negative_load():
    c = Counters()
    meter = LoadMeter(sources=c.sources(), clock=lambda: c.wall)
    with meter.phase("numpy"):
        c.wall += 0.1
        c.own += 0.01  # our counter ticked, the cores' did not yet
    assert meter.spans["numpy"].others_cpu_s == 0.0


def test_old_results_without_a_load_still_load_and_say_not_recorded():
    data = make_result().to_dict()
    del data["load"]
    r = Result.from_dict(data)
    assert r.load == {} and r.others_cores() is None


def test_the_real_counters_see_our_own_spinning_and_a_childs():
    """psutil's counters: a busy child is counted as ours (the process tree), not as others'."""
    before = own = own_cpu_s()
    child = subprocess.Popen([sys.executable, "-c", "import time\nend = time.process_time() + 0.3\n"
                              "while time.process_time() < end: pass"])
    try:
        deadline = time.time() + 20
        while child.poll() is None and time.time() < deadline:
            own = own_cpu_s()  # sampled while the child still runs: its CPU counts as ours
            time.sleep(0.01)
    finally:
        child.kill()
        child.wait()
    assert own - before >= 0.1


def test_the_cores_busy_time_is_read_as_psutil_reads_it():
    cores = LoadMeter().cores
    seen = sum(t.user + t.nice + t.system + t.irq + t.softirq + t.steal
               for i, t in enumerate(psutil.cpu_times(percpu=True)) if i in cores)
    assert busy_cpu_s(cores) == pytest.approx(seen, abs=0.5)  # read a moment apart, on a busy machine


# /proc/stat as a Google TPU v5e VM host (gVisor) gives it: every counter zero.
ZEROS = Path(__file__).parent / "data" / "tpu" / "proc-stat-zeros.txt"


def _neighbour() -> int:
    """A program spinning on a core that is not our child (its parent has exited), as another
    user's would be: this process tree's own CPU is never counted as others'."""
    spawn = ("import subprocess, sys\n"
             "p = subprocess.Popen([sys.executable, '-c', 'while True: pass'], stdout=subprocess.DEVNULL,"
             " stderr=subprocess.DEVNULL, start_new_session=True)\nprint(p.pid)")
    return int(subprocess.run([sys.executable, "-c", spawn], capture_output=True, text=True, check=True).stdout)


def _timed_phases(meter: LoadMeter) -> Result:
    for phase in ("numpy", "runtime"):
        with meter.phase(phase):
            time.sleep(0.4)
    return dataclasses.replace(make_result(), load=meter.to_dict())


def test_a_system_that_reports_no_cpu_time_is_not_read_as_a_quiet_one():
    """The cores' busy time from the recorded zero /proc/stat: no other source, the machine's load
    was not measured (n/a, where zeros read as "pass, 0.00 cores"); with the other processes' own
    CPU times, a spinning neighbour is seen, and the result says where the figure came from."""
    zeros = partial(busy_cpu_s, path=str(ZEROS))
    assert zeros(list(range(13))) == 0.0
    process = psutil.Process()
    blind = _timed_phases(LoadMeter(sources=(zeros, lambda: own_cpu_s(process))))
    assert blind.load["others_source"] is None and blind.others_cores() is None
    assert "others_cpu_s" not in blind.load["phases"]["numpy"] and blind.load["phases"]["numpy"]["wall_s"] > 0
    item = {c.id: c for c in checklist(blind)}["busy"]
    assert item.status == NA and "not measured here" in item.reason

    pid = _neighbour()
    try:
        spinner = psutil.Process(pid)
        spun = spinner.cpu_times()
        meter = LoadMeter(sources=(zeros, lambda: own_cpu_s(process)), others=OthersCpu(process))
        seen = _timed_phases(meter)
        spun = sum(spinner.cpu_times()[:2]) - sum(spun[:2])
    finally:
        os.kill(pid, signal.SIGKILL)
    assert seen.load["others_source"] == "processes"
    others_s = sum(seen.load["phases"][p]["others_cpu_s"] for p in ("numpy", "runtime"))
    assert spun > 0.1 and others_s >= spun - 0.05  # the neighbour's CPU, and whatever else ran
    item = {c.id: c for c in checklist(seen)}["busy"]
    assert item.status != NA and "own CPU times" in item.reason


def test_busy_and_the_free_cores():
    assert not is_busy(None) and not is_busy(0.2) and is_busy(0.5) and is_busy(1.3)
    assert free_cores([0, 1], 1.3) == [1]
    assert free_cores([0, 1, 2, 3], 2.2) == [2, 3]
    assert free_cores([0, 1], 5.0) == [1]  # never none: at least one core is ours


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="Linux only")
def test_sharing_the_free_cores_pins_every_thread_and_limits_blas_then_restores():
    from threadpoolctl import threadpool_info

    before = os.sched_getaffinity(0)
    with share_cores([max(before)]) as shared:
        assert os.sched_getaffinity(0) == {max(before)}
        assert shared == {"cores": 1, "blas_threads": 1}
        assert all(p["num_threads"] == 1 for p in threadpool_info() if p["user_api"] == "blas")
    assert os.sched_getaffinity(0) == before
    with share_cores(None) as nothing:
        assert nothing == {}


def test_the_lowest_block_is_kept_under_one_sided_noise():
    """Contention only adds time: of a quiet block and two slowed ones, the quiet one's median
    is the estimate."""
    quiet = Stats.from_samples([1.0, 1.01, 0.99, 1.02, 0.98, 1.0])
    slowed = [Stats.from_samples([x * k for x in quiet.samples_s]) for k in (1.8, 4.0)]
    kept = lowest_block([slowed[0], quiet, slowed[1]])
    assert kept.median_s == quiet.median_s and kept.ci_high_s == quiet.ci_high_s
    # The plain median of the pooled samples is pulled up by the slowed blocks: it lies.
    pooled = Stats.from_samples([x for b in (quiet, *slowed) for x in b.samples_s])
    assert pooled.median_s > 1.5 * kept.median_s


def test_a_busy_first_pass_is_timed_again_on_the_free_core(monkeypatch):
    """A real measurement whose meter reports another program at 1.5 cores: the pair is timed again
    with both sides on one core, and the Result says so; the checklist's busy item passes."""
    from jaxcompare import Spec, TimingConfig
    from jaxcompare.analysis.checks import PASS, checklist
    from jaxcompare.engine.worker.measure import measure

    start = time.perf_counter()
    busy = LoadMeter(sources=(lambda cores: 1.5 * (time.perf_counter() - start) * len(cores) / 2, lambda: 0.0))
    if len(busy.cores) < 2:
        pytest.skip("needs two cores to leave one free")
    r = measure(Spec("matmul", (64, 64), timing=TimingConfig.quick()), load=busy)
    assert r.others_cores() == pytest.approx(1.5, abs=0.05)
    recheck = r.load["recheck"]
    assert recheck["why"] == "busy" and recheck["kept"] == "recheck" and recheck["pinned"]
    assert recheck["cores"] == 1 and recheck["blas_threads"] == 1
    assert {"recheck.numpy", "recheck.runtime"} <= set(r.load["phases"])
    assert [len(m) for m in recheck["block_medians_s"].values()] == [2, 2]
    assert r.numpy_runtime.median_s == min(recheck["block_medians_s"]["numpy"])  # the fastest block kept
    item = {c.id: c for c in checklist(r)}["busy"]
    assert item.status == PASS and "1.50 cores" in item.reason and "1 free core" in item.reason


# --- the trust rule -----------------------------------------------------------------------------
def _busy(r: Result, others: float = 1.3) -> Result:
    load = {"cores": 2, "phases": {p: {"wall_s": 1.0, "others_cpu_s": others} for p in ("numpy", "runtime")}}
    return dataclasses.replace(r, load=load)


def test_trusted_needs_a_quiet_machine_and_a_known_narrow_range():
    r = make_result(numpy_s=1e-3, jax_s=2e-4)
    assert trusted(r)
    assert trust(_busy(r)).why == "busy"
    few = with_jax(r, runtime=stats(2e-4, n=5))
    assert trust(few).why == "no_range"
    wide = with_jax(r, runtime=Stats.from_samples([1e-4, 1.5e-4, 2e-4, 3e-4, 4e-4, 5e-4, 6e-4]))
    assert trust(wide).why == "range"
    broken = with_jax(r, protocol=r.jax.protocol | {"blocked": False})
    assert trust(broken).why == "fail"
    # Dispatch-dominated is a finding about a small size, not a doubt: still trusted...
    tiny = with_jax(r, dispatch=stats(r.jax.runtime.median_s))
    assert by_id(tiny)["workload"].status == "fail" and trusted(tiny)
    # ...but a dispatch alone above the blocked call, beyond both ranges, cannot be true with it.
    assert trust(with_jax(r, dispatch=stats(1e-3))).why == "disagree"


def test_a_sweep_headlines_only_trusted_points():
    """A busy point with a false 40x never leads: best speedup, crossover, verdict and JSON."""
    sizes = [(10, 10), (100, 100), (300, 300), (1000, 1000)]
    # JAX slower at the two small sizes, 2x faster at 1000; the 300 point was busy and says 40x.
    speedups = [0.2, 0.5, 40.0, 2.0]
    results = [make_result(shape=s, numpy_s=1e-3 * k, jax_s=1e-3) for s, k in zip(sizes, speedups, strict=True)]
    results[2] = _busy(results[2])
    cross = crossover(results)
    # Between 100x100 (0.5x) and 1000x1000 (2x), log-log: the busy 300x300 would have put it lower.
    assert cross == pytest.approx(math.exp((math.log(1e4) + math.log(1e6)) / 2), rel=1e-6)
    assert crossover(results[:2] + results[3:]) == cross
    best = summary.best_trusted(results)
    assert best is results[3]
    text = summary.sweep_verdict(results, cross)
    assert "1 of 4 sizes set aside: the machine was busy" in text and "2.00x (95%:" in text and "40" not in text
    assert set_aside_text(results[:2]) is None
    doc = sweep_document("matmul", "x32", results, cross)
    assert [p["trusted"] for p in doc["results"]] == [True, True, False, True]
    assert doc["results"][2]["set_aside"] == "busy"
    nothing = summary.sweep_verdict([results[2]], None)
    assert nothing.startswith("No size could be trusted")


def test_a_doubtful_compare_result_gives_no_verdict_but_its_range():
    r = _busy(make_result(numpy_s=1e-3, jax_s=2e-4))
    text = summary.verdict(r)
    assert text.startswith("**No verdict from this run: the machine was busy.**")
    assert "5.00x (95%:" in text and "faster" not in text
    speedup = next(f for f in summary.headline(r) if f.label.startswith("Speedup"))
    # The tile holds the range, never the bare 5.00x (tests/test_direction.py has the rest).
    assert "5.00x" not in speedup.value and speedup.detail == "95% range · doubtful"


def test_without_the_waits_a_side_counts_as_parallel_by_its_threads():
    """Where the kernel gives no run delays, beside a neighbour a two-thread side reads about one
    core's worth, like a serial one: the threads' CPU times tell them apart."""
    from jaxcompare.engine.common.load import Span

    two_threads = Span(wall_s=1.0, own_cpu_s=1.02, thread_cpu_s={1: 0.05, 2: 0.49, 3: 0.48})
    one_thread = Span(wall_s=1.0, own_cpu_s=1.0, thread_cpu_s={1: 0.97, 2: 0.03})
    assert two_threads.threads == 2 and two_threads.parallel
    assert one_thread.threads == 1 and not one_thread.parallel
    assert Span(wall_s=1.0, own_cpu_s=1.6).parallel and Span(wall_s=1.0, own_cpu_s=0.99).threads is None
    assert "threads" in two_threads.to_dict() and "threads" not in Span(wall_s=1.0).to_dict()


@pytest.mark.skipif(not os.path.exists("/proc/self/schedstat"), reason="the kernel reports no run delays")
def test_demand_tells_threads_running_at_once_from_threads_handing_work_on():
    """Two threads that take turns (as JAX's caller hands each call to XLA's thread) want one core,
    however busy the machine; two running at once want two even when held to one core, where they
    read one core's worth (engine/runtimes._recheck keeps only pairs of serial sides)."""
    chunk = bytes(20_000_000)

    def work() -> None:  # hashing a large buffer runs outside the GIL
        for _ in range(6):
            hashlib.sha256(chunk).digest()

    jobs: queue.Queue = queue.Queue()

    def serve() -> None:  # a thread that lives through the phases, as XLA's do
        while (done := jobs.get()) is not None:
            work()
            done.set()

    def on_worker() -> threading.Event:
        done = threading.Event()
        jobs.put(done)
        return done

    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(before)})  # every thread started now inherits the one core
    workers = [threading.Thread(target=serve) for _ in range(2)]
    for thread in workers:
        thread.start()
    meter = LoadMeter()
    try:
        with meter.phase("turns"):
            for _ in range(3):
                on_worker().wait()  # this thread sleeps meanwhile
                work()
        with meter.phase("at_once"):
            for _ in range(3):
                for done in [on_worker() for _ in range(2)]:  # both workers busy together
                    done.wait()
    finally:
        for _ in workers:
            jobs.put(None)
        for thread in workers:
            thread.join()
        os.sched_setaffinity(0, before)
    turns, at_once = meter.spans["turns"], meter.spans["at_once"]
    assert turns.threads == 2 and turns.demand < 1.1 and not turns.parallel, turns
    assert at_once.own_cores < 1.1 and at_once.demand > 1.6 and at_once.parallel, at_once
    assert at_once.to_dict()["demand_cores"] == round(at_once.demand, 2)


def test_a_sample_whose_threads_shared_one_core_did_not_have_its_cores():
    """load.SampleWatch, with real threads: two threads of ours held to one core wait for it in turn
    (neither clean by its waits nor by the cores used), while this thread alone, hashing, waits for
    no core whenever no other program takes it (engine/runtimes._clean_recheck keeps only such samples)."""
    from jaxcompare.engine.common.load import SampleWatch

    before = os.sched_getaffinity(0)
    if len(before) < 2:
        pytest.skip("needs two cores: on one, a sample that used every core is clean by its own count")
    chunk = bytes(4_000_000)

    def work() -> None:  # hashing a buffer runs outside the GIL
        for _ in range(4):
            hashlib.sha256(chunk).digest()

    watch = SampleWatch(len(before), per_block=6)
    if not watch.available:
        pytest.skip("the kernel keeps no schedstats")
    for _ in range(12):  # alone, unpinned
        watch.begin()
        work()
        watch.end()
    alone = list(watch.clean)
    os.sched_setaffinity(0, {min(before)})  # the helper started now inherits the one core
    try:
        for _ in range(6):
            helper = threading.Thread(target=work)
            watch.begin()
            helper.start()
            work()
            helper.join()
            watch.end()
    finally:
        os.sched_setaffinity(0, before)
    watch.close()
    shared = watch.clean[len(alone):]
    assert len(shared) == 6 and not any(shared), shared
    # On a busy machine another program may take this thread's core now and then, but not in every sample.
    assert any(alone), alone


def test_a_block_ends_once_its_side_has_enough_samples_that_count():
    from jaxcompare.engine.common.load import SampleWatch

    watch = SampleWatch(2, per_block=3)
    watch.clean += [True, False, True]
    assert not watch.block_done()
    watch.clean.append(True)
    assert watch.block_done()  # three that count: the first block may end
    watch.clean += [False, True]
    assert not watch.block_done()  # the second block needs three more of its own
    watch.clean += [True, True]
    assert watch.block_done()
