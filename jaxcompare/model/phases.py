"""The timed phases of one comparison: their names in display order, groups and labels.

Every front end (tables, charts, CSV, the CLI) walks this one list, so a phase added here
shows up everywhere at once.
"""

from __future__ import annotations

# Display order: the NumPy reference, then JAX's phases in the order a first call pays them.
PHASES = ("numpy", "transfer", "trace", "lower", "compile", "first_call", "runtime", "dispatch", "fetch")
COMPILE_PHASES = ("trace", "lower", "compile")
# Paid once per function, shape and dtype.
ONE_OFF_PHASES = ("transfer", *COMPILE_PHASES)
# Paid on every call; the first two make the speedup.
PER_CALL_PHASES = ("runtime", "numpy", "dispatch", "fetch")
PHASE_LABELS = {
    "numpy": "NumPy runtime",
    "transfer": "Transfer host→device",
    "trace": "Compile: trace",
    "lower": "Compile: lower",
    "compile": "Compile: XLA compile",
    "first_call": "First call (cold, naive)",
    "runtime": "JAX runtime (blocked)",
    "dispatch": "Dispatch only (unblocked)",
    "fetch": "Fetch device→host",
}


def phase_kind(phase: str) -> str:
    """'one-off', 'per call', or 'reference' (the naive first call: what %time shows)."""
    if phase in ONE_OFF_PHASES:
        return "one-off"
    if phase in PER_CALL_PHASES:
        return "per call"
    return "reference"
