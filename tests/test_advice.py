"""'What would help most': each rule fires on a case built to trigger it and not on one built not
to. The limit rules read real CPU measurements (x32, in this process); the GPU rule a recorded
result given a GPU's roofline; the break-even rules exact synthetic times."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest
from _results import make_result, stats, with_jax
from support import QUICK, zh

from jaxcompare import Spec, Stats, i18n
from jaxcompare.analysis.advice import COMPILE, MEMORY, OVERHEAD, TRANSFER, advice, advice_document
from jaxcompare.analysis.summary import break_even_tile
from jaxcompare.analysis.text import advice_lines
from jaxcompare.analysis.trust import trusted
from jaxcompare.engine.worker.measure import measure
from jaxcompare.model.formatting import format_percent
from jaxcompare.model.result import Result
from jaxcompare.model.roofline import Roofline, RooflineSide

DATA = Path(__file__).parent / "data"


def rules(result: Result) -> list[str]:
    return [a.rule for a in advice(result)]


@pytest.fixture(scope="module")
def tiny():
    return measure(Spec("reduction", (10, 10), device="cpu", timing=QUICK))


@pytest.fixture(scope="module")
def column_sums():
    return measure(Spec("reduction", (4000, 4000), device="cpu", timing=QUICK))


@pytest.fixture(scope="module")
def matmul():
    return measure(Spec("matmul", (1000, 1000), device="cpu", timing=QUICK))


def test_overhead_fires_on_a_10x10_call_with_its_numbers(tiny):
    (found,) = [a for a in advice(tiny) if a.rule == "overhead"]
    side = tiny.roofline.jax
    assert f"{side.runtime_s / side.empty_call_s:.1f} empty jitted calls" in found.text
    assert "vmap" in found.text and "jit the outer function" in found.text
    assert "memory" not in rules(tiny)


def test_overhead_does_not_fire_on_large_calls(column_sums, matmul):
    assert "overhead" not in rules(column_sums) and "overhead" not in rules(matmul)


def test_memory_fires_on_4000x4000_column_sums_with_the_bandwidth_it_reached(column_sums):
    (found,) = [a for a in advice(column_sums) if a.rule == "memory"]
    r = column_sums.roofline
    share = r.bytes_per_s("jax") / r.jax.bandwidth_bytes_per_s
    assert format_percent(share) in found.text and "FLOP/byte" in found.text and "float32" in found.text
    assert "fuse" in found.text and "smaller dtype" in found.text


def test_memory_does_not_fire_on_a_compute_bound_matmul_or_a_tiny_call(matmul, tiny):
    assert matmul.roofline.limit("jax") == "compute"
    assert "memory" not in rules(matmul) and "memory" not in rules(tiny)


def test_no_float64_advice_on_the_cpu(matmul):
    # Compute-bound, but the float64 rule is about a GPU's FP64 units.
    x64 = dataclasses.replace(matmul, dtype="float64", spec=dataclasses.replace(matmul.spec, precision="x64"))
    assert "float64" not in rules(x64)


# --- float64 on a GPU: a recorded result given an H200's ceilings ---------------------------------
def gpu_result(dtype: str, runtime_s: float = 3e-3) -> Result:
    """The recorded 64x64 matmul as a 4096x4096 one on an NVIDIA H200: its counts, and its JAX side
    held to the published peak at ``dtype`` (FP64 67 TFLOP/s; TF32 494.5) and 4.8 TB/s."""
    base = Result.from_dict(json.loads((DATA / "result-v1-third-side.json").read_text()))
    n, size = 4096, 8 if dtype == "float64" else 4
    peak = 67e12 if dtype == "float64" else 494.5e12
    roofline = Roofline(flops=2.0 * n**3, bytes=3.0 * n * n * size, transcendentals=0.0,
                        jax=RooflineSide(runtime_s, peak, "table", 4.8e12, "table", 8e-6))
    gpu = with_jax(base, device="cuda:0", device_kind="NVIDIA H200", runtime=stats(runtime_s),
                   protocol=base.jax.protocol | {"matmul_precision": "default"})
    return dataclasses.replace(gpu, backend="gpu", dtype=dtype, roofline=roofline,
                               spec=dataclasses.replace(base.spec, precision="x64" if dtype == "float64" else "x32"))


def test_float64_on_a_gpu_fires_with_the_fp64_and_tf32_peaks():
    r = gpu_result("float64")
    assert r.roofline.limit("jax") == "compute"
    (found,) = [a for a in advice(r) if a.rule == "float64"]
    assert "NVIDIA H200" in found.text and "67 TFLOP/s" in found.text and "494 TFLOP/s" in found.text
    assert "TF32" in found.text and "7.38x" in found.text


def test_float32_on_a_gpu_gets_no_float64_advice():
    r = gpu_result("float32")
    assert r.roofline.limit("jax") == "compute" and "float64" not in rules(r)


def test_float64_on_a_gpu_the_table_does_not_know_gets_no_guess():
    r = with_jax(gpu_result("float64"), device_kind="NVIDIA A30")
    assert "float64" not in rules(r)


# --- the break-even: which one-off cost dominates ------------------------------------------------
def test_transfer_fires_when_the_copy_dominates_a_long_break_even():
    r = make_result(numpy_s=1e-2, jax_s=1e-4, transfer_s=0.5, compile_s=0.02)
    (found,) = advice(r)
    assert found.rule == "transfer" and f"({math.ceil(r.break_even_calls)} calls to break even)" in found.text
    assert "keep the data on the device" in found.text and "96%" in found.text


def test_compile_fires_when_the_compile_dominates_and_names_the_cache():
    r = make_result(numpy_s=1e-2, jax_s=1e-4, transfer_s=1e-4, compile_s=0.5)
    (found,) = advice(r)
    assert found.rule == "compile" and "jax_compilation_cache_dir" in found.text and "100%" in found.text


def test_no_break_even_advice_when_it_pays_back_at_once_or_never():
    assert advice(make_result(numpy_s=1.0, jax_s=1e-4, compile_s=0.02)) == []  # one call pays it back
    assert advice(make_result(numpy_s=1e-4, jax_s=1e-3, compile_s=0.5)) == []  # JAX slower: never


def _spread(median_s: float, spread: float) -> Stats:
    """Seven samples whose median's 95% range spans about ``spread`` times."""
    return Stats.from_samples([median_s * spread ** ((i - 3) / 6) for i in range(7)], loops=10)


