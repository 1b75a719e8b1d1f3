"""The ports race on constructed Stats (no worker, no JAX): the fastest port is named only where the
95% range of its ratio over the runner-up excludes 1x; ports whose time is no speed figure (a Pallas
kernel interpreted on the CPU), that disagree with NumPy, or that did not run stay out with their line."""

from __future__ import annotations

import dataclasses

import pytest
from _results import make_result, stats, with_jax

from jaxcompare import i18n
from jaxcompare.analysis.ports import PortRun, ports_document, ports_lines, ports_verdict, verdict_line
from jaxcompare.model.errors import BadInput
from jaxcompare.model.reruns import rerun_ratio_range


def port(name: str, jax_s: float, *, case: str = "cumsum", shape=(1000,), n: int = 7, pallas: bool = False,
         backend: str = "cpu") -> PortRun:
    result = with_jax(make_result(case, shape, numpy_s=1e-3), runtime=stats(jax_s, n=n))
    result = dataclasses.replace(result, spec=dataclasses.replace(result.spec, port=name), backend=backend,
                                 case_info=result.case_info | {"port": name, "port_pallas": pallas})
    return PortRun(name, result)


def test_a_clear_winner_is_named_with_its_ratio_over_the_runner_up_and_its_range():
    runs = [port("jnp", 1.8e-4), port("associative_scan", 1e-4), port("scan", 3e-4)]
    verdict = ports_verdict(runs)
    assert (verdict.fastest, verdict.runner_up) == ("associative_scan", "jnp")
    assert verdict.ratio == pytest.approx(1.8)
    assert verdict.ratio_range == rerun_ratio_range(runs[0].result.jax.runtime, runs[1].result.jax.runtime)
    low, high = verdict.ratio_range
    assert 1 < low < 1.8 < high and verdict.decided
    assert verdict_line(verdict) == f"associative_scan 1.80x faster than jnp ({low:.2f}x-{high:.2f}x)"


def test_ports_within_the_noise_are_not_ranked():
    verdict = ports_verdict([port("jnp", 1.1e-4), port("scan", 1e-4)])
    assert verdict.fastest == "scan" and verdict.ratio_range[0] < 1 < verdict.ratio_range[1]
    assert not verdict.decided
    assert verdict_line(verdict).startswith("no difference within the noise: scan and jnp (1.10x")


def test_too_few_samples_give_no_range_and_no_decision():
    verdict = ports_verdict([port("jnp", 3e-4, n=3), port("scan", 1e-4, n=3)])
    assert verdict.ratio == pytest.approx(3) and verdict.ratio_range is None and not verdict.decided
    assert "too few samples for a range: not decided" in verdict_line(verdict)


def test_an_interpreted_pallas_kernel_is_left_out_however_fast_it_looks():
    runs = [port("jnp", 2e-4, case="matmul", shape=(10, 10)),
            port("pallas", 1e-5, case="matmul", shape=(10, 10), pallas=True)]
    verdict = ports_verdict(runs)
    assert verdict.fastest == "jnp" and verdict.runner_up is None and "pallas" in verdict.left_out
    assert "not a speed figure" in ports_lines(verdict)[2]
    on_tpu = [port(r.name, r.result.jax.runtime.median_s, case="matmul", shape=(10, 10), pallas=r.name == "pallas",
                   backend="tpu") for r in runs]
    assert ports_verdict(on_tpu).fastest == "pallas"  # compiled with Mosaic: it races


def test_a_port_that_failed_keeps_its_plain_line_and_the_others_stand():
    failed = PortRun("scan", error="ran out of its time limit (60 s)")
    disagrees = port("jnp", 1e-5)
    disagrees = PortRun("jnp", with_jax(disagrees.result, agreement=disagrees.result.jax.agreement | {"ok": False}))
    verdict = ports_verdict([port("associative_scan", 1e-4), failed, disagrees])
    assert verdict.fastest == "associative_scan" and verdict.runner_up is None
    lines = ports_lines(verdict)
    assert lines[2] == "  scan: did not run: ran out of its time limit (60 s)"
    assert "disagrees with NumPy" in lines[3]
    doc = ports_document(verdict)
    assert [p["name"] for p in doc["ports"]] == ["associative_scan", "scan", "jnp"]
    assert doc["ports"][1]["result"] is None and doc["ports"][1]["error"].startswith("ran out")
    assert doc["fastest"] == "associative_scan" and doc["decided"] is False


def test_results_of_different_shapes_are_not_raced():
    with pytest.raises(BadInput, match="one case, shape, precision and device"):
        ports_verdict([port("jnp", 1e-4), port("scan", 1e-4, shape=(2000,))])


def test_the_verdict_reads_in_chinese():
    verdict = ports_verdict([port("jnp", 1.8e-4), port("scan", 1e-4)])
    with i18n.using("zh"):
        line = verdict_line(verdict)
    assert line != verdict_line(verdict) and "scan" in line and "1.80x" in line


