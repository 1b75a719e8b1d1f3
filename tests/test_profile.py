"""The profiler trace of a comparison, on real JAX (CPU, in this process): the trace file, the
top ops and the gap between the host's wall time per call and the device's busy time."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest
from support import QUICK

from jaxcompare import Result, Spec
from jaxcompare.engine.worker.measure import measure
from jaxcompare.engine.worker.profile import CALL_MARK, attribute, hlo_index, summarize, trace_calls
from jaxcompare.model.profile import Profile


@pytest.fixture(scope="module")
def traces(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("traces")


@pytest.fixture(scope="module")
def large(traces) -> Result:
    # About 1 ms of work a call: its gap stays well under half on a busy host (300x300 read 0.61 once).
    return measure(Spec("matmul", (500, 500), device="cpu", timing=QUICK), profile_dir=str(traces))


@pytest.fixture(scope="module")
def tiny_phases() -> list[str]:
    """Each phase `tiny`'s measurement reported, in order (with repeats)."""
    return []


@pytest.fixture(scope="module")
def tiny(traces, tiny_phases) -> Result:
    return measure(Spec("matmul", (8, 8), device="cpu", timing=QUICK), profile_dir=str(traces),
                   progress=lambda phase, _: tiny_phases.append(phase))


def test_the_trace_file_exists_under_the_result_id_and_parses(large, traces):
    profile = large.profile
    assert profile is not None and profile.ok, profile
    path = Path(profile.trace_file)
    assert path.is_file() and path.name == "perfetto_trace.json.gz"
    assert path.is_relative_to(traces / large.id)
    with gzip.open(path, "rt") as fh:
        trace = json.load(fh)
    calls = [e for e in trace["traceEvents"] if e.get("name") == CALL_MARK]
    assert len(calls) == profile.calls >= 1
    # The summary is a function of the file: summarising it again gives the same numbers.
    again = summarize(trace, trace_file=str(path))
    assert again.device_busy_s == pytest.approx(profile.device_busy_s)
    assert again.wall_s == pytest.approx(profile.wall_s)


@pytest.mark.parametrize("which", ["large", "tiny"])
def test_shares_are_fractions_that_add_up_to_at_most_one(which, request):
    profile = request.getfixturevalue(which).profile
    assert profile.ok and profile.ops
    for op in profile.ops:
        assert 0 <= op.share <= 1, op
        assert op.share == pytest.approx(op.time_s / profile.wall_s)
    listed = sum(op.time_s for op in profile.ops)
    assert sum(op.share for op in profile.ops) <= 1 + 1e-9
    # The ops' times add up to the device's busy time, which the wall time per call holds.
    assert listed + profile.other_ops_s == pytest.approx(profile.device_busy_s, rel=1e-6)
    assert 0 < profile.device_busy_s <= profile.wall_s
    assert profile.gap_s == pytest.approx(profile.wall_s - profile.device_busy_s)


def test_the_largest_op_of_matmul_is_a_dot(large):
    top = max(large.profile.ops, key=lambda op: op.time_s)
    assert top.kind == "dot" or (top.kind == "fusion" and "dot" in top.holds), top
    assert large.profile.ops[0] == top  # listed largest first
    assert "CPU" in large.profile.where


def test_a_tiny_input_is_mostly_overhead_a_large_one_mostly_work(tiny, large):
    assert tiny.profile.gap_share > large.profile.gap_share
    assert tiny.profile.gap_share > 0.5 > large.profile.gap_share
    # The roofline takes its overhead verdict from the profile where there is one.
    assert tiny.roofline.jax.host_gap_share == tiny.profile.gap_share
    assert tiny.roofline.limit("jax") == "overhead" != large.roofline.limit("jax")
    from jaxcompare.analysis.advice import advice

    overhead = [a for a in advice(tiny) if a.rule == "overhead"]
    # The idle share is the traced calls', not the timed call's quoted beside it (87 µs traced, 7.84 µs timed)
    assert len(overhead) == 1 and "traced calls (the tracer slows them) the device sat idle for" in overhead[0].text