def test_break_even_advice_quotes_no_figure_the_tile_withholds():
    """The review's CLI run: 'break-even: not known (doubtful)', then '(251 calls to break even)'."""
    r = make_result(numpy_s=1e-2, jax_s=1e-4, transfer_s=0.5, compile_s=0.02)
    busy = {"cores": 2, "phases": {p: {"wall_s": 1.0, "others_cpu_s": 1.3} for p in ("numpy", "runtime")}}
    doubtful = with_jax(dataclasses.replace(r, load=busy, numpy_runtime=_spread(1e-2, 400.0)),
                        runtime=_spread(1e-4, 2.0))
    assert not trusted(doubtful) and break_even_tile(doubtful) == ("not known", "doubtful")
    # No side for sure: no share of what JAX "pays before it is faster" (issue 49), nor its calls.
    assert advice(doubtful) == []
    # Set aside for its range alone, JAX faster for sure: the calls' range, as the tile shows it.
    wide = with_jax(dataclasses.replace(r, numpy_runtime=_spread(1e-2, 3.0)), runtime=_spread(1e-4, 3.0))
    value, detail = break_even_tile(wide)
    assert not trusted(wide) and detail == "95% range" and value.endswith(" calls")
    (found,) = advice(wide)
    assert f"({value} to break even, the 95% range)" in found.text
    with i18n.using("zh"):  # the nested phrase is translated with the sentence around it
        shown = i18n.translate_text(found.text)
    assert "to break even" not in shown and value.removesuffix(" calls") in shown


def test_an_old_result_without_a_roofline_still_gets_break_even_advice():
    base = Result.from_dict(json.loads((DATA / "result-v1-third-side.json").read_text()))
    assert base.roofline is None and advice(base) == []  # JAX slower there: nothing to say
    faster = dataclasses.replace(base, numpy_runtime=stats(2e-3))
    assert rules(faster) == ["compile"]


# --- shown and recorded ---------------------------------------------------------------------------
def test_the_json_list_and_the_text_lines(column_sums):
    doc = advice_document(column_sums)
    assert [set(a) for a in doc] == [{"rule", "text"}] * len(doc) and doc[0]["rule"] == "memory"
    lines = advice_lines(column_sums)
    assert lines[0] == "  what would help most:" and lines[1].startswith("    - JAX is memory-bound")


def test_the_text_is_english_when_recorded_and_chinese_when_shown(column_sums):
    with i18n.using("zh"):
        recorded = advice(column_sums)[0].text
        lines = advice_lines(column_sums)
    assert recorded.startswith("JAX is memory-bound")  # recorded in English whatever the language
    assert lines[0] == "  " + zh("what would help most:")
    # Translated, with the recorded numbers in place.
    r = column_sums.roofline
    share = format_percent(r.bytes_per_s("jax") / r.jax.bandwidth_bytes_per_s)
    assert "memory-bound" not in lines[1] and share in lines[1]


@pytest.mark.parametrize("template", [OVERHEAD, MEMORY, TRANSFER, COMPILE])
def test_every_template_has_a_chinese_translation(template):
    assert zh(template) != template
