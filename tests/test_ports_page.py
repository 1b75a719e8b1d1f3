"""The Compare page's ports (#51): the picker and its URL, a race of two ports of cumsum measured for real
(each its own job), its sentence, lines, chart and tabs; and the speedup chart, where an interpreted
Pallas kernel gets its words and no bar."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from _results import make_result, stats, with_jax
from apptest_support import app_runner, fresh_caches, page, run_until  # noqa: F401
from chart_support import chart_rows, vega_specs

from jaxcompare.analysis.ports import PortRun, ports_verdict
from jaxcompare.app import charts_ports, controls
from jaxcompare.catalog import builtin_cases

CASES = builtin_cases()


def case(name: str):
    return next(c for c in CASES if c.name == name)


def test_the_url_keeps_the_ports_and_a_stale_or_bad_choice_is_the_default_port():
    config, warnings = controls.compare_config_from_query({"case": "cumsum", "ports": "scan,jnp"}, CASES)
    assert warnings == [] and config.chosen_ports(case("cumsum")) == ["jnp", "scan"]  # the case's order
    assert config.query(case("cumsum"))["ports"] == "jnp,scan"
    assert config.spec(case("cumsum")).port == "jnp" or config.spec(case("cumsum")).port is None
    alone, _ = controls.compare_config_from_query({"case": "cumsum", "ports": "scan"}, CASES)
    assert alone.spec(case("cumsum")).port == "scan" and alone.query(case("cumsum"))["ports"] == "scan"
    default, _ = controls.compare_config_from_query({"case": "logsumexp"}, CASES)
    assert default.chosen_ports(case("logsumexp")) == ["jax.scipy"] and "ports" not in default.query(case("logsumexp"))
    assert default.spec(case("logsumexp")).port is None  # the default port: the Spec of every earlier run
    bad, warnings = controls.compare_config_from_query({"case": "cumsum", "ports": "jnp,fast"}, CASES)
    assert bad.chosen_ports(case("cumsum")) == ["jnp"] and "ports=jnp,fast was ignored" in warnings[0]
    assert "jnp, associative_scan, scan" in warnings[0]
    # A choice made for another case: this case's default port alone.
    assert controls.CompareConfig("matmul", ports=("scan",)).chosen_ports(case("matmul")) == ["jnp"]


def _port(name: str, jax_s: float, pallas: bool = False) -> PortRun:
    result = with_jax(make_result("logsumexp", (100, 100), numpy_s=1e-3), runtime=stats(jax_s, n=9))
    result = dataclasses.replace(result, spec=dataclasses.replace(result.spec, port=name),
                                 case_info=result.case_info | {"port": name, "port_pallas": pallas})
    return PortRun(name, result)


def test_the_speedup_chart_has_a_bar_per_raced_port_from_numpys_1x_and_words_for_the_others():
    verdict = ports_verdict([_port("jax.scipy", 2e-4), _port("jnp", 5e-4), _port("pallas", 1e-5, pallas=True),
                             PortRun("broken", error="it ran out of memory")])
    rows = charts_ports.speedup_rows(verdict)
    bars = {r["port"]: r for r in rows if r["speedup"] is not None}
    assert set(bars) == {"jax.scipy", "jnp"} and bars["jax.scipy"]["fastest"] and not bars["jnp"]["fastest"]
    assert bars["jax.scipy"]["speedup"] == pytest.approx(5) and bars["jnp"]["speedup"] == pytest.approx(2)
    notes = {r["port"]: r["note"] for r in rows if r["speedup"] is None}
    assert notes == {"pallas": "interpreted on the CPU: not a speed figure", "broken": "did not run"}
    chart = charts_ports.ports_speedup_chart(verdict).to_dict()
    bar = chart["layer"][0]
    assert bar["mark"]["type"] == "bar" and bar["encoding"]["x"]["field"] == "one"
    assert bar["encoding"]["x"]["scale"]["type"] == "log" and bar["encoding"]["x2"]["field"] == "speedup"
    numpy_line = next(layer for layer in chart["layer"] if layer["mark"]["type"] == "rule"
                      and layer["mark"].get("color") == charts_ports.NUMPY_COLOR)
    assert numpy_line["data"]["values"][0]["one"] == 1.0
    domain = bar["encoding"]["x"]["scale"]["domain"]
    assert domain[0] < 1 < 5 < domain[1]


@pytest.mark.slow
def test_compare_races_two_ports_of_cumsum_each_its_own_job():
    at = page("pages/1_Compare.py", case="cumsum", shape="300", timing="quick", ports="jnp,scan")
    assert not at.exception
    picker = at.multiselect(key="ports")
    assert picker.value == ["jnp", "scan"] and list(picker.options) == ["jnp", "associative_scan", "scan"]
    assert dict(at.query_params)["ports"] == "jnp,scan"
    at.toggle(key="profile").set_value(True).run()  # each port's run traced on its own
    at.button(key="run_compare").click().run()
    race = at.session_state["compare_ports"]
    assert race.ports == ["jnp", "scan"] and race.job.spec.port == "jnp"  # one port queued at a time
    assert at.button(key="run_compare").disabled
    at = run_until(at, lambda a: a.session_state["compare_ports"].finished)
    assert not at.exception
    race = at.session_state["compare_ports"]
    assert [(r.name, r.result.port, r.result.shape) for r in race.runs] == [("jnp", "jnp", (300,)),
                                                                          ("scan", "scan", (300,))]
    assert "compare_result" not in at.session_state
    traces = {r.result.profile.trace_file for r in race.runs}
    assert len(traces) == 2 and all(trace and Path(trace).is_file() for trace in traces)
    text = [m.value.replace("\\", "") for m in at.markdown]  # shown as written: Markdown's escapes
    verdict = race.verdict()
    assert verdict.fastest in ("jnp", "scan")
    assert any(t.startswith("**") and ("faster than" in t or "no difference within the noise" in t)
               for t in text)
    assert any("- jnp: JAX " in t and "\n- scan: JAX " in t for t in text)  # each port's line
    assert [t.label for t in at.tabs] == ["jnp", "scan"]
    assert len(at.metric) == 12  # each port's six figures, in its tab
    specs = vega_specs(at)
    bars = next(i for i, s in enumerate(specs) if s["layer"][0]["mark"]["type"] == "bar")
    assert {row["port"] for row in chart_rows(at, bars) if row.get("speedup")} == {"jnp", "scan"}
    assert sum(1 for s in specs if s.get("title", {}).get("text") == "Where the time goes") == 2
    # Each port's tab has its roofline and what would help most, as the Compare page has for one port.
    roofline_title = "Roofline: what holds each side back"
    rooflines = [i for i, s in enumerate(specs) if s.get("title", {}).get("text") == roofline_title]
    assert len(rooflines) == 2
    numpy_dots = [[r for r in chart_rows(at, i) if r.get("side") == "NumPy"] for i in rooflines]
    assert all(len(dots) == 1 for dots in numpy_dots)
    assert numpy_dots[0][0]["intensity"] == numpy_dots[1][0]["intensity"]  # NumPy's point whatever the port
    assert sum("What would help most" in m.value for m in at.markdown) == 2
    assert any("All 2 measurements saved to history" in c.value for c in at.caption)
    # Chinese: the sentence and the chart in the reader's language.
    at.query_params["lang"] = "zh"
    at.run()
    assert not at.exception and at.tabs[0].label == "jnp"


@pytest.mark.slow
def test_size_sweep_draws_a_line_per_port_with_each_ports_crossover():
    at = page("pages/2_Size_sweep.py", case="cumsum", steps="3", largest="4000", ports="jnp,scan")
    assert not at.exception and at.multiselect(key="sweep_ports").value == ["jnp", "scan"]
    assert dict(at.query_params)["ports"] == "jnp,scan"
    assert any("6 measurement(s)" in c.value for c in at.caption)  # 3 sizes, each port
    at.button(key="run_sweep").click().run()
    at = run_until(at, lambda a: a.session_state["sweep_run"].finished, timeout=180)
    run = at.session_state["sweep_run"]
    assert not run.failures and sorted((r.port, r.shape) for r in run.results) == [
        (port, (n,)) for port in ("jnp", "scan") for n in (1000, 2000, 4000)]
    assert [m.label for m in at.metric][:2] == ["Crossover (jnp x32)", "Crossover (scan x32)"]
    runtime, speedup, *_ = vega_specs(at)
    sides = {r["side"] for r in chart_rows(at, 0) if "side" in r}
    assert sides == {"NumPy", "JAX · jnp", "JAX · scan"}  # NumPy once, a JAX line per port
    lines = {(r["line"], r["elements"]) for r in chart_rows(at, 1) if "speedup" in r}
    assert lines == {(f"{port} x32", n) for port in ("jnp", "scan") for n in (1000, 2000, 4000)}
    assert [row["Port"] for row in at.table[0].value.to_dict("records")] == ["jnp"] * 3 + ["scan"] * 3
    assert not at.exception


@pytest.mark.slow
def test_a_hosted_demo_counts_each_port_as_a_run(monkeypatch):
    """At two runs a minute, a race of three ports runs two; the third is its one plain line."""
    from apptest_support import run_until as wait

    from jaxcompare import Runner
    from jaxcompare.app import resources
    from jaxcompare.engine import Settings

    settings = dataclasses.replace(Settings.hosted(), max_jobs_per_minute=2)
    with Runner(settings=settings, timeout_s=240) as runner:
        monkeypatch.setattr(resources, "get_runner", lambda: runner)
        at = page("pages/1_Compare.py", case="cumsum", shape="300", timing="quick", ports="jnp,associative_scan,scan")
        at.button(key="run_compare").click().run()
        at = wait(at, lambda a: a.session_state["compare_ports"].finished)
        race = at.session_state["compare_ports"]
        assert [r.name for r in race.runs if r.result is not None] == ["jnp", "associative_scan"]
        assert "rate limit: at most 2 runs a minute" in race.runs[2].error
        assert any("scan: did not run: rate limit" in m.value.replace("\\", "") for m in at.markdown)
        assert not at.exception