def test_profiling_runs_after_the_timed_phases_and_the_result_round_trips(tiny, tiny_phases):
    result = tiny
    order = list(dict.fromkeys(tiny_phases))
    assert order.index("profile") > max(order.index("numpy"), order.index("runtime"))
    assert order.index("profile") < order.index("agreement")
    doc = json.loads(json.dumps(result.to_dict()))
    assert set(doc["profile"]) >= {"trace_file", "ops", "device_busy_s", "wall_s"}
    assert set(doc["profile"]["ops"][0]) >= {"name", "kind", "time_s", "share"}
    assert Result.from_dict(doc).profile == result.profile


def test_without_profile_there_is_none_and_old_results_load(tiny_result):
    result = tiny_result  # measured without profile_dir
    assert result.profile is None and result.to_dict()["profile"] is None
    doc = result.to_dict()
    del doc["profile"]  # as saved before profiles existed
    assert Result.from_dict(doc).profile is None
    export = json.loads((Path(__file__).parent / "data" / "export-v0.1-before-layout.json").read_text())
    assert all(Result.from_dict(r).profile is None for r in export["results"])


def test_a_profiler_already_running_gives_one_line_and_the_timings(tmp_path):
    import jax

    jax.profiler.start_trace(str(tmp_path / "someone-elses"))
    try:
        result = measure(Spec("elementwise", (1000,), device="cpu", timing=QUICK), profile_dir=str(tmp_path))
    finally:
        jax.profiler.stop_trace()
    assert result.jax.runtime.median_s > 0 and result.numpy_runtime.n >= 1
    assert not result.profile.ok
    assert "could not start" in result.profile.error and "\n" not in result.profile.error
    assert Result.from_dict(result.to_dict()).profile.error == result.profile.error


def test_an_unwritable_folder_gives_one_line_and_the_profiler_still_works_after(tmp_path):
    blocker = tmp_path / "file.txt"
    blocker.write_text("a file, so nothing can be created under it")
    result = measure(Spec("elementwise", (1000,), device="cpu", timing=QUICK),
                     profile_dir=str(blocker / "traces"))
    assert result.jax.runtime.median_s > 0
    assert "cannot write the trace" in result.profile.error and "\n" not in result.profile.error
    import jax

    x = jax.device_put(np.ones(100, np.float32))
    f = jax.jit(lambda a: a * 2)
    later = trace_calls(lambda: f(x).block_until_ready(), 2, tmp_path / "later")
    assert later.ok, later.error


def test_busy_time_is_the_union_of_the_ops_split_between_threads():
    # Two threads: op a runs 0-10 on one, op b 5-15 on the other; c nests inside a (a loop body).
    busy, per_op = attribute([(0, 10, "t1", "a"), (5, 15, "t2", "b"), (2, 4, "t1", "c")])
    assert busy == 15  # the union, not the sum (22)
    assert per_op["c"] == 2  # the innermost op on its thread
    assert per_op["a"] == 2 + 1 + 2.5  # 0-2, 4-5 alone, half of 5-10
    assert per_op["b"] == 2.5 + 5
    assert sum(per_op.values()) == busy


def test_the_hlo_index_names_dots_fusions_and_custom_calls():
    import jax
    import jax.numpy as jnp

    x = np.ones((16, 16), np.float32)
    module, index = hlo_index(jax.jit(lambda a: jnp.tanh(a @ a)).lower(x).compile().as_text())
    assert module and module.startswith("jit")
    kinds = {kind for kind, _ in index.values()}
    assert "dot" in kinds or any("dot" in holds for kind, holds in index.values() if kind == "fusion")
    _, svd = hlo_index(jax.jit(jnp.linalg.svd).lower(x).compile().as_text())
    targets = [holds for kind, holds in svd.values() if kind == "custom-call"]
    assert targets and all(len(t) == 1 for t in targets)


def test_profile_json_of_a_failure_is_one_field():
    failed = Profile.failed("the profiler could not start")
    assert failed.to_dict()["error"] == "the profiler could not start"
    assert Profile.from_dict(failed.to_dict()) == failed
    assert Profile.from_dict(None) is None
