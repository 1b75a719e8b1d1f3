"""``run --ports jnp,pallas`` (or ``--ports all``): one run of the whole protocol per port of a case, each
its own job under its own deadline (``--timeout``), then the race (analysis/ports). A port that fails or
runs out of time gets one plain line; the other ports' figures stand."""

from __future__ import annotations

import argparse
import math
import sys
import uuid
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from .. import i18n
from ..analysis.ports import (
    INTERPRETED,
    PortRun,
    PortsVerdict,
    ports_document,
    ports_lines,
    ports_verdict,
    race_figures,
    verdict_line,
)
from ..analysis.summary import sweep_verdict
from ..analysis.sweep import crossover, sweep_document
from ..analysis.text import (
    checklist_lines,
    display_width,
    pad,
    profile_lines,
    result_document,
    sweep_header_line,
    sweep_row_line,
)
from ..i18n import N_, _, sentences, translate_text
from ..model.cases import Case, format_shape
from ..model.errors import BadInput, JaxCompareError
from ..model.formatting import seconds_text
from ..model.platforms import error_first_line
from ..model.spec import Spec
from .history import saved_line
from .report import disagreed_status, result_table, write_json

ALL = "all"


def add_argument(parser: argparse.ArgumentParser, *, sweep: bool = False) -> None:
    then = ("at each size, then give each port's crossover and verdict" if sweep
            else "then say which is fastest")
    parser.add_argument("--ports", metavar="NAMES|all",
                        help="measure these JAX ports of the case, comma-separated (`list` shows each case's), or "
                        f"all of them, one after another, each under its own --timeout, {then}; "
                        "without it: the case's default port alone")


def chosen_ports(text: str, case: Case) -> list[str]:
    """--ports as port names of ``case``, in the order given; BadInput names the case's ports, or a port named
    twice (a race of one port against itself, quietly run once, read as a race of two)."""
    if text.strip() == ALL:
        return list(case.port_names)
    given = [n.strip() for n in text.split(",") if n.strip()]
    names = list(dict.fromkeys(given))
    if len(names) < len(given):
        twice = [name for name in names if given.count(name) > 1]
        raise BadInput(N_("port(s) named twice in --ports: {ports}").format(ports=", ".join(twice)))
    if not names:
        raise BadInput(N_("--ports is empty: give port names like {ports}, or all").format(
            ports=",".join(case.port_names)))
    for name in names:
        case.get_port(name)
    return names


def run_ports(args: argparse.Namespace, runner: Any, case: Case, spec: Spec, wait: Callable[[Any], Any],
              store: Any | None, save: Callable[[Any, Any], None], profile_dir: str | None = None) -> int:
    """Measure each chosen port of ``case`` at ``spec``'s shape, print each one's table and the race,
    write the ports document with --json; exit 2 only when no port was measured."""
    out = sys.stderr if args.json == "-" else sys.stdout
    runs: list[PortRun] = []
    race = f"ports-{uuid.uuid4().hex}"  # one owner for the race: its later ports run on the first's device
    for index, name in enumerate(chosen_ports(args.ports, case)):
        port_spec = replace(spec, port=name)
        print(_("measuring {case} port {port} at {shape} ({precision}), about {duration} ...").format(
            case=case.name, port=name, shape=format_shape(spec.shape), precision=spec.precision,
            duration=seconds_text(runner.estimate(port_spec).seconds)), file=sys.stderr, flush=True)
        try:
            result = wait(runner.submit(port_spec, profile_dir=profile_dir, owner=race, sticky=index > 0))
        except JaxCompareError as exc:  # one port's failure or deadline: its line, and on to the next
            runs.append(PortRun(name, error=error_first_line(str(exc))))
            print("jaxcompare: " + _("port {port}: {error}").format(port=name, error=translate_text(str(exc))),
                  file=sys.stderr, flush=True)
            continue
        runs.append(PortRun(name, result))
        if store is not None:
            save(result, store)
        print("\n" + "\n".join(port_result_lines(name, result)), file=out, flush=True)  # stderr beside --json -
    verdict = ports_verdict(runs, case=case.name, shape=spec.shape, precision=spec.precision)
    if args.json:
        docs = {r.name: result_document(r.result) for r in runs if r.result is not None}
        with i18n.using(i18n.SOURCE_LANGUAGE):  # JSON is English whatever the reader's language
            write_json(args.json, ports_document(verdict, docs))
    print("\n" + "\n".join(ports_lines(verdict)), file=out)
    measured = [r.result for r in runs if r.result is not None]
    return disagreed_status(measured) if measured else 2


