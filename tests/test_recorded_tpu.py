"""What a TPU v5e recorded (tests/data/tpu/README.md) read by the engine: its float32 products at one
bfloat16 pass judged with that pass's tolerance, its profiler capture read as TPU kernels, its
device check's results imported into a history and judged by the checklist."""

from __future__ import annotations

import dataclasses
import gzip
import json
from pathlib import Path

import jax
import numpy as np
import pytest
from _results import by_id, with_jax

from jaxcompare.analysis.checks import FAIL, PASS, WARN
from jaxcompare.analysis.text import first_call_line, numpy_speeds_line
from jaxcompare.analysis.trust import trusted
from jaxcompare.catalog import get_case
from jaxcompare.engine.worker.agreement import compare_outputs, reduced_products, tolerance
from jaxcompare.engine.worker.profile import summarize_file
from jaxcompare.history.exchange import read_results
from jaxcompare.history.store import Store
from jaxcompare.model.platforms import PLATFORMS
from jaxcompare.model.profile import Profile
from jaxcompare.model.result import Result
from jaxcompare.model.stats import Stats

DATA = Path(__file__).parent / "data" / "tpu"


def recorded(precision: str) -> dict[str, dict]:
    lines = (DATA / f"selfcheck-{precision}.jsonl").read_text().splitlines()
    return {r["case"]: r for r in map(json.loads, lines) if "case" in r}


X32 = recorded("x32")
# The x32 cases whose error on the TPU was beyond float32's tolerance: those with matrix products.
BF16_CASES = sorted(name for name, r in X32.items() if r["max_rel_err"] > r["rtol"])


def lowered(name: str) -> str:
    case = get_case(name)
    inputs = case.make_inputs(case.small_shape, np.float32, np.random.default_rng(0))
    return jax.jit(case.jax_fn).lower(*inputs).as_text()


def test_the_recorded_float32_misses_are_the_cases_with_products():
    assert BF16_CASES == ["centered_gram", "convolve2d", "einsum", "matmul"]
    for name in BF16_CASES:
        # A TPU at the default matmul precision runs these products as one bfloat16 pass...
        assert reduced_products("float32", "tpu", "default", lambda n=name: lowered(n)) == "bfloat16"
        # ...but not at 'highest' (six passes), on a CPU, or in float64.
        assert reduced_products("float32", "tpu", "highest", lambda n=name: lowered(n)) is None
        assert reduced_products("float32", "cpu", "default", lambda n=name: lowered(n)) is None
        assert reduced_products("float64", "tpu", "default", lambda n=name: lowered(n)) is None
    # Cases without a product keep float32's tolerance on a TPU, and met it there.
    assert reduced_products("float32", "tpu", "default", lambda: lowered("logsumexp")) is None
    assert X32["logsumexp"]["max_rel_err"] <= X32["logsumexp"]["rtol"]


def test_high_keeps_float32_s_tolerance_on_a_tpu_and_tf32_s_on_a_gpu():
    # Three bfloat16 passes gave 1.2e-5 against float64 on the centered Gram at 1000x1000 (a TPU v5e),
    # well inside float32's 1e-4; one pass gave 4.0e-4. A GPU runs HIGH as TF32 (jax.lax.Precision).
    assert reduced_products("float32", "tpu", "high", lambda: lowered("matmul")) is None
    assert tolerance(get_case("centered_gram"), "float32")[0] > 1.2e-5
    assert reduced_products("float32", "gpu", "high", lambda: lowered("matmul")) == "tensorfloat32"
    assert reduced_products("float32", "gpu", "highest", lambda: lowered("matmul")) is None


@pytest.mark.parametrize("name", BF16_CASES)
def test_a_recorded_bfloat16_error_passes_at_its_tolerance_and_not_at_float32s(name):
    record = X32[name]
    case = get_case(name)
    err = record["max_rel_err"]
    float32_rtol, _ = tolerance(case, "float32")
    bf16_rtol, _ = tolerance(case, "float32", products="bfloat16")
    assert float32_rtol < err < bf16_rtol, (err, float32_rtol, bf16_rtol)
    # The same error in an output, judged as the worker judges it: fails at float32, agrees named bfloat16.
    ref = np.random.default_rng(1).standard_normal((16, 16))
    got = ref + err * np.abs(ref).max() * 0.99 * np.eye(16)
    inputs = (ref.astype(np.float32),)
    plain = compare_outputs(case, "float32", inputs, (ref.astype(np.float32),), (got.astype(np.float32),))
    judged = compare_outputs(case, "float32", inputs, (ref.astype(np.float32),), (got.astype(np.float32),),
                             products="bfloat16")
    assert not plain["ok"] and plain["products"] is None
    assert judged["ok"] and judged["products"] == "bfloat16" and judged["tf32"] is False
    assert judged["rtol"] == bf16_rtol and PLATFORMS["tpu"].float32_products == "bfloat16"


