"""The History page's words and rows: labels, table rows, filters, verdict text."""

from __future__ import annotations

import dataclasses
import datetime as dt
import re

from _results import make_result, stats, with_jax
from markdown_it import MarkdownIt

from jaxcompare.analysis import compare
from jaxcompare.app import history_view as hv
from jaxcompare.history.exchange import summary
from jaxcompare.i18n import using
from jaxcompare.model.stats import Stats


def gpu_copy(result, **env):
    result = with_jax(result, device="cuda:0", device_kind="NVIDIA H200")
    return dataclasses.replace(result, id="gpu-run", backend="gpu", created="2026-11-29T21:58:31.5+00:00",
                               env={**result.env, "hostname": "gpu-box", "versions": {"jax": "0.11.0"}, **env})


def test_a_saved_run_set_aside_has_its_range_in_the_table_not_a_bare_speedup(tmp_path):
    from jaxcompare.history.store import Store

    store = Store(tmp_path / "results.sqlite3")
    fine = make_result()
    busy = dataclasses.replace(make_result(numpy_s=1e-3, jax_s=0.99e-3), id="busy-run", load={
        "cores": 2, "phases": {p: {"wall_s": 1.0, "others_cpu_s": 1.3} for p in ("numpy", "runtime")}})
    for r in (fine, busy):
        store.save(r)
    doubts = hv.set_aside(store, [fine.id, busy.id])
    assert list(doubts) == [busy.id] and re.fullmatch(r"0\.\d\dx–1\.\d\dx · the machine was busy", doubts[busy.id])
    rows = hv.table_rows([summary(fine), summary(busy)], doubts=doubts)
    assert rows[0]["Speedup"] == "5.00x" and rows[0]["Set aside"] == ""
    assert rows[1]["Speedup"] == "set aside" and rows[1]["Set aside"] == doubts[busy.id]  # never "None"
    assert "Set aside" not in hv.table_rows([summary(fine)], doubts=hv.set_aside(store, [fine.id]))[0]


def test_labels_name_case_shape_precision_device_host_and_utc_minute():
    r = gpu_copy(make_result("svd", (500, 500), "x64"))
    assert hv.run_label(r) == "svd 500x500 x64 · gpu · gpu-box · 2026-11-29 21:58"
    assert hv.run_label(summary(r)) == hv.run_label(r)  # a summary row reads the same
    assert hv.when_text("2026-11-29T23:58:00+02:00") == "2026-11-29 21:58"
    no_host = make_result()
    assert hv.run_label(no_host) == "matmul 10x10 x32 · cpu · 2026-01-01 00:00"


def test_twins_in_the_same_minute_get_short_ids_and_letters():
    a = make_result()
    b = dataclasses.replace(a, id="abcdef123")
    labels = hv.run_labels([a, b])
    assert labels[0] != labels[1] and labels[1].endswith("· abcdef")
    assert [s[:4] for s in hv.lettered_labels([a, b])] == ["A · ", "B · "]
    assert hv.oldest_first([gpu_copy(a), a])[0] is a
    early = dataclasses.replace(a, id="zzz", created="2026-01-01T00:00:00.100+00:00")
    late = dataclasses.replace(a, id="aaa", created="2026-01-01T00:00:00.900+00:00")
    assert hv.oldest_first([late, early]) == [early, late]  # sub-second order, not id order


def test_table_rows_format_times_and_devices():
    r = gpu_copy(make_result(numpy_s=1.5e-3, jax_s=2.5e-6))
    (row,) = hv.table_rows([summary(r)])
    assert row["Device"] == "gpu · NVIDIA H200" and row["Host"] == "gpu-box" and row["JAX"] == "0.11.0"
    assert row["NumPy runtime (plain process)"] == "1.5 ms" and row["JAX runtime"] == "2.5 µs"
    assert row["NumPy (freed memory kept)"] == ""  # NumPy timed once: blank, not a figure
    assert row["Speedup"] == f"{r.speedup:.2f}x" and row["ID"] == "gpu-run"
    assert hv.table_rows([summary(make_result())])[0]["Device"] == "cpu"


def test_table_rows_give_numpys_kept_figure_beside_the_plain_one():
    r = dataclasses.replace(make_result(numpy_s=14.9e-3), numpy_kept=stats(3e-3))
    (row,) = hv.table_rows([summary(r)])
    names = list(row)
    assert names.index("NumPy (freed memory kept)") == names.index("NumPy runtime (plain process)") + 1
    assert row["NumPy runtime (plain process)"] == "14.9 ms" and row["NumPy (freed memory kept)"] == "3 ms"
    assert row["Speedup"] == f"{r.speedup:.2f}x"  # against the plain figure
    with using("zh"):
        (zh_row,) = hv.table_rows([summary(r)])
    assert zh_row["NumPy 运行时间（普通进程）"] == "14.9 ms" and zh_row["NumPy（保留已释放内存）"] == "3 ms"


