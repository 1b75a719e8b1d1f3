"""The Pitfalls page under Streamlit's AppTest: the default configuration, a real run of all seven
sections at a small shape (CPU, quick timing), one job at a time, Stop, bad URL values, and the
Compare checklist's links into the page."""

from __future__ import annotations

import re

import pytest
from _pitfalls import check_restarts
from apptest_support import app_runner, fresh_caches, page, run_until  # noqa: F401
from chart_support import chart_rows, vega_specs
from i18n_support import cpu_model, english_left
from streamlit.testing.v1 import AppTest

from jaxcompare.app import pitfalls_view as pv
from jaxcompare.engine.common.lessons import SECTIONS

pytestmark = pytest.mark.slow  # 20 s or more: collected first, so parallel workers end together

PAGE = "pages/3_Pitfalls.py"


def markdown(at: AppTest) -> list[str]:
    return [m.value for m in at.markdown]


def test_default_config_renders_every_section_with_its_code():
    at = page(PAGE)
    assert not at.exception
    assert at.selectbox(key="pf_case").value == "centered_gram"
    assert at.session_state["pf_size"] == "large" and at.text_input(key="pf_custom_shape").value == "1000x1000"
    assert at.session_state["pf_timing"] == "careful" and at.session_state["pf_precision"] == "x32"
    assert [h.proto.anchor for h in at.subheader] == [pv.anchor(p) for p in SECTIONS]
    # Pitfall 6's heading names the platform's reduced precision once the worker has said which it has.
    assert at.subheader[SECTIONS.index("tf32")].value in (pv.title_text("tf32"), pv.title_text("tf32", "cpu"))
    code = [c.value for c in at.code]
    assert "%time f(x).block_until_ready()" in code and "x = rand(1000x1000)" in code  # shown before any run
    assert not at.button(key="run_all_pitfalls").disabled
    # How long the lab should take, as on Compare: under Run all pitfalls, and in each timing preset.
    assert any(re.match(r"Takes about \d+(\.\d)? (s|min) \(.+–.+\), ", c.value) for c in at.sidebar.caption)
    presets = [[o.content for o in group.proto.options] for group in at.get("button_group")]
    assert ["Quick", "Careful"] in presets, presets  # fixed labels: the estimates are in a caption under them
    duration = r"\d+(\.\d)? (s|min)"
    assert any(re.fullmatch(rf"About {duration} quick, {duration} careful\.", c.value) for c in at.sidebar.caption)
    assert not at.get("vega_lite_chart")
    assert any("not measured yet" in text for text in markdown(at))
    assert dict(at.query_params) == {"case": "centered_gram"}


def test_bad_url_values_warn_and_use_the_defaults():
    at = page(PAGE, case="no_such_case", shape="12xbanana", precision="x128")
    assert not at.exception
    warnings = [w.value for w in at.warning]
    shown = [re.sub(r"\\(.)", r"\1", w) for w in warnings]  # plain text: Markdown's escapes undone
    assert any("case=no_such_case was ignored" in w for w in shown)
    assert any("shape=12xbanana was ignored" in w for w in shown)
    assert any("precision=x128 was ignored" in w for w in shown)
    assert at.selectbox(key="pf_case").value == "centered_gram"
    assert at.text_input(key="pf_custom_shape").value == "1000x1000"
    assert at.session_state["pf_precision"] == "x32"
    assert dict(at.query_params) == {"case": "centered_gram"}  # the URL is rewritten to what runs