def test_the_tpu_profile_reads_as_tpu_kernels_with_the_device_mostly_idle():
    profile = summarize_file(DATA / "tpu-centered-gram.xplane.pb")
    assert [d.name for d in profile.devices] == ["/device:TPU:0"]
    names = [op.name for op in profile.ops]
    assert "fusion" in names and profile.device_busy_s > 0
    assert profile.device_busy_s <= sum(op.time_s for op in profile.ops) + 1e-12
    # Five calls of the docs' example kept the chip busy for well under a millisecond of the capture's
    # wall time: the host round trip, not the chip, is most of a blocked call there.
    assert profile.gap_share > 0.9


def test_the_tpu_device_check_imports_into_a_fresh_history(tmp_path):
    # A TPU names its device "TPU_0(process=0,(0,0,0,0))": the import once refused it as "not a name".
    doc = json.loads((DATA / "device-check.json").read_text())
    store = Store(tmp_path / "fresh.sqlite3")
    added, skipped = store.import_file(DATA / "device-check.json")
    assert added == doc["count"] == 4 and skipped == 0
    results = store.load(store.all_ids())
    assert {r.jax.device for r in results} == {"TPU_0(process=0,(0,0,0,0))"}
    assert {r.jax.agreement["products"] for r in results} == {"bfloat16"}
    assert sorted(r.shape[0] for r in results if r.case == "matmul") == [256, 1024, 4096]


# --- the device check's results, as the checklist reads them -------------------------------------
CHECKED = {f"{r.case} {'x'.join(map(str, r.shape))}": r
           for r in read_results(json.loads((DATA / "device-check.json").read_text()))}
DOCS_EXAMPLE = CHECKED["centered_gram 1000x1000"]


def _round_trip(result) -> float:
    return result.roofline.jax.empty_call_s


def _per_call(seconds: float) -> Stats:
    return Stats.from_samples([seconds * (1 + 0.01 * i) for i in range(-3, 4)], loops=200)


def test_the_tpu_workload_without_back_to_back_reads_the_blocked_runtime():
    """Recorded before back to back was timed: the blocked runtime against the host's round trip
    (516 µs against 526 µs for the docs' example), as before, and the item says which it read."""
    assert all(r.jax.back_to_back is None and r.profile is None for r in CHECKED.values())
    docs = by_id(DOCS_EXAMPLE)["workload"]
    assert docs.status == FAIL and "516 µs per call (blocked runtime) vs 526 µs" in docs.reason
    assert by_id(CHECKED["matmul 4096x4096"])["workload"].status == WARN


def test_the_tpu_workload_is_judged_from_calls_back_to_back():
    """The host's round trip (0.53 ms a blocked call there) is in every blocked runtime; back to back
    it overlaps the work. Work far above it passes where the blocked runtime alone failed, and says
    it read calls back to back."""
    trip = _round_trip(DOCS_EXAMPLE)
    large = by_id(with_jax(DOCS_EXAMPLE, back_to_back=_per_call(20 * trip)))["workload"]
    assert large.status == PASS and "(calls back to back)" in large.reason, large
    # Work a bit above the round trip: a blocked call pays both, so the round trip is a large share
    # of it (warn), not most of it (fail).
    some = by_id(with_jax(DOCS_EXAMPLE, back_to_back=_per_call(1.5 * trip)))["workload"]
    assert some.status == WARN and "calls back to back" in some.reason, some
    # The docs' example measured by hand there: 0.12 ms a call back to back, a quarter of the round trip.
    small = by_id(with_jax(DOCS_EXAMPLE, back_to_back=_per_call(0.12e-3)))["workload"]
    assert small.status == FAIL and "120 µs per call (calls back to back)" in small.reason, small


def test_the_tpu_workload_prefers_the_profiles_device_time():
    """The profile's device time is the work alone: it wins over calls back to back, and says so; a
    profile that failed, or one summarised over a whole window (not per call), is not used."""
    trip = _round_trip(DOCS_EXAMPLE)
    queued = with_jax(DOCS_EXAMPLE, back_to_back=_per_call(0.12e-3))
    busy = Profile(device_busy_s=20 * trip, wall_s=21 * trip, calls=5)
    profiled = by_id(dataclasses.replace(queued, profile=busy))["workload"]
    assert profiled.status == PASS and "device time from the profile" in profiled.reason, profiled
    for unused in (Profile.failed("no profiler"), dataclasses.replace(busy, calls=0)):
        check = by_id(dataclasses.replace(queued, profile=unused))["workload"]
        assert check.status == FAIL and "calls back to back" in check.reason, check


