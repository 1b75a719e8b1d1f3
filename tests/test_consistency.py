"""Figures of one run that cannot all be true (analysis/consistency.py): each check fires on
recorded figures that contradict each other, and stays quiet on figures that merely wander."""

from __future__ import annotations

import dataclasses
import html

from _results import by_id, make_result, stats, with_jax

from jaxcompare.analysis.checks import NA, PASS, WARN, check_on_device
from jaxcompare.analysis.consistency import repeat_checks, result_checks, version_checks
from jaxcompare.analysis.summary import transfer_help
from jaxcompare.analysis.trust import trust
from jaxcompare.analysis.versions import findings
from jaxcompare.app.versions_view import VersionsOutcome, findings_markdown, versions_table
from jaxcompare.cli.report import result_table
from jaxcompare.model.formatting import transfer_rate_text
from jaxcompare.model.stats import Stats
from jaxcompare.notebook.display import result_html

FRESH = {"process": "fresh", "processes": 1, "cache_hits": 0, "compiled_before": 0}


def _svd_fresh():
    """svd 500x500 x64 on this 2-core machine while it was busy (1.5 cores taken by others): the
    first call in a fresh process 3.66 s, the worker's recompile 841 ms, compile 122 ms, runtime 520 ms."""
    r = make_result("svd", (500, 500), "x64")
    s = Stats.from_samples
    return with_jax(
        r, first_call=s([3.663]), first_call_recompile=s([0.841, 0.315, 2.640]),
        runtime=s([0.868, 0.360, 0.493, 0.547, 0.548, 0.254]),
        trace=s([0.00128, 0.00123, 0.00115, 0.00118, 0.00113, 0.00115]),
        lower=s([0.0122, 0.0118, 0.0078, 0.0073, 0.0159, 0.0198]),
        compile=s([0.152, 0.0946, 0.0891, 0.109, 0.120, 0.109]),
        protocol=r.jax.protocol | {"first_call": FRESH})


def test_a_first_call_far_above_its_compile_says_where_the_rest_went():
    svd = _svd_fresh()
    check = by_id(svd)["first_call"]
    assert check.status == PASS and "3.66 s, in a fresh process" in check.reason, check
    assert "the other 3.02 s is what a new process pays" in check.reason and "841 ms" in check.reason
    # A fresh first call within its compile and one run's ranges has nothing left over to explain.
    paid = with_jax(svd, first_call=Stats.from_samples([0.55]))
    assert "new process" not in by_id(paid)["first_call"].reason
    # The worker's own first call (no fresh process): no story about a new process.
    worker = with_jax(svd, first_call=svd.jax.first_call_recompile, first_call_recompile=None,
                      protocol=svd.jax.protocol | {"first_call": {"process": "worker"}})
    assert "new process" not in by_id(worker)["first_call"].reason


def test_a_first_call_below_its_compile_fires_only_beyond_both_ranges():
    """The versions table's figures: 0.10.2's first call 67.8 ms against its compile's 75.6 ms. With
    the samples' usual spread they overlap (no finding); a first call held tight below the whole
    compile range is one."""
    r = make_result(compile_s=0.0756)
    wandering = with_jax(r, first_call=Stats.from_samples([0.061, 0.0678, 0.080]),
                         compile=Stats.from_samples([0.038, 0.045, 0.0454, 0.050, 0.055, 0.060]))
    assert by_id(wandering)["first_call"].status == PASS
    below = by_id(with_jax(r, first_call=stats(0.0678, spread=0.01)))["first_call"]
    assert below.status == WARN and "67.8 ms (" in below.reason and "75.6 ms (" in below.reason, below


