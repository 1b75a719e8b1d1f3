"""jaxcompare: is the JAX port of a NumPy/SciPy function really faster, and when?

Small public API. In a notebook: ``compare(numpy_fn, jax_fn, x)`` and ``sweep(...)`` on your
own functions, and ``%load_ext jaxcompare`` for the ``%jaxcompare`` magic. From code: describe a
comparison with :class:`Spec`, run it with a :class:`Runner` (worker processes per precision,
one device queue), read the :class:`Result`.
"""

from typing import Any

from .catalog import all_cases, builtin_cases, get_case
from .engine.runner import Job, Runner
from .model.cases import Case
from .model.errors import BadInput, DeviceUnavailable, JaxCompareError, JobFailed, TooLarge
from .model.result import Result
from .model.spec import Spec, TimingConfig, parse_shape
from .model.stats import Stats
from .notebook import OutputsDisagree, compare, shutdown, sweep

__all__ = [
    "BadInput", "Case", "DeviceUnavailable", "Job", "JaxCompareError", "JobFailed", "OutputsDisagree",
    "Result", "Runner", "Spec", "Stats", "TimingConfig", "TooLarge", "all_cases", "builtin_cases",
    "compare", "get_case", "load_ipython_extension", "parse_shape", "shutdown", "sweep",
]
__version__ = "0.1.0"


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext jaxcompare``: the ``%jaxcompare`` magic (IPython is imported only now)."""
    from .notebook import load_ipython_extension as load

    load(ipython)
