"""Which port is fastest: several JAX ports of one case, measured at one shape and precision, side by
side. The fastest over the runner-up with the 95% range a rerun's ratio falls in (model/reruns.py),
"no difference within the noise" where that range holds 1x, and each port's speedup over NumPy.

Each race is run twice where the ports have both figures: on blocked calls (each call waits for its
result, the speedup's figure) and on calls back to back (one wait at the end). On a TPU a blocked call
is mostly the host's round trip (about 0.55 ms), so kernels of 0.1 ms race there only back to back: the
elementwise chain's Pallas kernel ran 118 µs a call against jnp's 166 µs where both read 0.62-0.64 ms
blocked (tests/data/tpu/ports).

A port stays out of the race, with its line, where its time is no speed figure (a Pallas kernel
interpreted on the CPU), where it disagrees with NumPy, or where it did not run (its one plain line).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..i18n import N_, _, translate_text
from ..model.cases import format_shape
from ..model.errors import BadInput
from ..model.formatting import format_factor, format_peak_share, format_time
from ..model.reruns import rerun_ratio_range
from ..model.result import Result, finite_or_none
from .trust import WHY, set_aside_why

# Why a port is out of the race (recorded in English, worded where shown).
INTERPRETED = WHY["interpreted"]  # the reason such a result is set aside anywhere (trust)
DISAGREES = N_("disagrees with NumPy: its time is not compared")


@dataclass(frozen=True)
class PortRun:
    """One port's outcome: its Result, or the one plain line saying why it has none."""

    name: str
    result: Result | None = None
    error: str | None = None


@dataclass(frozen=True)
class PortsVerdict:
    """The race: ``fastest`` over ``runner_up`` by ``ratio`` (the runner-up's median over the fastest's),
    ``ratio_range`` where a rerun's ratio falls 95% of the time; ``decided`` only where that range
    excludes 1x. ``left_out``: each port out of the race and why (English, N_ text or an error line)."""

    case: str
    shape: tuple[int, ...]
    precision: str
    runs: tuple[PortRun, ...]
    fastest: str | None = None
    runner_up: str | None = None
    ratio: float | None = None
    ratio_range: tuple[float, float] | None = None
    decided: bool = False
    left_out: dict[str, str] = field(default_factory=dict)
    # The same race on calls back to back (its own back_to_back None); None where a raced port lacks one.
    back_to_back: PortsVerdict | None = None

    @property
    def raced(self) -> list[PortRun]:
        return [r for r in self.runs if r.result is not None and r.name not in self.left_out]


def _why_out(run: PortRun) -> str | None:
    if run.result is None:
        return run.error or N_("it did not run")
    if run.result.interpreted:
        return INTERPRETED
    if not run.result.jax.agreement.get("ok", True):
        return DISAGREES
    if not run.result.jax.runtime.median_s > 0:
        return N_("no runtime was measured")
    return None


def race_key(result: Result) -> tuple[str, tuple[int, ...], str, str]:
    """What the ports of one race share: their case, shape, precision and backend."""
    return result.case, tuple(result.shape), result.precision, result.backend


def ports_verdict(runs: Sequence[PortRun], *, case: str = "", shape: tuple[int, ...] = (),
                  precision: str = "") -> PortsVerdict:
    """The race among ``runs`` (one per port of one case, at one shape, precision and backend);
    ``case``, ``shape`` and ``precision`` name the race where no port has a Result to name it."""
    if not runs or len({r.name for r in runs}) != len(runs):
        raise BadInput(N_("ports are compared one run a port, at least one"))
    keys = {race_key(r.result) for r in runs if r.result}
    if len(keys) > 1:
        raise BadInput(N_("ports are compared at one case, shape, precision and device; these results differ"))
    if keys:
        case, shape, precision, _backend = next(iter(keys))
    left_out = {r.name: why for r in runs if (why := _why_out(r)) is not None}
    base = PortsVerdict(case, tuple(shape), precision, tuple(runs), left_out=left_out)
    entrants = [r for r in runs if r.name not in left_out and r.result is not None]
    pipelined = None
    if len(entrants) > 1 and all(r.result.jax.back_to_back is not None for r in entrants):  # type: ignore[union-attr]
        pipelined = _race(base, entrants, lambda result: result.jax.back_to_back)
    return replace(_race(base, entrants, lambda result: result.jax.runtime), back_to_back=pipelined)


def _race(base: PortsVerdict, entrants: Sequence[PortRun], figure: Any) -> PortsVerdict:
    """``base`` with the fastest of ``entrants`` by ``figure(result)`` (a Stats) over the runner-up."""
    raced = sorted(entrants, key=lambda run: figure(run.result).median_s)
    if len(raced) < 2:
        return replace(base, fastest=raced[0].name if raced else None)
    fast, slow = figure(raced[0].result), figure(raced[1].result)
    low, high = rerun_ratio_range(slow, fast)  # the runner-up's median over the fastest's, as a rerun's falls
    known = math.isfinite(low) and math.isfinite(high)
    return replace(base, fastest=raced[0].name, runner_up=raced[1].name,
                   ratio=slow.median_s / fast.median_s, ratio_range=(low, high) if known else None,
                   decided=known and low > 1)


