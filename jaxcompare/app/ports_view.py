"""What the Compare page shows of several JAX ports of one case, as plain data (no Streamlit here):
the race's sentence, each port's line and tab name, what a port is, and the downloads. The race
itself is analysis/ports's, shared with the CLI and the notebook."""

from __future__ import annotations

from typing import Any

from .. import i18n
from ..analysis.ports import PortsVerdict, port_row, ports_document, race_lines
from ..i18n import _, translate_text
from ..model.cases import Case, format_shape
from ..model.formatting import markdown_literal
from ..model.result import Result
from .views import result_document


def verdict_markdown(verdict: PortsVerdict) -> str:
    """The race in a bold sentence: 'scan 1.80x faster than jnp (1.52x-2.13x)', or no difference; where the
    ports have calls back to back, that race's sentence on the next line."""
    return "  \n".join(f"**{markdown_literal(line)}**" for line in race_lines(verdict))


def port_lines(verdict: PortsVerdict) -> list[str]:
    """One Markdown bullet per port, in run order: its runtime and speedup over NumPy, or its plain line
    (did not run; interpreted on the CPU, no speed figure; disagrees with NumPy)."""
    return ["- " + markdown_literal(port_row(run, verdict.left_out.get(run.name) if run.result is not None else None))
            for run in verdict.runs]


def caption(verdict: PortsVerdict) -> str:
    """'cumsum · 1000 · x32 · cpu (cpu) · 3 ports': what the race measured, where."""
    first = next((run.result for run in verdict.runs if run.result is not None), None)
    where = f" · {first.backend} ({first.jax.device_kind})" if first is not None else ""
    return (f"{verdict.case} · {format_shape(verdict.shape)} · {verdict.precision}{where} · "
            + _("{count} ports").format(count=len(verdict.runs)))


def tab_label(name: str, result: Result | None) -> str:
    """A port's tab: its name, and a word where its time is not a speed figure or it did not run."""
    if result is None:
        return _("{port} · did not run").format(port=name)
    if result.interpreted:
        return _("{port} · interpreted").format(port=name)
    return name


def port_why(case: Case, name: str) -> str:
    """How the port differs from the case's others (its Port's why), in the reader's language; '' if unsaid."""
    port = next((p for p in case.all_ports if p.name == name), None)
    return translate_text(port.why) if port is not None and port.why else ""


def file_stem(verdict: PortsVerdict) -> str:
    """'cumsum_1000_x32_ports': the start of the ports downloads' file names."""
    return f"{verdict.case}_{format_shape(verdict.shape)}_{verdict.precision}_ports"


def document(verdict: PortsVerdict) -> dict[str, Any]:
    """The race as JSON (jaxcompare.ports/1, as `run --ports --json` writes it): English, each port's
    result document with its advice."""
    with i18n.using(i18n.SOURCE_LANGUAGE):
        return ports_document(verdict, {run.name: result_document(run.result) for run in verdict.runs
                                        if run.result is not None})
