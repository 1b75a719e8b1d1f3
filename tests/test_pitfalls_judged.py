"""What a pitfalls run says about its own measuring, from reports built with chosen times (the
figures of issue 44's runs): each pitfall's Machine quiet line from its load reading, the count of
busy ones, and the figures of one run that measure the same work yet disagree (pitfall 1's correct
side, pitfall 5's large side, the dtypes row; pitfall 7's first process against its restarts),
each firing and not firing; in the CLI's text and JSON, and on the page's plain data."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest
from _pitfalls import made_pitfall
from support import zh

from jaxcompare import Spec, TimingConfig, i18n
from jaxcompare.analysis import lab_checks
from jaxcompare.analysis.checks import NA, PASS, WARN
from jaxcompare.analysis.consistency import pitfalls_findings
from jaxcompare.app import pitfalls_view as pv
from jaxcompare.cli import pitfall_lines, pitfalls_summary_lines
from jaxcompare.engine import job_kind
from jaxcompare.engine.common.lessons import LOAD_PHASES, _side, load_reading, side_text
from jaxcompare.engine.common.load import BUSY_CORES, LoadMeter
from jaxcompare.engine.worker.pitfalls import measure_pitfalls
from jaxcompare.model.stats import Stats

SHAPE = [300, 300]


def quiet(pitfall: dict, cores: float = 0.12) -> dict:
    pitfall["load"] = {"phases": list(LOAD_PHASES[pitfall["id"]]), "others_cores": cores, "busy": cores >= BUSY_CORES}
    return pitfall


def run(*pitfalls: dict) -> dict:
    return {"case": "matmul", "shape": SHAPE, "precision": "x32", "dtype": "float32", "backend": "cpu",
            "device": "cpu:0", "load": {"cores": 2, "others_source": "cores", "phases": {}},
            "pitfalls": list(pitfalls)}


def steady_figures(size_numpy_s: float, size_jax_s: float = 610e-6, size_shape=SHAPE):
    """Issue 44's second run: NumPy 388 µs and JAX 617 µs in the lab's baseline (pitfall 1's
    correct side and the dtypes row, "1.59x slower"), pitfall 5's large side timed apart."""
    jit = quiet(made_pitfall("jit", (0.08, 388e-6), (617e-6, 388e-6)))
    dtype = quiet(made_pitfall("dtype", (617e-6, 1.2e-3), (617e-6, 388e-6), extra=((1.1e-3, 1.2e-3),),
                               labels=(side_text("mixed")[0], side_text("float32")[0])))
    dtype["naive"]["dtype"], dtype["correct"]["dtype"], dtype["extra"][0]["dtype"] = "mixed", "float32", "float64"
    dtype["extra"][0]["label"] = side_text("float64")[0]  # the x64 worker's row
    size = quiet(made_pitfall("size", (30e-6, 5e-6), (size_jax_s, size_numpy_s)))
    size["correct"]["shape"] = list(size_shape)
    return jit, dtype, size


def test_the_same_runtime_timed_in_two_sections_beyond_both_ranges_is_named_with_both_figures():
    findings = pitfalls_findings(run(*steady_figures(3.1e-3)))
    assert [(f.id, f.status) for f in findings] == [("pitfalls_agree", WARN)]  # NumPy's only: JAX agrees
    reason = findings[0].reason
    assert reason.startswith("NumPy's runtime at 300x300 (float32) was timed in more than one section")
    # The baseline is one timing, quoted once with every section that shows it; pitfall 5's its own.
    assert ("388 µs (380–396 µs) in 1. JIT, 3. Dtypes (Both float32); 3.1 ms (3.04–3.16 ms) in 5. Workload size"
            in reason)
    with i18n.using("zh"):
        assert "388 µs" in pitfalls_findings(run(*steady_figures(3.1e-3)))[0].reason


def test_numpy_float64_in_the_x32_workers_naive_row_and_the_x64_workers_row_are_held_together():
    """Issue 44's busy run: NumPy float64 16 ms in the naive row, 499 µs in the x64 worker's."""
    jit, dtype, size = steady_figures(390e-6, 600e-6)
    dtype["extra"][0]["numpy_seconds"], dtype["extra"][0]["numpy_range"] = 499e-6, [480e-6, 520e-6]
    [finding] = pitfalls_findings(run(jit, dtype, size))
    assert finding.reason.startswith("NumPy's runtime at 300x300 (float64)")
    assert ("1.2 ms (1.18–1.22 ms) in 3. Dtypes (NumPy float64 vs JAX float32); 499 µs (480–520 µs) in "
            "3. Dtypes (Both float64 (jax_enable_x64))") in finding.reason


