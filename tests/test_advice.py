"""'What would help most': each rule fires on a case built to trigger it and not on one built not
to. The limit rules need real CPU measurements (a 10x10 call, 4000x4000 column sums, a 1000x1000 matmul):
they are checked in tests/test_roofline.py on the roofline's own, not on a second measurement of each.
Here: the GPU rule, on a recorded result given a GPU's roofline, and the break-even rules, on exact
synthetic times."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest
from _results import make_result, stats, with_jax
from support import zh

from jaxcompare import Stats, i18n
from jaxcompare.analysis.advice import COMPILE, MEMORY, OVERHEAD, OVERHEAD_FAR, TRANSFER, advice
from jaxcompare.analysis.summary import break_even_tile
from jaxcompare.analysis.trust import trusted
from jaxcompare.model.result import Result
from jaxcompare.model.roofline import Roofline, RooflineSide

DATA = Path(__file__).parent / "data"


def rules(result: Result) -> list[str]:
    return [a.rule for a in advice(result)]


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


def test_a_call_far_from_a_bound_under_one_empty_call_is_not_called_mostly_fixed_cost():
    """cumsum over 10^4 on this CPU: 149 µs a call, 35 empty calls of 4.2 µs, its work at the bound 1.6 µs. The
    roofline calls it overhead-bound (no implementation could be work-bound there), but the call itself is not
    mostly fixed cost, and the checklist's workload row passes it."""
    def overhead_tip(runtime_s: float) -> str:
        roofline = Roofline(flops=1e4, bytes=8e4, transcendentals=0.0,
                            jax=RooflineSide(runtime_s, 400e9, "measured", 50e9, "measured", 4.2e-6))
        assert roofline.limit("jax") == "overhead"
        r = dataclasses.replace(make_result(numpy_s=3e-5, jax_s=runtime_s), roofline=roofline)
        (tip,) = [a.text for a in advice(r) if a.rule == "overhead"]
        return tip

    far, near = overhead_tip(149e-6), overhead_tip(10e-6)
    assert "far from its bound" in far and "the call is mostly fixed cost" not in far, far
    assert "the call is mostly fixed cost" in near and "far from" not in near, near


@pytest.mark.parametrize("template", [OVERHEAD, OVERHEAD_FAR, MEMORY, TRANSFER, COMPILE])
def test_every_template_has_a_chinese_translation(template):
    assert zh(template) != template