def test_on_a_tpu_ports_also_race_back_to_back_where_the_round_trip_hides_them_blocked():
    """Recorded on a TPU v5e: the elementwise chain's two ports read 0.62-0.64 ms blocked, mostly the host's
    round trip, and 118 µs against 166 µs a call back to back. The blocked race cannot tell them apart;
    the back-to-back race names the kernel, and says quick timing's three samples give it no range."""
    import gzip
    import json
    from pathlib import Path

    from jaxcompare.analysis.ports import race_lines
    from jaxcompare.model.result import Result

    data = Path(__file__).parent / "data" / "tpu" / "ports" / "ports-elementwise.json.gz"
    with gzip.open(data) as f:
        doc = json.load(f)
    runs = [PortRun(p["name"], Result.from_dict(p["result"])) for p in doc["ports"]]
    verdict = ports_verdict(runs)
    assert not verdict.decided and verdict.ratio == pytest.approx(1.04, abs=0.01)
    pipelined = verdict.back_to_back
    assert (pipelined.fastest, pipelined.runner_up) == ("pallas", "jnp")
    assert pipelined.ratio == pytest.approx(1.40, abs=0.01) and pipelined.ratio_range is None
    assert pipelined.back_to_back is None
    blocked, queued = race_lines(verdict)
    assert blocked == "blocked calls: " + verdict_line(verdict)
    assert queued.startswith("calls back to back: pallas ran 1.40x faster than jnp") and "not decided" in queued
    assert ports_lines(verdict)[-2:] == ["  " + blocked, "  " + queued]
    document = ports_document(verdict)
    assert document["back_to_back"]["fastest"] == "pallas" and document["back_to_back"]["decided"] is False
    # Without a back-to-back figure on every port there is one race, as before.
    alone = ports_verdict([port("jnp", 1.8e-4), port("scan", 1e-4)])
    assert alone.back_to_back is None and race_lines(alone) == [verdict_line(alone)]
    assert ports_document(alone)["back_to_back"] is None


def test_a_port_set_aside_reads_so_in_its_line_its_json_and_its_bar():
    """cdist's ports against SciPy's float64 output: each port failed *Matched precision* and its own table said
    "do not quote this speedup", while the ports' summary, JSON and chart quoted 1.44x bare. A port set aside
    now reads "set aside: <why>; measured ...", its JSON says so and its bar is grey, marked ?, never the
    winner's colour; the race between the ports (their JAX times) stands."""
    from jaxcompare.app.charts_ports import speedup_rows

    def float64_numpy(run: PortRun) -> PortRun:
        agreement = run.result.jax.agreement | {"numpy_dtype": "float64"}
        return dataclasses.replace(run, result=with_jax(run.result, agreement=agreement))

    runs = [float64_numpy(port("broadcast", 1e-4, case="cdist", shape=(100, 16))),
            port("matmul", 3e-4, case="cdist", shape=(100, 16))]
    verdict = ports_verdict(runs)
    assert verdict.fastest == "broadcast" and verdict.decided  # JAX against JAX: NumPy's dtype does not enter
    line = ports_lines(verdict)[1]
    assert line.strip().startswith(
        "broadcast: JAX 100 µs a call, NumPy 1 ms: set aside: a check failed; measured 10.00x"), line
    assert "set aside" not in ports_lines(verdict)[2]
    doc = {p["name"]: p for p in ports_document(verdict)["ports"]}
    assert (doc["broadcast"]["trusted"], doc["broadcast"]["set_aside"]) == (False, "a check failed")
    assert (doc["matmul"]["trusted"], doc["matmul"]["set_aside"]) == (True, None)
    rows = {r["port"]: r for r in speedup_rows(verdict)}
    broadcast = rows["broadcast"]
    assert broadcast["text"] == "10.00x?" and broadcast["set_aside"] and not broadcast["fastest"]
    assert rows["matmul"]["text"] == "3.33x" and not rows["matmul"]["set_aside"]
    with i18n.using("zh"):
        assert "已搁置" in ports_lines(verdict)[1]


def test_the_chart_colours_a_winner_only_where_the_race_decided_and_keeps_labels_off_the_1x_line():
    from jaxcompare.app.charts_ports import speedup_rows

    noise = {r["port"]: r for r in speedup_rows(ports_verdict([port("jnp", 1.1e-4), port("scan", 1e-4)]))}
    assert not any(r["fastest"] for r in noise.values())  # "no difference within the noise": no winner drawn
    clear = {r["port"]: r for r in speedup_rows(ports_verdict([port("jnp", 3e-4), port("slow", 2e-3)]))}
    assert clear["jnp"]["fastest"] and (clear["jnp"]["label_at"], clear["jnp"]["right"]) == (clear["jnp"]["high"], True)
    # 0.5x: its bar runs left of NumPy's line, its label left of the bar's end, not on the line at 1x
    assert (clear["slow"]["label_at"], clear["slow"]["right"]) == (clear["slow"]["low"], False)
