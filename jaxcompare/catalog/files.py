"""Loading a user's cases file: a Python file that defines ``CASES``, a list of Case."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from ..model.cases import Case
from ..model.errors import BadInput


def load_cases_file(path: str | Path) -> list[Case]:
    """Import a user's Python file and return its ``CASES`` (BadInput on any problem)."""
    path = Path(path)
    if not path.is_file():
        raise BadInput(f"cases file {str(path)!r} does not exist or is not a file")
    module_name = f"jaxcompare_user_cases_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise BadInput(f"cases file {str(path)!r} is not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BadInput as exc:
        raise BadInput(f"cases file {str(path)!r}: {exc}") from None
    except Exception as exc:
        sys.modules.pop(module_name, None)
        raise BadInput(
            f"cases file {str(path)!r} could not be loaded: {type(exc).__name__}: {exc}"
        ) from None
    cases = getattr(module, "CASES", None)
    if not isinstance(cases, list | tuple) or not cases:
        raise BadInput(f"cases file {str(path)!r} must define CASES, a non-empty list of Case")
    bad = [c for c in cases if not isinstance(c, Case)]
    if bad:
        raise BadInput(f"cases file {str(path)!r}: CASES holds {type(bad[0]).__name__}, not Case")
    for case in cases:
        object.__setattr__(case, "source", str(path))
    return list(cases)
