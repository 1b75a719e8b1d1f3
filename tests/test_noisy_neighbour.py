"""A noisy neighbour (another process keeping one core busy): the same comparisons measured on
the quiet machine, beside the neighbour, and quiet again, in one test. Beside it the load meter sees
it (in most comparisons: it may get only a fair share), at least a third of the comparisons are
trusted, every one trusted keeps a quiet speedup within 1.5x, the ones it saw are flagged, and a
sweep's headline comes from trusted points only. Doubting everything is no way out on the quiet
machine either: at least half the comparisons measured quiet are trusted (each doubted one measured again,
where the first quiet pass met one of the VM's slow stretches).

The quiet comparison is the one measured before or after (for those trusted), with its 95% range:
quiet, NumPy's matmul at 200x200 gave 0.61x and 1.00x a minute apart, and XLA's centered Gram at
400x400 0.53x and 0.86x (parallel work on this VM's two cores runs at one of two speeds), and
nothing beside a neighbour can say which a quiet run would have given (benchmarks/RESULTS.md,
"Samples that had their cores"). The one after is measured only where the one before does not
already hold the busy speedup: either may, so the check is the same."""

from __future__ import annotations

import dataclasses
import math

import psutil
import pytest

from jaxcompare import Spec, TimingConfig
from jaxcompare.analysis import summary
from jaxcompare.analysis.checks import PASS, WARN, checklist
from jaxcompare.analysis.sweep import crossover, doubtful_directions, firm
from jaxcompare.analysis.trust import trusted
from jaxcompare.engine.common.load import BUSY_CORES
from jaxcompare.engine.worker.measure import measure

# Multithreaded BLAS beside XLA (where contention makes a false speedup), serial NumPy beside
# parallel XLA (where pinning both to the free core is not equal), and serial work on both sides.
COMPARISONS = (("matmul", (200, 200)), ("centered_gram", (400, 400)), ("elementwise", (1_000_000,)),
               ("cumsum", (1_000_000,)), ("fft", (262_144,)), ("sort", (250_000,)))


def measure_one(case: str, shape: tuple[int, ...]):
    return measure(Spec(case, shape, device="cpu", timing=TimingConfig.quick()))


def measure_all() -> list:
    return [measure_one(case, shape) for case, shape in COMPARISONS]


@pytest.fixture(scope="module")
def quiet_results():
    return measure_all()


def _alike(result, busy):
    """``result`` with the NumPy figure ``busy`` has: the worker's, where busy has no plain process's."""
    if busy.numpy_kept is None and result.numpy_kept is not None:
        return dataclasses.replace(result, numpy_runtime=result.numpy_kept, numpy_kept=None)
    return result


