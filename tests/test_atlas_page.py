"""The Atlas page draws the atlases recorded with the project (tests/data/atlas) beside the reader's own, in
English and Chinese: the heatmap's cells (a set-aside one greyed with its reason, never a bare speedup), the
links to results History holds, the group filter and the back-to-back choice."""

from __future__ import annotations

import pytest
from _results import make_result, stats, with_jax
from apptest_support import app_runner, fresh_caches, page  # noqa: F401
from chart_support import chart_rows, vega_specs
from i18n_support import english_left
from support import ROOT, TPU_ATLAS, partial_tpu_atlas, zh

from jaxcompare import i18n
from jaxcompare.analysis import atlas as am
from jaxcompare.analysis.atlas_text import partial_line
from jaxcompare.app import atlas_view, history_view, resources
from jaxcompare.history.store import Store

PAGE = "pages/7_Atlas.py"
RECORDED = sorted((ROOT / "tests" / "data" / "atlas").glob("*.json*"))


@pytest.fixture
def own(tmp_path, monkeypatch):
    """The reader's own atlas (two matmul cells: one trusted, one set aside, and an LU cell a TPU cannot run)
    and a History holding the trusted cell's result only."""
    atlas = am.new_atlas("quick")
    good = make_result("matmul", (10, 10), numpy_s=1e-3, jax_s=2e-4)
    doubtful = with_jax(make_result("matmul", (100, 100), numpy_s=1e-3, jax_s=2e-4), runtime=stats(2e-4, spread=2.0))
    atlas.add(am.Cell(am.CellKey("matmul", "small", "x32", "cpu"), (10, 10), am.MEASURED, good))
    atlas.add(am.Cell(am.CellKey("matmul", "middle", "x32", "cpu"), (100, 100), am.MEASURED, doubtful))
    atlas.add(am.Cell(am.CellKey("lu", "small", "x64", "cpu"), (10, 10), am.UNMEASURABLE,
                      reason="case 'lu': float64 LU decomposition (XLA implements it in float32 only)"))
    path = tmp_path / "atlas.json"
    am.save(atlas, path)
    monkeypatch.setenv(am.ENV_VAR, str(path))
    monkeypatch.setenv("JAXCOMPARE_DB", str(tmp_path / "results.sqlite3"))
    resources._store_at.clear()
    Store(tmp_path / "results.sqlite3").save(good)
    yield good
    resources._store_at.clear()


@pytest.fixture
def none_own(tmp_path, monkeypatch):
    monkeypatch.setenv(am.ENV_VAR, str(tmp_path / "none.json"))
    monkeypatch.setenv("JAXCOMPARE_DB", str(tmp_path / "results.sqlite3"))
    resources._store_at.clear()
    yield
    resources._store_at.clear()


def test_the_result_parameter_is_compares():
    assert atlas_view.RESULT_PARAM == history_view.RESULT_PARAM


def test_a_recorded_atlas_is_drawn_with_where_and_when_it_was_recorded(none_own):
    assert RECORDED, "no atlas recorded under tests/data/atlas"
    recorded = am.load(RECORDED[0])
    at = page(PAGE)
    assert not at.exception, [e.value for e in at.exception]
    captions = [c.value for c in at.caption]
    env = recorded.environments["cpu"]
    assert any(c.startswith("**Recorded on CPU (") and f"JAX {env['jax_version']}, {env['date']}" in c
               for c in captions), captions
    rows = chart_rows(at, 0)
    assert len(rows) == len(recorded.cells)
    for row in rows:  # a doubtful cell has no colour and reads its doubt first
        assert (row["speedup"] is None) == (row["status"] != am.TRUSTED), row
        assert row["status"] != am.DOUBTFUL or (row["label"].endswith("?") and row["detail"].startswith("set aside:"))
        assert row["url"] is None  # History holds none of its results yet
    assert any("not in your History" in c for c in captions)
    spec = vega_specs(at)[0]
    assert spec["spec"]["layer"][0]["encoding"]["color"]["scale"]["domainMid"] == 1

    assert at.pills[0].value == ["numpy", "scipy"]  # every group shown at first
    at.pills[0].set_value(["numpy"]).run()
    kept = {r["case"] for r in chart_rows(at, 0)}
    assert at.markdown[0].value.startswith(f"{sum(r['case'] in kept for r in rows)} cells:")  # the count follows
    assert kept and kept <= {c.key.case for c in recorded.cells.values() if c.result is None
                             or c.result.case_info.get("group") == "numpy"}


