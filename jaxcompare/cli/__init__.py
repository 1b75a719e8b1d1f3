"""Command line: ``python -m jaxcompare list | run | sweep | pitfalls | atlas | versions | trace | history | export |
import``.

User errors print one line on stderr and exit with status 2, never a traceback. With
``--json -`` stdout carries exactly one JSON document and nothing else.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import math
import os
import sys
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from .. import i18n
from ..analysis import lab_checks
from ..analysis.consistency import finding_title, pitfalls_findings
from ..analysis.summary import sweep_verdict
from ..analysis.sweep import LADDER_STEPS, crossover, ladder, parse_sizes, sweep_document
from ..analysis.text import (
    checklist_lines,
    display_width,
    lab_numpy_speeds_lines,
    pad,
    profile_lines,
    result_document,
    sweep_header_line,
    sweep_row_line,
)
from ..catalog import builtin_cases, case_from_summary, find_case, get_case
from ..engine import SECTIONS, check_sections, pitfall_title, pitfalls_kind
from ..history.store import traces_dir
from ..i18n import N_, _, translate_text
from ..model.cases import Case, format_shape
from ..model.errors import BadInput, JaxCompareError
from ..model.formatting import format_time, format_time_range, seconds_text
from ..model.platforms import PLATFORMS, gap_line, unsupported_label
from ..model.spec import DEVICES, MATMUL_PRECISIONS, PRECISIONS, TIMING_PRESETS, Spec, TimingConfig, parse_shape
from . import atlas as cli_atlas
from . import history as cli_history
from . import ports as cli_ports
from . import trace as cli_trace
from . import versions as cli_versions
from .devices import check_devices
from .report import check_outputs, disagreed_status, result_table, write_json

if TYPE_CHECKING:
    from ..engine import Job

EXIT_USAGE = 2
LANG_ENV = "JAXCOMPARE_LANG"
DESCRIPTION = ("Is a JAX port faster than NumPy or SciPy, and when? Measures both sides at the same precision: "
               "transfer, cold compile, blocked runtime, NumPy's runtime, and whether they agree.")


# argparse's own words for a wrong command line, in the catalog so that a Chinese reader gets them in Chinese:
# argparse looks each up through its module's `_` when it raises (parsing runs with it pointed at ours).
ARGPARSE_MESSAGES = (
    N_("argument %(argument_name)s: %(message)s"),
    N_("invalid choice: %(value)r (choose from %(choices)s)"),
    N_("invalid %(type)s value: %(value)r"),
    N_("expected one argument"),
    N_("expected at least one argument"),
    N_("expected at most one argument"),
    N_("the following arguments are required: %s"),
    N_("unrecognized arguments: %s"),
    N_("not allowed with argument %s"),
    N_("one of the arguments %s is required"),
    N_("ambiguous option: %(option)s could match %(matches)s"),
)


class _Parser(argparse.ArgumentParser):
    """argparse that reports bad usage as one line (no usage dump) with exit status 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        sys.stderr.write("jaxcompare: " + _("error: {message}").format(message=message) + "\n")
        raise SystemExit(EXIT_USAGE)


def argv_language(argv: Sequence[str]) -> str:
    """The language a command line asks for (--lang X, --lang=X, else $JAXCOMPARE_LANG), read before argparse
    parses it, whose errors come first; English where none is asked for or the one asked for is unknown
    (chosen_language then says so)."""
    lang = os.environ.get(LANG_ENV, "")
    for i, word in enumerate(argv):
        if word == "--":
            break
        if word == "--lang" and i + 1 < len(argv):
            lang = argv[i + 1]
        elif word.startswith("--lang="):
            lang = word.partition("=")[2]
    return lang if lang in i18n.LANGUAGES else i18n.SOURCE_LANGUAGE


def check_timeout(args: argparse.Namespace) -> None:
    """--timeout, where the command has one, is a positive number of seconds: 0 had meant the default and
    -1 a deadline every cell of an atlas ran past."""
    timeout = getattr(args, "timeout", None)
    if timeout is not None and not (math.isfinite(timeout) and timeout > 0):
        raise BadInput(N_("--timeout must be a positive number of seconds, got {timeout}").format(
            timeout=f"{timeout:g}"))


