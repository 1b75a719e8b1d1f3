"""What to measure: a validated, immutable request that travels to the worker."""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from ..i18n import N_
from .errors import BadInput
from .platforms import PLATFORMS
from .port_names import check_port_name

PRECISIONS = ("x32", "x64")
DEVICES = ("auto", *PLATFORMS)  # the platform table's names
# jax.default_matmul_precision for float32 matrix products and convolutions: on a TPU one, three or
# six bfloat16 passes; on an NVIDIA Ampere or newer GPU TF32, TF32, float32 (jax.lax.Precision).
MATMUL_PRECISIONS = ("default", "high", "highest")
DTYPES = {"x32": "float32", "x64": "float64"}
MAX_DIMS = 4
# A hard ceiling on elements per input, whatever the mode: 2**31 float64 is 16 GiB.
MAX_ELEMENTS = 2**31

_SHAPE_SEP = re.compile(r"\s*[xX×,*]\s*|\s+")  # "500 X 500" too, as people type it


def parse_shape(text: str | list[int] | tuple[int, ...]) -> tuple[int, ...]:
    """'1000x1000' (or '1000,1000', '1000 1000', [1000, 1000]) -> (1000, 1000)."""
    if isinstance(text, list | tuple):
        parts: list[Any] = list(text)
    elif isinstance(text, str):
        stripped = text.strip().strip("()[]").strip()
        if not stripped:
            raise BadInput(N_("shape is empty: give sizes like 1000x1000"))
        parts = _SHAPE_SEP.split(stripped)
        if len(parts) > 1 and parts[-1] == "" and stripped.endswith(","):
            parts = parts[:-1]  # Python's one-element tuple, "(1000,)"
        if "" in parts:  # "5x5x", "x5": a size left out, not a smaller shape
            raise BadInput(N_("shape {shape!r}: a size is missing between its separators").format(shape=text))
    else:
        raise BadInput(N_("shape must be text like 1000x1000, got {kind}").format(kind=type(text).__name__))
    if not parts:
        raise BadInput(N_("shape is empty: give sizes like 1000x1000"))
    dims: list[int] = []
    for part in parts:
        if isinstance(part, bool):
            raise BadInput(N_("shape {shape!r}: {part!r} is not a size").format(shape=text, part=part))
        if isinstance(part, int):
            value = part
        elif isinstance(part, float) and part.is_integer():
            value = int(part)
        elif isinstance(part, str) and re.fullmatch(r"[+-]?\d{1,12}", part.replace("_", "")):
            value = int(part.replace("_", ""))
        else:
            raise BadInput(N_("shape {shape!r}: {part!r} is not a whole number").format(shape=text, part=str(part)))
        if value <= 0:
            raise BadInput(N_("shape {shape!r}: sizes must be positive, got {value}").format(shape=text, value=value))
        dims.append(value)
    if len(dims) > MAX_DIMS:
        raise BadInput(N_("shape {shape!r} has {ndim} dimensions; at most {max_dims}").format(
            shape=text, ndim=len(dims), max_dims=MAX_DIMS))
    if math.prod(dims) > MAX_ELEMENTS:
        raise BadInput(
            N_("shape {shape!r} has {elements:,} elements; the most any input may have is {max_elements:,}")
            .format(shape=text, elements=math.prod(dims), max_elements=MAX_ELEMENTS)
        )
    return tuple(dims)


TIMING_PRESETS = ("quick", "careful", "thorough")
# A sample starts with one untimed call only for calls shorter than this: the work between samples cost
# the next call 2.5 ms on the TPU host, 2.5% of this, and a longer untimed call would double the phase.
UNTIMED_CALL_MAX_S = 0.1
# The smallest n whose median CI (order statistics) reaches 95% coverage (n=5: 94%). The NumPy and
# JAX runtimes take at least this many samples whatever the preset, so every speedup has its range.
MIN_SAMPLES_FOR_RANGE = 6
# The 95th percentile of the range of k standard normal draws, for k = 2..4 runtime blocks
# (scipy.stats.studentized_range.ppf(0.95, k, inf); tests/test_spec.py checks them).
_RANGE_Q95 = {2: 2.7718, 3: 3.3145, 4: 3.6332}