def test_run_all_measures_seven_sections_in_one_job():
    at = page(PAGE, case="centered_gram", shape="200x200", timing="quick")
    at.button(key="run_all_pitfalls").click().run()
    job = at.session_state["pitfalls_job"]
    assert job.kind == "pitfalls" and job.spec.shape == (200, 200) and job.spec.timing.min_samples == 3
    button = at.button(key="run_all_pitfalls")
    assert button.disabled and at.button(key="run_pitfall_jit").disabled
    button.proto.disabled = False  # a fast double click can beat the disabled state to the server
    button.click().run()
    assert at.session_state["pitfalls_job"] is job
    assert at.get("progress"), "a running job shows its phase and progress"

    # Pitfall 7 starts 9 fresh processes: on a TPU each opens the chip (6-15 s), 120 s were too few there.
    at = run_until(at, lambda a: "pitfalls_job" not in a.session_state, timeout=400)
    assert not at.exception and not at.error, [e.value for e in at.error]
    results = at.session_state["pitfalls_results"]
    assert list(results) == list(SECTIONS)

    charts = vega_specs(at)
    # The size section adds a chart after its own: each shape's profiled busy time and gap.
    [gap] = [i for i, spec in enumerate(charts) if spec["layer"][0]["mark"]["type"] == "bar"]
    assert gap == SECTIONS.index("size") + 1
    shapes = [row["label"].split(" ")[0] for row in charts[gap]["layer"][0]["data"]["values"]]
    assert shapes == ["10x10", "10x10", "200x200", "200x200"]
    indices = [i for i in range(len(charts)) if i != gap]
    specs = [charts[i] for i in indices]
    assert len(specs) == 7
    for index, pid, spec in zip(indices, SECTIONS, specs, strict=True):
        pitfall = results[pid]["pitfall"]
        assert [layer["mark"]["type"] for layer in spec["layer"]] == ["rule", "rule", "point"]  # gap, ranges, dots
        assert spec["layer"][0]["encoding"]["x"]["scale"]["type"] == "log"
        assert spec["layer"][2]["encoding"]["color"]["field"] == "side"
        rows = {row["label"]: row for row in chart_rows(at, index) if "jax_s" in row}
        assert len(rows) == 2 + len(pitfall["extra"])
        naive = next(r for r in rows.values() if r["role"] == "naive")
        correct = next(r for r in rows.values() if r["role"] == "correct")
        assert naive["jax_s"] == pytest.approx(max(pitfall["naive"]["seconds"], 1e-9))
        assert correct["jax_s"] == pytest.approx(pitfall["correct"]["seconds"])
        assert correct["numpy_s"] == pytest.approx(pitfall["correct"]["numpy_seconds"])
        # The code each section shows before a run is the code the engine measured.
        preview = pv.preview(pid, _case("centered_gram"), (200, 200), "x32")
        for role, side in pv.sides(pitfall):
            assert {"label": side["label"], "code": side["code"]} in preview[role], (pid, role)

    texts = markdown(at)
    verdicts = [t for t in texts if t.startswith("**naive: JAX ") and "; measured properly: JAX " in t]
    assert len(verdicts) == 7
    assert sum(t.startswith("How wrong:") for t in texts) == 7
    assert verdicts[SECTIONS.index("tf32")].endswith("(not applicable on CPU: no TF32 here)**")
    assert any(i.value.startswith("Not applicable on CPU: no TF32 here") for i in at.info)
    assert any("Agreement with float64" in t for t in texts)
    assert any("Both float64 (jax_enable_x64)" in t for t in texts)  # the x64 worker's fair side
    table = next(t for t in texts if t.startswith("| Pitfall |"))
    assert "not measured yet" not in table and "[6. Reduced precision]" in table and "[7. Restarts" in table
    # Pitfall 6's heading names what the CPU's float32 products run at: the lesson does not apply here.
    assert "6. Reduced precision: does not apply on the CPU, where float32 matmuls stay float32" in [
        h.value for h in at.subheader]
    # Each section's reading of the machine: busy ones counted above and noted beside their lesson.
    busy = [pid for pid in SECTIONS if results[pid]["pitfall"]["load"]["busy"]]
    assert table.count("| busy (") == len(busy) and table.count("| quiet |") == len(SECTIONS) - len(busy)
    warnings = [w.value for w in at.warning]
    assert sum(w.startswith("**Busy machine**: other programs used") for w in warnings) == len(busy)
    assert any(w.startswith(f"{len(busy)} of 7 pitfalls were timed while") for w in warnings) == bool(busy)
    assert "cache" in results["cache"]["context"]["load"]["phases"]  # pitfall 7's processes, metered
    # Pitfall 7 names the compile step of each fresh process's first call, and the cache's docs.
    assert any("compiling " in t and t.startswith("JAX **") for t in texts)
    assert any("read from the cache in " in t for t in texts)
    assert any("persistent_compilation_cache.html" in t for t in texts)
    check_restarts(results["cache"]["pitfall"], results["jit"]["pitfall"])
    downloads = [d.proto.label for d in at.get("download_button")]
    assert downloads.count("Chart (PNG)") == 7
    assert not at.button(key="run_all_pitfalls").disabled

    # The same results in Chinese, as a teacher's class sees them after switching: no English left.
    at.query_params["lang"] = "zh"
    at.run()
    assert not at.exception and at.session_state["lang"] == "zh"
    assert len(at.session_state["pitfalls_results"]) == len(SECTIONS)
    left = english_left(at, also_names=cpu_model())
    assert left == [], "\n".join(left)