def shapes_kept_as_values(argv: Sequence[str]) -> list[str]:
    """``argv`` with a shape that begins with a minus sign (``-5x-5``) joined to its option: argparse takes
    such a word for an option and says "expected one argument", where the shape parser says what is wrong
    with it ("sizes must be positive"). ``--sizes`` takes several: each of its words is given as
    ``--sizes=WORD`` (it extends), once one of them begins with a minus sign."""
    def negative(word: str) -> bool:
        return word[:1] == "-" and word[1:2].isdigit()

    out: list[str] = []
    index = 0
    while index < len(argv):
        word = argv[index]
        if out and out[-1] == "--shape" and negative(word):
            out[-1] = f"--shape={word}"
        elif word == "--sizes":
            end = index + 1
            while end < len(argv) and (argv[end][:1] != "-" or negative(argv[end])):
                end += 1
            values = argv[index + 1:end]
            out += [f"--sizes={value}" for value in values] if any(map(negative, values)) else [word, *values]
            index = end
            continue
        else:
            out.append(word)
        index += 1
    return out


@contextlib.contextmanager
def _argparse_in(lang: str) -> Iterator[None]:
    """argparse's messages and ours in ``lang`` while a command line is parsed."""
    original, plural = getattr(argparse, "_", None), getattr(argparse, "ngettext", None)
    with i18n.using(lang):
        if original is None:  # an argparse that no longer looks its words up this way: English, as before
            yield
            return
        argparse._ = _  # type: ignore[attr-defined]
        if plural is not None:
            argparse.ngettext = i18n.ngettext  # type: ignore[attr-defined]
        try:
            yield
        finally:
            argparse._ = original  # type: ignore[attr-defined]
            if plural is not None:
                argparse.ngettext = plural  # type: ignore[attr-defined]


def argparse_plural_words(n: int) -> str:
    """argparse's one plural message a command line here can meet (--diff takes two files), written out
    so that the catalog holds it: argparse looks it up through its module's ``ngettext``."""
    return i18n.ngettext("expected %s argument", "expected %s arguments", n)


# The help of the options run, sweep and pitfalls share (--help stays English).
OPTION_HELP = {
    "precision": "x32: float32 everywhere; x64: float64 with jax_enable_x64",
    "device": "auto (default): a GPU, else a TPU, else the CPU",
    "cases_file": "Python file defining CASES, a list of jaxcompare.Case",
    "seed": "the inputs' random seed (default 0)",
    "timeout": "deadline per job, seconds (default 600)",
    "json": "write the result as JSON ('-' = stdout, the readable output then on stderr)",
}