@dataclass(frozen=True)
class TimingConfig:
    """How long and how carefully to sample each phase (see timing.py).

    ``runtime_budget_s`` and ``runtime_rel_ci`` apply to the two phases the speedup is made
    of (the NumPy runtime and the blocked JAX runtime); None means the same as every phase.
    ``runtime_blocks`` > 1 samples each of those two in that many blocks, sharing the budget,
    in pairs timed side by side (NumPy, JAX, then JAX, NumPy, ...): a machine whose speed
    drifts for seconds at a time moves both sides of a pair alike, so the pairs' speedups
    agree where one long block a side can put a whole phase in a slow stretch, with a tight
    CI. A side whose blocks' medians disagree is flagged unstable (the machine drifted), and
    Result.speedup_steady says whether the speedup held all the same.
    """

    target_sample_s: float = 0.02
    min_samples: int = 5
    max_samples: int = 200
    phase_budget_s: float = 0.6
    rel_ci: float = 0.03
    compile_samples: int = 3
    warmup_s: float = 0.01
    runtime_budget_s: float | None = None
    runtime_rel_ci: float | None = None
    runtime_blocks: int = 1
    # Fresh processes that time the first call as a user's %time pays it (engine/worker/measure.py); 0: the
    # worker's recompile after jax.clear_caches() stands in for it.
    first_call_processes: int = 1

    def __post_init__(self) -> None:
        if isinstance(self.runtime_blocks, float) and self.runtime_blocks.is_integer():
            object.__setattr__(self, "runtime_blocks", int(self.runtime_blocks))  # 2.0 from JSON
        if isinstance(self.first_call_processes, float) and self.first_call_processes.is_integer():
            object.__setattr__(self, "first_call_processes", int(self.first_call_processes))
        if (isinstance(self.first_call_processes, bool) or not isinstance(self.first_call_processes, int)
                or not 0 <= self.first_call_processes <= 5):
            raise BadInput(N_("timing setting first_call_processes must be a whole number from 0 to 5, got {value!r}")
                           .format(value=self.first_call_processes))
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "first_call_processes" or (value is None and f.name.startswith("runtime_")):
                continue
            if (isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value)
                    or value <= 0):
                raise BadInput(N_("timing setting {name} must be a positive number, got {value!r}").format(
                    name=f.name, value=value))
        if self.max_samples < self.min_samples:
            raise BadInput(N_("timing setting max_samples must be at least min_samples"))
        if not isinstance(self.runtime_blocks, int) or not 1 <= self.runtime_blocks <= 4:
            raise BadInput(N_("timing setting runtime_blocks must be a whole number from 1 to 4, got {value!r}")
                           .format(value=self.runtime_blocks))

    @classmethod
    def quick(cls) -> TimingConfig:
        """For tests and sweeps: fewer, shorter samples."""
        return cls(target_sample_s=0.005, min_samples=3, max_samples=30, phase_budget_s=0.15,
                   rel_ci=0.1, compile_samples=2, warmup_s=0.002, first_call_processes=0)

    @classmethod
    def thorough(cls) -> TimingConfig:
        """For a speedup you want to quote: the NumPy and JAX runtimes are sampled until their
        medians are known to ±1% (at most 2.5 s each), in four pairs of blocks side by side,
        because more pairs narrow the speedup's spread (benchmarks/RESULTS.md). Every phase
        takes 50 ms samples, at least 10 of them; the others stop at the default ±3% within 0.6 s."""
        return cls(target_sample_s=0.05, min_samples=10, max_samples=400, warmup_s=0.05,
                   runtime_budget_s=2.5, runtime_rel_ci=0.01, runtime_blocks=4, first_call_processes=3)

    @classmethod
    def preset(cls, name: str) -> TimingConfig:
        """'quick', 'careful' (the default) or 'thorough'."""
        if name not in TIMING_PRESETS:
            raise BadInput(N_("timing must be one of {choices}, got {value!r}").format(
                choices=", ".join(TIMING_PRESETS), value=name))
        return {"quick": cls.quick, "careful": cls, "thorough": cls.thorough}[name]()

    @property
    def preset_name(self) -> str:
        """'quick', 'careful' or 'thorough' when these are a preset's sampling settings, else 'custom'
        (where the first call was timed is the result's to say: a saved careful run predates it)."""
        return next((name for name in TIMING_PRESETS if replace(self, first_call_processes=0)
                     == replace(TimingConfig.preset(name), first_call_processes=0)), "custom")

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TimingConfig:
        """Settings as to_dict wrote them. Saved before first_call_processes existed, every first call
        was the worker's: 0, so a saved preset still reads as its preset."""
        known = {f.name for f in fields(cls)}
        if set(data) - known:
            raise BadInput(N_("spec.timing has unknown fields: {fields}").format(
                fields=", ".join(sorted(set(data) - known))))
        return cls(**({"first_call_processes": 0} | data))

    def for_runtime(self) -> TimingConfig:
        """The settings for the NumPy and JAX runtime phases, sampled in one go: at least
        MIN_SAMPLES_FOR_RANGE samples, so the speedup has a 95% range."""
        min_n = max(self.min_samples, MIN_SAMPLES_FOR_RANGE)
        return replace(self, min_samples=min_n, max_samples=max(self.max_samples, min_n),
                       phase_budget_s=self.runtime_budget_s or self.phase_budget_s,
                       rel_ci=self.runtime_rel_ci or self.rel_ci, runtime_budget_s=None, runtime_rel_ci=None,
                       runtime_blocks=1)

    def for_runtime_block(self) -> TimingConfig:
        """The settings for one of ``runtime_blocks`` blocks of a runtime phase: a share of
        its budget and of its minimum samples (at least 3)."""
        whole = self.for_runtime()
        if self.runtime_blocks == 1:
            return whole
        min_n = max(3, -(-whole.min_samples // self.runtime_blocks))
        # Each block aims at rel_ci * sqrt(blocks): pooled, they reach about rel_ci.
        return replace(whole, phase_budget_s=whole.phase_budget_s / self.runtime_blocks, min_samples=min_n,
                       max_samples=max(min_n, whole.max_samples // self.runtime_blocks),
                       rel_ci=whole.rel_ci * math.sqrt(self.runtime_blocks))

    @property
    def pair_tolerance(self) -> float:
        """How far the speedups of the runtime block pairs may spread (max / min - 1) before
        the speedup counts as moved. A pair's ratio carries both blocks' noise: for a block CI
        target of ±h (95%) its sd is about sqrt(2) * h / 1.96, and k such ratios span up to
        q_k of those sds by chance alone (q_k: 95th percentile of the range of k normal draws).
        At least 3%. Thorough (four pairs at ±2% a block): 5.2%."""
        q = _RANGE_Q95[min(max(self.runtime_blocks, 2), max(_RANGE_Q95))]
        return max(q * math.sqrt(2) * self.for_runtime_block().rel_ci / 1.96, 0.03)

    @property
    def drift_tolerance(self) -> float:
        """How far the runtime blocks' medians may differ before the phase counts as unstable:
        twice what each block aims at (two blocks at ±h can differ by ~2h by chance alone),
        and at least 3%."""
        return max(2 * self.for_runtime_block().rel_ci, 0.03)


@dataclass(frozen=True)
class Spec:
    """One comparison: case, shape, precision, device, how to time it, the matmul precision
    JAX's float32 products run at (MATMUL_PRECISIONS; older JSON without it means "default"), and
    which of the case's JAX ports to measure (None: its default port; older JSON has none)."""

    case: str
    shape: tuple[int, ...]
    precision: str = "x32"
    device: str = "auto"
    cases_file: str | None = None
    seed: int = 0
    timing: TimingConfig = field(default_factory=TimingConfig)
    matmul_precision: str = "default"
    port: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.case, str) or not self.case.strip():
            raise BadInput(N_("case name is empty"))
        if self.port is not None:
            check_port_name(self.port)
        object.__setattr__(self, "shape", parse_shape(self.shape))
        if self.precision not in PRECISIONS:
            raise BadInput(N_("precision must be one of {choices}, got {value!r}").format(
                choices=", ".join(PRECISIONS), value=self.precision))
        if self.device not in DEVICES:
            raise BadInput(N_("device must be one of {choices}, got {value!r}").format(
                choices=", ".join(DEVICES), value=self.device))
        if self.matmul_precision not in MATMUL_PRECISIONS:
            raise BadInput(N_("matmul precision must be one of {choices}, got {value!r}").format(
                choices=", ".join(MATMUL_PRECISIONS), value=self.matmul_precision))
        if not isinstance(self.seed, int) or isinstance(self.seed, bool) or self.seed < 0:
            raise BadInput(N_("seed must be a non-negative integer, got {value!r}").format(value=self.seed))

    @property
    def dtype(self) -> str:
        return DTYPES[self.precision]

    def with_shape(self, shape: tuple[int, ...]) -> Spec:
        return replace(self, shape=tuple(shape))

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["shape"] = list(self.shape)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Spec:
        if not isinstance(data, dict):
            raise BadInput(N_("spec must be a JSON object"))
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise BadInput(N_("spec has unknown fields: {fields}").format(fields=", ".join(sorted(unknown))))
        kwargs = dict(data)
        if "timing" in kwargs:
            timing = kwargs["timing"]
            if not isinstance(timing, dict):
                raise BadInput(N_("spec.timing must be an object"))
            kwargs["timing"] = TimingConfig.from_dict(timing)
        try:
            return cls(**kwargs)
        except TypeError as exc:
            raise BadInput(N_("spec is incomplete: {reason}").format(reason=exc)) from None