def test_a_tpu_first_call_below_its_compile_beyond_both_ranges_warns():
    """The docs' example there: first call 410 ms (402-432 ms) against its compile, 913 ms with
    its three phases' ranges adding up to 436-929 ms. Cheaper than its own compile, it cannot have
    paid it: a warning, though it is not under half the fastest compile (the older rule)."""
    check = by_id(DOCS_EXAMPLE)["first_call"]
    assert check.status == WARN and check.pitfall == "jit", check
    assert "410 ms (402 ms to 432 ms)" in check.reason and "913 ms (436 ms to 929 ms)" in check.reason
    assert "cannot have paid for it" in check.reason
    # matmul 4096x4096 too: 781 ms (780-782 ms) against 1.27 s (795 ms-1.74 s).
    assert by_id(CHECKED["matmul 4096x4096"])["first_call"].status == WARN
    # matmul 1024x1024: first call 332 ms (322-342 ms), compile 560 ms (320-800 ms): the ranges
    # overlap, so nothing contradicts.
    overlapping = by_id(CHECKED["matmul 1024x1024"])["first_call"]
    assert overlapping.status == PASS and "within its range" in overlapping.reason, overlapping


def test_the_devices_own_time_stands_beside_the_blocked_figure_on_the_page_and_in_the_notebook():
    from jaxcompare.analysis.summary import device_time_text, verdict_lines

    assert device_time_text(DOCS_EXAMPLE) is None  # recorded before back to back was measured
    # The docs' example with 200 calls back to back at 119 µs each (typed by hand on that TPU host).
    pipelined = dataclasses.replace(DOCS_EXAMPLE, jax=dataclasses.replace(
        DOCS_EXAMPLE.jax, back_to_back=Stats.from_samples([119e-6, 119e-6, 118e-6, 121e-6, 119e-6, 120e-6, 119e-6])))
    text = device_time_text(pipelined)
    assert text.startswith("**The device's own time.** Per call, JAX took 516 µs blocked")
    assert "119 µs back to back" in text and "round trip, a blocked empty call, is 526 µs" in text
    assert text in verdict_lines(pipelined)


def test_a_cpu_result_keeps_back_to_back_to_the_cli(tiny_result):
    from jaxcompare.analysis.summary import device_time_text

    assert tiny_result.jax.back_to_back is not None and device_time_text(tiny_result) is None


def test_a_tpu_matmul_at_the_default_precision_agrees_at_the_bfloat16_pass_s_tolerance_named():
    """The recorded 2048-class matmuls erred by 4e-4 against NumPy: within one bfloat16 pass's tolerance,
    and the checklist and the CLI's agreement line both say that was the tolerance and why."""
    from jaxcompare.cli.report import result_table

    for name in ("centered_gram 1000x1000", "matmul 1024x1024", "matmul 4096x4096"):
        result = CHECKED[name]
        check = by_id(result)["agreement"]
        assert check.status == PASS and "one bfloat16 pass (8-bit mantissa), 1e-02" in check.reason, check
        assert "the TPU runs them at under JAX's default matmul precision" in check.reason
        assert "(rtol 1e-02 for float32 products at one bfloat16 pass (8-bit mantissa)" in result_table(result)
    beyond = DOCS_EXAMPLE.jax.agreement | {"ok": False, "max_rel_err": 0.05}
    check = by_id(with_jax(DOCS_EXAMPLE, agreement=beyond))["agreement"]
    assert check.status == FAIL and "beyond even the tolerance of float32 products at one bfloat16" in check.reason
    assert check.pitfall == "tf32"


HAND = {path.stem: Result.from_dict(json.loads(path.read_text())) for path in (DATA / "hand-protocol").glob("*.json")}


@pytest.mark.parametrize("name", sorted(HAND))
def test_a_tpu_first_call_recorded_in_a_fresh_process_is_what_percent_time_pays(name):
    """The first call as the hand protocol's %time paid it (1.27 s and 1.97 s by hand): a fresh
    process's, with its compile in it, and the worker's recompile beside it."""
    result = HAND[name]
    assert result.backend == "tpu" and result.jax.protocol["first_call"]["process"] == "fresh"
    assert result.jax.first_call.median_s > result.jax.first_call_recompile.median_s
    checks = by_id(result)
    assert checks["first_call"].status == PASS and "in a fresh process" in checks["first_call"].reason
    assert "in a fresh process, as %time shows it" in first_call_line(result)
    assert checks["agreement"].status == PASS
    if result.jax.agreement.get("products"):  # a layernorm has no products to run at bfloat16
        assert "one bfloat16 pass" in checks["agreement"].reason


