"""What compare() and sweep() return: a Result and a sweep that show themselves in Jupyter,
print as text in a terminal, save to History and write the CLI's JSON."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from .. import i18n
from ..analysis.ports import PortsVerdict, ports_document
from ..analysis.summary import doubt_text
from ..analysis.sweep import sweep_document
from ..analysis.text import result_document
from ..analysis.trust import direction, trusted
from ..history.store import Store
from ..model.cases import format_shape
from ..model.errors import BadInput, JaxCompareError
from ..model.formatting import dumps, format_factor
from ..model.result import Result
from . import display


class OutputsDisagree(JaxCompareError):
    """The two functions' outputs differ beyond the tolerance; ``.result`` holds the measurement."""

    def __init__(self, message: str, result: Result) -> None:
        super().__init__(message)
        self.result = result


@dataclass(frozen=True, repr=False)
class NotebookResult(Result):
    """A Result (same fields, same JSON) with a notebook's conveniences."""

    @classmethod
    def of(cls, result: Result) -> NotebookResult:
        """The same result as a NotebookResult."""
        if isinstance(result, cls):
            return result
        return cls(**{f.name: getattr(result, f.name) for f in fields(Result) if f.init})

    @property
    def trusted(self) -> bool:
        """Whether its speedup may be quoted: the rule every headline uses (analysis/trust.py); ``set_aside``
        says why not."""
        return trusted(self)

    @property
    def set_aside(self) -> str | None:
        """Why its speedup is not trusted, in words (None where it is)."""
        return doubt_text(self)

    @property
    def direction(self) -> str | None:
        """The side faster for sure, trusted or not: "jax_faster", "numpy_faster", or None where this run
        cannot say."""
        return direction(self).side

    def to_json(self, path: str | os.PathLike[str] | None = None) -> str:
        """The JSON document of ``jaxcompare run --json`` (the checklist, ``trusted``, ``direction``, the
        advice); also written to ``path`` when given."""
        text = dumps(result_document(self))
        _write(path, text)
        return text

    def save(self, db: str | os.PathLike[str] | None = None) -> str:
        """Keep it in History (``$JAXCOMPARE_DB`` or ~/.jaxcompare/results.sqlite3, or ``db``),
        where the app's History page and ``jaxcompare history`` find it; returns its id."""
        return Store(db).save(self)

    def _repr_html_(self) -> str:
        return display.result_html(self)

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(repr(self) if cycle else display.result_text(self))

    def __str__(self) -> str:
        return display.result_text(self)

    def __repr__(self) -> str:
        agree = "agree" if self.jax.agreement.get("ok") else "DISAGREE"
        doubt = "" if self.trusted else ", not trusted"
        return (f"<jaxcompare Result {self.case} {format_shape(self.shape)} {self.precision} on {self.jax.device}: "
                f"speedup {format_factor(self.speedup)}{doubt}, outputs {agree}>")


@dataclass(frozen=True)
class SweepResult:
    """One pair measured at several sizes, smallest first, and where JAX starts to win."""

    results: tuple[NotebookResult, ...]
    crossover_elements: float | None

    @property
    def case(self) -> str:
        return self.results[0].case

    @property
    def precision(self) -> str:
        return self.results[0].precision

    def to_dict(self) -> dict[str, Any]:
        """The document of ``jaxcompare sweep --json``."""
        return sweep_document(self.case, self.precision, self.results, self.crossover_elements)

    def to_json(self, path: str | os.PathLike[str] | None = None) -> str:
        text = dumps(self.to_dict())
        _write(path, text)
        return text

    def save(self, db: str | os.PathLike[str] | None = None) -> list[str]:
        """Keep every size's result in History; returns their ids."""
        store = Store(db)
        return [store.save(r) for r in self.results]

    def __len__(self) -> int:
        return len(self.results)

    def __getitem__(self, index: int) -> NotebookResult:
        return self.results[index]

    def _repr_html_(self) -> str:
        return display.sweep_html(self.results, self.crossover_elements)

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(repr(self) if cycle else display.sweep_text(self.results, self.crossover_elements))

    def __str__(self) -> str:
        return display.sweep_text(self.results, self.crossover_elements)

    def __repr__(self) -> str:
        cross = "none" if self.crossover_elements is None else f"{math.floor(self.crossover_elements):,} elements"
        return f"<jaxcompare Sweep {self.case} {self.precision}: {len(self.results)} sizes, crossover {cross}>"


@dataclass(frozen=True)
class PortsResult:
    """Several JAX ports of one pair, measured one after another at one shape: which is fastest (the
    runner-up over it with its 95% range, or no difference within the noise) and each port's Result."""

    verdict: PortsVerdict

    @property
    def results(self) -> dict[str, NotebookResult]:
        """Each port's Result that was measured, by port name, in run order."""
        return {run.name: NotebookResult.of(run.result) for run in self.verdict.runs if run.result is not None}

    @property
    def fastest(self) -> str | None:
        """The fastest port among those whose time is a speed figure (decided or not: see ``decided``)."""
        return self.verdict.fastest

    @property
    def decided(self) -> bool:
        """Whether the fastest beats the runner-up beyond the noise (the 95% range of the ratio excludes 1x)."""
        return self.verdict.decided

    def to_dict(self) -> dict[str, Any]:
        """The document of ``jaxcompare run --ports --json`` (jaxcompare.ports/1, docs/json.md)."""
        with i18n.using(i18n.SOURCE_LANGUAGE):  # JSON is English whatever the reader's language
            return ports_document(self.verdict, {name: result_document(r) for name, r in self.results.items()})

    def to_json(self, path: str | os.PathLike[str] | None = None) -> str:
        text = dumps(self.to_dict())
        _write(path, text)
        return text

    def save(self, db: str | os.PathLike[str] | None = None) -> list[str]:
        """Keep every port's result in History (its port recorded); returns their ids."""
        store = Store(db)
        return [store.save(r) for r in self.results.values()]

    def __len__(self) -> int:
        return len(self.verdict.runs)

    def __getitem__(self, port: str) -> NotebookResult:
        """A port's Result; a KeyError naming the ports that have one, for a port that did not run (its line
        is in str()) or is not in the race."""
        if port in self.results:
            return self.results[port]
        ran = ", ".join(self.results) or "none"
        missed = [run.name for run in self.verdict.runs if run.result is None]
        raise KeyError(f"{port!r}: no result for it. Ports with a result: {ran}"
                       + (f"; did not run: {', '.join(missed)} (print the race for why)" if missed else ""))

    def _repr_html_(self) -> str:
        return display.ports_html(self.verdict)

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(repr(self) if cycle else display.ports_text(self.verdict))

    def __str__(self) -> str:
        return display.ports_text(self.verdict)

    def __repr__(self) -> str:
        v = self.verdict
        return (f"<jaxcompare Ports {v.case} {format_shape(v.shape)} {v.precision}: "
                f"{', '.join(run.name for run in v.runs)}; fastest {v.fastest or 'none'}"
                f"{'' if v.decided or v.fastest is None else ' (not decided)'}>")


def _write(path: str | os.PathLike[str] | None, text: str) -> None:
    if path is None:
        return
    try:
        Path(path).write_text(text + "\n", encoding="utf-8")
    except OSError as exc:
        raise BadInput(f"cannot write {str(path)!r}: {exc.strerror or exc}") from None
