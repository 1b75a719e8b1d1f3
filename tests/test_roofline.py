"""The roofline on real JAX (CPU, in this process, x32): XLA's counts of the compiled program,
this CPU's two ceilings, and each side's limit. One measured result per case, shared."""

from __future__ import annotations

import dataclasses
import json
import textwrap
from pathlib import Path

import numpy as np
import pytest
from support import QUICK, zh

import jaxcompare
from jaxcompare import Spec, i18n
from jaxcompare.analysis.advice import advice, advice_document
from jaxcompare.analysis.text import advice_lines, roofline_lines
from jaxcompare.engine.worker import ceilings
from jaxcompare.engine.worker.measure import measure
from jaxcompare.model.formatting import format_percent
from jaxcompare.model.peaks import bandwidth_for
from jaxcompare.model.result import Result
from jaxcompare.model.roofline import (
    ARRAYS_IN_OUT,
    CATALOG_COUNT,
    OVERHEAD_CALLS,
    XLA_COST,
    Counts,
    Roofline,
    RooflineSide,
    choose_counts,
    xla_counts,
)

DATA = Path(__file__).parent / "data"


def _measured(case: str, shape: tuple[int, ...], **kw) -> Result:
    return measure(Spec(case, shape, device="cpu", timing=QUICK, **kw))


@pytest.fixture(scope="module")
def matmul():
    return _measured("matmul", (1000, 1000))


