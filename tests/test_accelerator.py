"""What changes on an accelerator, checked on the CPU path: the third side (JAX on the CPU)
measured for real, the ceilings for the fraction of peak (the CPU's measured, cached matmul
rate; a GPU's published peak from the table), the transfer rate, and the words for them."""

from __future__ import annotations

import json
import math
import re
import threading
import time
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest
from _results import make_result, stats, with_jax
from support import QUICK

from jaxcompare import Result, Spec
from jaxcompare.analysis.checks import check_on_device
from jaxcompare.engine.common import ceilings_cache
from jaxcompare.engine.common.load import BUSY_CORES, LoadMeter, is_busy
from jaxcompare.engine.worker import ceilings
from jaxcompare.engine.worker.measure import measure
from jaxcompare.model.formatting import dumps, peak_sentence, third_side_verdict, transfer_rate_text
from jaxcompare.model.peaks import peak_for
from jaxcompare.model.phases import JAX_PHASES
from jaxcompare.model.sides import JaxSide, Peak, link_name


@pytest.fixture(scope="module")
def third_side_run():
    """A CPU-only host asked for the third side anyway: JAX on the CPU measured again beside the
    main (CPU) side, on a call large enough that compile and work dwarf dispatch; and the executables
    the main side's jitted function held when its calls back to back were timed after the third side."""
    from jaxcompare.engine.worker import measure as measuring
    from jaxcompare.engine.worker.runtimes import _compiled_count

    held: list[int | None] = []

    def back_to_back(run, jitted, dev_inputs, blocked_s):
        held.append(_compiled_count(jitted))
        return timed(run, jitted, dev_inputs, blocked_s)

    timed = measuring.back_to_back
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(measuring, "back_to_back", back_to_back)
        result = measure(Spec("matmul", (200, 200), device="cpu", timing=QUICK), cpu_side=True)
    return result, held


@pytest.fixture(scope="module")
def third_side(third_side_run):
    return third_side_run[0]


def test_the_main_side_is_compiled_again_after_the_third_side_cleared_the_caches(third_side_run):
    # The third side's compile phases clear JAX's caches. Unbuilt again, the next loop of the main side's
    # calls paid a compile: a TPU's back-to-back probe read 0.4 s for 9 calls and sized its loops to 9.
    assert third_side_run[1] == [1]


def test_the_third_side_has_real_statistics_of_every_phase(third_side):
    side = third_side.jax_cpu
    assert side is not None and side.device == "cpu:0"
    for name in JAX_PHASES:
        s = side.phase(name)
        assert s.n >= 1 and s.median_s > 0 and len(s.samples_s) == s.n, name
    assert side.runtime.n >= QUICK.min_samples
    # Directions the protocol promises, measured in this run: a cold first call pays for the
    # compile, and a blocked 200x200 product outlasts its dispatch.
    assert side.first_call.median_s > side.runtime.median_s + 0.5 * side.compile.median_s
    assert side.runtime.median_s > side.dispatch.median_s
    assert side.protocol == {"blocked": True, "compile_excluded": True, "inputs_on_device": True}
    assert side.agreement["ok"] and side.transfer_bytes == 2 * 200 * 200 * 4


def test_the_third_side_is_in_the_json_and_survives_a_round_trip(third_side):
    doc = json.loads(dumps(third_side.to_dict()))
    cpu = doc["jax_cpu"]
    # One layout for both JAX sides; back to back and the worker's recompile beside a fresh first call: the main one's.
    assert set(cpu) == set(doc["jax"]) - {"back_to_back", "first_call_recompile"}
    assert set(cpu) >= {"device", "transfer", "compile", "first_call", "runtime", "dispatch", "fetch", "protocol"}
    assert doc["cpu_speedup"] == pytest.approx(doc["numpy"]["runtime"]["median_s"] / cpu["runtime"]["median_s"])
    assert doc["gflops"]["jax_cpu"] == pytest.approx(doc["flops"] / cpu["runtime"]["median_s"] / 1e9)
    assert cpu["compile"]["total_s"] == pytest.approx(sum(cpu["compile"][p]["median_s"]
                                                          for p in ("trace", "lower", "compile")))
    again = Result.from_dict(doc)
    assert again.jax_cpu == third_side.jax_cpu and again.peak == third_side.peak
    assert json.loads(dumps(again.to_dict())) == doc