def test_figures_that_agree_within_their_ranges_or_measure_other_work_are_not_named():
    assert pitfalls_findings(run(*steady_figures(390e-6, 600e-6))) == []
    # Pitfall 5's large side at another shape times other work.
    assert pitfalls_findings(run(*steady_figures(3.1e-3, size_shape=[500, 500]))) == []
    jit, dtype, size = steady_figures(390e-6, size_jax_s=5e-3)  # JAX disagrees now, NumPy not
    [finding] = pitfalls_findings(run(jit, dtype, size))
    assert finding.reason.startswith("JAX's runtime") and "617 µs" in finding.reason and "5 ms" in finding.reason


def cache_pitfall(first_s: float, restart_s=(0.2, 0.221, 0.221, 0.24)) -> dict:
    """Pitfall 7: the restarts without a cache, with a hit, the first process (one sample) and the starts."""
    cold, hit, numpy = Stats.from_samples(restart_s), Stats.from_samples([0.03] * 4), Stats.from_samples([4e-4] * 4)
    pitfall = made_pitfall("cache", (0.221, 4e-4), (0.03, 4e-4))
    pitfall["naive"] = _side(*side_text("cold_restart"), cold, numpy, conclusion="c", compile_seconds=0.1,
                             samples=list(cold.samples_s))
    pitfall["correct"] = _side(*side_text("cache_hit"), hit, numpy, conclusion="h", compile_seconds=0.01)
    pitfall["extra"] = [_side(*side_text("cache_fill"), Stats.from_samples([first_s]), numpy, conclusion="f",
                              cache_files=1),
                        _side(*side_text("process_start"), Stats.from_samples([1.0] * 9), None, conclusion="s")]
    return quiet(pitfall)


def test_pitfall_7s_first_process_beyond_its_restarts_range_is_named_and_its_single_sample_said():
    [faster] = pitfalls_findings(run(cache_pitfall(0.116)))  # issue 44: 116 ms against 221 ms
    assert faster.status == WARN and faster.pitfall == "cache"
    assert faster.reason.startswith("pitfall 7's first process with an empty cache took 116 ms (one sample: no "
                                    "range of its own), 1.91x faster than its restarts without a cache, 221 ms "
                                    "(one of them falls within 135–358 ms)")
    [slower] = pitfalls_findings(run(cache_pitfall(0.5)))
    assert "2.26x slower than its restarts" in slower.reason
    assert pitfalls_findings(run(cache_pitfall(0.23))) == []  # within the restarts' range
    # Beyond the restarts' median range (their min-max, 200–240 ms) yet where one restart may fall.
    assert pitfalls_findings(run(cache_pitfall(0.18))) == pitfalls_findings(run(cache_pitfall(0.3))) == []
    old = cache_pitfall(0.116)
    del old["naive"]["samples"]  # a report from before the lab kept the restarts' samples: not judged
    assert pitfalls_findings(run(old)) == []
    # Restarts of a single sample each have no range: not compared, and said so.
    [unknown] = pitfalls_findings(run(cache_pitfall(0.116, restart_s=(0.221,))))
    assert unknown.status == NA and "a single sample of each has no range" in unknown.reason


def test_a_first_process_drawn_like_its_restarts_is_rarely_said_to_disagree():
    """The review's Monte Carlo: the first process and its restarts all drawn from one distribution
    (skewed, as times are); against the restarts' median range it fired 40% at 4 restarts, 22% at 8,
    47% at 12. Against where one restart falls, rarely."""
    rng = np.random.default_rng(44)
    for restarts in (4, 8, 12):
        draws = [0.15 + rng.gamma(2.0, 0.03, restarts + 1) for _ in range(300)]
        fired = sum(bool(pitfalls_findings(run(cache_pitfall(x[0], restart_s=tuple(x[1:]))))) for x in draws)
        assert fired / len(draws) < 0.05, (restarts, fired)