def test_the_recompile_lies_between_the_compile_and_a_fresh_first_call():
    svd = _svd_fresh()
    assert by_id(svd)["recompile"].status == PASS
    # A fresh process faster than the warm worker's recompile, beyond both ranges (pitfall 7's kind).
    cheap = with_jax(svd, first_call=Stats.from_samples([0.20]), first_call_recompile=stats(0.841))
    line = by_id(cheap)["recompile"]
    assert line.status == WARN and "200 ms" in line.reason and "841 ms" in line.reason, line
    # A recompile cheaper than the compile alone.
    short = by_id(with_jax(svd, first_call_recompile=stats(0.05)))["recompile"]
    assert short.status == WARN and "50 ms" in short.reason and "122 ms" in short.reason, short
    # Out of order but within the ranges: the samples wander, nothing contradicts.
    assert by_id(with_jax(svd, first_call_recompile=Stats.from_samples([0.1, 0.2, 4.0])))["recompile"].status == PASS
    # Timed in the worker alone: nothing to hold against.
    assert by_id(make_result())["recompile"].status == NA


def test_a_first_call_contradiction_warns_without_setting_the_speedup_aside():
    """The first call and the compile are not the speedup's figures: the line warns, the trust stays."""
    r = make_result(compile_s=0.9)
    assert trust(r).trusted
    below = with_jax(r, first_call=stats(0.6))
    assert by_id(below)["first_call"].status == WARN and trust(below).trusted


def test_one_shape_measured_twice_with_disjoint_ranges_is_named():
    a = make_result("matmul", (63, 63), jax_s=2e-4, numpy_s=1e-3)
    again = make_result("matmul", (63, 63), jax_s=2e-4 * 1.05, numpy_s=1e-3)  # ranges ±0.9%: disjoint
    lines = repeat_checks([a, again])
    assert [(c.id, c.status) for c in lines] == [("repeat", WARN)], lines
    assert "JAX's runtime of matmul 63x63 x32" in lines[0].reason
    assert "200 µs (" in lines[0].reason and "210 µs (" in lines[0].reason
    # The same figures within each other's ranges, and two different sizes: nothing.
    assert repeat_checks([a, make_result("matmul", (63, 63), jax_s=2e-4 * 1.001)]) == []
    assert repeat_checks([a, make_result("matmul", (64, 64), jax_s=1e-3)]) == []
    # Another precision is another measurement.
    assert repeat_checks([a, make_result("matmul", (63, 63), "x64", jax_s=5e-4)]) == []


def _transfer(result, seconds, aliased):
    """centered Gram 1000x1000 float32's 4 MB: the app's run copied it (298 µs, 13.4 GB/s), the
    CLI's aliased it (118 µs)."""
    return with_jax(result, transfer=stats(seconds), transfer_bytes=4_000_000, transfer_zero_copy=aliased)


def test_a_transfer_aliased_in_one_run_and_copied_in_another_is_named_with_its_cause():
    gram = make_result("centered_gram", (1000, 1000))
    copied, aliased = _transfer(gram, 298e-6, False), _transfer(gram, 118e-6, True)
    lines = repeat_checks([copied, aliased])
    assert [c.id for c in lines] == ["transfer_alike"], lines
    assert "118 µs" in lines[0].reason and "298 µs" in lines[0].reason and "13.4 GB/s" in lines[0].reason
    assert lines[0].reason.count("64-byte aligned") == 2  # each run's wording names the cause
    assert repeat_checks([copied, _transfer(gram, 298e-6, False)]) == []


def test_every_front_end_words_the_transfer_with_the_one_function():
    gram = make_result("centered_gram", (1000, 1000))
    for result in (_transfer(gram, 298e-6, False), _transfer(gram, 118e-6, True)):
        text = transfer_rate_text(result)
        assert "64-byte aligned" in text
        assert text in transfer_help(result) and text in check_on_device(result).reason
        assert text in result_table(result) and html.escape(text) in result_html(result)