def test_the_readers_atlas_comes_first_and_its_cells_link_to_their_results(own):
    at = page(PAGE)
    assert not at.exception, [e.value for e in at.exception]
    assert at.selectbox(key="atlas_source").value == str(am.default_location())
    rows = {r["size"]: r for r in chart_rows(at, 0) if r["case"] == "matmul"}
    assert rows["small"]["url"] == f"Compare?result={own.id}" and rows["small"]["label"] == "5.00x"
    assert rows["middle"]["url"] is None and rows["middle"]["label"] == "5.00x?"  # not in History: no link
    lu = next(r for r in chart_rows(at, 0) if r["case"] == "lu")
    assert lu["label"] == "cannot run" and "float64 LU decomposition" in lu["detail"]
    blocked_only = "From the blocked speedups (the headline), whichever speedup the heatmap shows."
    assert blocked_only not in [c.value for c in at.caption]
    at.segmented_control(key="atlas_measure").set_value("back_to_back").run()
    assert {r["status"] for r in chart_rows(at, 0) if r["case"] == "matmul"} == {am.MISSING}
    assert blocked_only in [c.value for c in at.caption]  # the crossovers stay the blocked ones: said so


def test_the_atlas_page_in_chinese(own):
    at = page(PAGE, lang="zh")
    assert not at.exception, [e.value for e in at.exception]
    assert at.title[0].value == zh("Atlas")
    rows = {r["size"]: r for r in chart_rows(at, 0) if r["case"] == "matmul"}
    assert rows[zh("small")]["url"] == f"Compare?result={own.id}&lang=zh"
    assert rows[zh("middle")]["detail"].startswith("已搁置：")
    assert not english_left(at, also_names=("matmul", "lu", "Test CPU")), english_left(at, also_names=("matmul",))


TPU = TPU_ATLAS


def test_the_recorded_tpu_atlas_is_drawn_whole(none_own):
    recorded = am.load(TPU)
    at = page(PAGE)
    at.selectbox(key="atlas_source").set_value(str(TPU)).run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.warning, [w.value for w in at.warning]  # no "Partial" line: it holds every planned cell
    assert "**Recorded on TPU v5e, JAX 0.10.2, 2026-12-06**" in [c.value for c in at.caption]
    rows = chart_rows(at, 0)
    assert len(rows) == len(recorded.plan()) == len(recorded.cells) and {r["precision"] for r in rows} == {"x32", "x64"}
    assert {r["status"] for r in rows} == {am.TRUSTED, am.DOUBTFUL, am.UNMEASURABLE}
    # float64 LU cannot run on the TPU; a float64 Cholesky at 1000x1000 and float64 cumsum can, but outlasted
    # their deadlines.
    cell_of = {(r["case"], r["precision"], r["shape"]): r for r in rows}
    assert cell_of["solve", "x64", "10x10"]["label"] == "cannot run"
    assert cell_of["cholesky", "x64", "1000x1000"]["label"] == "over 120 s"
    assert {cell_of["cumsum", "x64", shape]["label"] for shape in ("1000", "63246", "4000000")} == {"over 240 s"}
    assert all(r["label"].endswith("?") for r in rows if r["status"] == am.DOUBTFUL)
    assert rows[0]["device"] == "TPU v5e"


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_an_atlas_stopped_partway_is_drawn_with_the_cells_it_lacks_and_said_to_be_partial(tmp_path, monkeypatch,
                                                                                         none_own, lang):
    stopped = partial_tpu_atlas()
    path = tmp_path / "mine.json"
    am.save(stopped, path)
    monkeypatch.setenv(am.ENV_VAR, str(path))  # the reader's own, shown first
    at = page(PAGE, **({"lang": lang} if lang != "en" else {}))
    assert not at.exception, [e.value for e in at.exception]
    with i18n.using(lang):
        short = partial_line(stopped)
        label = atlas_view.source_label(atlas_view.Source(path, True), stopped)
        not_measured = i18n.gettext("not measured")
    assert at.warning[0].value == short  # said plainly, before the chart
    assert f"**{label}**" in [c.value for c in at.caption]
    held, planned = len(stopped.cells), len(stopped.plan())
    if lang == "en":
        assert label == f"Yours: recorded on TPU v5e, JAX 0.10.2, 2026-12-06 (partial: {held} of {planned} cells)"
        assert short.startswith(f"Partial: it holds {held} of the {planned} cells planned.")
    else:
        assert short.startswith(f"不完整：计划的 {planned} 格中只有 {held} 格。")
        assert not english_left(at), english_left(at)
    rows = chart_rows(at, 0)
    # Every planned cell is drawn (each precision holds some): those held, and those not measured marked so.
    assert len(rows) == planned and {r["precision"] for r in rows} == {"x32", "x64"}
    missing = [r for r in rows if r["status"] == am.NOT_MEASURED]
    assert len(missing) == len(stopped.not_measured()) == 4 and {r["case"] for r in missing} == {"eigh", "cumsum"}
    assert all(r["label"] == not_measured and r["speedup"] is None and r["url"] is None for r in missing)
    cell_of = {(r["case"], r["precision"], r["shape"]): r for r in rows}
    with i18n.using(lang):  # past its deadline is not "not measured", in either language
        assert cell_of["cholesky", "x64", "1000x1000"]["label"] == i18n.gettext("over {timeout} s").format(timeout=120)
        # A recorded atlas stopped partway says so in its label too, not only the reader's own.
        assert atlas_view.source_label(atlas_view.Source(TPU, False), stopped).endswith(
            i18n.gettext("(partial: {held} of {planned} cells)").format(held=held, planned=planned))