def test_a_cpu_only_run_has_no_third_side(fair_result):
    """The default on a CPU-only host: the third side would repeat the main one."""
    assert fair_result.backend == "cpu" and fair_result.jax_cpu is None
    assert fair_result.to_dict()["jax_cpu"] is None and fair_result.cpu_speedup is None
    assert third_side_verdict(fair_result) is None


def test_on_the_cpu_backend_both_sides_are_held_to_the_measured_cpu_rate(third_side):
    peak = third_side.peak
    assert peak.source == "measured" and peak.flops_per_s == peak.numpy_flops_per_s == peak.cpu_flops_per_s
    assert peak.label == peak.numpy_label == "float32 matmul"
    doc = third_side.to_dict()["peak"]
    flops = 2 * 200**3
    assert doc["jax_fraction"] == pytest.approx(flops / third_side.jax.runtime.median_s / peak.flops_per_s)
    assert doc["numpy_fraction"] == pytest.approx(flops / third_side.numpy_runtime.median_s / peak.flops_per_s)
    assert doc["jax_cpu_fraction"] == pytest.approx(flops / third_side.jax_cpu.runtime.median_s / peak.flops_per_s)
    assert doc["describes"] == "this CPU's measured float32 matmul rate"
    assert peak_sentence(third_side).startswith("Of this CPU's measured float32 matmul rate")


def test_no_peak_without_a_flop_count():
    r = measure(Spec("sort", (1000,), device="cpu", timing=QUICK))
    assert r.flops is None and r.peak is None and r.to_dict()["peak"] is None
    assert peak_sentence(r) is None


def test_the_cpu_rate_is_measured_once_and_then_read_from_the_cache(tmp_path):
    path = tmp_path / "cpu_peaks.json"
    first = ceilings.cpu_rate("float32", None, path=path)
    doc = json.loads(path.read_text())
    key = ceilings.host_key("float32")
    assert doc["schema"] == ceilings_cache.CACHE_SCHEMA and first == doc["peaks"][key]["numpy_flops_per_s"] > 1e6
    # A second call reads the file: a value written there is what it returns.
    doc["peaks"][key].update(numpy_flops_per_s=12345.0, busy=False)  # as if measured on a quiet machine
    path.write_text(json.dumps(doc))
    assert ceilings.cpu_rate("float32", None, path=path) == 12345.0
    # The key names what the rate depends on.
    assert "float32" in key and "cores" in key and "numpy" in key and "jax" in key
    assert ceilings.host_key("float64") != key


def test_a_rate_measured_on_a_busy_machine_is_measured_again_a_few_times(tmp_path):
    path = tmp_path / "cpu_peaks.json"
    key = ceilings.host_key("float32")

    def cache(**entry):
        path.write_text(json.dumps({"schema": ceilings_cache.CACHE_SCHEMA, "peaks": {key: entry}}))

    cache(numpy_flops_per_s=1000.0, busy=True, measurements=1)  # far below any real CPU
    assert ceilings.cpu_rate("float32", None, path=path) > 1e6  # measured again, the best kept
    assert json.loads(path.read_text())["peaks"][key]["measurements"] == 2
    cache(numpy_flops_per_s=1000.0, busy=True, measurements=ceilings_cache.BUSY_RETRIES + 1)
    assert ceilings.cpu_rate("float32", None, path=path) == 1000.0  # retries used up: kept
    cache(numpy_flops_per_s=1000.0, busy=False, measurements=1)
    assert ceilings.cpu_rate("float32", None, path=path) == 1000.0  # a quiet measurement stands