def build_parser() -> argparse.ArgumentParser:
    # As the user typed it: the installed `jaxcompare` script, else `python -m jaxcompare`.
    script = os.path.basename(sys.argv[0]) if sys.argv else ""
    parser = _Parser(prog="jaxcompare" if script == "jaxcompare" else "python -m jaxcompare", description=DESCRIPTION)
    lang_help = (f"language of the readable output: {', '.join(i18n.LANGUAGES)} (default: ${LANG_ENV}, else en); "
                 "JSON stays English")
    # Before the command too (`--lang zh run ...`), as the language is read before argparse (argv_language).
    parser.add_argument("--lang", dest="top_lang", metavar="LANG", help=lang_help)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    p_list = sub.add_parser("list", help="the catalog, one line per case")
    p_list.add_argument("--cases-file", help="also list the cases in this Python file")
    p_list.add_argument("--json", metavar="PATH|-", help="write the catalog as JSON")

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--case", required=True, help="case name (see `list`)")
        p.add_argument("--precision", default="x32", choices=PRECISIONS, help=OPTION_HELP["precision"])
        p.add_argument("--device", default="auto", choices=DEVICES, help=OPTION_HELP["device"])
        p.add_argument("--matmul-precision", default="default", choices=MATMUL_PRECISIONS,
                       help="what JAX's float32 matrix products and convolutions run at "
                       "(jax.default_matmul_precision), recorded with the result: default (a TPU: one bfloat16 "
                       "pass; an NVIDIA Ampere or newer GPU: TF32), high (a TPU: three passes; a GPU: TF32), "
                       "highest (a TPU: six passes; a GPU: float32): the fair float32 comparison")
        p.add_argument("--cases-file", help=OPTION_HELP["cases_file"])
        p.add_argument("--seed", type=int, default=0, help=OPTION_HELP["seed"])
        p.add_argument("--timing", choices=TIMING_PRESETS, default=None,
                       help="careful (default): each median to ±3%%, about 0.6 s a phase; quick: ±10%%, for "
                       "a first look; thorough: the NumPy and JAX runtimes to ±1%% (about 2.5 s each, in four "
                       "pairs of blocks side by side, checked for a steady speedup), the narrowest ranges. "
                       "Whatever the preset, a result says whether its speedup may be quoted")
        p.add_argument("--quick", action="store_true", help="same as --timing quick")
        p.add_argument("--timeout", type=float, default=None, help=OPTION_HELP["timeout"])
        p.add_argument("--json", metavar="PATH|-", help=OPTION_HELP["json"])
        cli_history.add_save_arguments(p)

    p_run = sub.add_parser("run", help="measure one case at one shape")
    common(p_run)
    p_run.add_argument("--shape", help="e.g. 1000x1000 (default: the case's large preset)")
    cli_ports.add_argument(p_run)
    p_run.add_argument("--profile", nargs="?", const="", default=None, metavar="DIR",
                       help="after the timed phases, trace a few JAX calls with jax.profiler and show the top "
                       "XLA ops and the host-vs-device gap; the Perfetto trace goes to DIR/<result id>/ "
                       "(default: a traces folder beside the results database)")

    p_sweep = sub.add_parser("sweep", help="measure one case over a ladder of sizes")
    common(p_sweep)
    p_sweep.add_argument("--sizes", nargs="+", action="extend", help="shapes (10x10 100x100) or plain sizes (10 100)")
    p_sweep.add_argument("--steps", type=int, default=5,
                         help="sizes from the case's small to its large shape, 2-12, when --sizes is absent")
    cli_ports.add_argument(p_sweep, sweep=True)
    p_pit = sub.add_parser("pitfalls", help="measure each benchmarking pitfall: naive vs correct")
    p_pit.add_argument("--case", default="centered_gram",
                       help="case name (see `list`; default centered_gram, the JAX docs' example)")
    p_pit.add_argument("--shape", help="default: the case's large preset (1000x1000 for centered_gram)")
    p_pit.add_argument("--precision", default="x32", choices=PRECISIONS, help=OPTION_HELP["precision"])
    p_pit.add_argument("--device", default="auto", choices=DEVICES, help=OPTION_HELP["device"])
    p_pit.add_argument("--cases-file", help=OPTION_HELP["cases_file"])
    p_pit.add_argument("--seed", type=int, default=0, help=OPTION_HELP["seed"])
    p_pit.add_argument("--quick", action="store_true", help="quick timing, for a first look (default: careful)")
    p_pit.add_argument("--sections", nargs="+", metavar="SECTION",
                       help=f"only these pitfalls, in this order (default: all of {' '.join(SECTIONS)})")
    p_pit.add_argument("--timeout", type=float, default=None, help=OPTION_HELP["timeout"])
    p_pit.add_argument("--json", metavar="PATH|-", help=OPTION_HELP["json"])
    cli_history.add_commands(sub)
    cli_versions.add_command(sub)
    cli_trace.add_command(sub)
    cli_atlas.add_command(sub)
    for command in sub.choices.values():
        command.add_argument("--lang", help=lang_help)
    return parser


def chosen_language(args: argparse.Namespace) -> str:
    """--lang, else $JAXCOMPARE_LANG, else English; a language without a catalog is bad input."""
    lang, where = args.lang or getattr(args, "top_lang", None), "--lang"
    if not lang:
        lang, where = os.environ.get(LANG_ENV, ""), LANG_ENV
    if not lang:
        return i18n.SOURCE_LANGUAGE
    if lang not in i18n.LANGUAGES:
        raise BadInput(N_("{option} {lang!r} is not a language jaxcompare speaks: choose one of {choices}").format(
            option=where, lang=lang, choices=", ".join(i18n.LANGUAGES)))
    return lang


def _human(args: argparse.Namespace) -> Any:
    """Where readable output goes: stderr when stdout is reserved for JSON."""
    return sys.stderr if args.json == "-" else sys.stdout


def _user_cases(cases_file: str, runner: Any, timeout_s: float | None = None) -> list[Case]:
    """The cases in a user's file, as a worker reports them: the file is code, so it never
    runs in this process, and its load runs under the job's deadline."""
    return [case_from_summary(s) for s in runner.list_cases(cases_file, timeout_s=timeout_s)]


def _lookup(args: argparse.Namespace, runner: Any) -> Case:
    """--case among the built-ins, plus --cases-file's cases when one is given."""
    if not args.cases_file:
        return get_case(args.case)
    return find_case(args.case, list(builtin_cases()) + _user_cases(args.cases_file, runner, args.timeout))