def test_one_section_in_x64_measures_the_fair_float64_side_as_correct():
    at = page(PAGE, case="centered_gram", shape="100x100", precision="x64", timing="quick")
    at.button(key="run_pitfall_dtype").click().run()
    job = at.session_state["pitfalls_job"]
    assert job.spec.precision == "x64" and len(job.steps) == 1  # no borrowed worker in x64
    at = run_until(at, lambda a: "pitfalls_job" not in a.session_state)
    results = at.session_state["pitfalls_results"]
    assert list(results) == ["dtype"]
    dtype = results["dtype"]["pitfall"]
    assert dtype["correct"]["label"] == "Both float64 (jax_enable_x64)"
    assert [s["label"] for s in dtype["extra"]] == ["Both float32"]
    assert len(at.get("vega_lite_chart")) == 1
    assert any(t.startswith("**naive: JAX ") for t in markdown(at))
    assert any("x64 (float64)" in c.value for c in at.caption)


def test_gpu_results_show_tf32_as_applicable():
    from _pitfalls import side

    default, default_t = side("Default matmul precision", "f(x)", 1e-4, 2e-3, rel_error=3e-4, conclusion="…")
    highest, highest_t = side("precision='highest'", "f(x)", 3e-4, 2e-3, rel_error=2e-7, conclusion="…")
    from jaxcompare.engine.common.lessons import _pitfall

    tf32 = _pitfall("tf32", default, highest, (default_t, highest_t), applicable=True)
    context = {"case": "centered_gram", "shape": [1000, 1000], "precision": "x32", "dtype": "float32",
               "backend": "gpu", "device": "cuda:0"}
    at = page(PAGE)
    at.session_state["pitfalls_results"] = {"tf32": {"pitfall": tf32, "context": context, "timing": "careful"}}
    at.run()
    assert not at.exception
    assert not any("Not applicable" in i.value for i in at.info)
    texts = markdown(at)
    assert "**naive: JAX 20x faster than NumPy; measured properly: JAX 6.67x faster than NumPy**" in texts
    assert any("default precision error **0.0003**" in t and "1,500x larger" in t for t in texts)
    assert any(t.startswith("How wrong: the naive way makes JAX look **3x better**") for t in texts)


def _case(name: str):
    from jaxcompare import all_cases

    return next(c for c in all_cases() if c.name == name)


def test_stop_cancels_the_running_job():
    at = page(PAGE)  # the default: careful timing at 1000x1000 takes a while
    at.button(key="run_all_pitfalls").click().run()
    job = at.session_state["pitfalls_job"]
    at = run_until(at, lambda a: job.status == "running", timeout=60)  # stop it mid-measurement
    at.button(key="stop_pitfalls").click().run()
    at = run_until(at, lambda a: "pitfalls_job" not in a.session_state, timeout=60)
    assert job.status == "cancelled"
    assert any(e.value.startswith("Stopped:") for e in at.error)
    assert not at.button(key="run_all_pitfalls").disabled


def test_compare_checklist_links_each_item_to_its_pitfall_section():
    at = page("pages/1_Compare.py", case="matmul", shape="small", timing="quick")
    at.button(key="run_compare").click().run()
    at = run_until(at, lambda a: len(a.metric) >= 6)
    frame = at.table[0].value  # st.table: its cells are Markdown and wrap, so no reason is cut off
    links = dict(zip(frame["Check"], frame["Explained in"], strict=True))
    assert links["Workload large enough"] == "[Workload size](Pitfalls?case=matmul#pitfall-size)"
    blocked = links["Blocked timing"]
    assert blocked.startswith("[Async dispatch](") and blocked.endswith("#pitfall-async)")
    assert links["Samples stable"] == ""  # a blank cell, not "None"
    anchors = {pv.anchor(p) for p in SECTIONS}
    assert all(link == "" or link.rsplit("#", 1)[1].rstrip(")") in anchors for link in links.values())
