"""jaxcompare: is the JAX port of a NumPy/SciPy function really faster, and when?

Small public API. In a notebook: ``compare(numpy_fn, jax_fn, x)`` and ``sweep(...)`` on your
own functions, and ``%load_ext jaxcompare`` for the ``%jaxcompare`` magic. From code: describe a
comparison with :class:`Spec`, run it with a :class:`Runner` (worker processes per precision,
one device queue), read the :class:`Result`.
"""

import importlib
from typing import Any

# Each public name and the module it lives in, imported on first use (PEP 562): the app's Home
# page and `import jaxcompare.model...` never pay for the catalog, the engine or NumPy they skip.
_EXPORTS = {
    "all_cases": "catalog", "builtin_cases": "catalog", "get_case": "catalog",
    "Job": "engine.server.runner", "Runner": "engine.server.runner",
    "Case": "model.cases", "Port": "model.cases",
    "BadInput": "model.errors", "DeviceUnavailable": "model.errors", "JaxCompareError": "model.errors",
    "DeadlinePassed": "model.errors", "DeviceHeld": "model.errors", "JobFailed": "model.errors",
    "TooLarge": "model.errors",
    "Result": "model.result",
    "Spec": "model.spec", "TimingConfig": "model.spec", "parse_shape": "model.spec",
    "Stats": "model.stats",
    "OutputsDisagree": "notebook", "PortsResult": "notebook", "compare": "notebook", "shutdown": "notebook",
    "sweep": "notebook", "versions": "notebook",
}

__all__ = [
    "BadInput", "Case", "DeadlinePassed", "DeviceHeld", "DeviceUnavailable", "Job", "JaxCompareError", "JobFailed",
    "OutputsDisagree", "Port",
    "PortsResult", "Result", "Runner", "Spec", "Stats", "TimingConfig", "TooLarge", "all_cases", "builtin_cases",
    "compare", "get_case", "load_ipython_extension", "parse_shape", "shutdown", "sweep", "versions",
]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'jaxcompare' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value  # the next lookup is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext jaxcompare``: the ``%jaxcompare`` magic (IPython is imported only now)."""
    from .notebook import load_ipython_extension as load

    load(ipython)