def cmd_list(args: argparse.Namespace) -> int:
    from ..engine import Runner

    cases = list(builtin_cases())
    if args.cases_file:
        with Runner() as runner:
            cases += _user_cases(args.cases_file, runner)
    if args.json:
        write_json(args.json, [{**c.summary(), **float64_facts(c.name)} for c in cases])
        if args.json == "-":
            return 0
    width = max(display_width(c.name) for c in cases)
    for c in cases:
        shapes = f"{format_shape(c.small_shape)} .. {format_shape(c.large_shape)}"
        ports = [_("ports: {names}").format(names=", ".join(c.port_names))] if len(c.all_ports) > 1 else []
        marks = "".join(f"  [{mark}]" for mark in [*float64_marks(c.name), *ports])
        print(f"{pad(c.name, width)}  {pad(c.group, 6)}  {pad(shapes, 22)}  {c.numpy_name}  ->  {c.jax_name}"
              f"  {translate_text(c.title)}{marks}")
    return 0


def float64_facts(case: str) -> dict[str, list[dict[str, Any]]]:
    """What a recorded run found the catalog case cannot do, or does slowly, in float64 on each
    platform (model/platforms.py): for ``list --json``, without the device."""
    unsupported, slow = [], []
    for found in PLATFORMS.values():
        gap, seconds = found.float64_gap_of(case), found.float64_seconds(case)
        if gap is not None:
            unsupported.append({"platform": found.name, "precision": "x64", "status": unsupported_label(found),
                                "reason": gap_line(found, gap)})
        if seconds is not None:
            slow.append({"platform": found.name, "precision": "x64", "seconds": seconds})
    return {"unsupported": unsupported, "slow_compile": slow}


def float64_marks(case: str) -> list[str]:
    """``float64_facts`` as the listing's short marks, in the reader's language."""
    facts = float64_facts(case)
    return ([translate_text(u["status"]) for u in facts["unsupported"]]
            + [_("x64 on {platform}: about {seconds} to compile").format(
                platform=PLATFORMS[s["platform"]].label, seconds=format_time(s["seconds"]))
               for s in facts["slow_compile"]])


def _timing(args: argparse.Namespace) -> TimingConfig:
    name = getattr(args, "timing", None)
    if args.quick and name not in (None, "quick"):
        raise BadInput(N_("--quick and --timing {name} contradict each other: give one").format(name=name))
    return TimingConfig.preset("quick" if args.quick else name or "careful")


def _base_spec(args: argparse.Namespace, shape: tuple[int, ...]) -> Spec:
    return Spec(case=args.case, shape=shape, precision=args.precision, device=args.device,
                cases_file=args.cases_file, seed=args.seed, timing=_timing(args),
                matmul_precision=getattr(args, "matmul_precision", "default"))  # pitfalls set theirs per section


def cmd_run(args: argparse.Namespace) -> int:
    from ..engine import Runner

    profile_dir = None
    if args.profile is not None:
        profile_dir = args.profile or str(traces_dir(args.db))
    with Runner(timeout_s=args.timeout) as runner:
        case = _lookup(args, runner)
        shape = parse_shape(args.shape) if args.shape else case.large_shape
        case.check_shape(shape)
        spec = _base_spec(args, shape)
        runner.check(spec)  # more memory than the host has: said before "measuring ..."
        store = cli_history.open_store(args.db) if args.save else None  # a bad --db fails before measuring
        check_devices(runner, [args.device], args.precision)
        if args.ports is not None:  # with --profile, each port's run is traced on its own
            return cli_ports.run_ports(args, runner, case, spec, _wait, store, cli_history.save_result,
                                       profile_dir=profile_dir)
        out = _human(args)
        print(_("measuring {case} at {shape} ({precision}), about {duration} ...").format(
            case=case.name, shape=format_shape(shape), precision=args.precision,
            duration=seconds_text(runner.estimate(spec).seconds)), file=sys.stderr)
        result = _wait(runner.submit(spec, profile_dir=profile_dir))
    if args.json:
        write_json(args.json, result_document(result))
    print(result_table(result), file=out)  # on stderr where the JSON has stdout
    print("\n" + "\n".join(checklist_lines(result)), file=out)
    if result.profile is not None:
        print("\n" + "\n".join(profile_lines(result)), file=out)
    if store is not None:
        cli_history.save_result(result, store)
    return disagreed_status([result])


def _wait(job: Job) -> Any:
    """Wait for a job, telling stderr what its runner announces meanwhile (a device handed over)."""
    told = 0
    while not job.finished_within(0.2):
        for notice in job.notices[told:]:
            print(translate_text(notice), file=sys.stderr, flush=True)
        told = len(job.notices)
    return job.wait()