def test_busy_means_other_processes_took_a_share_not_this_ones_own_work(tmp_path, neighbour):
    """A ceiling measured beside a process spinning on a core is marked busy (and measured again
    later); this process's own work, on every core it may use, is not someone else's."""
    path = tmp_path / "cpu_peaks.json"
    rates = ("numpy_flops_per_s", "jax_flops_per_s")

    def measure_alone() -> dict:
        x = np.ones((600, 600))
        end = time.monotonic() + 0.8
        while time.monotonic() < end:  # our own BLAS threads, as a real ceiling's are
            x @ x
        return {"numpy_flops_per_s": 1e9}

    neighbour.suspend()  # stopped while we work alone
    # Our own BLAS threads never read as other programs' load: beside an idle span of the same length
    # (other test processes may keep the machine busy), working adds nothing to what others took.
    meter = LoadMeter()
    with meter.phase("idle") as idle:
        threading.Event().wait(0.8)
    with meter.phase("own") as own:
        measure_alone()
    assert own.others_cores < idle.others_cores + BUSY_CORES, (own.others_cores, idle.others_cores)
    alone = ceilings._cached_entry(path, "alone", rates, measure_alone, False)["busy"]
    if not is_busy(idle.others_cores):  # on a quiet machine, working alone is not busy
        assert alone is False
    neighbour.resume()

    def measure_beside_the_neighbour() -> dict:
        threading.Event().wait(0.8)  # the span it spins in, every core to itself but ours idle
        return {"numpy_flops_per_s": 1e9}

    started = time.monotonic()
    while neighbour.cpu_times().user < 0.1:  # its interpreter is still starting
        assert time.monotonic() - started < 30, "the neighbour never started spinning"
    assert ceilings._cached_entry(path, "beside", rates, measure_beside_the_neighbour, False)["busy"] is True


def test_a_corrupt_cache_is_measured_again(tmp_path):
    path = tmp_path / "cpu_peaks.json"
    path.write_text("{not json")
    assert ceilings.cpu_rate("float64", None, path=path) > 1e6
    assert ceilings.host_key("float64") in json.loads(path.read_text())["peaks"]


def test_the_cache_lives_beside_the_results_database_unless_named(monkeypatch, tmp_path):
    monkeypatch.delenv("JAXCOMPARE_CPU_PEAKS", raising=False)
    monkeypatch.setenv("JAXCOMPARE_DB", str(tmp_path / "db" / "results.sqlite3"))
    assert ceilings_cache.cache_path() == tmp_path / "db" / "cpu_peaks.json"
    monkeypatch.setenv("JAXCOMPARE_CPU_PEAKS", str(tmp_path / "host" / "peaks.json"))
    assert ceilings_cache.cache_path() == tmp_path / "host" / "peaks.json"


@pytest.mark.parametrize(("dtype", "precision", "label", "value"), [
    ("float32", "default", "TF32", 989e12 / 2),  # XLA's default on tensor-core GPUs
    ("float32", "highest", "FP32", 67e12),
    ("float64", "default", "FP64", 67e12),
])
def test_a_gpu_is_held_to_its_published_peak_at_the_precision_used(dtype, precision, label, value):
    import jax

    gpu = SimpleNamespace(platform="gpu", device_kind="NVIDIA H200")  # a device record, as JAX reports it
    with jax.default_matmul_precision(None if precision == "default" else precision):
        peak = ceilings.ceilings(gpu, dtype, dtype, with_cpu_side=True)
    assert (peak.source, peak.label, peak.device) == ("table", label, "NVIDIA H200")
    assert peak.flops_per_s == pytest.approx(value)
    assert peak.matmul_precision == precision
    assert peak.numpy_flops_per_s > 0 and peak.cpu_flops_per_s > 0 and peak.numpy_label == f"{dtype} matmul"
    assert peak.describe() == f"the NVIDIA H200's {label} peak"


@pytest.mark.parametrize(("precision", "label", "value"), [
    ("default", "BF16", 197e12),  # one bfloat16 pass: Google's published peak
    ("high", "BF16/3", 197e12 / 3),  # three passes, six: derived, published by no one
    ("highest", "BF16/6", 197e12 / 6),
])
def test_a_tpu_is_held_to_its_bf16_peak_over_the_passes_of_the_precision_used(precision, label, value):
    tpu = SimpleNamespace(platform="tpu", device_kind="TPU v5 lite")  # a TPU v5e, as JAX names it
    with ceilings.use_matmul_precision(precision):
        peak = ceilings.ceilings(tpu, "float32", "float32", with_cpu_side=False)
    assert (peak.source, peak.label, peak.matmul_precision) == ("table", label, precision)
    assert peak.flops_per_s == pytest.approx(value)
    if precision == "default":
        assert peak.describe() == "the TPU v5 lite's BF16 peak"
    else:
        assert peak.describe().startswith(f"the TPU v5 lite's derived {label} rate")
        assert "no vendor publishes this figure" in peak.to_dict()["describes"]


