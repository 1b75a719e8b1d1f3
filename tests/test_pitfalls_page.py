"""The Pitfalls page under Streamlit's AppTest: the default configuration, a real run of all eight
sections at a small shape (CPU, quick timing), one job at a time, Stop and bad URL values. The same
run's sections in Chinese in a real Chromium, last. (The deep link and the busy machine in Chromium:
tests/test_browser_pitfalls.py; the Compare checklist's links into this page: tests/test_app.py, on its
Compare run.)"""

from __future__ import annotations

import copy
import datetime as dt
import json
import os
import re

import browser_support as bs
import pytest
from _pitfalls import check_restarts
from apptest_support import app_runner, fresh_caches, page, run_until  # noqa: F401
from chart_support import chart_rows, vega_specs
from i18n_support import cpu_model, english_left
from streamlit.testing.v1 import AppTest
from support import zh

from jaxcompare.app import pitfalls_view as pv
from jaxcompare.app.charts_profile import BUSY_COLOR, GAP_COLOR
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


@pytest.fixture(scope="module")
def run_all():
    """One real run of all eight sections through the page's Run all button, read by the English checks
    and by Chromium's Chinese page below: the suite ran this lab twice (AppTest, then again in a server
    for Chromium, each with pitfall 7's nine fresh processes; benchmarks/RESULTS.md)."""
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
    # A copy: the English test switches this session to Chinese afterwards.
    return at, copy.deepcopy(dict(at.session_state["pitfalls_results"]))


def test_run_all_measures_eight_sections_in_one_job(run_all):
    at, _ = run_all
    results = at.session_state["pitfalls_results"]
    assert list(results) == list(SECTIONS)

    charts = vega_specs(at)
    bars = [i for i, spec in enumerate(charts) if spec["layer"][0]["mark"]["type"] == "bar"]
    # Beside busy neighbours the traced calls may run slower than the timed ones; the page then withholds
    # the size section's busy-vs-gap bars and says why (as the Chinese page in Chromium below accepts).
    if any(t.startswith("Profiled, but not as timed: the device was busy **") for t in markdown(at)):
        assert bars == [], bars
        indices = list(range(len(charts)))
    else:
        # The size section adds a chart after its own: each shape's profiled busy time and gap.
        [gap] = bars
        assert gap == SECTIONS.index("size") + 1
        shapes = [row["label"].split(" ")[0] for row in charts[gap]["layer"][0]["data"]["values"]]
        assert shapes == ["10x10", "10x10", "200x200", "200x200"]
        indices = [i for i in range(len(charts)) if i != gap]
    specs = [charts[i] for i in indices]
    # Pitfall 8 draws no chart for the docs' example: it has one port, nothing to set beside it.
    drawn = [pid for pid in SECTIONS if pv.has_chart(results[pid]["pitfall"])]
    assert len(specs) == 7 and drawn == [pid for pid in SECTIONS if pid != "ports"]
    for index, pid, spec in zip(indices, drawn, specs, strict=True):
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
    assert len(verdicts) == 8
    assert sum(t.startswith("How wrong:") for t in texts) == 8
    assert verdicts[SECTIONS.index("ports")].endswith("(not applicable: one port runs here)**")
    assert any(i.value.startswith("Not applicable to centered_gram here: it has no other port that runs on CPU.")
               and "cumsum" in i.value for i in at.info)
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
    assert any(w.startswith(f"{len(busy)} of 8 pitfalls were timed while") for w in warnings) == bool(busy)
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
    assert not any(i.value.startswith("Not applicable on") for i in at.info)  # pitfall 8's line names the case
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