def cmd_sweep(args: argparse.Namespace) -> int:
    from ..engine import Runner

    if not args.sizes and not LADDER_STEPS[0] <= args.steps <= LADDER_STEPS[1]:  # not clamped in silence
        raise BadInput(N_("--steps must be between {low} and {high}, got {steps}").format(
            low=LADDER_STEPS[0], high=LADDER_STEPS[1], steps=args.steps))
    with Runner(timeout_s=args.timeout) as runner:
        case = _lookup(args, runner)
        shapes = parse_sizes(case, args.sizes) if args.sizes else ladder(case, args.steps)
        specs = [_base_spec(args, shape) for shape in shapes]
        for spec in specs:  # every size, before the first is measured (the largest may not fit)
            runner.check(spec)
        store = cli_history.open_store(args.db) if args.save else None
        check_devices(runner, [args.device], args.precision)
        out = _human(args)
        if args.ports is not None:
            return cli_ports.sweep_ports(args, runner, case, specs, _wait, store, cli_history.save_quietly, out)
        results = []
        print(sweep_header_line(), file=out)
        for spec in specs:
            result = _wait(runner.submit(spec))
            results.append(result)
            if store is not None:  # saved as measured: an interrupted sweep keeps what it did
                cli_history.save_quietly(result, store)
            print(sweep_row_line(result), file=out, flush=True)
    cross = crossover(results)  # from trusted points only
    print(sweep_verdict(results, cross), file=out)
    if store is not None:
        print(cli_history.saved_line(len(results), store), file=sys.stderr)
    if args.json:
        with i18n.using(i18n.SOURCE_LANGUAGE):
            document = sweep_document(case.name, args.precision, results, cross)
        write_json(args.json, document)
    return disagreed_status(results)


def cmd_pitfalls(args: argparse.Namespace) -> int:
    from ..engine import Runner

    with Runner(timeout_s=args.timeout) as runner:
        case = _lookup(args, runner)
        shape = parse_shape(args.shape) if args.shape else case.large_shape
        case.check_shape(shape)
        sections = check_sections(args.sections)
        out = _human(args)
        spec = _base_spec(args, shape)
        runner.check(spec)
        check_devices(runner, [args.device], args.precision)
        print(_("measuring the pitfalls for {case} at {shape} ({precision}), about {duration} ...").format(
            case=case.name, shape=format_shape(shape), precision=args.precision,
            duration=seconds_text(runner.estimate(spec, kind=pitfalls_kind(sections)).seconds)), file=sys.stderr)
        report = _wait(runner.submit_pitfalls(spec, sections))
    if args.json:
        with i18n.using(i18n.SOURCE_LANGUAGE):  # JSON is English whatever the reader's language
            write_json(args.json, lab_checks.judged(report) | {"timing": "quick" if args.quick else "careful"})
    source = (report.get("load") or {}).get("others_source", "cores")  # on stderr where the JSON has stdout
    for line in lab_numpy_speeds_lines(report):  # the NumPy figures every pitfall's speedups divide
        print(line, file=out)
    for pitfall in report["pitfalls"]:
        print("\n" + "\n".join(pitfall_lines(pitfall, report["backend"], source)), file=out)
    summary = pitfalls_summary_lines(report)
    if summary:
        print("\n" + "\n".join(summary), file=out)
    return 0


SIDE_TAGS = {"naive": N_("naive"), "correct": N_("correct"), "also": N_("also")}