def test_a_device_missing_from_the_table_has_an_unknown_peak_not_a_wrong_one():
    assert peak_for("NVIDIA A30", "float32") is None
    peak = ceilings.ceilings(SimpleNamespace(platform="gpu", device_kind="NVIDIA A30"), "float32", "float32",
                             with_cpu_side=False)
    assert peak.flops_per_s is None and peak.source is None and peak.cpu_flops_per_s is None
    r = replace(with_jax(make_result(shape=(100, 100)), device_kind="NVIDIA A30"), flops=2e6, backend="gpu", peak=peak)
    assert r.peak_fraction("jax") is None and r.peak_fraction("numpy") > 0
    assert "unknown" in peak_sentence(r) and "NVIDIA A30" in peak_sentence(r)


# --- the words, on synthetic results with exact numbers -------------------------------------------
def _gpu_result(numpy_s: float, gpu_s: float, cpu_s: float) -> Result:
    base = make_result(shape=(1000, 1000), numpy_s=numpy_s, jax_s=gpu_s)
    side = JaxSide(device="cpu:0", device_kind="cpu", transfer=stats(1e-4), trace=stats(1e-3),
                   lower=stats(1e-3), compile=stats(1e-2), first_call=stats(2e-2), runtime=stats(cpu_s),
                   dispatch=stats(cpu_s / 10), fetch=stats(1e-5), transfer_bytes=4_000_000)
    peak = Peak(flops_per_s=494.5e12, source="table", device="NVIDIA H200", label="TF32",
                numpy_flops_per_s=1e11, numpy_label="float32 matmul", cpu="Test CPU", cpu_flops_per_s=1e11)
    protocol = {"blocked": True, "compile_excluded": True, "inputs_on_device": True, "matmul_precision": "default"}
    gpu = with_jax(base, device="cuda:0", device_kind="NVIDIA H200", transfer_bytes=4_000_000, protocol=protocol)
    return replace(gpu, backend="gpu", flops=2e9, jax_cpu=side, peak=peak)


def test_the_quantecon_surprise_reads_at_a_glance():
    """The GPU slower than NumPy on latency-bound work, JAX on the CPU faster than both."""
    r = _gpu_result(numpy_s=1e-4, gpu_s=2e-4, cpu_s=5e-5)
    text = third_side_verdict(r)
    assert text.startswith("JAX on the CPU is faster than on the GPU here (4.00x), and faster than NumPy")
    assert r.speedup < 1 < r.cpu_speedup


def test_the_verdict_says_whether_the_speedup_comes_from_the_device_or_from_xla():
    device = third_side_verdict(_gpu_result(numpy_s=1e-2, gpu_s=1e-4, cpu_s=2e-2))
    assert device.startswith("The speedup comes from the GPU, not from XLA: JAX on the CPU is 2.00x slower")
    both = third_side_verdict(_gpu_result(numpy_s=1e-2, gpu_s=1e-4, cpu_s=5e-3))
    assert both.startswith("The speedup comes from XLA and the GPU together") and "adds 50.00x" in both
    xla = third_side_verdict(_gpu_result(numpy_s=1e-2, gpu_s=1e-3, cpu_s=1.05e-3))
    assert xla.startswith("The speedup comes from XLA, not from the GPU: JAX on the CPU is about as fast")
    # The TPU's docs' example: NumPy 2.87 ms, JAX on the CPU 2.86 ms: not "already 1.00x faster".
    even = third_side_verdict(_gpu_result(numpy_s=2.87e-3, gpu_s=5.19e-4, cpu_s=2.86e-3))
    assert even.startswith("The speedup comes from the GPU: JAX on the CPU is about as fast as NumPy (within 10%)")
    assert "on the GPU 5.53x faster" in even
    neither = third_side_verdict(_gpu_result(numpy_s=1e-3, gpu_s=2e-3, cpu_s=4e-3))
    assert neither.startswith("The GPU beats JAX on the CPU (2.00x) but not NumPy")


