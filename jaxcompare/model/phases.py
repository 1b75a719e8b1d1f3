"""The phases of one comparison, in two views of one protocol: MEASURING, the steps of a measurement
job in the order the worker runs them (what the progress bar, the estimates and a page's running
text read), and PHASES, the figures a Result keeps, in display order (what every table, chart, CSV
and the CLI walk). A phase added to the protocol is a row here; the code that runs it is
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

# Display order: the NumPy reference, then JAX's phases (a JaxSide's) in the order a first call pays them.
JAX_PHASES = ("transfer", "trace", "lower", "compile", "first_call", "runtime", "dispatch", "fetch")
PHASES = ("numpy", *JAX_PHASES)
COMPILE_PHASES = ("trace", "lower", "compile")
# Paid once per function, shape and dtype.
ONE_OFF_PHASES = ("transfer", *COMPILE_PHASES)
# Paid on every call; the first two make the speedup.
PER_CALL_PHASES = ("runtime", "numpy", "dispatch", "fetch")
# A job's phase before its worker reports one (a worker starting, JAX importing), and the
# measurement's phase that finds the device's ceilings, once per host: a job's own work starts after
# the first and ends before the second (the estimates learn neither).
STARTING_PHASE = "starting worker"
CEILINGS_PHASE = PEAK.name
# The English labels (the CLI's and the notebook's); a page shows phase_label(name), in the
# reader's language.
PHASE_LABELS = {
    "numpy": N_("NumPy runtime"),
    "transfer": N_("Transfer host→device"),
    "trace": N_("Compile: trace"),
    "lower": N_("Compile: lower"),
    "compile": N_("Compile: XLA compile"),
    "first_call": N_("First call (cold, naive)"),
    "runtime": N_("JAX runtime (blocked)"),
    "dispatch": N_("Dispatch only (unblocked)"),
    "fetch": N_("Fetch device→host"),
}


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
