"""``jaxcompare versions``: one case under several JAX releases, each in its own environment
(engine/server/envs.py), measured in alternating rounds, adjacent versions compared."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..analysis.checkline import Check
from ..analysis.consistency import finding_title
from ..analysis.summary import doubt_text
from ..analysis.versions import (
    compare_versions,
    findings,
    first_call_text,
    pooled_runs,
    real_versions,
    versions_document,
)
from ..catalog import get_case
from ..i18n import N_, _, translate_text
from ..model.cases import format_shape
from ..model.errors import BadInput
from ..model.formatting import format_factor, format_time, format_time_range
from ..model.reruns import pooled_range
from ..model.result import Result
from ..model.spec import DEVICES, PRECISIONS, TIMING_PRESETS, Spec, TimingConfig, parse_shape
from . import history as cli_history
from .report import write_json

EXIT_UNAVAILABLE = 2


def add_command(sub: Any) -> None:
    p = sub.add_parser("versions", help="one case under several JAX versions, each in its own environment")
    p.add_argument("--case", help="case name (see `list`)")
    p.add_argument("--shape", help="e.g. 500x500 (default: the case's large preset)")
    p.add_argument("--jax", nargs="+", metavar="VERSION",
                   help="JAX versions (0.4.35 0.10.2); each not the host's is installed once with uv into "
                   "~/.cache/jaxcompare/envs ($JAXCOMPARE_ENVS_DIR)")
    p.add_argument("--prepare", nargs="*", metavar="VERSION",
                   help="make these versions' environments and measure nothing (no versions: those in "
                   "$JAXCOMPARE_JAX_VERSIONS, what a hosted server offers)")
    p.add_argument("--precision", default="x32", choices=PRECISIONS)
    p.add_argument("--device", default="auto", choices=DEVICES)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timing", choices=TIMING_PRESETS, default=None, help="as for run (default careful)")
    p.add_argument("--quick", action="store_true", help="same as --timing quick")
    p.add_argument("--rounds", type=int, default=2,
                   help="measurements per version, in alternating order (A B C, C B A, ...); default 2")
    p.add_argument("--timeout", type=float, default=None, help="deadline per job, seconds (default 600)")
    p.add_argument("--json", metavar="PATH|-", help="write the versions record as JSON ('-' = stdout)")
    cli_history.add_save_arguments(p)


def _timing(args: argparse.Namespace) -> TimingConfig:
    if args.quick and args.timing not in (None, "quick"):
        raise BadInput(N_("--quick and --timing {name} contradict each other: give one").format(name=args.timing))
    return TimingConfig.preset("quick" if args.quick else args.timing or "careful")


def handle(args: argparse.Namespace) -> int:
    from ..engine import envs, measure_versions

    if args.prepare is not None:
        return prepare(args)
    missing = [f"--{name}" for name in ("case", "jax") if not getattr(args, name)]
    if missing:
        raise BadInput(N_("versions needs {options} (or --prepare to make environments only)").format(
            options=" and ".join(missing)))
    if args.rounds < 1:
        raise BadInput(N_("--rounds must be at least 1, got {rounds}").format(rounds=args.rounds))
    for version in args.jax:  # one line before anything is said to be measured ("banana", "0.3")
        envs.check_version(version)
    case = get_case(args.case)
    shape = parse_shape(args.shape) if args.shape else case.large_shape
    case.check_shape(shape)
    spec = Spec(case=case.name, shape=shape, precision=args.precision, device=args.device, seed=args.seed,
                timing=_timing(args))
    store = cli_history.open_store(args.db) if args.save else None  # a bad --db fails before measuring
    out = sys.stderr if args.json == "-" else sys.stdout
    print(_("measuring {case} at {shape} ({precision}) under JAX {versions} ...").format(
        case=case.name, shape=format_shape(shape), precision=args.precision, versions=", ".join(args.jax)),
        file=sys.stderr)

    def progress(message: str, fraction: float) -> None:
        print(f"  [{fraction:4.0%}] {translate_text(message)}", file=sys.stderr, flush=True)

    runs = measure_versions(spec, args.jax, rounds=args.rounds, timeout_s=args.timeout, progress=progress)
    numpy, pooled = pooled_runs(runs)
    if args.json:
        write_json(args.json, versions_document(runs, args.rounds, sys.executable))
    found = findings(pooled)  # the readable figures: on stderr beside --json -
    for run, result in pooled:
        print(version_line(result), file=out)
        for line in finding_lines(found[run.requested]):  # figures of this version that cannot all be true
            print(line, file=out)
    if numpy is not None:
        print("  " + _("NumPy (one for every version, {n} samples): {median}").format(
            n=numpy.n, median=format_time(numpy.median_s)), file=out)
    for comparison in compare_versions([(run.requested, result) for run, result in pooled]):
        print(comparison["text"], file=out)  # in the reader's language
    for run in runs:  # one line each, after the others' results
        if run.error is not None:
            print("jaxcompare: " + _("error: {message}").format(message=translate_text(run.error)), file=sys.stderr)
    if store is not None:
        for _run, result in pooled:
            cli_history.save_result(result, store)
    return EXIT_UNAVAILABLE if any(run.error is not None for run in runs) else 0


def finding_lines(found: list[Check]) -> list[str]:
    """A version's figures that cannot all be true, a line each under its result line."""
    return ["  " + _("{title}: {reason}").format(title=finding_title(c), reason=c.reason) for c in found]


