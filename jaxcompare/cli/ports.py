"""``run --ports jnp,pallas`` (or ``--ports all``): one run of the whole protocol per port of a case, each
its own job under its own deadline (``--timeout``), then the race (analysis/ports). A port that fails or
runs out of time gets one plain line; the other ports' figures stand."""

from __future__ import annotations

import argparse
import sys
import uuid
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from .. import i18n
from ..analysis.advice import advice_document
from ..analysis.checks import checklist
from ..analysis.ports import INTERPRETED, PortRun, ports_document, ports_lines, ports_verdict
from ..analysis.text import checklist_lines, profile_lines
from ..analysis.trust import direction, trusted
from ..i18n import N_, _, translate_text
from ..model.cases import Case, format_shape
from ..model.errors import BadInput, JaxCompareError
from ..model.formatting import seconds_text
from ..model.platforms import error_first_line
from ..model.spec import Spec
from .report import result_table, write_json

ALL = "all"


def add_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--ports", metavar="NAMES|all",
                        help="measure these JAX ports of the case, comma-separated (`list` shows each case's), or "
                        "all of them, one after another, each under its own --timeout, then say which is fastest; "
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
        if args.json != "-":
            print("\n" + "\n".join(port_result_lines(name, result)), file=out, flush=True)
    verdict = ports_verdict(runs, case=case.name, shape=spec.shape, precision=spec.precision)
    if args.json:
        with i18n.using(i18n.SOURCE_LANGUAGE):  # JSON is English whatever the reader's language
            docs = {r.name: r.result.to_dict() | {"checklist": [c.to_dict() for c in checklist(r.result)],
                                                   "trusted": trusted(r.result),
                                                   "direction": direction(r.result).side,
                                                   "advice": advice_document(r.result)}
                    for r in runs if r.result is not None}
            write_json(args.json, ports_document(verdict, docs))
    if args.json != "-":
        print("\n" + "\n".join(ports_lines(verdict)), file=out)
    return 0 if any(r.result is not None for r in runs) else 2


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
