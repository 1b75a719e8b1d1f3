"""Loading a user's cases file: a Python file that defines ``CASES``, a list of Case.

The file is code: only a worker process loads it (``load_cases_file``). The server and the
CLI know its cases from the summaries a worker reports (``case_from_summary``).
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..i18n import N_
from ..model.cases import Case, Port
from ..model.errors import BadInput
from ..model.port_names import DEFAULT_PORT


def load_cases_file(path: str | Path) -> list[Case]:
    """Import a user's Python file and return its ``CASES`` (BadInput on any problem)."""
    path = Path(path)
    if not path.is_file():
        raise BadInput(N_("cases file {path!r} does not exist or is not a file").format(path=str(path)))
    module_name = f"jaxcompare_user_cases_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise BadInput(N_("cases file {path!r} is not a Python file").format(path=str(path)))
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BadInput as exc:
        raise BadInput(N_("cases file {path!r}: {reason}").format(path=str(path), reason=exc)) from None
    except Exception as exc:
        sys.modules.pop(module_name, None)
        raise BadInput(N_("cases file {path!r} could not be loaded: {kind}: {error}").format(
            path=str(path), kind=type(exc).__name__, error=exc)) from None
    cases = getattr(module, "CASES", None)
    if not isinstance(cases, list | tuple) or not cases:
        raise BadInput(N_("cases file {path!r} must define CASES, a non-empty list of Case").format(path=str(path)))
    bad = [c for c in cases if not isinstance(c, Case)]
    if bad:
        raise BadInput(N_("cases file {path!r}: CASES holds {kind}, not Case").format(
            path=str(path), kind=type(bad[0]).__name__))
    for case in cases:
        object.__setattr__(case, "source", str(path))
        # The module's import name is unique per path (two my_cases.py must not collide, nor
        # shadow a real module); a reader knows the functions by the file: my_cases.softmax_np.
        for attr in ("numpy_name", "jax_name"):
            name = getattr(case, attr)
            if name.startswith(module_name + "."):
                object.__setattr__(case, attr, path.stem + name[len(module_name):])
    return list(cases)


def case_from_summary(summary: Mapping[str, Any]) -> Case:
    """A stand-in for a user's case, from what a worker reported (``Case.summary()``): names,
    titles, group and shapes, for listing and choosing. Its functions refuse to run, and it
    accepts any shape: the worker that measures it loads the file and checks for itself."""
    name = str(summary.get("name", ""))

    def runs_in_a_worker(*_args: Any, **_kwargs: Any) -> Any:
        raise BadInput(N_("case {name!r} comes from a cases file: it runs only in a worker process").format(name=name))

    try:
        # The ports as the worker listed them, the default first: names to choose from, run only there.
        listed = [p for p in summary.get("ports") or () if isinstance(p, Mapping)]
        default = str(listed[0]["name"]) if listed else DEFAULT_PORT
        ports = tuple(Port(str(p["name"]), runs_in_a_worker, jax_name=str(p.get("jax_name") or "?"),
                           why=str(p.get("why") or ""), pallas=bool(p.get("pallas"))) for p in listed[1:])
        return Case(
            name=name, numpy_fn=runs_in_a_worker, jax_fn=runs_in_a_worker, make_inputs=runs_in_a_worker,
            title=str(summary.get("title") or name), group=str(summary.get("group") or "custom"),
            numpy_name=str(summary.get("numpy_name") or "?"), jax_name=str(summary.get("jax_name") or "?"),
            description=str(summary.get("description") or ""),
            small_shape=tuple(summary.get("small_shape") or (10, 10)),
            large_shape=tuple(summary.get("large_shape") or (1000, 1000)),
            numpy_computes_in=summary.get("numpy_computes_in"), source=str(summary["source"]),
            ports=ports, default_port=default, ports_why=str(summary.get("ports_why") or ""),
            pallas=bool(listed[0].get("pallas")) if listed else False,
            default_why=str(listed[0].get("why") or "") if listed else "",
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise BadInput(N_("case {name!r}: its worker's description is incomplete ({reason})").format(
            name=name, reason=exc)) from None