def pitfall_lines(pitfall: dict[str, Any], backend: str, others_source: str | None = "cores") -> list[str]:
    """A pitfall as the worker measured it: its title, each side's time and conclusion in
    columns (padded by display width), its effect, and whether the machine was quiet meanwhile,
    in the current language."""
    lines = [_(pitfall_title(pitfall["id"], backend))]  # by id: a report saved under an older title reads as new
    if lab_checks.one_port(pitfall):
        lines.append("  " + _("(not applicable: no other port of this case runs on {backend})").format(backend=backend))
    elif not pitfall["applicable"]:
        lines.append("  " + _("(not applicable on {backend}: shown for reference)").format(backend=backend))
    sides = [("naive", pitfall["naive"]), ("correct", pitfall["correct"])] + [("also", s) for s in pitfall["extra"]]
    tag_w = max(8, *(display_width(_(SIDE_TAGS[t])) + 2 for t in SIDE_TAGS))
    label_w = max(40, *(display_width(translate_text(s["label"])) + 2 for _t, s in sides))
    for tag, side in sides:
        spread = f"({format_time_range(*side['range'])})" if side.get("range") else ""
        lines.append(f"  {pad(_(SIDE_TAGS[tag]), tag_w)}{pad(translate_text(side['label']), label_w)}"
                     f"{pad(format_time(side['seconds']), 10, '>')} {pad(spread, 20)} "
                     f"{translate_text(side['conclusion'] or '')}".rstrip())
    lines += ["  " + line for line in lab_checks.left_out_lines(pitfall)]
    lesson = lab_checks.ports_lesson(pitfall)  # pitfall 8 with its first port the fastest (or one port: said above)
    if not lab_checks.one_port(pitfall):
        lines.append("  " + (_("effect: {lesson}").format(lesson=lesson) if lesson else pitfall_effect_line(pitfall)))
        retimed = lab_checks.retimed_text(pitfall)
        if retimed:
            lines.append("  " + retimed)
    lines.append("  " + lab_checks.check_line(lab_checks.busy_check(pitfall, others_source)))
    return lines


def pitfalls_summary_lines(report: dict[str, Any]) -> list[str]:
    """After the pitfalls: how many were timed on a busy machine, and the run's figures that
    disagree (consistency.pitfalls_findings); [] when there is nothing to say."""
    busy = lab_checks.busy_count_text(report["pitfalls"])
    findings = [lab_checks.check_line(c, finding_title(c)) for c in pitfalls_findings(report)]
    return ["  " + line for line in ([busy] if busy else []) + findings]


def pitfall_effect_line(pitfall: dict[str, Any]) -> str:
    """'effect: flatters JAX (naive/proper speedup 83x, 95% range 11-1500x)', or the lesson
    that did not show: 'effect: within the noise: on this machine the transfer pitfall did not show'."""
    from ..engine import EFFECT_WORDS

    factor = f"{pitfall['effect_factor']:.3g}x"
    if pitfall.get("effect_range"):
        low, high = pitfall["effect_range"]
        figures = _("naive/proper speedup {factor}, 95% range {low}-{high}x").format(
            factor=factor, low=f"{low:.3g}", high=f"{high:.3g}")
    else:
        figures = _("naive/proper speedup {factor}, no range: a side has a single sample").format(factor=factor)
    if pitfall["effect"] == "within_noise":
        title = translate_text(pitfall["title"])
        name = title.split(": ", 1)[0].split("：", 1)[0].split(". ", 1)[-1]
        return _("effect: within the noise: on this machine the {name} pitfall did not show ({figures})").format(
            name=name.lower() if title == pitfall["title"] else name, figures=figures)  # no case in Chinese
    return _("effect: {effect} ({figures})").format(effect=_(EFFECT_WORDS[pitfall["effect"]]), figures=figures)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    argv = shapes_kept_as_values(sys.argv[1:] if argv is None else argv)
    with _argparse_in(argv_language(argv)):
        args = parser.parse_args(argv)
    # Worker tracebacks are for operators; a CLI user gets the one-line message.
    if not os.environ.get("JAXCOMPARE_DEBUG"):
        logging.getLogger("jaxcompare").setLevel(logging.CRITICAL)
    handlers = {"list": cmd_list, "run": cmd_run, "sweep": cmd_sweep, "pitfalls": cmd_pitfalls,
                "versions": cli_versions.handle, "trace": cli_trace.handle, "atlas": cli_atlas.handle,
                **dict.fromkeys(cli_history.COMMANDS, cli_history.handle)}
    try:
        lang = chosen_language(args)
    except BadInput as exc:  # said in English: the language is what could not be understood
        print(f"jaxcompare: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    with i18n.using(lang):
        try:
            check_timeout(args)
            check_outputs(args)
            return handlers[args.command](args)
        except JaxCompareError as exc:
            print("jaxcompare: " + _("error: {message}").format(message=translate_text(str(exc))), file=sys.stderr)
            return EXIT_USAGE
        except KeyboardInterrupt:
            print("jaxcompare: " + _("interrupted"), file=sys.stderr)
            return 130
        except BrokenPipeError:  # `list | head`: the reader has gone, which is no error of this program
            # Python's own way (its signal docs): stdout to /dev/null, so the flush at exit does not raise again.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 141  # what a shell reports for a program ended by SIGPIPE


if __name__ == "__main__":
    sys.exit(main())

