"""Several JAX versions' results for one comparison: each version's rounds pooled into one
Result, adjacent versions compared with History's test (compare.verdict), the JSON record.
Pure functions of Results: the measuring is engine/server/versions.py's.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ..i18n import _
from ..model.cases import format_shape
from ..model.formatting import format_time
from ..model.phases import JAX_PHASES
from ..model.result import Result, finite_or_none
from ..model.stats import Stats
from .checkline import Check
from .compare import FASTER, SAME, SLOWER, Verdict, verdict
from .consistency import version_checks

SCHEMA = "jaxcompare.versions/1"
# The JAX phases pooled across rounds (the NumPy runtime is pooled across every version: shared_numpy).
_POOLED = JAX_PHASES


def pool_stats(parts: Sequence[Stats]) -> Stats:
    """One phase's samples from several rounds as one Stats; each round's median is kept as a
    block median (the runs a verdict counts: compare.verdict's runs), and the pool is unstable if a round was."""
    if len(parts) == 1:  # its own blocks are of one run: the block median a versions verdict reads is the run's
        return replace(parts[0], block_medians_s=(parts[0].median_s,))
    samples = [s for part in parts for s in part.samples_s]
    unstable = next((p for p in parts if not p.stable), None)
    pooled = Stats.from_samples(samples, loops=parts[0].loops, stable=unstable is None,
                                unstable_reason=unstable.unstable_reason if unstable else None)
    return replace(pooled, block_medians_s=tuple(p.median_s for p in parts))


def real_versions(result: Result) -> tuple[str | None, str | None]:
    """(jax, jaxlib) as the worker imported them; from its installed metadata for a result
    saved before jax_info recorded them."""
    info = result.env.get("jax") or {}
    versions = result.env.get("versions") or {}
    return info.get("version") or versions.get("jax"), info.get("jaxlib_version") or versions.get("jaxlib")


def shared_numpy(per_version: Sequence[Sequence[Result]]) -> Stats | None:
    """Every version's NumPy runtimes pooled: the one NumPy the speedups are against, when every
    environment ran the same NumPy version (else None: each keeps its own)."""
    results = [r for rs in per_version for r in rs]
    numpys = {(r.env.get("versions") or {}).get("numpy") for r in results}
    if not results or len(numpys) != 1:
        return None
    return pool_stats([r.numpy_runtime for r in results])


def pool_rounds(results: Sequence[Result], numpy: Stats | None = None) -> Result:
    """A version's rounds as one Result: its first round's record with every JAX phase pooled,
    and NumPy's runtime the shared one when given."""
    first = results[0]
    side = replace(first.jax, **{p: pool_stats([r.jax.phase(p) for r in results]) for p in _POOLED})
    numpy_runtime = numpy if numpy is not None else pool_stats([r.numpy_runtime for r in results])
    return replace(first, jax=side, numpy_runtime=numpy_runtime)


def release_key(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", version)[:4])


def compare_versions(pooled: Sequence[tuple[str, Result]]) -> list[dict[str, Any]]:
    """Each version against the next newer one: JAX runtime of ``to`` over ``from`` (above 1:
    the newer one is slower), significant only when both of History's tests agree."""
    ordered = sorted(pooled, key=lambda item: release_key(item[0]))
    out = []
    for (va, a), (vb, b) in zip(ordered, ordered[1:], strict=False):
        v = verdict(a.jax.runtime, b.jax.runtime, runs_a=a.jax.runtime.block_medians_s,
                    runs_b=b.jax.runtime.block_medians_s)
        out.append({"from": va, "to": vb, "ratio": v.ratio, "significant": v.significant, "direction": v.direction,
                    "p_value": v.p_value, "ci_low": v.ci_low, "ci_high": v.ci_high, "n_from": v.n_a, "n_to": v.n_b,
                    "compile_ratio": finite_or_none(b.jax.compile_total_s / a.jax.compile_total_s)
                    if a.jax.compile_total_s > 0 else None,
                    "text": comparison_text(a, va, vb, v)})
    return out


def first_call_text(result: Result) -> str:
    """A version's first call: its median, and where that lies below the compile beside it (a first call
    pays its compile, so the two cannot both be true as shown) the compile it lies below."""
    first, compile_s = result.jax.first_call.median_s, result.jax.compile_total_s
    if 0 < first < compile_s:
        return _("{first} (below its compile, {compile})").format(first=format_time(first),
                                                                  compile=format_time(compile_s))
    return format_time(first)


def _p_text(p: float | None) -> str:
    if p is None:
        return "p unknown"
    for bound in (0.001, 0.01):
        if p < bound:
            return f"p < {bound:g}"
    return f"p = {p:.2g}"


def comparison_text(result: Result, older: str, newer: str, v: Verdict) -> str:
    """'on svd 500x500 x64, JAX 0.10.2 is 14% slower than 0.9.2, outside the noise (p < 0.01)'."""
    where = _("on {case} {shape} {precision}").format(case=result.case, shape=format_shape(result.shape),
                                                     precision=result.precision)
    if v.ratio is None or v.p_value is None:
        return _("{where}, JAX {newer} against {older}: too few samples to tell").format(
            where=where, newer=newer, older=older)
    p, difference = _p_text(v.p_value), abs(v.ratio - 1)
    if v.direction == SAME and v.significant:  # real, but under min_effect (compare.py): not worth a verdict
        return _("{where}, JAX {newer} runs like {older}: the {difference:.1%} difference is real but under "
                 "{min_effect:.0%} ({p})").format(where=where, newer=newer, older=older, difference=difference,
                                                  min_effect=v.min_effect, p=p)
    if v.direction == SAME:
        return _("{where}, JAX {newer} runs like {older}: the {difference:.1%} difference is within the noise "
                 "({p})").format(where=where, newer=newer, older=older, difference=difference, p=p)
    if v.direction == SLOWER:
        return _("{where}, JAX {newer} is {percent:.0%} slower than {older}, outside the noise ({p})").format(
            where=where, newer=newer, older=older, percent=v.ratio - 1, p=_p_text(v.p_value))
    assert v.direction == FASTER
    return _("{where}, JAX {newer} is {percent:.0%} faster than {older}, outside the noise ({p})").format(
        where=where, newer=newer, older=older, percent=1 - v.ratio, p=p)


def pooled_runs(runs: Sequence[Any]) -> tuple[Stats | None, list[tuple[Any, Result]]]:
    """The one NumPy (or None) and each measured run (engine/server/versions.py's VersionRun) with its pooled Result."""
    measured = [run for run in runs if run.results]
    numpy = shared_numpy([run.results for run in measured])
    return numpy, [(run, pool_rounds(run.results, numpy)) for run in measured]


def findings(runs_pooled: Sequence[tuple[Any, Result]]) -> dict[str, list[Check]]:
    """Each version's figures that contradict each other (consistency.version_checks: its rounds
    against each other, its first call against its compile), by the version asked for; [] where none."""
    return {run.requested: version_checks(run.results, result) for run, result in runs_pooled}


def versions_document(runs: Sequence[Any], rounds: int, python: str) -> dict[str, Any]:
    """The ``versions --json`` record (docs/json.md), in English; ``python``: the host's interpreter."""
    from .. import i18n

    _numpy, pooled = pooled_runs(runs)
    with i18n.using(i18n.SOURCE_LANGUAGE):
        comparisons = compare_versions([(run.requested, result) for run, result in pooled])
        found = findings(pooled)
    entries = []
    for run, result in pooled:
        jax_version, jaxlib_version = real_versions(result)
        env = run.env
        foreign = env is not None and env.python is not None
        entries.append({"requested": run.requested, "jax": jax_version, "jaxlib": jaxlib_version,
                        "python": env.python if foreign else python,
                        "environment": str(env.path) if foreign else None,
                        "environment_made": bool(env and env.made), "rounds": len(run.results),
                        "error": run.error, "consistency": [c.to_dict() for c in found[run.requested]],
                        "result": result.to_dict()})
    unavailable = [{"requested": run.requested, "error": run.error} for run in runs if not run.results]
    return {"schema": SCHEMA, "rounds": rounds, "versions": entries, "unavailable": unavailable,
            "comparisons": comparisons}
