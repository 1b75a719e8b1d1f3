"""The catalog: built-in cases plus a user's cases file, looked up by name."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from ..i18n import N_
from ..model.cases import Case
from ..model.errors import BadInput
from .files import case_from_summary, load_cases_file

__all__ = ["CatalogError", "all_cases", "builtin_cases", "case_from_summary", "find_case", "get_case",
           "load_cases_file"]


class CatalogError(RuntimeError):
    """The built-in catalog contradicts itself: a bug in the package, not in a request."""


@cache
def builtin_cases() -> tuple[Case, ...]:
    """Every built-in case, NumPy first then SciPy (imported lazily: they are many)."""
    from .numpy_cases import CASES as numpy_cases
    from .scipy_cases import CASES as scipy_cases

    cases = tuple(numpy_cases) + tuple(scipy_cases)
    names = [c.name for c in cases]
    dupes = {n for n in names if names.count(n) > 1}
    if dupes:
        raise CatalogError(f"duplicate built-in case names: {', '.join(sorted(dupes))}")
    return cases


def all_cases(cases_file: str | Path | None = None) -> list[Case]:
    """Built-in cases, then the user's; a user case may not shadow a built-in name."""
    cases = list(builtin_cases())
    if cases_file:
        known = {c.name for c in cases}
        for case in load_cases_file(cases_file):
            if case.name in known:
                raise BadInput(N_("cases file {path!r}: case name {name!r} is already taken").format(
                    path=str(cases_file), name=case.name))
            known.add(case.name)
            cases.append(case)
    return cases


def get_case(name: str, cases_file: str | Path | None = None) -> Case:
    """The case called ``name``; BadInput lists close matches when there is none. With a
    ``cases_file`` this imports it: call it in a worker, never in the server or the CLI."""
    return find_case(name, all_cases(cases_file))


def find_case(name: str, cases: list[Case]) -> Case:
    """The case called ``name`` among ``cases``; BadInput lists close matches when there is none."""
    for case in cases:
        if case.name == name:
            return case
    import difflib

    names = [c.name for c in cases]
    close = difflib.get_close_matches(str(name), names, n=3)
    if close:
        raise BadInput(N_("unknown case {name!r} (did you mean {close}?); `python -m jaxcompare list` shows all "
                          "{count}").format(name=name, close=", ".join(close), count=len(names)))
    raise BadInput(N_("unknown case {name!r}; `python -m jaxcompare list` shows all {count}").format(
        name=name, count=len(names)))
