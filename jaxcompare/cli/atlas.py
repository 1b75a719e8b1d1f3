"""``jaxcompare atlas``: every catalog case (or a group) at a small, a middle and a large shape, float32 and
float64, on each device here, into one atlas file a cell at a time (analysis/atlas.py).

It resumes: each cell is written to the atlas file (atomically) and saved in History as it finishes, so
the same command after an interruption (Ctrl-C, a device lost, ``--limit``) measures only the cells the
file does not hold yet; the file keeps the plan, so an unfinished atlas reads as partial. ``--diff A B``
compares two atlases cell by cell.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..analysis import atlas as atlas_mod
from ..analysis.atlas_text import cell_where, diff_document, diff_lines, html_page, markdown, progress_line
from ..catalog import builtin_cases, find_case
from ..i18n import N_, _
from ..model.errors import BadInput, DeadlinePassed, DeviceHeld, DeviceUnavailable, JobFailed, TooLarge
from ..model.formatting import seconds_text
from ..model.platforms import platform
from ..model.spec import PRECISIONS, TIMING_PRESETS, Spec, TimingConfig
from . import history as cli_history
from .devices import check_devices
from .report import write_json

GROUPS = ("numpy", "scipy")
EXIT_SOME_FAILED = 1


def add_command(sub: Any) -> None:
    p = sub.add_parser("atlas", help="every case at three sizes, both precisions, each device: when is JAX faster")
    p.add_argument("--group", choices=GROUPS, help="only the catalog's NumPy or SciPy cases")
    p.add_argument("--cases", nargs="+", metavar="CASE", help="only these cases (see `list`)")
    p.add_argument("--cases-file", metavar="PATH",
                   help="a Python file defining CASES: its cases (with --cases: those named, among the catalog's too)")
    p.add_argument("--sizes", nargs="+", choices=atlas_mod.SIZES, default=list(atlas_mod.SIZES),
                   help="which of each case's shapes: its small preset, the middle of a three-step ladder, "
                   "its large preset (default: all three)")
    p.add_argument("--precisions", nargs="+", choices=PRECISIONS, default=list(PRECISIONS),
                   help="x32 (float32), x64 (float64 through jax_enable_x64), or both (default)")
    p.add_argument("--devices", nargs="+", choices=("cpu", "gpu", "tpu"),
                   help="default: the GPU or TPU here and JAX on its host's CPU (the CPU alone without one)")
    p.add_argument("--timing", choices=TIMING_PRESETS, default="quick", help="quick (default), careful or thorough")
    p.add_argument("--out", metavar="PATH",
                   help="the atlas file, read to resume and written after each cell (default: $JAXCOMPARE_ATLAS, "
                   "else ~/.jaxcompare/atlas.json; .json.gz is compressed)")
    p.add_argument("--limit", type=int, metavar="N", help="measure at most N cells this run; run again to continue")
    p.add_argument("--no-measure", action="store_true", help="measure nothing: only write --markdown / --html")
    p.add_argument("--measure", choices=atlas_mod.MEASURES, default="blocked",
                   help="the speedup the exports show: JAX's blocked call (default) or calls back to back")
    p.add_argument("--markdown", metavar="PATH|-", help="write the atlas as a Markdown table")
    p.add_argument("--html", metavar="PATH", help="write the atlas as one self-contained HTML file")
    p.add_argument("--diff", nargs=2, metavar=("A", "B"), help="compare two atlas files cell by cell")
    p.add_argument("--json", metavar="PATH|-", help="with --diff: the comparison as JSON")
    p.add_argument("--no-save", action="store_true", help="do not save the cells' results in History")
    p.add_argument("--db", metavar="PATH", help=cli_history.DB_HELP)
    p.add_argument("--timeout", type=float, default=None, help="deadline per cell, seconds (default 600)")


def handle(args: argparse.Namespace) -> int:
    if args.diff:
        return cmd_diff(args)
    if args.json:  # else it would be ignored, and the user left looking for a file never written
        raise BadInput(N_("--json writes the comparison of --diff A B; the atlas itself is written to --out"))
    path = Path(args.out).expanduser() if args.out else atlas_mod.default_location()
    if args.no_measure:
        return export_only(args, path)
    atlas = atlas_mod.load(path) if path.exists() else atlas_mod.new_atlas(args.timing)
    if atlas.cells and atlas.timing != args.timing:
        raise BadInput(N_("{path} holds cells measured at {found} timing: give that --timing, or another "
                          "--out").format(path=path, found=atlas.timing))
    status = measure(args, atlas, path)
    write_exports(args, atlas)
    return status


def export_only(args: argparse.Namespace, path: Path) -> int:
    """--no-measure: the exports of the atlas file as it is. An export of no file, or options that choose
    cells to measure, are the user's mistake: an empty "0 cells" report would hide it."""
    choosing = [option for option, value in (("--cases", args.cases), ("--group", args.group),
                                             ("--cases-file", args.cases_file), ("--limit", args.limit))
                if value is not None]
    if choosing:
        raise BadInput(N_("--no-measure exports the whole atlas file; {options} only choose cells to measure")
                       .format(options=", ".join(choosing)))
    if not (args.markdown or args.html):
        raise BadInput(N_("--no-measure writes only the exports: give --markdown or --html"))
    if not path.exists():
        raise BadInput(N_("no atlas at {path}: `jaxcompare atlas` measures one there, or --out names another")
                       .format(path=path))
    write_exports(args, atlas_mod.load(path))
    return 0