def test_each_pitfall_says_whether_the_machine_was_busy_by_the_checklists_rule():
    busy, calm = quiet(made_pitfall("jit", (0.08, 4e-4), (6e-4, 4e-4)), 1.37), \
        quiet(made_pitfall("async", (1e-5, 4e-4), (6e-4, 4e-4)), 0.12)
    check = lab_checks.busy_check(busy)
    assert (check.id, check.status, check.title) == ("busy", WARN, "Machine quiet")
    assert check.reason.startswith("other programs used 1.37 cores while this pitfall was timed")
    assert lab_checks.busy_check(calm).status == PASS and "0.12 cores" in lab_checks.busy_check(calm).reason
    unread = dict(calm, load={"phases": ["baseline", "async"], "others_cores": None, "busy": False})
    assert lab_checks.busy_check(unread, None).reason == "not measured here: this system reports no CPU time"
    old = {k: v for k, v in calm.items() if k != "load"}  # a report from before the lab read the load
    assert lab_checks.busy_check(old).status == NA
    assert lab_checks.busy_count_text([busy, calm, old]).startswith("1 of 3 pitfalls were timed while the "
                                                                       "machine was busy")
    assert lab_checks.busy_count_text([calm, old]) is None
    # The CLI's text: a checklist line under each pitfall, the count and the findings after them.
    assert "  [warn] Machine quiet: other programs used 1.37 cores" in "\n".join(pitfall_lines(busy, "cpu"))
    assert "  [pass] Machine quiet: other programs used 0.12 cores" in "\n".join(pitfall_lines(calm, "cpu"))
    jit, dtype, size = steady_figures(3.1e-3)
    summary = pitfalls_summary_lines(run(busy, dtype, size))
    assert summary[0].startswith("  1 of 3 pitfalls were timed") and summary[1].startswith(
        "  [warn] Figures that disagree: NumPy's runtime")  # not the check's title, "Figures of the run agree"
    assert pitfalls_summary_lines(run(calm)) == []
    with i18n.using("zh"):
        assert zh("Machine quiet") in "\n".join(pitfall_lines(busy, "cpu"))
        assert pitfalls_summary_lines(run(busy, dtype, size))[1].startswith(
            f"  [{zh('warn')}] {zh('Figures that disagree')}")
        assert pv.finding_text(pitfalls_findings(run(busy, dtype, size))[0]).startswith(
            f"**{zh('Figures that disagree')}**")


def test_the_json_carries_each_pitfalls_line_the_busy_count_and_the_findings():
    jit, dtype, size = steady_figures(3.1e-3)
    jit["load"] |= {"others_cores": 1.02, "busy": True}
    doc = json.loads(json.dumps(lab_checks.judged(run(jit, dtype, size))))
    assert doc["busy_pitfalls"] == 1
    assert [p["checks"][0]["status"] for p in doc["pitfalls"]] == [WARN, PASS, PASS]
    assert {"id", "title", "status", "reason", "pitfall"} <= set(doc["pitfalls"][0]["checks"][0])
    assert [c["id"] for c in doc["consistency"]] == ["pitfalls_agree"]
    assert doc["pitfalls"][0]["load"]["phases"] == ["baseline", "jit"]


def test_a_pitfalls_reading_is_its_busiest_phase():
    phases = {"baseline": {"wall_s": 2.0, "others_cpu_s": 2.4}, "jit": {"wall_s": 4.0, "others_cpu_s": 0.4},
              "size": {"wall_s": 1.0, "others_cpu_s": 0.1}, "cache": {"wall_s": 3.0}}
    assert load_reading(phases, LOAD_PHASES["jit"]) == {"phases": ["baseline", "jit"], "others_cores": 1.2,
                                                        "busy": True}
    # Pitfall 5 shows the lab's proper comparison at its large shape: the baseline's phase is its too.
    assert load_reading(phases, LOAD_PHASES["size"]) == {"phases": ["baseline", "size"], "others_cores": 1.2,
                                                         "busy": True}
    assert load_reading(phases, ("size",)) == {"phases": ["size"], "others_cores": 0.1, "busy": False}
    # A phase without a reading: busy still says busy, quiet says nothing.
    assert load_reading(phases, LOAD_PHASES["cache"])["busy"] is True
    phases["baseline"]["others_cpu_s"] = 0.2
    assert load_reading(phases, LOAD_PHASES["cache"]) == {"phases": ["baseline", "cache"], "others_cores": None,
                                                          "busy": False}
    assert load_reading({}, LOAD_PHASES["jit"])["others_cores"] is None  # no meter (no psutil)
    # Pitfall 8 with one port times nothing (9 ms): one clock tick of another program there is no busy machine.
    phases |= {"ports": {"wall_s": 0.009, "others_cpu_s": 0.0109}}
    assert load_reading(phases, LOAD_PHASES["ports"]) == {"phases": ["baseline", "ports"], "others_cores": 0.1,
                                                          "busy": False}
    assert load_reading(phases | {"ports": {"wall_s": 0.5, "others_cpu_s": 0.6}}, LOAD_PHASES["ports"])["busy"]