def test_a_busy_neighbour_is_seen_and_trusted_speedups_hold(quiet_results, neighbour):
    busy_results = measure_all()
    assert neighbour.is_running() and neighbour.status() != psutil.STATUS_ZOMBIE, "the neighbour stopped early"
    neighbour.kill()
    try:
        neighbour.wait(timeout=5)
    except psutil.TimeoutExpired:  # a zombie that no init process reaps: it no longer runs either
        assert neighbour.status() == psutil.STATUS_ZOMBIE
    seen = [r.others_cores() is not None and r.others_cores() >= BUSY_CORES for r in busy_results]
    # The meter sees the neighbour. Not always: beside two or three busy threads of ours the
    # scheduler gives it a fair share, one third to one half of two cores (0.43-0.48 read,
    # RESULTS.md "A neighbour's fair share"); such a run is judged by its speedup below.
    assert sum(seen) > len(seen) / 2, [r.others_cores() for r in busy_results]
    for comparison, before, busy, busy_seen in zip(COMPARISONS, quiet_results, busy_results, seen, strict=True):
        label = f"{busy.case} {busy.shape}"
        item = {c.id: c for c in checklist(busy)}["busy"]
        recheck = busy.load.get("recheck") or {}
        # A side that ran in parallel would lose cores pinned: that pair is timed again on every core.
        if recheck.get("why") == "busy" and recheck.get("parallel"):
            assert not recheck["pinned"] and recheck["kept"] in ("first", "clean"), (label, recheck)
            assert "clean_samples" in recheck and "recheck.runtime" in busy.load["phases"], (label, recheck)
        # Seen, it is flagged: the busy item warns, or the pair was timed again and the item says how.
        pinned = recheck.get("pinned") and "free core" in item.reason
        clean = recheck.get("kept") == "clean" and "had the cores they wanted" in item.reason
        assert not busy_seen or item.status == WARN or (item.status == PASS and (pinned or clean)), (label, item)
        # A plain process that could not be timed leaves the worker's kept-memory NumPy as the figure, so
        # the quiet runs are read at theirs too (a busy plain process is timed again, and warned of).
        if trusted(busy):  # the others are not compared
            def holds(quiet_run, busy=busy) -> bool:
                low, high = _alike(quiet_run, busy).speedup_range
                return low / 1.5 <= busy.speedup <= high * 1.5

            # Quiet again, measured only where the quiet run before does not already hold the busy speedup
            # (not trusted, or at the other of the machine's two speeds): either quiet run may.
            quiet_runs, after = [before] if trusted(before) else [], None
            if not any(map(holds, quiet_runs)):
                after = measure_one(*comparison)
                quiet_runs += [after] if trusted(after) else []
            if quiet_runs:
                medians = [(r.numpy_runtime.median_s, r.jax.runtime.median_s) for r in (before, busy, after) if r]
                assert any(map(holds, quiet_runs)), (label, [_alike(r, busy).speedup_range for r in quiet_runs],
                                                     busy.speedup, medians, busy.load.get("recheck"))
    kept = [r for r in busy_results if trusted(r)]
    # None kept is possible: beside the neighbour a rerun range (issue 49) may widen past TRUSTED_SPREAD at
    # every size (a clean clone's serial part: all six set aside, busy or too wide). Either way a sweep's
    # headline comes from trusted points only, whatever the neighbour did to the others.
    best = summary.best_trusted(busy_results)
    assert (best is None) == (not kept)
    if best is not None:
        assert trusted(best) and best.speedup == max(r.speedup for r in kept)
    # A size set aside never places the crossover; one that still says which side is faster may deny
    # an interpolation between trusted sizes that it contradicts (sweep.crossover).
    cross, kept_cross = crossover(busy_results), crossover(kept)
    if cross != kept_cross:  # denied: a set-aside size between the two firm sizes it was placed between
        assert cross is None and kept_cross is not None, (cross, kept_cross)
        sizes = [math.prod(r.shape) for r in kept if firm(r)]
        low, high = max(n for n in sizes if n < kept_cross), min(n for n in sizes if n > kept_cross)
        assert any(low < math.prod(r.shape) < high for r in doubtful_directions(busy_results)), (
            kept_cross, [(r.shape, r.speedup_range) for r in busy_results])
    text = summary.sweep_verdict(busy_results, crossover(busy_results))
    doubtful = len(busy_results) - len(kept)
    assert (f"{doubtful} of {len(busy_results)} sizes set aside" in text) == (doubtful > 0)

    # The quotas need a quiet baseline: on a machine others already load, "quiet" is not.
    def calm_of(results: list) -> list:
        return [r for r in results if (r.others_cores() or 0.0) < BUSY_CORES]

    calm = calm_of(quiet_results)
    if len(calm) >= 2 and sum(map(trusted, calm)) < len(calm) / 2:
        # This VM's own speed moves with no process of ours or steal time to show it (two clean-clone suites
        # twenty minutes apart: 843 s and 954 s, RESULTS.md): a comparison doubted in a quiet pass that doubted
        # most is measured again, the neighbour gone, and counts as trusted where either quiet run is.
        calm = [r if trusted(r) else measure_one(r.case, r.shape) for r in calm]
        calm = calm_of(calm)
    # At least half of the comparisons measured on a quiet machine are trusted. Not most: at quick timing this
    # VM's two speeds widen the memory-bound ones' rerun ranges past TRUSTED_SPREAD (CI, and a clean clone
    # after it: 3 of 6 "too wide" in two whole passes and again measured alone), which is the range saying so.
    if len(calm) >= 2:
        assert sum(map(trusted, calm)) >= len(calm) / 2, [summary.doubt_text(r) for r in calm]
