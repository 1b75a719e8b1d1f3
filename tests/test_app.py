"""Every page under Streamlit's AppTest: real runs at small shapes on the CPU, chart specs,
headline figures, URL state and bad URL values."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from apptest_support import app_runner, fresh_caches, page, run_until  # noqa: F401
from chart_support import chart_rows, layer_marks, mark_type, vega_specs
from streamlit.testing.v1 import AppTest

from jaxcompare.app import pitfalls_view as pv
from jaxcompare.engine.common.lessons import SECTIONS

pytestmark = pytest.mark.slow  # a minute or more: collected first (conftest)


def banner_ready(at: AppTest) -> bool:
    return not any("Checking which device" in str(i.value) for i in at.info)


def test_home_names_the_device_and_links_the_pages():
    at = run_until(page("app.py"), banner_ready)
    assert not at.exception
    assert at.title[0].value == "jaxcompare"
    links = {link.proto.label: link.proto.page for link in at.get("page_link")}
    assert {"Home", "Compare", "Size sweep", "Environment", "JAX versions"} <= set(links)
    assert links["Compare"] == "Compare" and links["Size sweep"] == "Size_sweep"
    banners = [w.value for w in at.warning] + [s.value for s in at.success]
    assert any("CPU backend" in b or "Measuring on" in b for b in banners), (banners, [e.value for e in at.error])


def test_compare_runs_a_small_case_to_charts_and_figures():
    at = page("pages/1_Compare.py", case="matmul", shape="small", timing="quick")
    assert not at.exception
    assert at.selectbox(key="case").value == "matmul"
    assert at.session_state["size"] == "small" and at.text_input(key="custom_shape").value == "10x10"
    at.button(key="run_compare").click().run()
    job = at.session_state["compare_job"]
    assert job.spec.shape == (10, 10) and job.spec.timing.min_samples == 3
    at = run_until(at, lambda a: len(a.metric) >= 6)
    assert not at.exception
    labels = [m.label for m in at.metric]
    assert labels == ["NumPy runtime", "JAX runtime", "Speedup", "Compile", "Transfer", "Break-even"]
    values = {m.label: m.value for m in at.metric}
    assert values["Speedup"].endswith("x")
    assert any(unit in values["Compile"] for unit in ("ms", "µs", " s"))
    result = at.session_state["compare_result"]
    assert result.case == "matmul" and result.shape == (10, 10)
    agreement = result.jax.agreement
    assert agreement["jax_dtype"] == agreement["numpy_dtype"] == "float32"  # the outputs themselves

    phases, samples, roofline = vega_specs(at)
    assert layer_marks(phases) == ["rule", "rule", "circle", "text"]
    assert phases["layer"][0]["encoding"]["x"]["scale"]["type"] == "log"
    # On a GPU or TPU, JAX on the CPU (the third side) is a second row beside each of JAX's 7 phases.
    third = result.jax_cpu
    assert len(chart_rows(at, 0)) == (8 if third is None else 15)
    rows = {row["phase"]: row for row in chart_rows(at, 0) if row["side"] in ("NumPy", "JAX")}
    assert len(rows) == 8
    assert rows["compile"]["median_s"] == pytest.approx(result.jax.compile.median_s)
    assert rows["numpy"]["median_s"] == pytest.approx(result.numpy_runtime.median_s)
    assert layer_marks(samples) == ["bar", "tick", "tick"]
    sample_count = sum(1 for row in chart_rows(at, 1) if "deviation" in row)
    assert sample_count == result.numpy_runtime.n + result.jax.runtime.n + (third.runtime.n if third else 0)
    # The roofline: this CPU's roof, its ridge point and a dot per side; at 10x10 JAX's call is mostly
    # fixed cost, and what would help most says so under the chart.
    assert layer_marks(roofline) == ["line", "text", "point", "point"]
    dots = {row["side"]: row for row in chart_rows(at, 2) if "legend" in row}
    assert set(dots) == {"NumPy", "JAX"} | ({"JAX on CPU"} if third else set())
    assert dots["JAX"]["limit"] == "overhead-bound"
    advice = next(m.value for m in at.markdown if m.value.startswith("**What would help most**"))
    assert "empty jitted calls" in advice and "vmap" in advice

    code = "\n".join(c.value for c in at.code)
    assert "%timeit" in code and "block_until_ready" in code
    downloads = [d.proto.label for d in at.get("download_button")]
    assert {"Result (JSON)", "Result (CSV)", "Phase chart (PNG)", "Samples chart (PNG)",
            "Roofline chart (PNG)"} <= set(downloads)
    assert dict(at.query_params) == {"case": "matmul", "shape": "small", "timing": "quick"}  # the URL reproduces it

    # The checklist links each item to the Pitfalls section that explains it.
    frame = at.table[0].value  # st.table: its cells are Markdown and wrap, so no reason is cut off
    links = dict(zip(frame["Check"], frame["Explained in"], strict=True))
    assert links["Workload large enough"] == "[Workload size](Pitfalls?case=matmul#pitfall-size)"
    blocked = links["Blocked timing"]
    assert blocked.startswith("[Async dispatch](") and blocked.endswith("#pitfall-async)")
    assert links["Samples stable"] == ""  # a blank cell, not "None"
    anchors = {pv.anchor(p) for p in SECTIONS}
    assert all(link == "" or link.rsplit("#", 1)[1].rstrip(")") in anchors for link in links.values())


def test_a_choice_sent_back_empty_runs_with_the_links_setting_and_shows_it_again():
    # The hosted demo under load: a freshly loaded page's segmented controls came back with no choice along
    # with the Run click, and the run failed with "timing must be one of quick, careful, thorough, got None".
    at = page("pages/1_Compare.py", case="matmul", shape="small", timing="quick", precision="x64")
    for name in ("size", "precision", "timing", "matmul_precision"):
        at.segmented_control(key=name).set_value(None)
    at.button(key="run_compare").click().run()
    assert not at.exception and "compare_error" not in at.session_state, at.session_state["compare_error"]
    spec = at.session_state["compare_job"].spec
    assert (spec.shape, spec.precision, spec.timing.preset_name, spec.matmul_precision) == (
        (10, 10), "x64", "quick", "default")
    assert [at.session_state[name] for name in ("size", "precision", "timing")] == ["small", "x64", "quick"]
    run_until(at, lambda a: "compare_result" in a.session_state)


def test_compare_runs_at_the_chosen_matmul_precision_and_the_link_keeps_it():
    at = page("pages/1_Compare.py", case="matmul", shape="small", timing="quick")
    assert at.session_state["matmul_precision"] == "default" and "matmul_precision" not in dict(at.query_params)
    box = at.segmented_control(key="matmul_precision")
    assert list(box.options) == ["default", "high", "highest"] and "recorded with the result" in box.help.lower()
    box.set_value("highest").run()
    assert dict(at.query_params)["matmul_precision"] == "highest"
    at.button(key="run_compare").click().run()
    assert at.session_state["compare_job"].spec.matmul_precision == "highest"
    at = run_until(at, lambda a: "compare_result" in a.session_state)
    result = at.session_state["compare_result"]
    assert result.spec.matmul_precision == result.jax.protocol["matmul_precision"] == "highest"
    assert any("matmul precision" in c.value and "highest" in c.value for c in at.caption)
    # Reopened from History (saved as it finished): its view and the sidebar it was measured with, until a
    # new run replaces it.
    saved = page("pages/1_Compare.py", result=result.id[:8])
    assert not saved.exception and saved.session_state["compare_result"].id == result.id
    assert saved.session_state["matmul_precision"] == "highest" and saved.session_state["size"] == "small"
    assert any(i.value.startswith("A saved run") for i in saved.info) and len(saved.metric) >= 6
    assert dict(saved.query_params)["result"] == result.id  # a reload shows it again
    saved.button(key="run_compare").click().run()
    saved = run_until(saved, lambda a: a.session_state["compare_result"].id != result.id)
    assert "result" not in dict(saved.query_params) and not any("A saved run" in i.value for i in saved.info)
    saved.query_params["result"] = result.id  # History's "Open in Compare" for the same run again
    assert saved.run().session_state["compare_result"].id == result.id
    # A shared link sets the box; a bad value warns and keeps the default.
    assert page("pages/1_Compare.py", matmul_precision="high").session_state["matmul_precision"] == "high"
    bad = page("pages/1_Compare.py", matmul_precision="fast")
    assert bad.session_state["matmul_precision"] == "default"
    assert any("fast was ignored" in w.value and "matmul" in w.value for w in bad.warning)


def test_compare_second_click_while_running_starts_no_second_job():
    at = page("pages/1_Compare.py", case="matmul", shape="large")  # careful timing: a few seconds
    at.button(key="run_compare").click().run()
    job = at.session_state["compare_job"]
    button = at.button(key="run_compare")
    assert button.disabled
    # A fast double click can reach the server before the disabled state reaches the browser:
    # the click callback itself must refuse to start a second job.
    button.proto.disabled = False
    button.click().run()
    assert at.session_state["compare_job"] is job
    assert at.get("progress"), "a running job shows its phase and progress"
    at.button(key="stop_compare").click().run()
    at = run_until(at, lambda a: "compare_job" not in a.session_state, timeout=30)
    assert any("Stopped" in e.value for e in at.error)
    assert not at.exception


def test_compare_bad_url_values_warn_and_use_defaults():
    at = page("pages/1_Compare.py", case="nope", shape="12x", precision="x16", device="abacus", timing="x")
    assert not at.exception
    warnings = [w.value for w in at.warning if "was ignored" in w.value]
    assert len(warnings) == 5
    assert at.selectbox(key="case").value == "centered_gram"
    assert at.session_state["precision"] == "x32" and at.session_state["device"] == "auto"
    assert at.session_state["size"] == "large" and at.text_input(key="custom_shape").value == "1000x1000"


def test_compare_custom_shape_is_validated_as_typed():
    at = page("pages/1_Compare.py", case="matmul", shape="64x64")
    assert at.session_state["size"] == "custom" and at.text_input(key="custom_shape").value == "64x64"
    at.text_input(key="custom_shape").input("10x20").run()
    assert any("square" in e.value for e in at.sidebar.error)
    assert at.button(key="run_compare").disabled
    at.text_input(key="custom_shape").input("32x32").run()
    assert not at.sidebar.error and not at.button(key="run_compare").disabled


def test_size_sweep_overlays_precisions_and_marks_crossover_axes():
    at = page("pages/2_Size_sweep.py", case="matmul", precision="x32,x64", steps="3", largest="40x40",
              matmul_precision="highest")
    assert not at.exception
    assert at.session_state["sweep_precisions"] == ["x32", "x64"]
    assert at.session_state["sweep_matmul_precision"] == "highest"
    at.button(key="run_sweep").click().run()
    at = run_until(at, lambda a: a.session_state["sweep_run"].finished, timeout=120)
    run = at.session_state["sweep_run"]
    assert len(run.results) == 6 and not run.failures
    # Every point ran at the sweep's matmul precision, and the caption over the charts says so.
    assert {(r.spec.matmul_precision, r.jax.protocol["matmul_precision"]) for r in run.results} == {("highest",) * 2}
    assert any("matmul precision: highest" in c.value for c in at.caption)
    assert dict(at.query_params)["matmul_precision"] == "highest"
    runtime, speedup, share, roofline = vega_specs(at)
    # The roofline: a path per side and precision through every size, and a roof per precision; on a
    # GPU or TPU, JAX on the CPU (the third side) is a third path.
    sides = ["NumPy", "JAX"] + (["JAX on CPU"] if all(r.jax_cpu for r in run.results) else [])
    paths = {(r["series"], r["order"]) for r in chart_rows(at, 3) if "series" in r}
    assert {series for series, _ in paths} == {f"{s} {p}" for s in sides for p in ("x32", "x64")}
    assert len(paths) == 6 * len(sides)
    assert roofline["title"]["text"] == "Roofline by size: how close each size gets to the roof"
    line = next(u for u in runtime["layer"] if mark_type(u) == "line")
    assert line["encoding"]["x"]["scale"]["type"] == "log" and line["encoding"]["y"]["scale"]["type"] == "log"
    one = next(u for u in speedup["layer"] if mark_type(u) == "rule")
    assert one["encoding"]["y"]["field"] == "y" and {"y": 1.0} in chart_rows(at, 1)  # the 1x line
    assert share["facet"]["column"]["field"] == "precision"
    runtime_rows = {(r["series"], r["elements"]): r["median_s"] for r in chart_rows(at, 0) if "series" in r}
    assert len(runtime_rows) == 6 * len(sides)  # 3 sizes x 2 precisions x each side
    assert {elements for _, elements in runtime_rows} == {100, 400, 1600}
    speedups = {(r["precision"], r["elements"]): r["speedup"] for r in chart_rows(at, 1) if "speedup" in r}
    assert speedups == {(r.precision, r.shape[0] * r.shape[1]): pytest.approx(r.speedup) for r in run.results}
    assert [m.label for m in at.metric][:2] == ["Crossover (x32)", "Crossover (x64)"]
    assert len(at.table[0].value) == 6
    assert not at.exception


def test_size_sweep_bad_url_values_warn():
    at = page("pages/2_Size_sweep.py", case="matmul", precision="fp8", steps="99", largest="abc",
              matmul_precision="fast")
    assert not at.exception
    assert len([w for w in at.warning if "was ignored" in w.value]) == 4
    assert at.session_state["sweep_matmul_precision"] == "default"
    assert at.session_state["sweep_precisions"] == ["x32"] and at.session_state["sweep_steps"] == 6


def test_environment_reports_both_workers():
    at = run_until(page("pages/5_Environment.py"),
                   lambda a: not any("Asking the x32" in str(i.value) for i in a.info), timeout=60)
    assert not at.exception
    tables = [df.value for df in at.dataframe]
    versions = tables[0]
    assert {"python", "jax", "jaxlib", "numpy", "scipy", "streamlit", "altair"} <= set(versions["Package"])
    workers = next(t for t in tables if "Worker" in t.columns)
    assert list(workers["Worker"]) == ["x32", "x64"]
    assert list(workers["jax_enable_x64"]) == ["off", "on"]
    assert list(workers["Default float"]) == ["float32", "float64"]
    texts = [w.value for w in at.warning]
    if all(d == "cpu" for d in workers["Backend"]):  # said once, by the device banner
        assert sum("No GPU or TPU found" in t for t in texts) == 1
        assert not any("GPU or TPU is visible" in t for t in texts)


def test_the_app_process_never_imports_jax():
    """A whole comparison on the Compare page, in a fresh process: JAX stays in the workers
    (the app process serves every session; importing JAX there would fix its x64 mode)."""
    code = textwrap.dedent("""
        import sys
        sys.path.insert(0, "tests")
        from apptest_support import page, run_until
        at = page("pages/1_Compare.py", case="matmul", shape="small", timing="quick")
        at.button(key="run_compare").click().run()
        at = run_until(at, lambda a: "compare_result" in a.session_state, timeout=180)
        print("result", "jax" in sys.modules)
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          cwd=Path(__file__).resolve().parents[1])
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split()[-2:] == ["result", "False"], proc.stdout[-2000:]


