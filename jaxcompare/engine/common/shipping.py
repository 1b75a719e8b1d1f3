"""Sending a Case that is not in the catalog (functions written in a notebook) to a worker.

cloudpickle sends lambdas, closures and functions of ``__main__`` by value, with the globals
they use; functions of an importable module go by reference and are imported in the worker.
Both ends turn a failure into one BadInput sentence that names the function and the reason.
"""

from __future__ import annotations

import pickle
import re
from typing import Any

from ...model.cases import Case
from ...model.errors import BadInput

# The fields of a Case that may hold a user's code, in the order a culprit is looked for.
_CODE_FIELDS = ("numpy_fn", "jax_fn", "make_inputs", "canonical", "flops", "shape_rule")
_CANNOT_PICKLE = re.compile(r"cannot pickle '([^']+)' object")


def pack_case(case: Case) -> bytes:
    """The case as bytes a worker can load; BadInput names the function that cannot be sent."""
    import cloudpickle

    try:
        return cloudpickle.dumps(case)
    except Exception as exc:
        culprit, reason = _find_culprit(case, exc)
        raise BadInput(
            f"{culprit} cannot be sent to the worker process: {reason}; create such objects inside "
            "the function instead of referring to them (see docs/notebook.md)") from None


def _find_culprit(case: Case, exc: Exception) -> tuple[str, str]:
    """Which field of ``case`` fails to pickle, and why, in words."""
    import cloudpickle

    for name in _CODE_FIELDS:
        value = getattr(case, name)
        try:
            cloudpickle.dumps(value)
        except Exception as field_exc:
            return f"{name} ({_label(value)})", _reason(field_exc)
    return f"case {case.name!r}", _reason(exc)


def _label(fn: Any) -> str:
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__


def _reason(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    found = _CANNOT_PICKLE.search(text)
    if found:
        return f"it refers to a {found.group(1)} object, which cannot be pickled"
    if isinstance(exc, RecursionError):
        return "it refers to objects nested too deeply to pickle"
    return f"{type(exc).__name__}: {text[:200]}"


def unpack_case(data: bytes, name: str) -> Case:
    """Load a case sent by :func:`pack_case` (in the worker); BadInput says why it cannot."""
    try:
        case = pickle.loads(data)  # bytes from our own parent process, never from outside
    except (ImportError, AttributeError) as exc:
        raise BadInput(
            f"the worker could not load the functions of {name!r}: {type(exc).__name__}: {exc}. Functions "
            "of your own modules are sent by reference, so the module must be importable in the worker "
            "(on sys.path), or registered with cloudpickle.register_pickle_by_value(module)") from None
    except Exception as exc:
        raise BadInput(f"the worker could not load the functions of {name!r}: {type(exc).__name__}: {exc}") from None
    if not isinstance(case, Case):
        raise BadInput(f"the worker received {type(case).__name__} for {name!r}, not a Case")
    return case