def test_a_versions_run_names_its_contradictions_in_the_table_and_the_record():
    """0.4.35's rounds: first call 28.8 ms against compile 29.1 ms (overlapping: nothing); a second
    round whose runtime left the first's range is named, and so is a first call held below its compile."""
    agree = make_result(compile_s=0.0291)
    agree = with_jax(agree, first_call=Stats.from_samples([0.0262, 0.0288, 0.0301]))
    assert version_checks([agree, agree], agree) == []
    slower = make_result(compile_s=0.0291, jax_s=2e-4 * 1.2)
    below = with_jax(agree, first_call=stats(0.02, spread=0.01))
    found = version_checks([agree, slower], below)
    assert {c.id for c in found} == {"repeat", "first_call"}, found

    @dataclasses.dataclass
    class Run:
        requested: str
        results: list

    assert findings([(Run("0.4.35", [agree, agree]), agree)]) == {"0.4.35": []}
    outcome = VersionsOutcome([("0.4.35", agree), ("0.10.2", below)], [],
                              {"0.4.35": [agree, agree], "0.10.2": [agree, slower]})
    rows = versions_table(outcome.pooled, outcome.findings)
    assert rows[0]["Figures agree"] == "yes"
    assert rows[1]["Figures agree"] == "no: 2 findings below"
    assert len(findings_markdown(outcome.findings)) == 2


def test_a_results_lines_join_its_checklist():
    r = make_result()
    ids = [c.id for c in result_checks(r)]
    assert ids == ["first_call", "recompile"] and set(ids) <= set(by_id(r))


def test_the_versions_page_lists_each_versions_contradictions():
    """The page itself (AppTest, no run: a finished outcome in the session): the table's column and
    one warning per finding, quoting both figures."""
    from apptest_support import page

    agree = with_jax(make_result(compile_s=0.0291), first_call=Stats.from_samples([0.0262, 0.0288, 0.0301]))
    below = with_jax(agree, first_call=stats(0.02, spread=0.01))
    at = page("pages/6_Versions.py")
    at.session_state["versions_outcome"] = VersionsOutcome([("0.4.35", agree), ("0.10.2", below)], [],
                                                           {"0.4.35": [agree], "0.10.2": [below]})
    at.run()
    assert not at.exception, at.exception
    # The device banner is a warning too once the environment is known (no GPU or TPU here): left out.
    warnings = [w.value for w in at.warning if w.value.startswith("JAX ")]
    # Led by what it is (consistency.finding_title), not by the check's title, which reads as its opposite.
    assert len(warnings) == 1 and warnings[0].startswith("JAX 0\\.10\\.2: **Figures that disagree**")
    assert "20 ms \\(19\\.9 ms" in warnings[0] and "29\\.1 ms" in warnings[0], warnings  # Markdown-escaped
    table = at.dataframe[0].value
    assert list(table["Figures agree"]) == ["yes", "no: 1 finding below"]


def test_a_version_whose_speedup_is_set_aside_is_marked_on_the_page_and_in_the_cli():
    """The Versions table and `versions` printed 0.36x for a result trust() sets aside (History listed the
    same run as "set aside"): the table marks it ? with the reason under it, the CLI line words it so."""
    from jaxcompare.analysis.trust import trust
    from jaxcompare.app.versions_view import set_aside_lines
    from jaxcompare.cli.versions import version_line
    from jaxcompare.model.formatting import markdown_literal

    wide = dataclasses.replace(make_result(), numpy_runtime=stats(1e-3, spread=0.9))
    fine = make_result()
    assert not trust(wide).trusted and trust(fine).trusted
    rows = versions_table([("0.4.35", wide), ("0.10.2", fine)])
    assert rows[0]["Speedup"].endswith("x?") and not rows[1]["Speedup"].endswith("?")
    assert set_aside_lines([("0.4.35", wide), ("0.10.2", fine)]) == [  # Markdown: the version's dots escaped
        f"JAX {markdown_literal('0.4.35')}: speedup set aside, the speedup's range is too wide"]
    assert "speedup set aside: the speedup's range is too wide; measured " in version_line(wide)
    assert "set aside" not in version_line(fine)