@pytest.fixture(scope="module")
def column_sums(tmp_path_factory):
    """With a cache of its own, so the bandwidth it is held to is measured just before it, under
    the same load (a ceiling cached earlier on a busier machine would be lower)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("JAXCOMPARE_CPU_PEAKS", str(tmp_path_factory.mktemp("peaks") / "cpu_peaks.json"))
        return _measured("reduction", (4000, 4000))


@pytest.fixture(scope="module")
def tiny():
    return _measured("reduction", (10, 10))


@pytest.fixture(scope="module")
def elementwise():
    return _measured("elementwise", (1_000_000,))


def test_matmul_counts_come_from_xla_and_match_2n_cubed(matmul):
    roofline = matmul.roofline
    assert roofline.flops == pytest.approx(2 * 1000**3, rel=0.01)
    assert roofline.source["flops"] == roofline.source["bytes"] == XLA_COST
    assert roofline.catalog_flops == 2 * 1000**3  # the hand count stays beside it as a cross-check
    # Two float32 operands read and the product written: at least 12 MB.
    assert roofline.bytes >= 3 * 1000**2 * 4
    assert roofline.limit("jax") == "compute"
    assert roofline.jax.peak_source == roofline.jax.bandwidth_source == "measured"
    assert 0 < roofline.fraction("jax") < 1.5


def test_the_arrays_in_and_out_are_recorded_and_one_program_serves_every_side_on_a_cpu_host(matmul):
    """The arrays in and out (the memory roof where XLA's count of bytes proves too many) are kept with the
    counts; on a CPU-only host the CPU sides' program is JAX's own, so there are no second counts, and the
    engine's own compile of the function counts what the cold compile's executable did."""
    from jaxcompare.catalog import get_case
    from jaxcompare.engine.worker.jax_phases import compiled_counts

    roofline = matmul.roofline
    assert roofline.least_bytes == 3 * 1000 * 1000 * 4 and roofline.cpu_counts is None
    assert roofline.jax.device_s is None
    # NumPy's point is placed by counts no JAX port changes: the catalog's FLOPs and the arrays in and out.
    numpy = roofline.counts("numpy")
    assert (numpy.flops, numpy.bytes) == (roofline.catalog_flops, roofline.least_bytes)
    assert (numpy.source["flops"], numpy.source["bytes"]) == (CATALOG_COUNT, ARRAYS_IN_OUT)
    assert roofline.flops_per_s("numpy") == pytest.approx(matmul.gflops("numpy") * 1e9)  # the throughput line's
    case = get_case("matmul")
    import jax

    inputs = case.make_inputs((1000, 1000), np.float32, np.random.default_rng(0))
    assert compiled_counts(case, inputs, jax.devices("cpu")[0]) == roofline.xla


def test_column_sums_are_memory_bound_and_no_faster_than_the_measured_bandwidth(column_sums):
    roofline = column_sums.roofline
    for side in ("numpy", "jax"):
        assert roofline.limit(side) == "memory", side
        # The bandwidth is recorded with the result: both numbers are from this run.
        assert roofline.bytes_per_s(side) <= 1.15 * roofline.side(side).bandwidth_bytes_per_s, side
    assert roofline.bound_flops_per_s("jax") == pytest.approx(roofline.intensity * roofline.jax.bandwidth_bytes_per_s)


def test_a_10x10_call_is_overhead(tiny):
    roofline = tiny.roofline
    assert roofline.limit("jax") == "overhead"
    assert roofline.limit("numpy") == "overhead"
    assert roofline.jax.empty_call_s > 0 and roofline.numpy.empty_call_s > 0


def test_the_elementwise_case_counts_its_transcendentals_as_work(elementwise):
    roofline = elementwise.roofline
    n = 1_000_000
    # sin, exp and tanh of every element; no hand count for this case.
    assert roofline.transcendentals == pytest.approx(3 * n)
    assert roofline.source["transcendentals"] == XLA_COST and roofline.catalog_flops is None
    assert roofline.work == roofline.flops + roofline.transcendentals
    assert roofline.flops_per_s("jax") == pytest.approx(roofline.work / elementwise.jax.runtime.median_s)
    # Held to this CPU's measured sin/exp/tanh rate, the loop is bound by its transcendentals,
    # not by its 8 bytes an element: compute-bound on both sides, each within its roof.
    for side in ("numpy", "jax"):
        times = roofline.roof_times(side)
        assert roofline.side(side).transcendentals_per_s > 0 and times["transcendental"] > times["memory"], side
        assert roofline.limit(side) == "compute", (side, times)
        assert roofline.fraction(side) <= 1.15, (side, roofline.fraction(side))


def test_a_users_own_function_gets_counts_with_no_hand_count():
    import jax.numpy as jnp

    try:
        r = jaxcompare.compare(lambda x: np.sqrt(x * x + 1.0).sum(axis=0), lambda x: jnp.sqrt(x * x + 1.0).sum(axis=0),
                               np.random.default_rng(0).standard_normal((300, 300)), timing="quick")
    finally:
        jaxcompare.shutdown()
    assert r.flops is None  # nobody counted by hand
    assert r.roofline.flops > 300 * 300 and r.roofline.bytes >= 300 * 300 * 4
    assert r.roofline.source["flops"] == XLA_COST and r.roofline.limit("jax") is not None


def test_a_cases_file_case_gets_counts_with_no_hand_count(tmp_path):
    path = tmp_path / "cases.py"
    path.write_text(textwrap.dedent("""
        import numpy as np
        import jax.numpy as jnp
        from jaxcompare import Case

        CASES = [Case(name="softplus", numpy_fn=lambda x: np.log1p(np.exp(x)),
                      jax_fn=lambda x: jnp.log1p(jnp.exp(x)),
                      make_inputs=lambda shape, dtype, rng: (rng.standard_normal(shape).astype(dtype),))]
    """))
    r = _measured("softplus", (1000,), cases_file=str(path))
    assert r.roofline.flops is not None and r.roofline.bytes >= 2 * 1000 * 4
    assert r.roofline.transcendentals >= 2 * 1000


def test_the_roofline_survives_the_json_round_trip(column_sums):
    doc = json.loads(json.dumps(column_sums.to_dict()))
    block = doc["roofline"]
    assert block["jax"]["limit"] == "memory" and block["source"]["bytes"] == XLA_COST
    again = Result.from_dict(doc)
    assert again.roofline == column_sums.roofline
    assert again.roofline.fraction("jax") == block["jax"]["fraction"]


def test_the_csv_has_the_counts_and_each_sides_limit_and_share(column_sums):
    import csv
    import io

    from jaxcompare.history.exchange import export_csv

    old = Result.from_dict(json.loads((DATA / "result-v1-third-side.json").read_text()))
    new, before = csv.DictReader(io.StringIO(export_csv([column_sums, old])))
    roofline = column_sums.roofline
    assert float(new["bytes"]) == roofline.bytes and new["jax_limit"] == "memory"
    assert float(new["numpy_fraction"]) == roofline.fraction("numpy") and new["jax_cpu_limit"] == ""
    assert all(before[c] == "" for c in ("flops", "jax_limit", "jax_fraction", "jax_cpu_fraction"))


def test_an_old_result_loads_with_no_roofline():
    r = Result.from_dict(json.loads((DATA / "result-v1-third-side.json").read_text()))
    assert r.roofline is None and r.to_dict()["roofline"] is None
    assert roofline_lines(r) == ["  roofline: not recorded"]


def test_the_cli_line_names_each_sides_limit_and_share(matmul):
    """Each side compute-bound with its share, "at its bound" a little above it, or said to be above a ceiling
    measured lower than it ran: this VM's speed moves 30% in minutes, and NumPy once ran 380 GFLOP/s beside a
    323 measured at the suite's start (and 206 beside 198 another time)."""
    (line,) = roofline_lines(matmul)
    r = matmul.roofline
    for side, name in (("numpy", "NumPy"), ("jax", "JAX")):
        if r.above_bound(side):
            assert f"{name} above its bound" in line and "ceiling is too low" in line, line
        elif r.at_bound(side):  # over 100% within the ceilings' noise: no share above 100% is quoted
            assert f"{name} compute-bound, at its bound" in line and f"{name} compute-bound, 1" not in line, line
        else:
            assert f"{name} compute-bound, {format_percent(r.fraction(side))} of its bound" in line, line


# --- the rule, on counts and runtimes given by hand (no timing) ---------------------------------
def _side(runtime_s: float, empty_call_s: float = 1e-6) -> RooflineSide:
    return RooflineSide(runtime_s, 100e9, "measured", 10e9, "measured", empty_call_s)


def test_the_limit_rule():
    # Ridge point: 100 GFLOP/s over 10 GB/s = 10 FLOP/byte.
    heavy = Roofline(flops=1e9, bytes=1e6, transcendentals=0.0, jax=_side(0.02))
    light = Roofline(flops=1e6, bytes=1e8, transcendentals=0.0, jax=_side(0.02))
    assert heavy.limit("jax") == "compute" and light.limit("jax") == "memory"
    assert heavy.bound_flops_per_s("jax") == 100e9 and light.bound_flops_per_s("jax") == pytest.approx(0.01 * 10e9)
    # Under OVERHEAD_CALLS empty calls, the call is mostly fixed cost whatever its counts.
    assert Roofline(flops=1e9, bytes=1e6, transcendentals=0.0,
                    jax=_side(OVERHEAD_CALLS * 0.9e-6)).limit("jax") == "overhead"
    # Work that would take less than one empty call at the bound: overhead, even at 10 empty calls.
    assert Roofline(flops=1e3, bytes=1e3, transcendentals=0.0, jax=_side(1e-5)).limit("jax") == "overhead"
    # Transcendentals are work: they move a call across the ridge point.
    assert Roofline(flops=1e6, bytes=1e6, transcendentals=2e7, jax=_side(0.02)).limit("jax") == "compute"
    # With a measured transcendental rate they are a roof of their own: 1e7 at 1e9/s is 10 ms,
    # against 1 ms for the bytes and 0.1 ms for the FLOPs at the peak.
    rated = RooflineSide(0.02, 100e9, "measured", 10e9, "measured", 1e-6, 1e9, "measured")
    mixed = Roofline(flops=1e7, bytes=1e7, transcendentals=1e7, jax=rated)
    assert mixed.roof_times("jax") == pytest.approx({"compute": 1e-4, "transcendental": 1e-2, "memory": 1e-3})
    assert mixed.limit("jax") == "compute"
    assert mixed.bound_flops_per_s("jax") == pytest.approx(2e7 / 1e-2)
    assert mixed.fraction("jax") == pytest.approx(0.5)  # 20 ms against a 10 ms bound
    assert mixed.compute_roof_flops_per_s("jax") == mixed.bound_flops_per_s("jax")
    # A profile's host gap decides overhead where there is one, whatever the empty calls say.
    gap = dataclasses.replace(_side(OVERHEAD_CALLS * 0.9e-6), host_gap_share=0.3)
    assert Roofline(flops=1e5, bytes=1e3, transcendentals=0.0, jax=gap).limit("jax") == "compute"
    # 1 GFLOP in 2.7 µs is 370 TFLOP/s against a 100 GFLOP/s roof: that roof is no bound, so no roof is the limit.
    impossible = Roofline(flops=1e9, bytes=1e6, transcendentals=0.0, jax=gap)
    assert impossible.above_bound("jax") and impossible.limit("jax") is None
    gap = dataclasses.replace(_side(0.02), host_gap_share=0.8)
    assert Roofline(flops=1e9, bytes=1e6, transcendentals=0.0, jax=gap).limit("jax") == "overhead"
    # Without transcendentals the rate changes nothing.
    plain = Roofline(flops=1e7, bytes=1e7, transcendentals=0.0, jax=rated)
    assert "transcendental" not in plain.roof_times("jax") and plain.limit("jax") == "memory"
    # A count or a ceiling not known: no limit, no guess.
    assert Roofline(flops=None, bytes=1e6, transcendentals=None, jax=_side(0.02)).limit("jax") is None
    unknown = RooflineSide(0.02, None, None, 10e9, "measured", 1e-6)
    assert Roofline(flops=1e9, bytes=1e6, transcendentals=0.0, jax=unknown).limit("jax") is None


def test_xla_counts_and_which_count_is_used():
    assert xla_counts([{"flops": 2.0, "bytes accessed": 8.0}]) == {"flops": 2.0, "bytes": 8.0, "transcendentals": 0.0}
    assert xla_counts(None) is None and xla_counts({}) is None and xla_counts([]) is None
    # LAPACK behind a custom call: XLA sees almost nothing, so the hand count is used.
    counts = choose_counts({"flops": 3e4, "bytes": 2.8e5, "transcendentals": 0.0}, 1.6e7)
    assert counts["flops"] == 1.6e7 and counts["source"] == {"flops": CATALOG_COUNT, "bytes": XLA_COST,
                                                              "transcendentals": XLA_COST}
    assert choose_counts(None, None) == {"flops": None, "bytes": None, "transcendentals": None,
                                         "source": {"flops": None, "bytes": None, "transcendentals": None}}


def test_published_bandwidths():
    assert bandwidth_for("NVIDIA H200") == 4.8e12
    assert bandwidth_for("NVIDIA H100 80GB HBM3") == 3.35e12
    assert bandwidth_for("TPU v6 lite") == 1638e9
    assert bandwidth_for("Some Future Chip") is None


def test_the_bandwidth_is_measured_once_and_then_read_from_the_cache(tmp_path):
    path = tmp_path / "cpu_peaks.json"
    cpu = ceilings.cpu_device_or_none()
    first = ceilings.cpu_bandwidth(cpu, path=path)
    doc = json.loads(path.read_text())
    entry = doc["peaks"][ceilings.bandwidth_key()]
    assert first == max(entry["numpy_bytes_per_s"], entry["jax_bytes_per_s"]) > 1e8
    assert set(entry["kernels"]) == {"numpy_triad", "numpy_read", "jax_triad", "jax_read"}
    entry.update(numpy_bytes_per_s=12345.0, jax_bytes_per_s=6789.0, busy=False)
    path.write_text(json.dumps(doc))
    assert ceilings.cpu_bandwidth(cpu, path=path) == 12345.0


# --- What would help most (analysis/advice.py), read off the measurements above: the limit rules need
# real CPU results, and these are measured once here. tests/test_advice.py has the rules' other cases.
def advice_rules(result: Result) -> list[str]:
    return [a.rule for a in advice(result)]


def test_overhead_fires_on_a_10x10_call_with_its_numbers(tiny):
    (found,) = [a for a in advice(tiny) if a.rule == "overhead"]
    side = tiny.roofline.jax
    assert f"{side.runtime_s / side.empty_call_s:.1f} empty jitted calls" in found.text
    assert "vmap" in found.text and "jit the outer function" in found.text
    assert "memory" not in advice_rules(tiny)


def test_overhead_does_not_fire_on_large_calls(column_sums, matmul):
    assert "overhead" not in advice_rules(column_sums) and "overhead" not in advice_rules(matmul)


def test_memory_fires_on_4000x4000_column_sums_with_the_bandwidth_it_reached(column_sums):
    (found,) = [a for a in advice(column_sums) if a.rule == "memory"]
    r = column_sums.roofline
    share = r.bytes_per_s("jax") / r.jax.bandwidth_bytes_per_s
    assert format_percent(share) in found.text and "FLOP/byte" in found.text and "float32" in found.text
    assert "fuse" in found.text and "smaller dtype" in found.text


def test_memory_does_not_fire_on_a_compute_bound_matmul_or_a_tiny_call(matmul, tiny):
    assert matmul.roofline.limit("jax") == "compute"
    assert "memory" not in advice_rules(matmul) and "memory" not in advice_rules(tiny)


def test_no_float64_advice_on_the_cpu(matmul):
    # Compute-bound, but the float64 rule is about a GPU's FP64 units.
    x64 = dataclasses.replace(matmul, dtype="float64", spec=dataclasses.replace(matmul.spec, precision="x64"))
    assert "float64" not in advice_rules(x64)



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


def test_numpys_point_is_the_same_beside_every_port_of_a_race():
    """A race recorded on the TPU (cumsum 65536, three ports): each port's program counts its own work
    (associative_scan's tree, scan's 65,536 steps), but NumPy runs none of them, so its bound is one
    figure beside all three, and its rate is the throughput line's."""
    import gzip

    race = json.loads(gzip.decompress((DATA / "tpu" / "ports-b2b" / "ports-cumsum.json.gz").read_bytes()))
    results = [Result.from_dict(port["result"]) for port in race["ports"]]
    assert len({r.roofline.xla["flops"] for r in results}) == 3  # the ports' own programs differ
    assert len({r.roofline.bound_flops_per_s("numpy") for r in results}) == 1
    for r in results:
        assert r.roofline.flops_per_s("numpy") == pytest.approx(r.gflops("numpy") * 1e9)


def test_beside_another_port_numpys_counts_are_the_first_ports_program():
    """Measuring a port other than the case's first also counts the first port's program for the CPU: where
    the catalog has no count, NumPy's point reads it, whatever the measured port's program counts."""
    first, scan = (_measured("cumsum", (1000,), port=port) for port in (None, "scan"))
    assert first.roofline.numpy_counts is None  # the first port measured: its own program is the reference
    assert scan.roofline.numpy_counts is not None and scan.roofline.numpy_counts.xla == first.roofline.xla
    assert scan.roofline.xla != first.roofline.xla  # scan's program counts its own steps
    assert scan.roofline.counts("numpy") == first.roofline.counts("numpy")
    again = Result.from_dict(json.loads(json.dumps(scan.to_dict())))
    assert again.roofline.counts("numpy") == scan.roofline.counts("numpy")


def test_numpys_transcendentals_and_flops_without_a_catalog_count_come_from_the_first_port():
    """On a TPU a Pallas kernel is a custom call XLA counts nothing inside (the elementwise chain's pallas
    port: 2.6e5 FLOPs and no transcendentals where jnp's program has 6.7e7): NumPy's point must not follow it."""
    n = 1_000_000
    first = Counts(7 * n, 8 * n, 3 * n, {"flops": XLA_COST, "bytes": XLA_COST, "transcendentals": XLA_COST},
                   least_bytes=8 * n)
    kernel = Roofline(flops=0.26 * n, bytes=8 * n, transcendentals=0.0, least_bytes=8 * n, numpy=_side(0.01),
                      jax=_side(0.001), numpy_counts=first)
    numpy = kernel.counts("numpy")
    assert (numpy.flops, numpy.transcendentals, numpy.bytes) == (7 * n, 3 * n, 8 * n)
    assert kernel.counts("jax").transcendentals == 0.0  # JAX's side keeps its own program's