def chosen_cases(args: argparse.Namespace, runner: Any) -> list[Any]:
    """The atlas's cases: --cases among the catalog's (and --cases-file's, listed by a worker: the file is
    code, never run in this process), else the file's cases, else the catalog's (or its --group)."""
    from . import _user_cases  # the CLI's own reading of a cases file; the package imports this module first

    mine = _user_cases(args.cases_file, runner, args.timeout) if args.cases_file else []
    if args.cases:
        return [find_case(name, [*builtin_cases(), *mine]) for name in args.cases]
    if args.cases_file:
        return mine
    return [c for c in builtin_cases() if args.group is None or c.group == args.group]


def devices_here(runner: Any) -> list[str]:
    """The accelerator JAX picks here, then JAX on its host's CPU; the CPU alone without one."""
    backend = (runner.environment("x32").get("jax") or {}).get("default_backend", "cpu")
    found = platform(backend)
    name = found.name if found is not None else "cpu"
    return [name, "cpu"] if name != "cpu" else ["cpu"]


def measure(args: argparse.Namespace, atlas: atlas_mod.Atlas, path: Path) -> int:
    """Measure the planned cells ``atlas`` does not hold, each saved as it finishes; 1 when some failed."""
    # The public jaxcompare.Runner, found at run time: the engine's modules may move, its front door stays.
    Runner = importlib.import_module("jaxcompare").Runner  # noqa: N806

    if args.limit is not None and args.limit <= 0:
        raise BadInput(N_("--limit must be a positive whole number, got {limit}").format(limit=args.limit))
    timing = TimingConfig.preset(args.timing)
    store = None if args.no_save else cli_history.open_store(args.db)  # a bad --db fails before measuring
    failed: list[str] = []
    with Runner(timeout_s=args.timeout) as runner:
        cases = chosen_cases(args, runner)
        own = {c.name for c in cases} - {c.name for c in builtin_cases()}  # the file's: its workers load it
        if args.devices:
            check_devices(runner, args.devices)
        devices = args.devices or devices_here(runner)
        planned = atlas_mod.plan(cases, args.sizes, args.precisions, devices)
        # The file keeps its plan, so an atlas stopped partway reads as partial wherever it is shown.
        before = len(atlas.planned)
        atlas.add_plan(planned)
        if atlas.cells and len(atlas.planned) != before:
            atlas_mod.save(atlas, path)
        pending = atlas_mod.todo(atlas, planned, runner.timeout_s)
        total, already = len(planned), len(planned) - len(pending)
        if args.limit is not None:
            pending = pending[:args.limit]
        specs = [Spec(case=k.case, shape=shape, precision=k.precision, device=k.device, timing=timing,
                      cases_file=args.cases_file if k.case in own else None) for k, shape in pending]
        late = {group_of(cell.key) for cell in atlas.cells.values() if cell.deadline_s}

        def left_of(rest: list[Spec]) -> float:
            return time_left(lambda specs: runner.estimate_all(specs).seconds, rest, late, runner.timeout_s)

        head = (_("atlas {path}: {todo} of {total} cells to measure ({done} already there), about {duration}")
                if specs else _("atlas {path}: {todo} of {total} cells to measure ({done} already there)")).format(
            path=path, todo=len(pending), total=total, done=already,
            duration=seconds_text(left_of(specs)) if specs else "")
        print(head, file=sys.stderr, flush=True)
        try:
            for i, ((key, shape), spec) in enumerate(zip(pending, specs, strict=True)):
                left = None
                try:  # refused at once (more memory than the host has) or failed: the cell's own line
                    job = runner.submit(spec, rate_limited=False)
                    left = left_of(specs[i + 1:]) if i + 1 < len(specs) else None  # while it runs
                    result = job.wait()
                # The device cannot (float64 LU on a TPU, temporaries beyond its memory), or the case's
                # function fails at this shape: the cell's one line, and on to the next cell.
                except (BadInput, TooLarge, DeviceUnavailable) as exc:
                    cell = atlas_mod.Cell(key, shape, atlas_mod.UNMEASURABLE, reason=str(exc))
                # The work outlasts the deadline (a float64 decomposition compiling minutes on a TPU): its line,
                # so the atlas can end; a run with a longer --timeout measures it again.
                except DeadlinePassed:
                    cell = atlas_mod.Cell(key, shape, atlas_mod.UNMEASURABLE, deadline_s=job.timeout_s, reason=N_(
                        "did not finish within its {timeout} s deadline; a longer --timeout measures it again").format(
                        timeout=f"{job.timeout_s:g}"))
                    late.add(group_of(key))
                    left = left_of(specs[i + 1:]) if i + 1 < len(specs) else None
                except JobFailed as exc:  # a worker lost: not done, so the next run tries it again
                    failed.append(f"{key.id}: {exc}")
                    print(f"[{already + i + 1}/{total}] {cell_where(key, shape)}: "
                          + _("failed: {error}").format(error=exc), file=sys.stderr, flush=True)
                    if isinstance(exc, DeviceHeld):  # every cell after it would fail the same way
                        print(_("the atlas stops here: run the same command once the device is free"),
                              file=sys.stderr, flush=True)
                        break
                    continue
                else:
                    cell = atlas_mod.Cell(key, shape, atlas_mod.MEASURED, result)
                    if store is not None:
                        store.save(result)
                atlas.add(cell)
                atlas_mod.save(atlas, path)
                print(progress_line(already + i + 1, total, atlas_mod.view(cell), left), file=sys.stderr, flush=True)
        except KeyboardInterrupt:
            print(_("cells the atlas keeps: {n}; run the same command to continue").format(
                n=len(atlas.cells)), file=sys.stderr)
            raise
    if failed:
        print(_("cells that failed and were not recorded: {n}; run the same command to try them again").format(
            n=len(failed)), file=sys.stderr)
    left_over = len(atlas_mod.todo(atlas, planned, runner.timeout_s))
    if left_over and not failed:
        print(_("cells left: {n}; run the same command to continue").format(n=left_over), file=sys.stderr)
    return EXIT_SOME_FAILED if failed else 0


