"""The phases of one comparison, in two tables of one protocol: MEASURING, the steps of a measurement
job in the order the worker runs them (what the worker starts, the progress bar, the estimates and a
page's running text read), and FIGURES, the figures a Result keeps, in display order, each naming the
step that times it (PHASES and the other tuples below are its views: what every table, chart, CSV and
the CLI walk). A phase added to the protocol is a row here; the code that runs it is
engine/worker/measure.py's.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..i18n import N_, _

# Where a phase runs: in the job's long-lived worker, or in fresh processes it starts (the first call
# as a user's %time pays it, NumPy in a plain interpreter).
WORKER = "worker"
FRESH_PROCESS = "fresh process"


@dataclass(frozen=True)
class MeasuringPhase:
    """One step of a measurement job. ``share``: its share of the progress bar (roughly how long it
    takes; 0 where it runs only sometimes, and its share is then given by run_state.phase_weights);
    ``guess``: how the first guess at a job's duration counts it (engine/server/durations.py's
    GUESSES); ``text``: what a page says while it runs."""

    name: str
    share: float
    runs_in: str
    guess: str
    text: str


# Run order. Guesses: "inputs" and "agreement" a call or two; "budget" one sampled phase's budget;
# "runtime" one of the runtime pair's blocks; "recheck" the pair again where a busy or unstable run
# asks for it; "compile" a cold compile per sample; "first_call" one more; "fresh" the fresh
# processes; "plain" one try of NumPy's plain process; "none" nothing of its own.
# Each row is also bound to a name (INPUTS, TRANSFER...): the code that runs a phase starts it by its row, so a
# phase renamed or dropped here fails where it is imported rather than mid-run.
MEASURING = (
    INPUTS := MeasuringPhase("inputs", 0.02, WORKER, "inputs", N_("Building inputs")),
    TRANSFER := MeasuringPhase("transfer", 0.08, WORKER, "budget", N_("Timing the host→device transfer")),
    COMPILE := MeasuringPhase("compile", 0.28, WORKER, "compile",
                              N_("Timing cold compiles (trace, lower, XLA compile)")),
    FIRST_CALL := MeasuringPhase("first_call", 0.12, WORKER, "first_call", N_("Timing the naive first call")),
    DISPATCH := MeasuringPhase("dispatch", 0.08, WORKER, "budget", N_("Timing dispatch only (unblocked)")),
    FETCH := MeasuringPhase("fetch", 0.06, WORKER, "budget", N_("Timing the device→host fetch")),
    NUMPY := MeasuringPhase("numpy", 0.16, WORKER, "runtime", N_("Timing NumPy")),
    RUNTIME := MeasuringPhase("runtime", 0.14, WORKER, "runtime", N_("Timing the JAX runtime (blocked)")),
    # Only with TimingConfig.runtime_blocks > 1 (weights rescaled).
    RECHECK := MeasuringPhase("recheck", 0.0, WORKER, "recheck",
                              N_("Timing more pairs of NumPy and JAX blocks (drift check)")),
    # Not in quick timing: the first call in fresh processes (measure.py).
    FIRST_CALL_FRESH := MeasuringPhase("first_call_fresh", 0.0, FRESH_PROCESS, "fresh",
                                       N_("Timing the first call in a fresh process (what %time shows)")),
    # Only where the allocator matters: NumPy again in a plain process (plain_numpy.py).
    NUMPY_PLAIN := MeasuringPhase("numpy_plain", 0.0, FRESH_PROCESS, "plain",
                                  N_("Timing NumPy again in a plain process (the allocator as it comes)")),
    # Only with the third side, JAX on the CPU (weights rescaled).
    JAX_CPU := MeasuringPhase("jax_cpu", 0.0, WORKER, "none", N_("Timing JAX on the CPU (the third side)")),
    # Only when asked: a few traced calls, after every timed phase.
    PROFILE := MeasuringPhase("profile", 0.0, WORKER, "none", N_("Tracing a few JAX calls with jax.profiler")),
    AGREEMENT := MeasuringPhase("agreement", 0.06, WORKER, "agreement", N_("Checking that the outputs agree")),
    # The ceilings (the CPU's are cached after a host's first run), the empty calls.
    PEAK := MeasuringPhase("peak", 0.0, WORKER, "none",
                           N_("Finding the peak rates (the CPU's is measured once per host)")),
)
MEASURING_PHASE = {phase.name: phase for phase in MEASURING}

# What a figure costs a user: once per function, shape and dtype; on every call; or neither, the naive first
# call a %time shows (the reference).
ONE_OFF = "one-off"
PER_CALL = "per call"
REFERENCE = "reference"


@dataclass(frozen=True)
class Figure:
    """One figure a Result keeps. ``step``: the row of MEASURING that times it, whose name it takes, or
    ``part`` of it (the cold compile times trace, lower and compile); ``cost``: ONE_OFF, PER_CALL or
    REFERENCE; ``label``: its English label; ``jax``: a JaxSide's (each device's) rather than NumPy's;
    ``speedup``: one of the two runtimes the speedup divides."""

    step: MeasuringPhase
    cost: str
    label: str
    part: str | None = None
    jax: bool = True
    speedup: bool = False

    @property
    def name(self) -> str:
        return self.part or self.step.name


# Display order: the NumPy reference, then JAX's phases (a JaxSide's) in the order a first call pays them.
FIGURES = (
    Figure(NUMPY, PER_CALL, N_("NumPy runtime"), jax=False, speedup=True),
    Figure(TRANSFER, ONE_OFF, N_("Transfer host→device")),
    Figure(COMPILE, ONE_OFF, N_("Compile: trace"), part="trace"),
    Figure(COMPILE, ONE_OFF, N_("Compile: lower"), part="lower"),
    Figure(COMPILE, ONE_OFF, N_("Compile: XLA compile")),
    Figure(FIRST_CALL, REFERENCE, N_("First call (cold, naive)")),
    Figure(RUNTIME, PER_CALL, N_("JAX runtime (blocked)"), speedup=True),
    Figure(DISPATCH, PER_CALL, N_("Dispatch only (unblocked)")),
    Figure(FETCH, PER_CALL, N_("Fetch device→host")),
)
# The table's views, by name: every table, chart, CSV and the CLI walk these.
PHASES = tuple(figure.name for figure in FIGURES)
JAX_PHASES = tuple(figure.name for figure in FIGURES if figure.jax)
COMPILE_PHASES = tuple(figure.name for figure in FIGURES if figure.step is COMPILE)
# Paid once per function, shape and dtype.
ONE_OFF_PHASES = tuple(figure.name for figure in FIGURES if figure.cost == ONE_OFF)
# Neither: the naive first call, the reference a %time shows.
REFERENCE_PHASES = tuple(figure.name for figure in FIGURES if figure.cost == REFERENCE)
# Paid on every call: the speedup's two first, JAX's runtime before NumPy's, as the charts and tables list them.
PER_CALL_PHASES = tuple(figure.name for figure in sorted(
    (figure for figure in FIGURES if figure.cost == PER_CALL), key=lambda figure: (not figure.speedup, not figure.jax)))
# A job's phase before its worker reports one (a worker starting, JAX importing), and the
# measurement's phase that finds the device's ceilings, once per host: a job's own work starts after
# the first and ends before the second (the estimates learn neither).
STARTING_PHASE = "starting worker"
CEILINGS_PHASE = PEAK.name
# The English labels (the CLI's and the notebook's); a page shows phase_label(name), in the
# reader's language.
PHASE_LABELS = {figure.name: figure.label for figure in FIGURES}


def phase_label(phase: str) -> str:
    """A phase's label in the current language ('Compile: trace'), for tables and charts."""
    return _(PHASE_LABELS[phase])


def phase_kind(phase: str) -> str:
    """'one-off', 'per call', or 'reference' (the naive first call: what %time shows), in the
    current language: words for a table, not codes."""
    if phase in ONE_OFF_PHASES:
        return _("one-off")
    if phase in PER_CALL_PHASES:
        return _("per call")
    return _("reference")
