"""jaxcompare: is the JAX port of a NumPy/SciPy function really faster, and when?

Small public API: describe a comparison with :class:`Spec`, run it with a :class:`Runner`
(worker processes per precision, one device queue), read the :class:`Result`.
"""

from .catalog import all_cases, builtin_cases, get_case
from .engine.runner import Job, Runner
from .model.cases import Case
from .model.errors import BadInput, DeviceUnavailable, JaxCompareError, JobFailed, TooLarge
from .model.result import Result
from .model.spec import Spec, TimingConfig, parse_shape
from .model.stats import Stats

__all__ = [
    "BadInput", "Case", "DeviceUnavailable", "Job", "JaxCompareError", "JobFailed", "Result",
    "Runner", "Spec", "Stats", "TimingConfig", "TooLarge", "all_cases", "builtin_cases",
    "get_case", "parse_shape",
]
__version__ = "0.1.0"