def group_of(key: atlas_mod.CellKey) -> tuple[str, str, str]:
    return key.case, key.precision, key.device


def time_left(estimate: Callable[[list[Spec]], float], specs: list[Spec], late: set[tuple[str, str, str]],
              timeout_s: float | None) -> float:
    """Seconds ``specs`` would take one after another: ``estimate``'s, but a cell whose case, precision and
    device already outlasted the deadline counts the whole deadline (its other shapes compile no faster: a
    TPU's float64 cumsum read "about 4 s left" before two more cells of 240 s each)."""
    late = late if timeout_s else set()
    rest = [s for s in specs if (s.case, s.precision, s.device) not in late]
    return (estimate(rest) if rest else 0.0) + (len(specs) - len(rest)) * (timeout_s or 0.0)


def write_exports(args: argparse.Namespace, atlas: atlas_mod.Atlas) -> None:
    if args.markdown:
        text = markdown(atlas, args.measure)
        if args.markdown == "-":
            sys.stdout.write(text)
        else:
            Path(args.markdown).write_text(text, encoding="utf-8")
    if args.html:
        Path(args.html).write_text(html_page(atlas, args.measure), encoding="utf-8")


def cmd_diff(args: argparse.Namespace) -> int:
    a_path, b_path = args.diff
    a, b = atlas_mod.load(a_path), atlas_mod.load(b_path)
    rows = atlas_mod.diff(a, b, args.measure)
    if args.json:
        write_json(args.json, diff_document(rows))
    if args.json != "-":
        for line in diff_lines(rows, Path(a_path).name, Path(b_path).name):
            print(line)
    return 0