def test_a_comparison_gives_numpys_kept_figures_where_either_run_has_one():
    once, other_once = make_result(numpy_s=14e-3), make_result(numpy_s=15e-3)
    assert compare.compare_results(once, other_once).numpy_kept == {"a": None, "b": None}
    assert hv.numpy_kept_line(compare.compare_results(once, other_once)) is None
    both = dataclasses.replace(make_result(numpy_s=14.9e-3), numpy_kept=stats(3e-3))
    cmp = compare.compare_results(once, both)
    assert cmp.numpy_kept == {"a": None, "b": both.numpy_kept.median_s}
    assert hv.numpy_kept_line(cmp) == ("NumPy with freed memory kept: A — → B 3 ms; the NumPy runtime verdict "
                                       "compares the figures of NumPy as a plain process runs it")
    # Same arrays, one run timed NumPy once in its worker: its NumPy verdict may be the allocator's doing.
    assert cmp.comparable and any(w.startswith("A timed NumPy once, in its worker, and B as a plain process")
                                  for w in cmp.warnings)
    twice = compare.compare_results(both, dataclasses.replace(both, numpy_kept=stats(2.9e-3)))
    assert hv.numpy_kept_line(twice).startswith("NumPy with freed memory kept: A 3 ms → B 2.9 ms;")
    assert not any("timed NumPy once" in w for w in twice.warnings)
    # Different shapes: one figure is no sign of another way of timing (small arrays are timed once).
    bigger = dataclasses.replace(make_result(shape=(1000, 1000)), numpy_kept=stats(3e-3))
    assert not any("timed NumPy once" in w for w in compare.compare_results(once, bigger).warnings)


def test_device_options_and_date_bounds():
    facets = {"backend": ["cpu", "gpu"], "device_kind": ["cpu", "NVIDIA H200", ""]}
    assert hv.device_options(facets) == ["cpu", "gpu", "NVIDIA H200"]
    d1, d2 = dt.date(2026, 1, 1), dt.date(2026, 1, 31)
    assert hv.date_bounds(()) == (None, None)
    assert hv.date_bounds((d1,)) == (d1, None)
    assert hv.date_bounds((d1, d2)) == (d1, d2)
    assert hv.date_bounds(d1) == (d1, d1)


def test_verdict_words():
    slow, fast = make_result(jax_s=2e-4), make_result(jax_s=1e-4)
    v = compare.verdict(slow.jax.runtime, fast.jax.runtime)
    assert hv.verdict_headline(v) == ("success", "B is 2.00x faster than A")
    slower = compare.verdict(fast.jax.runtime, slow.jax.runtime)
    assert hv.verdict_headline(slower) == ("error", "B is 2.00x slower than A")
    same = compare.verdict(slow.jax.runtime, slow.jax.runtime)
    assert hv.verdict_headline(same) == ("info", "No significant difference")
    stats = hv.verdict_stats(v)
    assert stats.startswith("p < 0.001 · ")  # twice as fast: beyond what a rerun moves either median
    assert "median B / A = 0.5" in stats and "95% CI" in stats and "runs A 1, B 1" in stats
    few = compare.verdict(Stats.from_samples([1e-4, 1.1e-4]), slow.jax.runtime)
    assert hv.verdict_headline(few) == ("warning", "Too few samples to judge")


def test_verdict_explanations_are_the_pages_sentences():
    """The verdict is data (analysis/compare.py); these are the sentences the History page shows."""
    slow, fast = make_result(jax_s=2e-4), make_result(jax_s=1e-4)
    assert hv.verdict_explanation(compare.verdict(slow.jax.runtime, fast.jax.runtime), "JAX runtime") == (
        "B's JAX runtime is 2.00x faster than A's JAX runtime (median B 100 µs vs A 200 µs; p<0.001; 95% CI of the "
        "speedup 1.65x–2.43x).")
    assert hv.verdict_explanation(compare.verdict(slow.jax.runtime, slow.jax.runtime), "JAX runtime") == (
        "No significant difference: the 0.0% difference in medians is within what a rerun moves them (median B 200 µs "
        "vs A 200 µs; p=1.000; 95% CI of the slowdown 0.82x–1.21x).")
    few = compare.verdict(Stats.from_samples([1e-4, 1.1e-4]), slow.jax.runtime)
    assert hv.verdict_explanation(few, "JAX runtime") == (
        "Too few samples to judge: A's JAX runtime or B's JAX runtime has no 95% range, which needs at least 6 "
        "samples (medians 105 µs vs 200 µs).")
    assert hv.verdict_explanation(few).startswith("Too few samples to judge: A or B has no 95% range")