def test_the_peak_sentence_names_each_ceiling():
    r = _gpu_result(numpy_s=1.0, gpu_s=1e-5, cpu_s=2.0)
    doc = r.to_dict()["peak"]
    assert doc["jax_fraction"] == pytest.approx(2e9 / 1e-5 / 494.5e12)  # 40%
    assert doc["source"] == "table" and doc["describes"] == "the NVIDIA H200's TF32 peak"
    assert peak_sentence(r) == ("JAX reached 40% of the NVIDIA H200's TF32 peak (494 TFLOP/s); of this CPU's "
                                "measured float32 matmul rate (100 GFLOP/s), NumPy reached 2.0% and JAX on the "
                                "CPU 1.0%.")


def test_transfer_rate_says_which_link_it_crossed(fair_result):
    gpu = _gpu_result(numpy_s=1e-2, gpu_s=1e-4, cpu_s=2e-2)
    assert gpu.jax.transfer_bytes_per_s == pytest.approx(4e6 / gpu.jax.transfer.median_s)
    assert transfer_rate_text(gpu) == "40 GB/s host→device over PCIe"
    assert link_name("gpu", "NVIDIA GH200 480GB") == "NVLink-C2C" and link_name("tpu", "TPU v5 lite") == "PCIe"
    assert "over PCIe" in check_on_device(gpu).reason
    # On the CPU backend the inputs were aliased or copied within host memory, never "PCIe".
    cpu_text = transfer_rate_text(fair_result)
    if fair_result.jax.transfer_zero_copy:
        assert cpu_text.startswith("no copy") and fair_result.jax.transfer_bytes_per_s is None
    else:
        assert ", a copy within host memory" in cpu_text and fair_result.jax.transfer_bytes_per_s > 0
    assert "PCIe" not in cpu_text


def test_results_saved_before_have_neither_third_side_nor_peak():
    doc = make_result().to_dict()
    for key in ("jax_cpu", "peak"):
        doc.pop(key)
    doc["jax"].pop("transfer_bytes")
    old = Result.from_dict(doc)
    assert old.jax_cpu is None and old.peak is None and old.jax.transfer_bytes is None
    assert old.jax.transfer_bytes_per_s is None and transfer_rate_text(old) == ""
    assert math.isfinite(old.speedup)


# --- on the pages: the view and chart functions ---------------------------------------------------
def test_compare_shows_a_third_row_and_column_only_with_the_third_side(fair_result):
    from jaxcompare.analysis import summary
    from jaxcompare.app import views

    gpu = _gpu_result(numpy_s=1e-4, gpu_s=2e-4, cpu_s=5e-5)
    figures = summary.third_side_figures(gpu)
    assert [(f.label, f.value) for f in figures] == [("JAX on CPU", "50 µs"), ("Speedup on CPU", "2.00x"),
                                                     ("GPU over CPU", "0.25x")]
    # Set aside (the machine was busy), the ratio tiles show their runtimes' range, never the bare ratio.
    busy = replace(gpu, load={"cores": 2, "phases": {
        p: {"wall_s": 1.0, "others_cpu_s": 1.3} for p in ("numpy", "runtime")}})
    doubtful = summary.third_side_figures(busy)[1:]
    assert [f.detail for f in doubtful] == ["doubtful", "doubtful"]
    assert all(re.fullmatch(r"\d+\.\d+x–\d+\.\d+x", f.value) for f in doubtful), doubtful
    assert summary.third_side_text(gpu).startswith("**JAX on the CPU.** JAX on the CPU is faster than on the GPU")
    assert summary.peak_text(gpu).startswith("**Fraction of peak.** JAX reached")
    assert [row["JAX on CPU"] for row in views.phase_table(gpu)][:2] == ["", "100 µs"]
    assert views.sweep_table([gpu])[0]["JAX on CPU"] == "50 µs"
    assert "crosses PCIe" in summary.headline(gpu)[4].help and "40 GB/s" in summary.headline(gpu)[4].help
    # A CPU-only run: no third row, no third column, a note that says n/a.
    assert summary.third_side_figures(fair_result) == [] and summary.third_side_text(fair_result) is None
    assert "JAX on CPU" not in views.phase_table(fair_result)[0]
    assert "JAX on CPU" not in views.sweep_table([fair_result])[0]
    assert "n/a here" in views.notes_markdown(fair_result)[0]