def test_the_page_counts_busy_sections_and_names_a_runs_disagreement_while_its_sections_stand():
    jit, dtype, size = steady_figures(3.1e-3)
    jit["load"] |= {"others_cores": 1.37, "busy": True}
    results = pv.section_entries(run(jit, dtype, size), "quick", run="job-1")
    rows = {r["Pitfall"].split("]")[0][1:]: r for r in pv.summary_rows(results)}
    assert rows["1. JIT"]["Machine"] == "busy (1.37 cores)" and rows["3. Dtypes"]["Machine"] == "quiet"
    assert rows["2. Async dispatch"]["Machine"] == "—"
    assert pv.busy_summary(results).startswith("1 of 3 pitfalls were timed while the machine was busy")
    assert pv.busy_note(results["jit"]).startswith("**Busy machine**: other programs used 1.37 cores")
    assert pv.busy_note(results["dtype"]) is None
    caption = pv.measured_caption(results["dtype"]["context"], "quick", results["dtype"]["pitfall"])
    assert caption.endswith("quick timing · other programs used 0.12 cores while this pitfall was timed")
    [finding] = pv.run_findings(results)
    assert pv.finding_text(finding).startswith("**Figures that disagree**: NumPy's runtime at 300x300")
    # Pitfall 5 measured again in another run: the old run's figures no longer stand together.
    _, _, size_again = steady_figures(390e-6)
    results |= pv.section_entries(run(size_again), "quick", run="job-2")
    assert pv.run_findings(results) == []


def test_an_x32_runs_float64_side_timed_on_a_busy_machine_makes_pitfall_3_busy():
    """The x64 worker reads its own machine for pitfall 3's float64 side: a busy reading there is
    the section's, though the x32 worker's baseline was quiet."""
    jit, dtype, size = steady_figures(390e-6, 600e-6)
    fair = dict(dtype["extra"].pop(), load={"phases": ["baseline"], "others_cores": 1.4, "busy": True})
    report = job_kind("pitfalls").combine(None, [run(jit, dtype, size), fair])
    [combined] = [p for p in report["pitfalls"] if p["id"] == "dtype"]
    assert combined["extra"][-1] is fair
    assert combined["load"] == {"phases": ["baseline", "x64 baseline"], "others_cores": 1.4, "busy": True}
    assert lab_checks.busy_check(combined).status == WARN and "1.40 cores" in lab_checks.busy_check(combined).reason
    assert pv.machine_text(combined).startswith("busy")
    # A quiet x64 side leaves a quiet section quiet; the busier reading counts either way.
    quiet_side = dict(fair, load={"phases": ["baseline"], "others_cores": 0.05, "busy": False})
    jit, dtype, size = steady_figures(390e-6, 600e-6)
    dtype["extra"].pop()
    combined = job_kind("pitfalls").combine(None, [run(jit, dtype, size), quiet_side])
    [again] = [p for p in combined["pitfalls"] if p["id"] == "dtype"]
    assert again["load"]["others_cores"] == 0.12 and lab_checks.busy_check(again).status == PASS


class BusyAtFirst:
    """A load meter whose counters (LoadMeter's ``sources``) see another program at ``cores`` cores'
    worth until the lab's first baseline has been timed, then at ``after``."""

    def __init__(self, cores: float, after: float = 0.0) -> None:
        self.cores, self.after, self.busy_s = cores, after, 0.0
        self.last = time.perf_counter()
        self.meter = LoadMeter(sources=(self.busy, lambda: 0.0))

    def busy(self, cores: list[int]) -> float:
        now = time.perf_counter()
        baseline = self.meter.spans.get("baseline") if hasattr(self, "meter") else None
        first = baseline is None or baseline.wall_s == 0  # its end reading still counts the first load
        self.busy_s += (self.cores if first else self.after) * (now - self.last)
        self.last = now
        return self.busy_s


def test_a_baseline_timed_while_the_app_redrew_is_timed_again_and_the_quiet_one_kept():
    """The app's page redraws as its job begins (0.6 cores of two, measured): every pitfall of a
    lab started from the page read busy, by the one baseline they share. A busy baseline is timed
    once more, and the quieter timing is the one reported; a machine busier the second time keeps the first."""
    spec = Spec("matmul", (64, 64), timing=TimingConfig.quick())
    run = measure_pitfalls(spec, ("jit",), load=BusyAtFirst(1.2).meter)
    assert run["load"]["baseline_recheck"] == {"first_others_cores": pytest.approx(1.2, abs=0.05), "kept": "again"}
    assert "baseline again" not in run["load"]["phases"]
    [jit] = run["pitfalls"]
    assert not jit["load"]["busy"] and jit["load"]["others_cores"] < BUSY_CORES
    busy = measure_pitfalls(spec, ("jit",), load=BusyAtFirst(1.2, after=1.5).meter)
    assert busy["load"]["baseline_recheck"]["kept"] == "first" and busy["pitfalls"][0]["load"]["busy"]
    quiet_run = measure_pitfalls(spec, ("jit",), load=BusyAtFirst(0.0).meter)
    assert "baseline_recheck" not in quiet_run["load"]