def test_difference_lines_and_messages():
    a = make_result()
    b = gpu_copy(a)
    a = dataclasses.replace(a, env={**a.env, "hostname": "laptop", "versions": {"jax": "0.10.2"}})
    lines = [plain(line) for line in hv.difference_lines(compare.differences(a, b))]
    assert "device cpu → gpu" in lines and "jax 0.10.2 → 0.11.0" in lines and "host laptop → gpu-box" in lines
    assert hv.import_message(3, 1, "x.json") == "Imported 3 results (1 already present) from x.json."
    assert hv.speedup_line({"a": 2.0, "b": None}) == "Speedup (NumPy / JAX): A 2.00x → B —"
    # B set aside: its figure marked, as History's table and chart mark it (it was bare beside the warning)
    wide = dataclasses.replace(a, numpy_runtime=stats(a.numpy_runtime.median_s, spread=0.9))
    assert hv.speedup_line({"a": 5.0, "b": 6.5}, a, wide) == (
        "Speedup (NumPy / JAX): A 5.00x → B 6.50x? · ?: set aside (see above)")


def test_history_page_captions_and_prompts():
    assert hv.showing_text(3, 3, 2000).startswith("Showing all 3 results, newest first.")
    assert hv.showing_text(1, 1, 2000).startswith("Showing 1 result,")
    assert hv.showing_text(2000, 5000, 2000).endswith("Only the newest 2000 are listed; filter to see older ones.")
    assert "download or delete them" in hv.showing_text(3, 3, 2000)
    # A hosted demo's visitor cannot delete, and is not told to.
    assert hv.showing_text(3, 3, 2000, editable=False).endswith("side by side or download them.")
    question = hv.delete_question([f"run {i}" for i in range(10)], 10)
    assert question.startswith("Delete 10 saved results for good?") and question.endswith("\n- … and 2 more")
    assert hv.delete_question(["run"], 1).startswith("Delete 1 saved result for good?")
    assert hv.which_is_which(["A · matmul 10x10", "B · matmul 16x16"]) == (
        "**A** (older): matmul 10x10  \n**B** (newer): matmul 16x16")
    a, b = make_result(), make_result(shape=(16, 16))
    same = compare.compare_results(a, a)
    assert hv.comparison_warning(same) is None and hv.setup_line(same.differences).startswith("**Same setup:**")
    other = compare.compare_results(a, b)
    warning = hv.comparison_warning(other)
    assert warning.startswith("These two runs are not the same measurement") and "\n- different shapes" in warning
    assert hv.setup_line(other.differences) == "**What differs:** shape 10x10 → 16x16"


def plain(markdown: str) -> str:
    """Markdown's backslash escapes undone and the invisible word joiners dropped: the text a reader sees."""
    return re.sub(r"\\(.)", r"\1", markdown).replace("\u2060", "")


def test_recorded_strings_show_as_text_wherever_history_uses_markdown():
    # A result imported by the operator, shown to every visitor: its strings were written by whoever
    # made the file. Rendered as CommonMark, none of them may become a link or an image.
    link, image = "x`[click me](https://evil.example/)`", "![pic](https://evil.example/pixel.png)"
    a = dataclasses.replace(with_jax(make_result(), device_kind=image),
                            env={"versions": {"jax": "[0.4](https://evil.example/)"}})
    b = gpu_copy(make_result(shape=(16, 16)))
    b = dataclasses.replace(b, spec=dataclasses.replace(b.spec, case=link))
    labels = hv.lettered_labels([a, b])
    cmp = compare.compare_results(a, b)
    shown = [hv.which_is_which(labels), hv.setup_line(cmp.differences), hv.comparison_warning(cmp),
             hv.delete_question(labels, 2)]
    html = MarkdownIt().render("\n\n".join(shown))
    assert "<a" not in html and "<img" not in html and "<code" not in html
    assert link in plain(shown[0]) and image in plain(shown[1]) and link in plain(shown[2])


def test_a_reopened_run_sets_compares_sidebar_and_says_when_and_where():
    from jaxcompare import get_case
    from jaxcompare.app import controls

    r = gpu_copy(make_result("svd", (300, 300), "x64"))
    r = dataclasses.replace(r, spec=dataclasses.replace(r.spec, matmul_precision="highest"))
    config, warnings = controls.compare_config_from_query(hv.compare_query(r), [get_case("svd"), get_case("matmul")])
    assert not warnings and config.shape(get_case("svd")) == (300, 300)
    assert (config.case, config.precision, config.timing, config.matmul_precision) == ("svd", "x64", "quick",
                                                                                         "highest")
    assert hv.saved_run_note(r).startswith("A saved run (`gpu-run`) from History, measured 2026-11-29 21:58 UTC "
                                           "on gpu · NVIDIA H200 · gpu\\-box.")
    # Anyone can write a link: the id it names is quoted as text, and cut short.
    text = hv.not_opened_text("[x](https://evil.example)" + "a" * 500)
    assert "](" not in text and len(text) < 200
