"""What compare() and sweep() return: a Result and a sweep that show themselves in Jupyter,
print as text in a terminal, save to History and write the CLI's JSON."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from ..analysis.advice import advice_document
from ..analysis.checks import checklist
from ..analysis.sweep import sweep_document
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

    def to_json(self, path: str | os.PathLike[str] | None = None) -> str:
        """The JSON document of ``jaxcompare run --json`` (with the checklist); also written to
        ``path`` when given."""
        text = dumps(self.to_dict() | {"checklist": [c.to_dict() for c in checklist(self)],
                                       "advice": advice_document(self)})
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
        return (f"<jaxcompare Result {self.case} {format_shape(self.shape)} {self.precision} on {self.jax.device}: "
                f"speedup {format_factor(self.speedup)}, outputs {agree}>")


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


def _write(path: str | os.PathLike[str] | None, text: str) -> None:
    if path is None:
        return
    try:
        Path(path).write_text(text + "\n", encoding="utf-8")
    except OSError as exc:
        raise BadInput(f"cannot write {str(path)!r}: {exc.strerror or exc}") from None
