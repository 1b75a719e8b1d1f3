"""What every phase of one measurement shares: _Run, the state each phase reads, and Progress,
the bar it reports to. Below measure and the phase modules, so none of them imports measure.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ...model import phases
from ...model.cases import Case
from ...model.platforms import HOST
from ...model.spec import TimingConfig
from ..common.load import LoadMeter
from .gpu_clocks import ClockWatch
from .timing import Clock

ProgressCallback = Callable[[str, float], None]
SampleCallback = Callable[[int], None]

# Phase name -> share of the progress bar, in run order: the protocol's table (model/phases.py).
PROGRESS_WEIGHTS = tuple((phase.name, phase.share) for phase in phases.MEASURING)
# The third side's phases (the steps that time a JaxSide's figures, in run order), each an equal slice of the
# "jax_cpu" share.
CPU_SIDE_PARTS = tuple(step for step in phases.MEASURING
                       if any(figure.jax and figure.step is step for figure in phases.FIGURES))
# The third side's share of the bar: a whole second set of JAX phases, less the NumPy runtime.
CPU_SIDE_WEIGHT = 0.6
# A phase's samples move the bar through at most this much of its share: sampling may run
# past min_samples, and the bar must not reach the next phase before that phase starts.
SAMPLED_SHARE = 0.95


def phase_weights(runtime_blocks: int, cpu_side: bool = False) -> dict[str, float]:
    """Each phase's share of the bar; the later runtime blocks ("recheck") take about as
    long as the first pair, so with more than one pair the shares are rescaled, and so they
    are with the third side (JAX on the CPU)."""
    weights = dict(PROGRESS_WEIGHTS)
    if runtime_blocks > 1:
        pair = weights[phases.NUMPY.name] + weights[phases.RUNTIME.name]
        weights[phases.RECHECK.name] = pair * (runtime_blocks - 1)
    if cpu_side:
        weights[phases.JAX_CPU.name] = CPU_SIDE_WEIGHT
    total = sum(weights.values())
    return {k: v / total for k, v in weights.items()}


class Progress:
    """Turns "phase X has taken k of its n samples" into the overall fraction done that the
    worker reports; starting a phase counts the one before it as done."""

    def __init__(self, report: ProgressCallback, timing: TimingConfig, cpu_side: bool = False) -> None:
        self._report = report
        self._weights = phase_weights(timing.runtime_blocks, cpu_side)
        self._expected = max(timing.min_samples, 1)
        self._block_expected = max(timing.for_runtime_block().min_samples, 1)
        self._later_blocks = 2 * (timing.runtime_blocks - 1)
        self._current: str | None = None
        self._done = 0.0

    def start(self, phase: phases.MeasuringPhase) -> SampleCallback:
        """Report that ``phase`` (a row of the protocol's table) started; returns the callback for its samples."""
        self._enter(phase.name)
        self._report(phase.name, self._done)
        return self._sampled(phase.name, self._expected)

    def part(self, phase: phases.MeasuringPhase, index: int, parts: int) -> SampleCallback:
        """Report that part ``index`` of ``parts`` of ``phase`` started (the third side's
        phases share "jax_cpu"); returns the callback for its samples."""
        self._enter(phase.name)
        on_sample = self._sampled(phase.name, self._expected, index, parts)
        on_sample(0)
        return on_sample

    def runtime_block(self, index: int, library: str) -> SampleCallback:
        """Report that runtime block ``index`` started; returns the callback for its samples.
        The first two blocks are the "numpy" and "runtime" phases; the later ones share the
        "recheck" phase, one equal slice each."""
        if index < 2:
            on_sample = self.start(phases.MEASURING_PHASE[library])  # the libraries' blocks are named as their rows
        else:
            self._enter(phases.RECHECK.name)
            on_sample = self._sampled(phases.RECHECK.name, self._block_expected, index - 2, self._later_blocks)
        on_sample(0)
        return on_sample

    def complete(self) -> None:
        """Report the measurement done: the bar at 1."""
        self._report("done", 1.0)

    def _enter(self, phase: str) -> None:
        """Make ``phase`` the current one; the phase it follows counts as done."""
        if phase == self._current:
            return
        if self._current is not None:
            self._done += self._weights[self._current]
        self._current = phase

    def _sampled(self, phase: str, expected: int, part: int = 0, parts: int = 1) -> SampleCallback:
        """The callback for ``part`` of ``parts`` of ``phase``: n samples of ``expected``."""
        share = self._weights[phase]
        return lambda n: self._report(
            phase, self._done + share * (part + min(n / expected, 1.0)) / parts * SAMPLED_SHARE)


@dataclass
class _Run:
    """What every phase of one measurement needs."""

    case: Case
    timing: TimingConfig
    clock: Clock
    progress: Progress
    load: LoadMeter = field(default_factory=LoadMeter)
    recheck: bool = True
    # The GPU's clocks, read around the runtime blocks (engine/worker/gpu_clocks.py); None off GPUs.
    clocks: ClockWatch | None = None
    # Whether NumPy's last work ran threads besides the caller (OpenBLAS's workers, which spin
    # for a while after it): the next JAX timing settles first only then (load.HELPER_SHARE).
    numpy_spun: bool = True
    # The Spec's precision: which operations the device lacks depends on it (model/platforms.py).
    precision: str = "x32"
    # How long a NumPy timing that follows the device's calls settles first (Platform.numpy_settle_s).
    numpy_settle_s: float = HOST.numpy_settle_s


StartPhase = Callable[[phases.MeasuringPhase], SampleCallback]