def sweep_ports(args: argparse.Namespace, runner: Any, case: Case, specs: list[Spec], wait: Callable[[Any], Any],
                store: Any | None, save: Callable[[Any, Any], None], out: Any) -> int:
    """``sweep --ports``: at each size of ``specs`` (smallest first), every chosen port, each its own job on the
    first's device; a port's first failure drops its larger sizes, as on the Size sweep page. Then a verdict per
    port from its trusted sizes; --json writes one sweep document whose results hold every port's."""
    names = chosen_ports(args.ports, case)
    results: dict[str, list[Any]] = {name: [] for name in names}
    failed: dict[str, tuple[tuple[int, ...], str]] = {}
    race = f"ports-{uuid.uuid4().hex}"  # one owner: every later job runs on the first's device
    width = max(display_width(_("port")), *map(display_width, names)) + 2
    print(pad(_("port"), width) + sweep_header_line(), file=out, flush=True)
    first = True
    for spec in specs:
        for name in names:
            if name in failed:
                continue
            try:
                result = wait(runner.submit(replace(spec, port=name), owner=race, sticky=not first))
            except JaxCompareError as exc:  # this port's larger sizes are dropped; the others go on
                failed[name] = (spec.shape, error_first_line(str(exc)))
                print("jaxcompare: " + _("port {port} at {shape}: {error}; its larger sizes are not measured").format(
                    port=name, shape=format_shape(spec.shape), error=translate_text(str(exc))),
                    file=sys.stderr, flush=True)
                continue
            finally:
                first = False
            results[name].append(result)
            if store is not None:  # saved as measured: an interrupted sweep keeps what it did
                save(result, store)
            print(pad(name, width) + sweep_row_line(result), file=out, flush=True)
    for name in names:
        if results[name]:
            print(_("port {port}: {verdict}").format(port=name, verdict=port_sweep_verdict(results[name],
                                                                                          failed.get(name))), file=out)
    races = size_races(results)
    for shape, verdict in races:
        print(_("fastest at {shape}: {verdict}").format(shape=format_shape(shape), verdict=verdict_line(verdict)),
              file=out)
    if args.json:
        with i18n.using(i18n.SOURCE_LANGUAGE):  # JSON is English whatever the reader's language
            write_json(args.json, ports_sweep_document(case.name, specs[0].precision, results, failed, races))
    if store is not None:
        print(saved_line(sum(map(len, results.values())), store), file=sys.stderr)
    return disagreed_status(r for port in results.values() for r in port) if any(results.values()) else 2


def port_sweep_verdict(results: list[Any], failed: tuple[tuple[int, ...], str] | None) -> str:
    """One port's verdict over its sizes (summary.sweep_verdict: none from a kernel only interpreted here, whose
    sizes trust sets aside), and the size it failed at, past which it says nothing."""
    verdict = sweep_verdict(results, crossover(results))
    if failed is None:
        return verdict
    return sentences(verdict, _("From {shape} up it was not measured: {error}.").format(
        shape=format_shape(failed[0]), error=translate_text(failed[1]).rstrip(".")))


def size_races(results: dict[str, list[Any]]) -> list[tuple[tuple[int, ...], PortsVerdict]]:
    """At each size two or more ports were measured at, smallest first: their race (analysis/ports.py),
    as the Compare page's race says which is fastest at one size."""
    shapes = sorted({tuple(r.shape) for found in results.values() for r in found}, key=math.prod)
    races = []
    for shape in shapes:
        runs = [PortRun(name, r) for name, found in results.items() for r in found if tuple(r.shape) == shape]
        if len(runs) > 1:
            races.append((shape, ports_verdict(runs)))
    return races


def ports_sweep_document(case: str, precision: str, results: dict[str, list[Any]],
                         failed: dict[str, tuple[tuple[int, ...], str]],
                         races: list[tuple[tuple[int, ...], PortsVerdict]]) -> dict[str, Any]:
    """A sweep's document (sweep_document) whose ``results`` are every port's, each naming its port
    (``spec.port``); ``ports``: each port's crossover, and the size it failed at and why; ``races``
    (size_races'): which port was fastest at each size two or more ran at."""
    ports = []
    everything: list[dict[str, Any]] = []
    for name, found in results.items():
        document = sweep_document(case, precision, found, crossover(found))  # an interpreted kernel's: none
        everything += document["results"]
        shape, error = failed.get(name, (None, None))
        ports.append({"name": name, "crossover_elements": document["crossover_elements"],
                      "left_out": INTERPRETED if any(r.interpreted for r in found) else None,
                      "failed_at": None if shape is None else list(shape), "error": error})
    everything.sort(key=lambda r: math.prod(r["spec"]["shape"]))  # by size, each size's ports in the order asked
    said = [{"shape": list(shape), **race_figures(verdict)} for shape, verdict in races]
    return {"case": case, "precision": precision, "ports": ports, "races": said, "results": everything}


def port_result_lines(name: str, result: Any) -> list[str]:
    """One port's heading, its table and checklist, and the line saying an interpreted kernel's time
    is no speed figure."""
    lines = [_("=== port {port} ({jax_name}) ===").format(port=name, jax_name=result.case_info.get("jax_name", ""))]
    why = next((p.get("why") for p in result.case_info.get("ports") or () if p.get("name") == name), "")
    if why:
        lines.append(translate_text(why))
    if result.interpreted:
        lines.append(_("{port}: {why}").format(port=name, why=_(INTERPRETED)))
    traced = ["", *profile_lines(result)] if result.profile is not None else []
    return [*lines, result_table(result), "", *checklist_lines(result), *traced]