@pytest.fixture
def loopback_server():
    """The app as `make run` serves it, on 127.0.0.1: the only place it loads case files."""
    import streamlit as st

    from jaxcompare.app import resources

    st.config.set_option("server.address", "127.0.0.1")
    resources.get_runner.clear()  # a Runner for this address
    yield
    st.config.set_option("server.address", None)
    resources.get_runner.clear()


def has_case(name: str):
    return lambda at: any(name in option for option in at.selectbox(key="case").options)


def test_compare_runs_a_case_from_the_users_own_file(tmp_path, loopback_server):
    path = tmp_path / "my_cases.py"
    path.write_text(
        "import numpy as np\nimport jax.numpy as jnp\nfrom jaxcompare import Case\n"
        "CASES = [Case(name='softplus', numpy_fn=lambda x: np.logaddexp(0, x),\n"
        "              jax_fn=lambda x: jnp.logaddexp(0, x),\n"
        "              make_inputs=lambda s, d, r: (r.standard_normal(s).astype(d),),\n"
        "              small_shape=(1000,), large_shape=(100000,))]\n")
    at = page("pages/1_Compare.py", shape="small", timing="quick")
    at.text_input(key="cases_file_input").set_value(str(path)).run()
    at = run_until(at, has_case("softplus"))  # a worker loads the file and lists its cases
    assert not at.exception
    assert any("Loaded 1 case(s): softplus" in c.value for c in at.caption)
    at.selectbox(key="case").set_value("softplus").run()
    assert at.text_input(key="custom_shape").value == "1000"
    at.button(key="run_compare").click().run()
    at = run_until(at, lambda a: "compare_result" in a.session_state)
    result = at.session_state["compare_result"]
    assert result.case == "softplus" and result.spec.cases_file == str(path)
    assert result.jax.agreement["ok"]


def test_a_broken_cases_file_is_a_clear_message(tmp_path, loopback_server):
    path = tmp_path / "broken.py"
    path.write_text("CASES = 'not a list'\n")
    at = page("pages/1_Compare.py")
    at.text_input(key="cases_file_input").set_value(str(path)).run()
    at = run_until(at, lambda a: bool(a.error))
    assert not at.exception
    assert any("must define CASES" in e.value for e in at.error)
    assert not any("softplus" in option for option in at.selectbox(key="case").options)