def test_a_saved_lab_opens_again_in_a_new_session_and_a_file_it_cannot_show_changes_nothing(run_all):
    """A teacher's lab, measured before the class: saved from the page (a run of all eight, two sections of
    it measured again on their own: a second run), opened in a new session (a reload keeps nothing), its
    sections as measured then; `pitfalls --json`'s one run opens too; a file the page cannot show is one line."""
    _, measured = run_all
    saved = copy.deepcopy(measured)
    for pid in ("cache", "ports"):  # measured again on their own: a job, and a run, of their own
        saved[pid]["context"] = dict(saved[pid]["context"], run="again")
    doc = json.loads(pv.lab_json(saved))
    assert doc["schema"] == "jaxcompare.lab/1" and [len(run["pitfalls"]) for run in doc["runs"]] == [6, 2]
    assert all(run["timing"] == "quick" and "consistency" in run for run in doc["runs"])

    def keep_button(at: AppTest):
        [button] = [d.proto for d in at.get("download_button") if d.proto.label == "This lab (JSON)"]
        return button

    at = page(PAGE, lang="en")  # the sidebar at the defaults: centered_gram, large, careful
    assert keep_button(at).disabled  # nothing measured yet: nothing to keep
    at.file_uploader[0].set_value(("class.json", json.dumps(doc).encode(), "application/json")).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    opened = at.session_state["pitfalls_results"]
    assert list(opened) == list(SECTIONS) and not keep_button(at).disabled
    for pid in SECTIONS:
        kept = {k: v for k, v in opened[pid]["pitfall"].items() if k != "checks"}
        assert kept == json.loads(json.dumps(measured[pid]["pitfall"])), pid
        assert opened[pid]["timing"] == "quick" and opened[pid]["context"]["backend"] == "cpu"
    assert len({opened[pid]["context"]["run"] for pid in SECTIONS}) == 2  # its runs' figures kept apart
    # When: the run's own time (UTC), as the worker recorded it.
    when = dt.datetime.fromisoformat(doc["runs"][0]["created"]).strftime("%Y-%m-%d %H:%M")
    assert any(info.value.startswith(f"These sections are the saved lab `class.json`: measured on {when}")
               for info in at.info), [info.value for info in at.info]
    captions = [c.value for c in at.caption]
    assert "Not measured yet." not in captions
    assert sum(c.startswith("Measured: centered_gram · 200x200 · x32") for c in captions) == len(SECTIONS)
    # The sidebar now says what the lab measured: no section reads as measured at other settings, and one
    # measured again is measured as the lab was.
    assert (at.session_state["pf_size"], at.session_state["pf_custom_shape"], at.session_state["pf_timing"]) == (
        "custom", "200x200", "quick")
    assert not any("the sidebar settings have changed" in c for c in captions)
    opened["async"]["context"] = dict(opened["async"]["context"], run="measured here")  # as a live run leaves it
    at.run()
    assert any(info.value.startswith("Sections 1. JIT, 3. Dtypes") and "the others were measured here now" in
               info.value for info in at.info), [info.value for info in at.info]

    before = {pid: entry["context"]["run"] for pid, entry in opened.items()}
    broken = copy.deepcopy(doc)
    del broken["runs"][0]["pitfalls"][0]["naive"]["seconds"]
    for name, data, words in (
            ("notes.json", b"hello", "notes.json: not valid JSON"),
            ("results.json", b'{"results": []}', "results.json: not a saved pitfalls lab"),
            ("broken.json", json.dumps(broken).encode(),
             "broken.json: section jit is not as jaxcompare writes it (no field 'seconds')"),
            ("nine.json", json.dumps({"schema": "jaxcompare.lab/1", "runs": [{"pitfalls": [{"id": "nine"}]}]}).encode(),
             "nine.json, run 1: a pitfall that is not one of the lab's sections")):
        at.file_uploader[0].set_value((name, data, "application/json")).run()
        assert not at.exception and len(at.error) == 1 and words in at.error[0].value, (name, at.error)
        assert "Traceback" not in at.error[0].value and "Error" not in at.error[0].value
        assert {pid: e["context"]["run"] for pid, e in at.session_state["pitfalls_results"].items()} == before

    cli_like = json.dumps(doc["runs"][1]).encode()  # one run, as `pitfalls --json` writes it
    at.file_uploader[0].set_value(("lab.json", cli_like, "application/json")).run()
    assert not at.error and list(at.session_state["pitfalls_results"]) == ["cache", "ports"]
    # A lab saved before runs recorded their time: said without one.
    undated = json.dumps({k: v for k, v in doc["runs"][1].items() if k != "created"}).encode()
    at.file_uploader[0].set_value(("old.json", undated, "application/json")).run()
    assert any("measured when it was saved" in info.value for info in at.info), [info.value for info in at.info]


