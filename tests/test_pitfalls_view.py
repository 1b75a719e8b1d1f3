"""The Pitfalls page's plain-data helpers: URL config, links, verdicts and "how wrong"."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

import pytest
from _pitfalls import made_pitfall

from jaxcompare import all_cases, i18n
from jaxcompare.app import controls
from jaxcompare.app import pitfalls_view as pv
from jaxcompare.engine.common.lessons import SECTIONS, speed_words
from jaxcompare.engine.server.durations import Estimate

CASES = all_cases()


def case(name: str):
    return next(c for c in CASES if c.name == name)


def pitfall(pid: str, naive: tuple[float, float], correct: tuple[float, float], spread: float = 0.02):
    return made_pitfall(pid, naive, correct, spread=spread)


def test_defaults_are_the_docs_example_at_its_large_preset():
    config, warnings = pv.config_from_query({}, CASES)
    assert warnings == []
    assert config == pv.PitfallsConfig(case="centered_gram", size="large", custom_shape="1000x1000")
    assert config.shape(case("centered_gram")) == (1000, 1000)
    assert config.query() == {"case": "centered_gram"}
    assert config.spec(case("centered_gram")).timing.min_samples == 5  # careful


def test_url_round_trip():
    query = {"case": "matmul", "shape": "300x300", "precision": "x64", "device": "cpu", "timing": "quick"}
    config, warnings = pv.config_from_query(query, CASES)
    assert warnings == [] and config.size == "custom" and config.query() == query
    small, _ = pv.config_from_query({"case": "matmul", "shape": "small"}, CASES)
    assert small.shape(case("matmul")) == case("matmul").small_shape and small.query()["shape"] == "small"


def test_bad_url_values_warn_and_fall_back_to_the_defaults():
    config, warnings = pv.config_from_query(
        {"case": "centred_gram", "shape": "abc", "precision": "x128", "timing": "slow"}, CASES)
    assert config.case == "centered_gram" and config.size == "large"
    assert config.precision == "x32" and config.timing == "careful"
    assert len(warnings) == 4
    assert "did you mean centered_gram" in warnings[0]
    assert "the large preset 1000x1000" in warnings[1]


def test_links_point_at_the_section_anchor_with_a_canonical_query():
    link = pv.pitfall_link("jit", case("matmul"), (10, 10), "x64")
    path, _, fragment = link.partition("#")
    assert fragment == pv.anchor("jit") == "pitfall-jit"
    parts = urlsplit(path)
    assert parts.path == "Pitfalls"  # relative: works under any base URL path
    query = {k: v[0] for k, v in parse_qs(parts.query).items()}
    assert query == {"case": "matmul", "precision": "x64"}  # a tiny shape links to the large preset
    config, warnings = pv.config_from_query(query, CASES)
    assert warnings == [] and config.query() == query  # the page will not rewrite (and drop the #)
    custom = pv.pitfall_link("size", case("matmul"), (300, 300))
    assert "shape=300x300" in custom


def test_verdict_and_how_wrong():
    first_call = pitfall("jit", naive=(0.174, 0.0519), correct=(0.043, 0.0519))
    assert pv.verdict_text(first_call) == ("naive: JAX 3.35x slower than NumPy; "
                                          "measured properly: JAX 1.21x faster than NumPy")
    assert pv.wrong_factor(first_call) == pytest.approx((0.0519 / 0.174) / (0.0519 / 0.043))
    assert "4.05x worse" in pv.how_wrong(first_call)
    unblocked = pitfall("async", naive=(0.001, 0.05), correct=(0.04, 0.05))
    assert "40x better" in pv.how_wrong(unblocked)
    assert pv.how_wrong_short(unblocked) == "JAX looks 40x better"
    close = pitfall("transfer", naive=(0.042, 0.05), correct=(0.043, 0.05))
    text = pv.how_wrong(close, "cpu")
    assert "within the noise" in text and "the Transfer pitfall did not show" in text and "CPU backend" in text
    assert "CPU backend" not in pv.how_wrong(close, "gpu")  # the CPU's hint is not given for a GPU
    with i18n.using("zh"):  # the hint follows a Chinese full stop with no space
        chinese = pv.how_wrong(close, "cpu")
    assert "。" in chinese and "。 " not in chinese, chinese
    assert pv.how_wrong_short(close) == "within the noise" and pv.effect_name(close) == "within the noise"


def test_the_effect_comes_from_the_ranges_not_the_medians():
    # The observed fluke (issue 23): NumPy float32 timed slower than float64 by 1.9x, but with
    # ranges that overlap; the naive way then "made JAX look worse" -- here it is the noise.
    noisy = pitfall("dtype", naive=(0.08, 0.080), correct=(0.08, 0.152), spread=0.5)
    assert noisy["effect"] == "within_noise" and pv.how_wrong_short(noisy) == "within the noise"
    low, high = noisy["effect_range"]
    assert low < 1 < high and pv.effect_range_text(noisy) in pv.how_wrong(noisy)
    clear = pitfall("dtype", naive=(0.08, 0.152), correct=(0.08, 0.080), spread=0.05)
    assert clear["effect"] == "flatters" and pv.effect_name(clear) == "flatters JAX"
    assert "1.9x better" in pv.how_wrong(clear) and "95% range" in pv.how_wrong(clear)
    first_call = pitfall("jit", naive=(0.174, 0.0519), correct=(0.043, 0.0519))
    assert first_call["effect"] == "hurts" and pv.effect_name(first_call) == "hurts JAX"
    # The NumPy baseline both sides share cancels: its own noise does not widen the range.
    assert first_call["effect_range"][1] == pytest.approx((0.043 * 1.02) / (0.174 * 0.98))
    # "Worse" carries its range in its own terms (proper / naive), around the factor, not the reciprocal.
    worse = re.search(r"\*\*([\d.]+)x worse\*\* than it is \(95% range ([\d.]+)–([\d.]+)x\)", pv.how_wrong(first_call))
    assert worse, pv.how_wrong(first_call)
    factor, low, high = map(float, worse.groups())
    assert 1 < low <= factor <= high, worse.group(0)


def test_a_report_from_before_ranges_still_reads():
    old = pitfall("async", naive=(0.001, 0.05), correct=(0.04, 0.05))
    for key in ("effect", "effect_range", "effect_factor"):
        old.pop(key)
    for side in (old["naive"], old["correct"]):
        side.pop("range"), side.pop("numpy_range")
    assert pv.effect(old) == "flatters" and "40x better" in pv.how_wrong(old)
    assert "(" not in pv.side_figures(old["naive"])  # no range to show


def test_side_figures_show_each_median_with_its_range():
    first_call = pitfall("jit", naive=(0.174, 0.0519), correct=(0.043, 0.0519))
    text = pv.side_figures(first_call["correct"])
    assert text.startswith("JAX **43 ms** (42.1–43.9 ms) · NumPy 51.9 ms (50.9–52.9 ms) → JAX 1.21x faster")
    with i18n.using("zh"):  # Chinese brackets, and a factor's range in 倍 as its factor is
        chinese, wrong = pv.side_figures(first_call["correct"]), pv.how_wrong(first_call)
    assert chinese.startswith("JAX **43 ms**（42.1–43.9 ms） · NumPy 51.9 ms（50.9–52.9 ms）"), chinese
    assert "(" not in chinese and re.search(r"\d 倍）", wrong) and "x）" not in wrong, wrong


def test_pitfall_6_applies_where_float32_products_are_reduced_by_default():
    # A GPU's TF32 and a TPU's one bfloat16 pass (model/platforms.py); a CPU keeps float32.
    tf32 = pitfall("tf32", naive=(0.04, 0.05), correct=(0.05, 0.05))
    assert pv.not_applicable_text("tf32", "gpu") is None
    assert pv.not_applicable_text("tf32", "tpu") is None
    assert "not applicable" not in pv.verdict_text(tf32, "tpu") and pv.how_wrong_short(tf32, "tpu") != "n/a on TPU"
    assert pv.not_applicable_text("tf32", "cpu").startswith("Not applicable on CPU: no TF32 here")
    assert pv.not_applicable_text("jit", "cpu") is None
    assert pv.verdict_text(tf32, "cpu").endswith("(not applicable on CPU: no TF32 here)")
    assert "not applicable on CPU" in pv.how_wrong(tf32, "cpu")
    assert pv.how_wrong_short(tf32, "cpu") == "n/a on CPU"
    assert "not applicable" not in pv.verdict_text(tf32, "gpu")


def test_summary_table_links_every_section():
    results = {"jit": {"pitfall": pitfall("jit", (0.174, 0.0519), (0.043, 0.0519)), "context": {"backend": "cpu"}}}
    rows = pv.summary_rows(results)
    assert [r["Pitfall"].split("](")[1] for r in rows] == [
        "#pitfall-jit)", "#pitfall-async)", "#pitfall-dtype)", "#pitfall-transfer)", "#pitfall-size)", "#pitfall-tf32)",
        "#pitfall-cache)", "#pitfall-ports)"]
    assert rows[0]["How wrong"] == "JAX looks 4.05x worse" and rows[1]["How wrong"] == "not measured yet"
    table = pv.markdown_table(rows)
    assert table.count("\n") == 9 and "[1. JIT](#pitfall-jit)" in table  # header, rule, eight pitfalls
    assert "[7. Restarts](#pitfall-cache)" in table and "[8. Ports](#pitfall-ports)" in table


def test_a_section_missing_from_an_opened_lab_reads_as_not_in_the_file():
    saved = {"jit": {"pitfall": pitfall("jit", (0.174, 0.0519), (0.043, 0.0519)),
                     "context": {"backend": "cpu", "run": "r1"}}}
    opened = pv.OpenedLab("lab.json", frozenset({"r1"}))
    assert pv.summary_rows(saved, opened)[1]["How wrong"] == "not in the saved lab"
    # Once a section is measured here beside the file's, a missing one is simply not measured yet.
    here = {**saved, "dtype": {**saved["jit"], "context": {"backend": "cpu", "run": "r2"}}}
    assert pv.summary_rows(here, opened)[1]["How wrong"] == "not measured yet"
    assert pv.summary_rows(saved)[1]["How wrong"] == "not measured yet"


def test_the_code_of_each_side_has_its_comments_in_the_readers_language():
    from jaxcompare.engine import side_text
    from jaxcompare.engine.common.lessons import SIDE_TEXT

    steady = side_text("steady", "", "", "")[1]
    first_port = side_text("port_first", "", "some_port", "my_kernel")[1]
    assert pv.code_in_language(steady) == steady  # English: as the engine wrote it
    with i18n.using("zh"):
        shown = pv.code_in_language(steady)
        assert shown.split("\n") == ["f(x).block_until_ready()  # 预热", steady.split("\n")[1]]
        assert pv.code_in_language(first_port) == first_port  # a port's name is not translated
        # Every comment of every side's code is translated: a new one left unmarked fails here.
        for name in SIDE_TEXT:
            code = side_text(name, "10x10", "p", "n")[1]
            for line in pv.code_in_language(code).split("\n"):
                comment = line.partition("# ")[2]
                if comment and comment != "n":
                    assert not comment.isascii() or comment == "float64", (name, line)


def test_factors_read_without_exponents():
    assert pv.times(3.349) == "3.35x" and pv.times(660.4) == "660x" and pv.times(1500.2) == "1,500x"


def test_progress_text_names_the_section():
    assert pv.phase_text("async") == "Measuring 2 of 8: Async dispatch"
    assert pv.phase_text("cache") == "Measuring 7 of 8: Restarts"
    assert pv.phase_text("size", ("size",)) == "Measuring 1 of 1: Workload size"
    assert pv.phase_text("starting worker").startswith("Preparing")
    assert pv.phase_text("something_else") == "Something else"


def test_preview_has_naive_and_correct_code_for_every_section():
    for pid in SECTIONS:
        for precision in ("x32", "x64"):
            preview = pv.preview(pid, case("centered_gram"), (1000, 1000), precision)
            assert len(preview["naive"]) == len(preview["correct"]) == 1
            assert all(side["code"] and side["label"] for role in pv.ROLES for side in preview[role])
    dtype32 = pv.preview("dtype", case("centered_gram"), (1000, 1000), "x32")
    assert dtype32["correct"][0]["label"] == "Both float32" and "float64" in dtype32["also"][0]["label"]


def test_the_cache_section_names_its_compile_step_and_the_docs_page():
    cold = {"seconds": 0.31, "numpy_seconds": 0.006, "compile_seconds": 0.103, "cache_hits": 0}
    hit = {**cold, "seconds": 0.15, "compile_seconds": 0.0073, "cache_hits": 2}
    assert pv.compile_text(cold) == "compiling 103 ms"
    assert pv.compile_text(hit) == "read from the cache in 7.3 ms"
    assert pv.compile_text({"seconds": 0.1}) is None
    assert pv.side_figures(hit).endswith("→ JAX 25x slower than NumPy · read from the cache in 7.3 ms")
    assert pv.doc_title(pv.meta("cache")["doc"]) == "Persistent compilation cache"
    preview = pv.preview("cache", case("centered_gram"), (1000, 1000), "x32")
    assert "jax_persistent_cache_min_compile_time_secs" in preview["correct"][0]["code"]
    assert [s["label"] for s in preview["also"]] == ["First process, empty cache: compiles and writes it",
                                                     "Process start: Python, import jax, backend up"]


def test_thorough_timing_is_for_compare_not_for_the_lab():
    compare, warnings = controls.compare_config_from_query({"case": "matmul", "timing": "thorough"}, CASES)
    assert warnings == [] and compare.timing == "thorough"
    assert compare.spec(case("matmul")).timing.preset_name == "thorough"
    lab, warnings = pv.config_from_query({"timing": "thorough"}, CASES)
    assert lab.timing == "careful" and len(warnings) == 1 and "quick, careful" in warnings[0]


def test_a_finished_job_becomes_section_entries_with_their_context():
    report = {"case": "matmul", "shape": [64, 64], "precision": "x32", "dtype": "float32", "backend": "cpu",
              "device": "cpu:0", "pitfalls": [pitfall("jit", (1.0, 2.0), (0.5, 2.0))]}
    entries = pv.section_entries(report, "quick")
    assert list(entries) == ["jit"] and "pitfalls" not in entries["jit"]["context"]
    assert entries["jit"]["timing"] == "quick"
    assert pv.measured_caption(entries["jit"]["context"], "quick").endswith("CPU device `cpu:0` · quick timing")
    assert pv.file_stem("jit", entries["jit"]["context"]) == "pitfall_jit_matmul_64x64_x32"
    assert pv.progress_text("jit", 0.5, 3.2, queued_behind=2).startswith("Queued behind 2 other measurement(s)")
    assert pv.progress_text("done", 1.0, 3.2) == "Done · 100% · 3 s"
    # A running job says its time left by its estimate, as every running job does.
    estimate = Estimate(20.0, 10.0, 40.0)
    assert pv.progress_text("jit", 0.5, 3.2, estimate=estimate) == "Measuring 1 of 8: JIT · 50% · 3 s, about 17 s left"
    assert pv.progress_text("jit", 0.9, 31, estimate=estimate).endswith("31 s, longer than the 20 s expected")


def test_equal_times_name_no_winner_and_chinese_factors_are_read_as_multiples():
    """12.1 ms against 12.1 ms is not "1x faster"; and Chinese "快 1 倍" reads as twice as fast,
    so a factor is said as "the speed is N times NumPy's"."""
    assert pv.speed_text(0.0121, 0.0121) == "JAX as fast as NumPy" == speed_words(0.0121, 0.0121)
    assert pv.speed_text(0.0121, 0.01209, subject=False) == "as fast as NumPy"
    assert pv.speed_text(0.02, 0.01) == "JAX 2x faster than NumPy" == speed_words(0.02, 0.01)
    assert pv.speed_text(0.01, 0.02) == "JAX 2x slower than NumPy" == speed_words(0.01, 0.02)
    with i18n.using("zh"):
        assert pv.speed_text(0.0121, 0.0121) == "JAX 与 NumPy 一样快"
        assert pv.speed_text(0.02, 0.01) == "JAX 的速度是 NumPy 的 2 倍"
        assert pv.speed_text(0.01, 0.02) == "JAX 的耗时是 NumPy 的 2 倍"


def test_a_lesson_within_the_noise_shows_the_proper_call_timed_again_where_it_moved():
    """Pitfall 4 on a busy CPU: host arrays 406 µs against the baseline's 231 µs on device arrays, apart, yet
    "within the noise ... costs little here", because the proper call timed again in turns read 400 µs and
    the verdict spans both comparisons. The page and the CLI now show that figure; where it agrees with the
    baseline they say nothing more."""
    from _pitfalls import side, timed

    from jaxcompare.analysis import lab_checks
    from jaxcompare.cli import pitfall_lines
    from jaxcompare.engine.common.lessons import _pitfall

    def transfer(again_s: float):
        naive, naive_t = side("host arrays", "n()", 406e-6, 2e-3)
        correct, correct_t = side("device arrays", "c()", 231e-6, 2e-3)
        return _pitfall("transfer", naive, correct, (naive_t, correct_t), again=(correct_t[0], timed(again_s)))

    moved, held = transfer(400e-6), transfer(232e-6)
    assert moved["effect"] == "within_noise" and moved["proper_again"]["side"] == "correct"
    said = pv.how_wrong(moved, "cpu")
    assert "timed again in turns with the naive side, took 400 µs (392–408 µs), not the 231 µs shown" in said, said
    assert any("took 400 µs" in line for line in pitfall_lines(moved, "cpu"))
    assert held["effect"] == "hurts" and lab_checks.retimed_text(held) is None  # the baseline held: nothing more
    with i18n.using("zh"):
        assert "400 µs" in pv.how_wrong(moved, "cpu") and "timed again" not in pv.how_wrong(moved, "cpu")
