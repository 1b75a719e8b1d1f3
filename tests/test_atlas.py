"""The atlas's file, its cells as every front end reads them, and ``--diff`` (no worker, no JAX): synthetic
Results with exact ranges, and the atlases recorded under tests/data/atlas."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from _results import make_result, stats, with_jax
from support import ROOT, TPU_ATLAS, partial_tpu_atlas

from jaxcompare import get_case
from jaxcompare.analysis import atlas as am
from jaxcompare.analysis.atlas_text import (
    cell_detail,
    cell_label,
    counts_line,
    crossover_cells,
    diff_lines,
    html_page,
    markdown,
    partial_line,
    recorded_line,
    why_text,
)
from jaxcompare.analysis.trust import JAX_FASTER, NUMPY_FASTER
from jaxcompare.cli import main
from jaxcompare.model.errors import BadInput

RECORDED = sorted((ROOT / "tests" / "data" / "atlas").glob("*.json*"))
TPU = TPU_ATLAS
RERUN = sorted((ROOT / "tests" / "data" / "atlas-rerun").glob("*.json*"))


def cell(case="matmul", size="small", precision="x32", device="cpu", **kw) -> am.Cell:
    result = make_result(case, am.size_shape(get_case(case), size), precision, **kw)
    return am.Cell(am.CellKey(case, size, precision, device), result.shape, am.MEASURED, result)


def unmeasurable(case="lu", precision="x64", device="tpu") -> am.Cell:
    line = "case 'lu': float64 LU decomposition (XLA implements it in float32 only)"
    return am.Cell(am.CellKey(case, "small", precision, device), (10, 10), am.UNMEASURABLE, reason=line)


def atlas_of(*cells: am.Cell) -> am.Atlas:
    atlas = am.new_atlas("quick")
    for c in cells:
        atlas.add(c)
    return atlas


def test_the_middle_shape_lies_geometrically_between_the_presets_and_the_plan_keeps_rows_whole():
    case = get_case("matmul")  # 10x10 .. 1000x1000
    assert [am.size_shape(case, s) for s in am.SIZES] == [(10, 10), (100, 100), (1000, 1000)]
    planned = am.plan([case, get_case("sort")], precisions=("x32", "x64"), devices=("tpu", "cpu"))
    assert len(planned) == 2 * 3 * 2 * 2
    # Device by device, then precision: a device's workers stay warm, an interruption leaves whole rows.
    assert [k.device for k, _s in planned[:12]] == ["tpu"] * 12
    assert [k.precision for k, _s in planned[:6]] == ["x32"] * 6
    assert [(k.case, k.size) for k, _s in planned[:3]] == [("matmul", s) for s in am.SIZES]


def test_todo_is_the_plan_less_what_the_file_holds(tmp_path):
    planned = am.plan([get_case("matmul")], sizes=("small", "middle"), precisions=("x32",))
    atlas = atlas_of(cell(size="small"))
    assert [k for k, _s in am.todo(atlas, planned)] == [am.CellKey("matmul", "middle", "x32", "cpu")]


@pytest.mark.parametrize("name", ["atlas.json", "atlas.json.gz"])
def test_an_atlas_file_reads_back_whole_and_a_foreign_one_is_refused(tmp_path, name):
    atlas = atlas_of(cell(size="small"), cell(size="middle", numpy_s=1e-3, jax_s=5e-3), unmeasurable())
    path = tmp_path / name
    am.save(atlas, path)
    back = am.load(path)
    assert back.to_dict() == atlas.to_dict()
    assert back.cells["lu/small/x64/tpu"].reason.startswith("case 'lu'")
    assert back.environments["cpu"]["host_cores"] == 2 and "hostname" not in json.dumps(back.environments)
    assert [p.name for p in tmp_path.iterdir()] == [name]  # the temporary file was renamed over it
    (tmp_path / "other.json").write_text(json.dumps({"schema": "jaxcompare.export/1"}))
    with pytest.raises(BadInput, match="not a jaxcompare atlas"):
        am.load(tmp_path / "other.json")
    with pytest.raises(BadInput, match="no atlas at"):
        am.load(tmp_path / "missing.json")


def test_a_trusted_cell_reads_its_speedup_and_a_set_aside_one_its_doubt_first():
    good = am.view(cell(numpy_s=1e-3, jax_s=2e-4))
    assert good.status == am.TRUSTED and good.side == JAX_FASTER and math.isclose(good.speedup, 5.0)
    assert cell_label(good) == "5.00x" and cell_detail(good).startswith("5.00x (rerun range 4.23-5.91x)")

    wide = cell(numpy_s=1e-3, jax_s=2e-4)
    wide = am.Cell(wide.key, wide.shape, am.MEASURED, with_jax(wide.result, runtime=stats(2e-4, spread=2.0)))
    doubtful = am.view(wide)
    assert doubtful.status == am.DOUBTFUL and doubtful.why == "range"
    assert cell_label(doubtful) == "5.00x?"  # never a bare speedup
    assert cell_detail(doubtful).startswith("set aside: the speedup's range is too wide; measured 5.00x")

    cannot = am.view(unmeasurable())
    assert cannot.status == am.UNMEASURABLE and cannot.speedup is None
    assert cell_detail(cannot) == ("cannot run here: case 'lu': float64 LU decomposition (XLA implements it in "
                                   "float32 only)")


def test_back_to_back_reads_its_own_figure_and_says_where_it_was_not_timed():
    c = cell(numpy_s=1e-3, jax_s=2e-4)
    assert am.view(c, "back_to_back").status == am.MISSING  # the synthetic result has none
    timed = am.Cell(c.key, c.shape, am.MEASURED, with_jax(c.result, back_to_back=stats(1e-4)))
    v = am.view(timed, "back_to_back")
    assert v.status == am.TRUSTED and math.isclose(v.speedup, 10.0) and v.low < 10 < v.high


def test_crossover_between_firm_sizes():
    atlas = atlas_of(cell(size="small", numpy_s=1e-4, jax_s=1e-3), cell(size="middle", numpy_s=1e-3, jax_s=1e-3),
                     cell(size="large", numpy_s=1e-2, jax_s=1e-3))
    found = am.crossovers(atlas)[("matmul", "x32", "cpu")]
    # 0.1x at 100 elements, 10x at 1e6: log-log halfway is 1e4 (the middle's 1.0x straddles 1x: not firm).
    assert math.isclose(found, 1e4, rel_tol=1e-6)


def test_diff_decides_a_direction_only_where_the_ranges_do_not_overlap():
    a = atlas_of(cell(size="small", numpy_s=1e-3, jax_s=5e-4), cell(size="middle", numpy_s=1e-3, jax_s=5e-4),
                 cell(size="large", numpy_s=1e-3, jax_s=5e-4), unmeasurable())
    b = atlas_of(cell(size="small", numpy_s=1e-3, jax_s=1e-4),  # 10x against 2x: apart
                 cell(size="middle", numpy_s=1e-3, jax_s=4.8e-4),  # 2.08x against 2x: inside both ranges
                 cell(size="large", numpy_s=1e-3, jax_s=2e-3),  # 0.5x against 2x: apart, slower
                 unmeasurable(), cell("sort", size="small"))
    rows = {r.key.size + r.key.case: r for r in am.diff(a, b)}
    assert rows["smallmatmul"].verdict == am.B_FASTER
    assert rows["middlematmul"].verdict == am.OVERLAP
    assert rows["largematmul"].verdict == am.B_SLOWER
    assert rows["smalllu"].verdict == am.NO_RANGE
    assert rows["smallsort"].verdict == am.B_ONLY


def test_markdown_and_html_say_each_cell_with_its_doubt_and_the_html_fetches_nothing():
    atlas = atlas_of(cell(numpy_s=1e-3, jax_s=2e-4), unmeasurable())
    text = markdown(atlas)
    assert "| matmul | 10x10: 5.00x (rerun range 4.23-5.91x) |" in text
    assert "cannot run here: case 'lu'" in text and "| CPU (2 cores) |" in text
    page = html_page(atlas)
    assert page.startswith("<!DOCTYPE html>") and "<script" not in page and "src=" not in page
    assert "href=" not in page and "url(" not in page and "@import" not in page


def test_recorded_atlases_read_and_every_set_aside_cell_keeps_its_reason():
    assert RECORDED and RERUN
    for path in RECORDED + RERUN:
        atlas = am.load(path)
        assert atlas.cells and atlas.environments and atlas.timing == "quick"
        for v in am.views(atlas):
            assert v.status != am.DOUBTFUL or v.why, v
            assert v.status != am.UNMEASURABLE or v.reason, v


def test_diff_of_two_recorded_atlases_decides_only_where_their_ranges_do_not_overlap(capsys, tmp_path):
    a, b = RECORDED[0], RERUN[0]
    out = tmp_path / "diff.json"
    assert main(["atlas", "--diff", str(a), str(b), "--json", str(out)]) == 0
    rows = json.loads(out.read_text())
    both = [r for r in rows if r["verdict"] in ("b_faster", "b_slower", "overlap")]
    assert both, "the two atlases share no measured cell"
    for r in both:
        (a_low, a_high), (b_low, b_high) = r["a"]["range"], r["b"]["range"]
        apart = b_low > a_high or b_high < a_low
        assert (r["verdict"] != "overlap") == apart, r
        assert r["verdict"] != "b_faster" or b_low > a_high, r
    printed = capsys.readouterr().out.splitlines()
    assert len(printed) == sum(r["verdict"] in ("b_faster", "b_slower") for r in rows) + 1
    assert f"only in {Path(a).name}" in printed[-1] and f"only in {Path(b).name}" in printed[-1]


def test_a_partial_atlas_keeps_its_plan_and_names_the_cells_it_lacks(tmp_path):
    planned = am.plan([get_case("matmul"), get_case("lu")], precisions=("x32", "x64"), devices=("tpu",))
    wide = cell(size="middle", device="tpu", numpy_s=1e-3, jax_s=2e-4)
    wide = am.Cell(wide.key, wide.shape, am.MEASURED, with_jax(wide.result, runtime=stats(2e-4, spread=2.0)))
    atlas = atlas_of(cell(size="small", device="tpu", numpy_s=1e-3, jax_s=2e-4), wide,
                     am.Cell(am.CellKey("lu", "small", "x32", "tpu"), (10, 10), am.UNMEASURABLE, reason="no LU here"))
    atlas.add_plan(planned)
    am.save(atlas, tmp_path / "atlas.json")
    back = am.load(tmp_path / "atlas.json")
    assert back.to_dict() == atlas.to_dict() and [k for k, _s in back.plan()] == [k for k, _s in planned]

    # The grid is the plan of each precision holding a cell: x32 whole, its gaps "not measured"; x64, none held,
    # is not drawn but named.
    drawn = am.grid(back)
    assert {v.key.precision for v in drawn} == {"x32"} and len(drawn) == 6
    status = {v.key.id: v.status for v in drawn}
    assert status == {"matmul/small/x32/tpu": am.TRUSTED, "matmul/middle/x32/tpu": am.DOUBTFUL,
                      "matmul/large/x32/tpu": am.NOT_MEASURED, "lu/small/x32/tpu": am.UNMEASURABLE,
                      "lu/middle/x32/tpu": am.NOT_MEASURED, "lu/large/x32/tpu": am.NOT_MEASURED}
    labels = {v.key.id: cell_label(v) for v in drawn}  # three kinds of no figure, each its own words
    assert labels["matmul/large/x32/tpu"] == "not measured" and labels["matmul/middle/x32/tpu"] == "5.00x?"
    assert cell_detail(next(v for v in drawn if v.key.size == "large")).startswith("not measured: planned")
    assert cell_detail(next(v for v in drawn if v.status == am.UNMEASURABLE)).startswith("cannot run here")

    line = partial_line(back)  # "cpu": the synthetic results' device kind
    assert line == ("Partial: it holds 3 of the 12 cells planned. Not measured: cpu · float32, 3 cells: "
                    "matmul (large), lu (middle, large); cpu · float64, all 6 cells.")
    text = markdown(back)
    assert f"**{line}**" in text and "| lu | 10x10: cannot run here: no LU here | 100x100: not measured |" in text
    page = html_page(back)
    assert line in page and page.count('class="not_measured"') == 3 and "<script" not in page


def test_an_atlas_with_no_plan_kept_is_whole_and_one_measured_to_its_plan_is_too():
    atlas = atlas_of(cell(size="small"), cell(size="middle"))
    assert partial_line(atlas) is None and len(am.grid(atlas)) == 2
    atlas.add_plan(am.plan([get_case("matmul")], sizes=("small", "middle"), precisions=("x32",)))
    assert partial_line(atlas) is None and am.partial(atlas) == []


def test_the_recorded_tpu_atlas_says_where_and_when_and_holds_every_planned_cell(tmp_path):
    atlas = am.load(TPU)
    assert recorded_line(atlas) == "recorded on TPU v5e, JAX 0.10.2, 2026-12-06"
    assert atlas.environments["tpu"]["device_kind"] == "TPU v5 lite"  # JAX's name, kept as recorded
    assert len(atlas.plan()) == 174 and atlas.not_measured() == []  # every case, 3 sizes, x32 and x64
    assert partial_line(atlas) is None and am.partial(atlas) == []
    assert all(partial_line(am.load(p)) is None for p in RECORDED)  # the CPU atlas is whole too
    # A cell past its deadline is a cell of its own, not one missing: float64 cumsum's compiles take minutes.
    md = tmp_path / "atlas.md"
    before = TPU.read_bytes()
    assert main(["atlas", "--no-measure", "--no-save", "--out", str(TPU), "--markdown", str(md)]) == 0
    assert TPU.read_bytes() == before  # reading the file writes nothing to it
    text = md.read_text()
    assert "Partial" not in text and "not measured" not in text
    cumsum32, cumsum64 = [line for line in text.splitlines() if line.startswith("| cumsum |")]
    assert cumsum64.count("did not finish within its 240 s deadline") == 3 and "deadline" not in cumsum32


def test_a_partial_tpu_atlas_names_what_it_lacks_in_every_export(tmp_path):
    atlas = partial_tpu_atlas()
    held, planned = len(atlas.cells), len(atlas.plan())
    assert planned == 174 and held == planned - 4
    # Each precision's gap is its planned cells the file lacks, counted here from the plan.
    lacking = {p: sum(k.precision == p for k, _ in atlas.not_measured()) for p in ("x32", "x64")}
    gaps = {g.precision: g for g in am.partial(atlas)}
    assert {p: g.missing for p, g in gaps.items()} == {"x64": 4} == {p: n for p, n in lacking.items() if n}
    # (): every size of it; a case partly there names the sizes it lacks
    assert set(gaps["x64"].cases) == {("cumsum", ()), ("eigh", ("large",))}
    assert partial_line(atlas).startswith(f"Partial: it holds {held} of the {planned} cells planned. "
                                          "Not measured: TPU v5e")

    # The CLI's exports say it too.
    stopped = tmp_path / "stopped.json.gz"
    am.save(atlas, stopped)
    md, page = tmp_path / "atlas.md", tmp_path / "atlas.html"
    assert main(["atlas", "--no-measure", "--no-save", "--out", str(stopped), "--markdown", str(md),
                 "--html", str(page)]) == 0
    eigh32, eigh64 = [line for line in md.read_text().splitlines() if line.startswith("| eigh |")]
    assert partial_line(atlas) in md.read_text()
    # Past its deadline is not missing: float32 eigh 1000x1000 ran 240 s and was stopped.
    assert "not measured" not in eigh32 and "1000x1000: did not finish within its 240 s deadline" in eigh32
    assert eigh64.count("not measured") == 1 and "1000x1000: not measured" in eigh64
    assert "## TPU v5e · float32" in md.read_text() and "## TPU v5e · float64" in md.read_text()
    html_text = page.read_text()
    # A precision with no cell at all would be named, not drawn; each here has some, so every gap is drawn.
    assert not any(g.whole for g in gaps.values())
    assert f"Partial: it holds {held} of the {planned}" in html_text
    assert html_text.count('class="not_measured"') == sum(lacking.values())


def test_the_committed_tpu_exports_are_whole_files_of_the_whole_atlas():
    """benchmarks/atlas-tpu-v5e.{md,html}, written by `jaxcompare atlas --no-measure` from the recorded file."""
    page = (ROOT / "benchmarks" / "atlas-tpu-v5e.html").read_text(encoding="utf-8")
    text = (ROOT / "benchmarks" / "atlas-tpu-v5e.md").read_text(encoding="utf-8")
    recorded = am.load(TPU)
    for found in (page, text):
        assert counts_line(recorded) in found and "Partial" not in found  # written from this very file
        assert "recorded on TPU v5e, JAX 0.10.2" in found
    assert "<script" not in page and "src=" not in page and "href=" not in page and "url(" not in page
    assert "http" not in page and "http" not in text


def test_the_crossover_column_says_why_a_case_has_none():
    """An empty crossover cell read as "not computed": where the sizes place no crossover, the cell says
    whether one side is faster at every size (each size's blocked range wholly on that side), else none found."""
    recorded = am.load(TPU)
    cells = crossover_cells(recorded)
    sides: dict[tuple[str, str, str], list] = {}
    for v in am.grid(recorded, "blocked"):
        if v.status in (am.TRUSTED, am.DOUBTFUL):
            sides.setdefault((v.key.case, v.key.precision, v.key.device), []).append(v.side)
    assert set(cells) == set(sides)  # every case with a figure, and only those
    crossed = am.crossovers(recorded)
    for key, text in cells.items():
        assert (key in crossed) == text.startswith("about "), (key, text)
        if key not in crossed:
            one_side = [side for side in (JAX_FASTER, NUMPY_FASTER) if all(s == side for s in sides[key])]
            assert text == {(JAX_FASTER,): "none: JAX faster at every size", (NUMPY_FASTER,):
                            "none: NumPy faster at every size", (): "none found"}[tuple(one_side)], (key, sides[key])
    assert "none: NumPy faster at every size" in cells.values() and "none found" in cells.values()


def test_atlases_of_two_devices_meet_on_case_size_and_precision():
    """The recorded CPU atlas against the TPU's: each of the TPU's cells meets the CPU's cell of its case,
    size and precision (cell keys name their device, so a plain key match found nothing), and a direction
    is decided only where the two rerun ranges do not overlap."""
    cpu = am.load(ROOT / "tests" / "data" / "atlas" / "cpu-2core-jax0.10.2.json.gz")
    tpu = am.load(TPU)
    rows = am.diff(cpu, tpu)
    met = [r for r in rows if r.a is not None and r.b is not None]
    assert len(met) == len(tpu.cells) and all(r.b.key.device == "tpu" and r.a.key.device == "cpu" for r in met)
    assert not [r for r in rows if r.verdict == am.B_ONLY]
    for r in met:
        if r.verdict == am.B_FASTER:
            assert r.b.low > r.a.high
        elif r.verdict == am.B_SLOWER:
            assert r.b.high < r.a.low
        elif r.verdict == am.OVERLAP:
            assert r.b.low <= r.a.high and r.b.high >= r.a.low
    assert any(r.verdict == am.B_FASTER for r in met) and any(r.verdict == am.B_SLOWER for r in met)
    line = next(x for x in diff_lines(rows, "cpu", "tpu") if x.startswith("det 1000x1000"))
    assert "cpu→tpu" in line and "the speedup is higher in tpu, beyond both ranges" in line
    # The count says the same of the speedup, not "faster" (read as: that machine is faster).
    higher, lower = (sum(r.verdict == v for r in rows) for v in (am.B_FASTER, am.B_SLOWER))
    assert diff_lines(rows, "cpu", "tpu")[-1].startswith(
        f"In tpu, the speedup is higher in {higher} cells and lower in {lower}, beyond both ranges;")
    # A gap with a side set aside names that side (the doubt had read as the faster one's).
    apart = [r for r in met if r.doubt and r.verdict in (am.B_FASTER, am.B_SLOWER)]
    for doubted in (next(r for r in apart if r.a.status == am.DOUBTFUL),
                    next(r for r in apart if r.a.status != am.DOUBTFUL)):
        (said, _counts) = diff_lines([doubted], "cpu", "tpu")
        side = "cpu" if doubted.a.status == am.DOUBTFUL else "tpu"
        assert said.endswith(f"(set aside in {side}: {why_text(doubted.doubt)})"), said
    # One atlas against itself: every cell meets its own, as before.
    assert all(r.verdict in (am.OVERLAP, am.NO_RANGE) for r in am.diff(cpu, cpu))


def test_an_export_of_no_atlas_or_of_chosen_cells_is_one_line_not_an_empty_report(tmp_path, capsys):
    """--no-measure writes the file's exports; before, a missing file or an unknown --cases wrote an empty
    "0 cells" report and exited 0."""
    md = tmp_path / "atlas.md"
    missing = tmp_path / "none.json"
    for argv, said in (
        (["--out", str(missing), "--markdown", str(md)], f"no atlas at {missing}"),
        (["--out", str(TPU), "--cases", "nope", "--markdown", "-"], "--cases only choose cells to measure"),
        (["--out", str(TPU), "--group", "numpy", "--limit", "1", "--markdown", "-"], "--group, --limit only"),
        (["--out", str(TPU)], "give --markdown or --html"),
    ):
        assert main(["atlas", "--no-measure", "--no-save", *argv]) == 2, argv
        err = capsys.readouterr()
        assert said in err.err and err.out == "" and "Traceback" not in err.err, (argv, err)
    assert not md.exists()


def test_time_left_counts_the_whole_deadline_for_a_case_that_outlasted_it():
    """A TPU's float64 cumsum outlasted its 240 s deadline at its small shape, and the atlas said "about 4 s
    left" before its two larger shapes took 240 s each: a case, precision and device that ran past the
    deadline once counts the deadline for its other cells."""
    from jaxcompare.cli.atlas import time_left
    from jaxcompare.model.spec import Spec

    specs = [Spec("cumsum", (63246,), precision="x64", device="tpu"), Spec("cumsum", (4000000,), precision="x64",
             device="tpu"), Spec("cumsum", (63246,), device="tpu"), Spec("matmul", (100, 100), precision="x64",
             device="tpu")]

    def estimate(some):  # the runner's estimate: 2 s a cell here
        return 2.0 * len(some)

    late = {("cumsum", "x64", "tpu")}
    assert time_left(estimate, specs, late, 240.0) == 2 * 240.0 + 2 * 2.0  # float32 cumsum is not late
    assert time_left(estimate, specs, set(), 240.0) == time_left(estimate, specs, late, None) == 4 * 2.0
    assert time_left(estimate, specs[:2], late, 240.0) == 480.0  # nothing left to estimate