def verdict_line(verdict: PortsVerdict) -> str:
    """One sentence: which port is fastest, by how much over the runner-up with its 95% range, or that
    the noise cannot tell them apart; in the current language."""
    if verdict.fastest is None:
        return _("no port was measured as a speed figure")
    if verdict.runner_up is None:
        return _("only {port} was measured as a speed figure: nothing to race it against").format(
            port=verdict.fastest)
    ratio = format_factor(verdict.ratio)
    if verdict.ratio_range is None:
        return _("{fastest} ran {ratio} faster than {runner_up}, but a port has too few samples for a range: "
                 "not decided").format(fastest=verdict.fastest, ratio=ratio, runner_up=verdict.runner_up)
    low, high = verdict.ratio_range
    if verdict.decided:
        return _("{fastest} {ratio} faster than {runner_up} ({low}-{high})").format(
            fastest=verdict.fastest, ratio=ratio, runner_up=verdict.runner_up, low=format_factor(low),
            high=format_factor(high))
    return _("no difference within the noise: {fastest} and {runner_up} ({ratio}, 95% range {low}-{high} "
             "holds 1x)").format(fastest=verdict.fastest, runner_up=verdict.runner_up, ratio=ratio,
                                 low=format_factor(low), high=format_factor(high))


def back_to_back_line(verdict: PortsVerdict) -> str | None:
    """The race on calls back to back, as a sentence; None where it was not run."""
    if verdict.back_to_back is None:
        return None
    return _("calls back to back: {verdict}").format(verdict=verdict_line(verdict.back_to_back))


def race_lines(verdict: PortsVerdict) -> list[str]:
    """The race on blocked calls, then (where run) on calls back to back."""
    pipelined = back_to_back_line(verdict)
    head = verdict_line(verdict)
    if pipelined is None:
        return [head]
    return [_("blocked calls: {verdict}").format(verdict=head), pipelined]


def port_row(run: PortRun, why_out: str | None) -> str:
    """A port's line: its JAX runtime and speedup over NumPy with the 95% range, or its plain line."""
    if run.result is None:
        return _("{port}: did not run: {reason}").format(port=run.name, reason=translate_text(run.error or ""))
    r = run.result
    low, high = r.speedup_range
    span = (_(" (95% range {low}-{high})").format(low=format_factor(low), high=format_factor(high))
            if math.isfinite(low) and math.isfinite(high) else "")
    values = {"port": run.name, "runtime": format_time(r.jax.runtime.median_s),
              "numpy": format_time(r.numpy_runtime.median_s), "speedup": format_factor(r.speedup), "span": span}
    why = set_aside_why(r)  # of the speedup over NumPy: the race between ports compares their JAX times
    if why is None:
        line = _("{port}: JAX {runtime} a call, NumPy {numpy}: {speedup} over NumPy{span}").format(**values)
    else:  # as every front end words a result it does not headline: its reason first, the figure marked
        line = _("{port}: JAX {runtime} a call, NumPy {numpy}: set aside: {why}; measured {speedup} over "
                 "NumPy{span}").format(why=_(WHY[why]), **values)
    said = why_out if why_out and why_out != WHY.get(why or "") else None  # an interpreted kernel's, said once
    parts = [line, _device_part(r), translate_text(said) if said else None]
    return _("; ").join(part for part in parts if part)


def _device_part(result: Result) -> str | None:
    """A port's time on a GPU or TPU from its profile, with its fraction of peak read from it: a blocked
    call there is mostly the host's round trip, so the kernels differ only in this figure."""
    found = result.device_time
    if found is None or found[0] != "profile":
        return None
    share = result.peak_fraction("jax")
    if share is None:
        return _("on the device {time} a call").format(time=format_time(found[1]))
    return _("on the device {time} a call, {share} of peak").format(time=format_time(found[1]),
                                                                       share=format_peak_share(share))


def ports_lines(verdict: PortsVerdict) -> list[str]:
    """The race as text for the CLI and the notebook: a heading, one row per port, the verdict."""
    head = _("Ports of {case} at {shape} ({precision}):").format(
        case=verdict.case, shape=format_shape(verdict.shape), precision=verdict.precision)
    rows = ["  " + port_row(run, verdict.left_out.get(run.name) if run.result is not None else None)
            for run in verdict.runs]
    return [head, *rows, *("  " + line for line in race_lines(verdict))]


def race_figures(verdict: PortsVerdict) -> dict[str, Any]:
    """The race's outcome as JSON: the fastest, the runner-up, the ratio with its range, and the sentence."""
    low, high = verdict.ratio_range or (None, None)
    return {"fastest": verdict.fastest, "runner_up": verdict.runner_up, "ratio": finite_or_none(verdict.ratio),
            "ratio_range": [finite_or_none(low), finite_or_none(high)], "decided": verdict.decided,
            "verdict": verdict_line(verdict)}


def ports_document(verdict: PortsVerdict, results: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """The race as JSON (docs/json.md, "Several ports"): English, each port's result document where
    ``results`` gives it (else its Result's to_dict()), and the verdict's figures (race_figures), on calls
    back to back too."""
    doubts = {run.name: set_aside_why(run.result) for run in verdict.runs if run.result is not None}
    return {
        "schema": "jaxcompare.ports/1",
        "case": verdict.case, "shape": list(verdict.shape), "precision": verdict.precision,
        "ports": [{"name": run.name, "error": run.error, "left_out": verdict.left_out.get(run.name),
                   "speedup": None if run.result is None else finite_or_none(run.result.speedup),
                   "trusted": None if run.result is None else doubts[run.name] is None,
                   "set_aside": WHY[doubts[run.name]] if doubts.get(run.name) else None,
                   "result": None if run.result is None else (results or {}).get(run.name) or run.result.to_dict()}
                  for run in verdict.runs],
        **race_figures(verdict),
        "back_to_back": None if verdict.back_to_back is None else race_figures(verdict.back_to_back),
    }