def test_the_tpu_hosts_numpy_is_plain_as_the_docs_lines_run_it_with_the_kept_figure_beside():
    # The docs' example and a layernorm passed to compare(), as the witness recorded them beside the tool:
    # the docs' lines gave 14.6-15 and 44-47 ms in a plain process, 3-8.2 ms with freed memory kept.
    for name in ("centered_gram-1000x1000-x32", "layernorm-4096x1024-x32"):
        result = HAND[name]
        assert result.numpy_kept is not None and result.numpy_memory_speedup > 3, name
        assert "as a plain process runs it" in numpy_speeds_line(result)


def test_the_tpu_matmul_at_the_default_precision_is_trusted():
    result = HAND["matmul-2048x2048-x32"]
    assert result.spec.matmul_precision == "default" and result.jax.agreement["products"] == "bfloat16"
    assert trusted(result)


@pytest.mark.parametrize(("recorded_file", "title", "chinese"), [
    (DATA / "device-check.json", "6. Reduced precision: float32 matmuls on a TPU run one bfloat16 pass",
     "6. 精度降低：TPU 上的 float32 矩阵乘法只做一遍 bfloat16"),
    (DATA.parent / "device-check-h200.json",
     "6. Reduced precision: float32 matmuls on recent NVIDIA GPUs default to TF32",
     "6. 精度降低：较新的 NVIDIA GPU 上的 float32 矩阵乘法默认使用 TF32"),
])
def test_pitfall_6_is_titled_by_the_platforms_reduced_precision(recorded_file, title, chinese):
    # Both reports were saved under "6. TF32: GPU float32 matmuls default to TF32-class precision",
    # which a TPU run showed beside rows of bfloat16 passes. Shown by id, they read as measured now.
    from jaxcompare import i18n
    from jaxcompare.app.pitfalls_view import short_title, title_text
    from jaxcompare.cli import pitfall_lines
    from jaxcompare.engine.common.lessons import pitfall_title

    report = json.loads(recorded_file.read_text())["device_check"]["pitfalls"]
    tf32 = next(p for p in report["pitfalls"] if p["id"] == "tf32")
    assert tf32["title"].startswith("6. TF32: GPU float32")
    assert pitfall_lines(tf32, report["backend"])[0] == title == title_text("tf32", report["backend"])
    with i18n.using("zh"):
        assert pitfall_lines(tf32, report["backend"])[0] == chinese == title_text("tf32", report["backend"])
    assert pitfall_title("tf32", "cpu").startswith("6. Reduced precision: does not apply on the CPU")
    # Before a platform is known, both; the summary table's short title is one for every platform.
    assert "TF32 on GPUs" in pitfall_title("tf32") and "bfloat16 pass on TPUs" in pitfall_title("tf32")
    assert short_title("tf32") == "6. Reduced precision"


def _profiled_ports(case: str) -> tuple[dict, list]:
    from jaxcompare.analysis.ports import PortRun

    doc = json.loads(gzip.decompress((DATA / "ports-profiled" / f"ports-{case}.json.gz").read_bytes()))
    return doc, [PortRun(p["name"], Result.from_dict(p["result"]) if p["result"] else None, error=p["error"])
                 for p in doc["ports"]]


@pytest.mark.parametrize("case", ["matmul", "elementwise", "cumsum"])
def test_each_port_traced_on_the_tpu_says_its_time_on_the_device_beside_the_blocked_call(case):
    from jaxcompare.analysis.ports import port_row, ports_verdict

    doc, runs = _profiled_ports(case)
    assert all(r.result is not None for r in runs)  # every port ran: none failed, none past its deadline
    for run in runs:
        found = run.result.device_time
        assert found is not None and found[0] == "profile" and run.result.profile.trace_file
        # The device's time is under the blocked call, which holds the host's round trip.
        assert found[1] < run.result.jax.runtime.median_s
        assert "on the device" in port_row(run, None)
    verdict = ports_verdict(runs, case=doc["case"], shape=tuple(doc["shape"]), precision=doc["precision"])
    assert (verdict.fastest, verdict.decided) == (doc["fastest"], doc["decided"])


def test_the_tpu_runs_jnp_matmul_at_its_peak_and_the_pallas_kernel_below_it_on_the_device():
    _, runs = _profiled_ports("matmul")
    by_name = {r.name: r.result for r in runs}
    jnp_share, kernel_share = by_name["jnp"].peak_fraction("jax"), by_name["pallas"].peak_fraction("jax")
    assert jnp_share >= 0.7 > by_name["jnp"].peak_fraction_blocked()  # the blocked call holds the round trip
    assert kernel_share < jnp_share and by_name["pallas"].device_time[1] > by_name["jnp"].device_time[1]
    assert "1024x1024x512 on a TPU" in by_name["pallas"].case_info["jax_name"]