def version_line(result: Result) -> str:
    """JAX 0.4.35 (jaxlib 0.4.35): runtime 12 µs (95% 11.8–12.3 µs), compile 30 ms, first call 35 ms, 2.1x NumPy."""
    runtime = result.jax.runtime
    jax_version, jaxlib_version = real_versions(result)
    low, high = result.speedup_range
    spread = "" if low != low else f" ({format_factor(low)}–{format_factor(high)})"
    why = doubt_text(result)
    speedup = (format_factor(result.speedup) if why is None else  # never a bare figure it sets aside
               _("set aside: {why}; measured {figure}").format(why=why, figure=format_factor(result.speedup)))
    return _("JAX {jax} (jaxlib {jaxlib}): runtime {runtime} (95% {range}), compile {compile}, first call {first}, "
             "speedup {speedup}{spread} against NumPy").format(
        jax=jax_version, jaxlib=jaxlib_version, runtime=format_time(runtime.median_s),
        range=format_time_range(*pooled_range(runtime, runtime.block_medians_s)),
        compile=format_time(result.jax.compile_total_s),
        first=first_call_text(result), speedup=speedup, spread=spread)


def prepare(args: argparse.Namespace) -> int:
    """``versions --prepare``: each environment made (or found made), one line each, nothing
    measured; what an operator runs before a hosted server offers these versions."""
    from ..engine import Settings, VersionUnavailable, ensure_env, envs_dir

    given = [f"--{name}" for name in ("case", "jax", "json") if getattr(args, name)]
    if given or args.save:
        raise BadInput(N_("--prepare makes environments and measures nothing: drop {options}").format(
            options=" ".join(given + (["--save"] if args.save else []))))
    versions = list(dict.fromkeys(args.prepare)) or list(Settings.from_env().jax_versions)
    if not versions:
        raise BadInput(N_("--prepare needs versions: name them (--prepare 0.4.38 0.10.2) or set "
                          "JAXCOMPARE_JAX_VERSIONS"))
    print(_("preparing JAX {versions} in {folder} ...").format(versions=", ".join(versions), folder=envs_dir()),
          file=sys.stderr)

    def progress(message: str, fraction: float) -> None:
        print(f"  [{fraction:4.0%}] {translate_text(message)}", file=sys.stderr, flush=True)

    failed = 0
    for version in versions:
        try:
            env = ensure_env(version, progress=progress)
        except VersionUnavailable as exc:
            print("jaxcompare: " + _("error: {message}").format(message=translate_text(str(exc))), file=sys.stderr)
            failed += 1
            continue
        if env.host:
            print(_("JAX {version}: the host's own JAX, nothing to make").format(version=version))
        elif env.made:
            print(_("JAX {version}: made in {seconds:.1f} s at {path}").format(
                version=version, seconds=env.made_s or 0.0, path=env.path))
        else:
            print(_("JAX {version}: ready (made before) at {path}").format(version=version, path=env.path))
    return EXIT_UNAVAILABLE if failed else 0
