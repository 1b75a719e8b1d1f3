"""The timed phases of one comparison: their names in display order, groups and labels.

Every front end (tables, charts, CSV, the CLI) walks this one list, so a phase added here
shows up everywhere at once.
"""

from __future__ import annotations

from ..i18n import N_, _

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
CEILINGS_PHASE = "peak"
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