# Last in this module: Playwright's sync API leaves its event loop set as running until the module's
# browser closes (browser_support.browser), and no AppTest runs after it here.
@pytest.mark.browser
def test_the_run_in_chinese_in_chromium_draws_seven_charts_and_the_size_gap(run_all, browser, server, tmp_path):
    # Seven: pitfall 8 draws none for the docs' example, whose one port has nothing beside it.
    """The run above on the app's real Pitfalls page in Chromium, in Chinese (a teacher's class): saved as a
    file and opened through the page's own uploader, as a teacher opens a lab measured before the class (so
    Chromium draws what this module measured rather than a second lab); every chart drawn, the size gap's
    bars, each verdict and effect in Chinese."""
    from test_browser_pitfalls import section_box

    _, results = run_all
    lab = tmp_path / "lab.json"
    lab.write_text(pv.lab_json(results))
    page = bs.open_page(browser, f"{server}/Pitfalls?case=centered_gram&shape=200x200&timing=quick&lang=zh",
                        height=1200)
    page.get_by_text(zh("Keep or open a lab")).click()
    page.locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files(str(lab))
    page.get_by_text(zh("These sections are the saved lab `{name}`: measured when it was saved, on the device "
                        "named under each, not now.").split("`")[0]).wait_for(timeout=60_000)
    page.wait_for_selector(bs.IDLE, timeout=60_000)
    bs.assert_no_error(page)
    with page.expect_download() as download:  # kept again: what the page shows, as the file held it
        page.get_by_role("button", name=zh("This lab (JSON)")).click()
    kept = json.loads(download.value.path().read_text())
    assert [p["id"] for run in kept["runs"] for p in run["pitfalls"]] == list(SECTIONS)
    for pid in SECTIONS:
        assert page.locator(f"#pitfall-{pid}").count() == 1, f"no anchor for {pid}"
    assert page.get_by_role("button", name=zh("Run all pitfalls")).is_enabled()
    try:
        page.wait_for_function(f"() => document.querySelectorAll(\"{bs.CHART}\").length >= 7",
                               polling=bs.POLL_MS, timeout=60_000)
    except Exception as exc:  # say what the page showed instead
        raise AssertionError(f"seven charts did not show within 60 s; the page said:\n{bs.main_text(page)[-1500:]}"
                             ) from exc
    page.wait_for_selector(bs.IDLE, timeout=60_000)
    text = bs.main_text(page)
    # Beside busy neighbours the traced calls may run slower than the timed ones (CI: 388 µs traced in a
    # 247 µs call); the page then withholds the size section's busy-vs-gap bars and says why.
    apart = zh("Profiled, but not as timed: the device was busy **{busy}** per traced call, longer than the whole "
               "timed call ({seconds}, {range}), so the traced calls ran at another speed and their split into "
               "device time and host overhead is withheld.").split("**")[0]
    charts = page.locator("[data-testid='stVegaLiteChart']").count()
    if apart in text:
        assert charts == 7, charts  # seven pitfall charts, no gap chart
        pitfall_charts, gap_chart = [0, 1, 2, 3, 4, 5, 6], None
    else:
        # Seven pitfall charts, and after the size section's, the busy-vs-gap bars of its two shapes.
        assert charts == 8, charts
        pitfall_charts, gap_chart = [0, 1, 2, 3, 4, 6, 7], 5
    for index in pitfall_charts:
        assert bs.wait_for_chart_marks(page, index, bs.JAX_COLOR) > 0, f"chart {index} drew no JAX dots"
    if gap_chart is not None:
        assert bs.wait_for_chart_marks(page, gap_chart, BUSY_COLOR, mark="rect", at_least=2) == 2
        assert bs.chart_marks(page, gap_chart, GAP_COLOR, mark="rect") == 2
    bs.assert_no_error(page)
    text = bs.main_text(page)
    measured_properly = zh("naive: {naive}; measured properly: {correct}").split("{correct}")[0].split("{naive}")[1]
    assert text.count(measured_properly) >= 7, measured_properly  # each section's verdict, in Chinese
    not_applicable = zh("Not applicable on {backend}: no TF32 here. Both sides compute in full float32, so the "
                        "errors match and the times differ only by noise; the numbers are shown for reference.")
    assert not_applicable.format(backend="CPU") in text
    # Every figure with its range, every lesson judged against it: the effect's words, in Chinese.
    assert text.count(zh(" (95% range {range})").split("{range}")[0].strip()) >= 5
    effects = [zh(w) for w in ("within the noise", "JAX looks {factor}x better", "JAX looks {factor}x worse")]
    assert any(e.split("{factor}")[0] in text for e in effects)
    profiled = zh("Profiled: the device was busy **{busy}** of **{wall}** per call; the gap, **{gap}**, is host "
                  "overhead.").split("**")[0]
    if gap_chart is not None:
        assert text.count(profiled) == 2, profiled  # the size section's two shapes
        gap_svg = page.evaluate("i => document.querySelectorAll(\"[data-testid='stVegaLiteChart'] svg.marks\")[i]"
                                ".textContent", gap_chart)
        assert zh("device busy") in gap_svg
    assert "case=centered_gram" in page.url and "shape=200x200" in page.url and "lang=zh" in page.url
    height = page.evaluate("() => document.querySelector(\"[data-testid='stMain']\").scrollHeight")
    page.set_viewport_size({"width": 1400, "height": min(height + 50, 12_000)})
    page.wait_for_selector(bs.IDLE, timeout=30_000)
    for index in pitfall_charts:  # still drawn after the resize (the width is unchanged: no redraw due)
        assert bs.chart_marks(page, index, bs.JAX_COLOR) > 0, f"chart {index} lost its JAX dots"
    # Pitfall 7's rows name each first call's compile step, in Chinese, in its chart.
    cache_svg = page.evaluate("i => document.querySelectorAll(\"[data-testid='stVegaLiteChart'] svg.marks\")[i]"
                              ".textContent", pitfall_charts[-1])
    assert zh("compiling {time}").split("{time}")[0].strip() in cache_svg
    assert zh("read from the cache in {time}").split("{time}")[0].strip() in cache_svg
    shot = tmp_path / "pitfalls.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 50_000
    section = os.environ.get("JAXCOMPARE_TEST_SHOT_DIR") or str(tmp_path)  # where a person looks at it
    page.screenshot(path=f"{section}/pitfall_cache_zh.png", full_page=True, clip=section_box(page, "cache"))
    page.close()