def test_the_notebook_shows_the_third_side_and_the_peak_as_the_compare_page_does():
    from jaxcompare.analysis import summary
    from jaxcompare.notebook import display

    gpu = _gpu_result(numpy_s=1e-4, gpu_s=2e-4, cpu_s=5e-5)
    rows = summary.figure_rows(gpu)
    assert [f.label for f in rows[2]] == ["JAX on CPU", "Speedup on CPU", "GPU over CPU"]
    lines = display.verdict_lines(gpu)
    assert lines[1:] == [summary.third_side_text(gpu), summary.peak_text(gpu)]
    page, text = display.result_html(gpu), display.result_text(gpu)
    assert ">JAX on CPU<" in page and ">GPU over CPU<" in page
    assert "<b>JAX on the CPU.</b> JAX on the CPU is faster than on the GPU" in page
    assert "<b>Fraction of peak.</b> JAX reached" in page
    assert "JAX on CPU: 50 µs" in text and "\nJAX on the CPU. JAX on the CPU is faster" in text
    assert "\nFraction of peak. JAX reached" in text


def test_charts_draw_the_third_side_in_its_own_colour(fair_result):
    from jaxcompare.app import charts
    from jaxcompare.model.palette import JAX_CPU_COLOR

    gpu = _gpu_result(numpy_s=1e-4, gpu_s=2e-4, cpu_s=5e-5)
    spec = charts.phase_breakdown_chart(gpu).to_dict()
    assert len(spec["layer"]) == 12  # stem, CI, dot, text for NumPy (centred), JAX (above), JAX on CPU (below)
    rows = [r for layer in spec["layer"] for r in layer["data"]["values"]]
    cpu = {r["phase"]: r for r in rows if r["side"] == charts.JAX_CPU}
    assert set(cpu) == {"transfer", "trace", "lower", "compile", "runtime", "dispatch", "fetch"}
    assert cpu["runtime"]["median_s"] == pytest.approx(5e-5) and cpu["runtime"]["offset"] > 0
    assert {r["offset"] for r in rows if r["side"] == "JAX"} == {-cpu["runtime"]["offset"]}
    assert spec["layer"][2]["encoding"]["color"]["scale"]["range"][2] == JAX_CPU_COLOR
    samples = charts.sample_rows(gpu)
    assert {r["side"] for r in samples} == {"NumPy", "JAX", charts.JAX_CPU}
    assert {r["side"] for r in charts.sweep_rows([gpu])} == {"NumPy", "JAX", charts.JAX_CPU}
    # Without the third side the charts are as they were: two sides, two colours, no legend.
    plain = charts.phase_breakdown_chart(fair_result).to_dict()
    assert len(plain["layer"]) == 4 and plain["layer"][2]["encoding"]["color"]["legend"] is None
    assert plain["layer"][2]["encoding"]["color"]["scale"]["domain"] == ["NumPy", "JAX"]


def test_the_cli_table_has_the_third_side_the_peak_and_the_link():
    from jaxcompare.cli.report import result_table

    text = result_table(_gpu_result(numpy_s=1.0, gpu_s=1e-5, cpu_s=2.0))
    assert "  transfer: 40 GB/s host→device over PCIe" in text
    assert "  fraction of peak: JAX reached 40% of the NVIDIA H200's TF32 peak" in text
    assert "JAX on the CPU (cpu:0), the third side:" in text
    assert "speedup on the CPU (NumPy / JAX on the CPU): 0.50x (JAX 2.0x slower)" in text
    assert "The speedup comes from the GPU, not from XLA" in text


def test_history_keeps_the_third_side_and_rejects_a_malformed_one(tmp_path):
    from jaxcompare.history.exchange import read_results
    from jaxcompare.history.store import Store
    from jaxcompare.model.errors import BadInput

    gpu = _gpu_result(numpy_s=1e-2, gpu_s=1e-4, cpu_s=2e-2)
    store = Store(tmp_path / "results.sqlite3")
    store.save(gpu)
    again = store.get(gpu.id)
    assert again.jax_cpu == gpu.jax_cpu and again.peak == gpu.peak and again.jax.transfer_bytes == 4_000_000
    doc = json.loads(dumps(gpu.to_dict()))
    doc["jax_cpu"]["runtime"]["median_s"] = "fast"
    with pytest.raises(BadInput, match=r"phase jax_cpu\.runtime: median_s must be a number"):
        read_results(doc)
    doc = json.loads(dumps(gpu.to_dict()))
    doc["peak"]["source"] = "guessed"
    with pytest.raises(BadInput, match="peak source"):
        read_results(doc)
