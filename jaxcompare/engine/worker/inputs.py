"""A case's inputs for a Spec, as every process that times JAX builds them (the worker, pitfall 7's
fresh processes): seeded, so each builds the same arrays. NumPy's plain process reads the worker's
instead (plain_numpy.py: building them would change its allocator's regime)."""

from __future__ import annotations

import numpy as np

from ...i18n import N_
from ...model.cases import Case, format_shape
from ...model.errors import BadInput
from ...model.spec import Spec


def build_inputs(case: Case, spec: Spec) -> tuple[np.ndarray, ...]:
    """The case's inputs for ``spec`` (seeded); a failing or wrong ``make_inputs`` is a BadInput."""
    rng = np.random.default_rng(spec.seed)
    try:
        inputs = case.make_inputs(spec.shape, np.dtype(spec.dtype), rng)
    except BadInput:
        raise
    except Exception as exc:
        raise BadInput(
            N_("case {case!r} could not build inputs of shape {shape}: {error_type}: {error}").format(
                case=case.name, shape=format_shape(spec.shape), error_type=type(exc).__name__, error=exc)
        ) from None
    inputs = tuple(inputs) if isinstance(inputs, tuple | list) else (inputs,)
    if not inputs or not all(isinstance(a, np.ndarray) for a in inputs):
        raise BadInput(N_("case {case!r}: make_inputs must return a tuple of NumPy arrays").format(case=case.name))
    return inputs
