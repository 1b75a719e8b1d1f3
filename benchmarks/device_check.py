"""What jaxcompare measures on this machine's accelerator, in one run: `make device-check`.

    python benchmarks/device_check.py                 # on a GPU or TPU: under 7 minutes
    python benchmarks/device_check.py --small         # a small size (what the tests run)
    python benchmarks/device_check.py --out DIR       # where DEVICE.md and the JSON go (benchmarks/)

It prints the devices each worker sees, runs the catalog's self-check on the device (x32 and
x64), the JAX docs' example (centered_gram at 1000x1000, x32, careful timing) beside the docs'
own Colab numbers, the pitfalls lab (reduced precision included), and a short matmul size sweep; then checks
that both workers (x32 and x64) are still the processes that started, sharing the device (on a device
that one process at a time may hold, a TPU chip, it counts how often they took turns instead).
It writes DEVICE.md (the tables and the environment) and device-check.json, a
`jaxcompare.export/1` file that `jaxcompare import` and the History page take.

Without a GPU or TPU it says so and runs everything at a small size on the CPU. The small size
leaves out pitfall 7 (restarts): its fresh processes take longer than the rest of the lab,
and `python -m jaxcompare pitfalls --sections cache` measures it on its own.

A part that would not end within the time budget (`--budget`) is left out for time, listed in
DEVICE.md and the JSON, and does not fail the run: on a TPU each part is held to the time it was
recorded taking there, and pitfall 7, whose nine fresh processes each open the chip, comes last.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from jaxcompare import JaxCompareError, Result, Runner, Spec, TimingConfig  # noqa: E402
from jaxcompare.analysis.checks import checklist, overall  # noqa: E402
from jaxcompare.catalog import builtin_cases  # noqa: E402
from jaxcompare.engine.common.lessons import SECTIONS  # noqa: E402
from jaxcompare.engine.worker.selfcheck import record_status  # noqa: E402
from jaxcompare.history.exchange import export_json  # noqa: E402
from jaxcompare.model.cases import format_shape  # noqa: E402
from jaxcompare.model.device_memory import DeviceMemory  # noqa: E402
from jaxcompare.model.formatting import (  # noqa: E402
    dumps,
    format_bytes,
    format_factor,
    format_time,
    peak_sentence,
    third_side_verdict,
    transfer_rate_text,
)
from jaxcompare.model.platforms import platform  # noqa: E402

# The JAX docs' "Benchmarking JAX code" example (centered Gram matrix, 1000x1000, float32), as
# the docs measured it on a Colab GPU.
COLAB = {"numpy": 16.2e-3, "transfer": 1.26e-3, "compile": 193e-3, "runtime": 485e-6}
DOCS_CASE, DOCS_SHAPE = "centered_gram", (1000, 1000)

# Seconds each part of the full plan takes on a platform, from what three runs there recorded: a part
# starts only where it and the closing check fit in what is left of the budget. TPU v5e, runs of 402 s,
# 445 s, 447 s and 294 s (the last: tests/data/tpu/device-check.json; benchmarks/DEVICE-TPU.md): devices
# 18.7-25; self-check 117-122 without svd's float64 40 s (SLOW_X64_S); the docs' example 24-43; the
# pitfalls 155-188 with pitfall 7, 43-45 without; pitfall 7 alone (nine processes opening the chip) 153;
# the sweep 38-49; the end 12-16.4. Elsewhere the whole plan is far under its budget (an H200: 75 s), so parts run until
# the deadline.
RECORDED_S = {
    "tpu": {"devices": 25.0, "self-check": 122.0, "docs": 43.0, "pitfalls": 60.0, "sweep": 49.0,
            "restarts": 153.0, "end": 17.0},
}
# Where pitfall 7 is measured on its own when the device check leaves it out.
RESTARTS_ALONE = "python -m jaxcompare pitfalls --sections cache"
RESTARTS_PART = "pitfall 7 (restarts)"


class Plan:
    """The sizes and timing of one run: the full plan on an accelerator, a small one otherwise."""

    def __init__(self, small: bool) -> None:
        self.small = small
        self.timing = TimingConfig.preset("quick" if small else "careful")
        self.docs_shape = (200, 200) if small else DOCS_SHAPE
        self.sweep = [(n, n) for n in ((16, 64) if small else (256, 1024, 4096))]
        self.sweep_timing = TimingConfig.preset("quick")
        # The self-check covers the catalog on a device; at the small size a sample of it.
        self.selfcheck_cases = ["matmul", "centered_gram", "svd", "cumsum", "logsumexp"] if small else None
        # Pitfall 7 starts nine fresh processes (a second each to import JAX; 8.4 s on a TPU, which
        # each opens), at the small size about half the run: left out there; the full plan measures it
        # as a part of its own, last, so that where time is short it is what is left out.
        self.pitfall_sections = tuple(pid for pid in SECTIONS if pid != "cache")
        self.restarts = not small
        self.platform: str | None = None  # the accelerator's platform, once the workers have said
        self.x64_left_out: dict[str, float] = {}  # case -> seconds its float64 self-check was recorded taking

    def expected_s(self, part: str) -> float:
        """How long ``part`` (a RECORDED_S key) was recorded taking on this platform; 0 where unknown."""
        return 0.0 if self.small else RECORDED_S.get(self.platform or "", {}).get(part, 0.0)

    def forecast(self, budget_s: float) -> tuple[float, list[str]]:
        """The run's seconds as recorded on this platform, and the parts that would not fit ``budget_s``
        (in the order they run, each after the devices and before the closing check)."""
        elapsed, end, left_out = self.expected_s("devices"), self.expected_s("end"), []
        for part in ("self-check", "docs", "pitfalls", "sweep", *(("restarts",) if self.restarts else ())):
            if elapsed + self.expected_s(part) + end > budget_s:
                left_out.append(part)
            else:
                elapsed += self.expected_s(part)
        return elapsed + end, left_out


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--small", action="store_true", help="small sizes and quick timing (automatic without an "
                   "accelerator)")
    p.add_argument("--out", default=str(HERE), help="folder for DEVICE.md and device-check.json (default: benchmarks/)")
    p.add_argument("--timeout", type=float, default=300.0, help="deadline per job, seconds (default 300)")
    p.add_argument("--budget", type=float, default=390.0, help="seconds within which the run ends: a part that "
                   "would not fit is left out for time and listed, so a run stays under 7 minutes (default 390)")
    return p.parse_args(argv)


def say(text: str) -> None:
    print(text, flush=True)


def accelerators(env: dict[str, Any]) -> list[dict[str, Any]]:
    return [d for d in (env.get("jax") or {}).get("devices", []) if d.get("platform") in ("gpu", "tpu")]


def worker_state(runner: Runner) -> dict[str, dict[str, Any]]:
    """Each worker's pid and environment (its devices and their memory, as it sees them)."""
    state = {}
    for precision in ("x32", "x64"):
        job = runner.submit_environment(precision)
        env = job.wait()
        state[precision] = {"pid": job.worker_pid, "env": env}
    return state


def stage(name: str, report: dict[str, Any], fn: Callable[[], Any], expected_s: float = 0.0,
          reserve_s: float = 0.0) -> Any:
    """Run one part, timed; a failure is recorded in one line and the run goes on. A part that would
    not end by the deadline (``expected_s``, with ``reserve_s`` kept for the closing check) is left
    out for time and listed, not failed, so the whole run keeps its time limit."""
    say(f"\n== {name}")
    start = time.perf_counter()
    left = report["deadline"] - start - reserve_s
    if left <= 0 or expected_s > left:
        report["left_out"].append({"part": name, "expected_s": expected_s, "left_s": max(left, 0.0)})
        say(f"   left out for time: {left_out_text(expected_s, left, report['budget_s'])}")
        return None
    try:
        value = fn()
    except JaxCompareError as exc:
        report["failures"].append(f"{name}: {exc}")
        say(f"   failed: {exc}")
        value = None
    report["durations_s"][name] = round(time.perf_counter() - start, 1)
    return value


def left_out_text(expected_s: float, left_s: float, budget_s: float) -> str:
    """Why a part was left out, in a few words: what it takes against what was left."""
    if expected_s > 0 and left_s > 0:
        return f"about {expected_s:.0f} s here, where {left_s:.0f} s were left of the {budget_s:.0f} s budget"
    return f"the {budget_s:.0f} s budget was spent"


# A case whose float64 self-check was recorded taking longer than this on the device is left out at
# x64 and listed: on a TPU v5e cumsum took 148 s and svd 40 s, half the run's budget together, where
# the other 23 cases recorded took 52 s.
SLOW_X64_S = 30.0


def slow_at_x64(platform_name: str | None, names: list[str]) -> dict[str, float]:
    """The cases among ``names`` whose float64 self-check the platform table records as too slow to run here."""
    entry = platform(platform_name)
    seconds = {name: entry.float64_seconds(name) for name in names} if entry is not None else {}
    return {name: s for name, s in seconds.items() if s is not None and s > SLOW_X64_S}


def selfcheck(runner: Runner, plan: Plan) -> dict[str, list[dict[str, Any]]]:
    out = {}
    names = plan.selfcheck_cases or [case.name for case in builtin_cases()]
    plan.x64_left_out = slow_at_x64(plan.platform, names)
    for precision in ("x32", "x64"):
        chosen = [n for n in names if precision == "x32" or n not in plan.x64_left_out]
        records = runner.selfcheck(precision, chosen)
        bad, missing = self_check_split(records)
        say(f"   {precision}: {len(records) - len(bad) - len(missing)} of {len(records)} cases agree"
            + (f"; disagree: {', '.join(bad)}" if bad else "")
            + (f"; not on this device at {precision}: {', '.join(missing)}" if missing else ""))
        out[precision] = records
    return out


def self_check_split(records: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    """The cases that disagree (or failed), and those the device cannot run at this precision
    (float64 LU on a TPU): a gap in the hardware, not a wrong port, so counted apart."""
    statuses = [(r["case"], record_status(r)) for r in records]
    return ([case for case, status in statuses if status in ("disagree", "error")],
            [case for case, status in statuses if status == "unsupported"])


def docs_example(runner: Runner, plan: Plan) -> Result:
    result = runner.run(Spec(DOCS_CASE, plan.docs_shape, precision="x32", timing=plan.timing))
    for label, mine, theirs in docs_rows(result):
        say(f"   {label:<24}{mine:>12}   (docs, Colab: {theirs})")
    for line in filter(None, (third_side_verdict(result), peak_sentence(result))):
        say(f"   {line}")
    say(f"   GPU clocks: {clock_rows([('', result)])[0][-1]}")
    return result


def docs_rows(result: Result) -> list[tuple[str, str, str]]:
    colab_speedup = COLAB["numpy"] / COLAB["runtime"]
    rows = [
        ("NumPy runtime", format_time(result.numpy_runtime.median_s), format_time(COLAB["numpy"])),
        ("Transfer host→device", format_time(result.jax.transfer.median_s), format_time(COLAB["transfer"])),
        ("Compile (trace+lower+XLA)", format_time(result.jax.compile_total_s), format_time(COLAB["compile"])),
        ("JAX runtime (blocked)", format_time(result.jax.runtime.median_s), format_time(COLAB["runtime"])),
        ("Speedup", format_factor(result.speedup), format_factor(colab_speedup)),
    ]
    if result.jax_cpu is not None:
        rows.append(("JAX on the CPU", format_time(result.jax_cpu.runtime.median_s), "—"))
    return rows


def pitfalls(runner: Runner, plan: Plan, sections: tuple[str, ...]) -> dict[str, Any]:
    report = runner.submit_pitfalls(Spec(DOCS_CASE, plan.docs_shape, precision="x32", timing=plan.timing),
                                    sections).wait()
    for p in report["pitfalls"]:
        flag = "" if p["applicable"] else "  (not applicable here)"
        say(f"   {p['title']}{flag}\n      naive: {p['naive']['conclusion']}\n"
            f"      right: {p['correct']['conclusion']}")
    return report


def sweep(runner: Runner, plan: Plan) -> list[Result]:
    results = []
    for shape in plan.sweep:
        r = runner.run(Spec("matmul", shape, precision="x32", timing=plan.sweep_timing))
        cpu = f", JAX on the CPU {format_time(r.jax_cpu.runtime.median_s)}" if r.jax_cpu else ""
        say(f"   {format_shape(shape):>10}: NumPy {format_time(r.numpy_runtime.median_s)}, JAX "
            f"{format_time(r.jax.runtime.median_s)}{cpu}, speedup {format_factor(r.speedup)}")
        results.append(r)
    return results


# --- DEVICE.md ----------------------------------------------------------------------------------
def table(header: list[str], rows: list[list[Any]]) -> list[str]:
    cells = [header, ["---"] * len(header), *[[str(c).replace("|", "\\|") for c in row] for row in rows]]
    return ["| " + " | ".join(row) + " |" for row in cells]


def clock_rows(results: list[tuple[str, Result]]) -> list[list[Any]]:
    """Each result's GPU readings before -> after the runtime blocks (NVML), and what the checklist says."""
    def pair(clocks: Any, field: str, unit: str) -> str:
        values = [getattr(r, field) if r is not None else None for r in (clocks.before, clocks.after)]
        return "—" if values == [None, None] else " → ".join("?" if v is None else f"{v:.0f}" for v in values) + unit

    rows = []
    for label, r in results:
        check = next(c for c in checklist(r) if c.id == "clocks")
        clocks = r.gpu_clocks
        if clocks is None or clocks.error:
            rows.append([label, "—", "—", "—", "—", "—", f"{check.status}: {check.reason}"])
            continue
        rows.append([label, pair(clocks, "sm_mhz", " MHz"), pair(clocks, "memory_mhz", " MHz"),
                     pair(clocks, "temperature_c", " °C"), pair(clocks, "power_w", " W"),
                     ", ".join(clocks.throttled) or "none", f"{check.status}: {check.reason}"])
    return rows


# Where the sweep table's JAX share of peak was read (Result.device_time).
DEVICE_TIME = {"profile": "device busy time", "back_to_back": "at least: back to back"}


def percent(share: float | None) -> str:
    """A fraction of peak; over 100% means the ceiling was too low, not a side beyond its peak."""
    if share is not None and math.isfinite(share) and share > 1:
        return "exceeded (ceiling too low)"
    return "—" if share is None or not math.isfinite(share) else f"{share:.1%}"


def device_md(report: dict[str, Any], plan: Plan, docs: Result | None, pits: dict[str, Any] | None,
              results: list[Result], checks: dict[str, list[dict[str, Any]]] | None) -> str:
    env = report["workers"]["x32"]["env"]
    lines = ["# Device check", "",
             f"Written by `make device-check` (`benchmarks/device_check.py`) on {report['finished']}, in "
             f"{report['elapsed_s']:.0f} s.", ""]
    if not report["accelerator"]:
        lines += ["**No accelerator was found** (no GPU or TPU visible to JAX): everything below ran on JAX's "
                  "CPU backend at a small size, with quick timing.", ""]
    elif plan.small:
        lines += ["Ran at the small size (`--small`), with quick timing.", ""]

    lines += ["## Devices", ""]
    rows = []
    for precision, state in report["workers"].items():
        for d in (state["env"].get("jax") or {}).get("devices", []):
            memory = DeviceMemory.from_env(d)
            figures = ([format_bytes(memory.free), format_bytes(memory.total), format_bytes(memory.in_use)]
                       if memory else ["n/a"] * 3)
            rows.append([precision, state["pid"], d.get("platform"), d.get("kind"), d.get("name"), *figures])
    lines += table(["worker", "pid", "platform", "kind", "device", "memory free", "memory limit", "in use"], rows)
    lines += ["", report["workers_alive"], ""]

    if checks:
        lines += ["## Self-check (agreement of each case with NumPy, on the device)", ""]
        rows = []
        for precision, records in checks.items():
            bad, missing = self_check_split(records)
            rows.append([precision, len(records), len(records) - len(bad) - len(missing), ", ".join(bad) or "none",
                         ", ".join(missing) or "none"])
        lines += table(["precision", "cases", "agree", "disagree", "not on this device"], rows) + [""]
        if plan.x64_left_out:
            lines += ["Left out at x64, as too slow to compile here: " + ", ".join(
                f"{name} ({seconds:.0f} s recorded)" for name, seconds in plan.x64_left_out.items()) + ".", ""]

    if docs is not None:
        lines += [f"## The JAX docs' example: {DOCS_CASE} {format_shape(docs.shape)}, x32, "
                  f"{docs.spec.timing.preset_name} timing", ""]
        if docs.shape != DOCS_SHAPE:
            lines += [f"At {format_shape(docs.shape)}, not the docs' 1000x1000: the Colab column is a reference "
                      "for the order of things only.", ""]
        lines += table([f"phase ({docs.jax.device_kind})", "this machine", "JAX docs (Colab GPU)"],
                       [list(row) for row in docs_rows(docs)]) + [""]
        rate = transfer_rate_text(docs)
        for line in filter(None, (third_side_verdict(docs), peak_sentence(docs),
                                  f"Transfer: {rate}." if rate else None,
                                  f"Credibility checklist: {overall(checklist(docs))}.")):
            lines += [line, ""]

    if pits is not None:
        lines += [f"## Pitfalls ({pits['case']} {format_shape(pits['shape'])}, {pits['backend']})", ""]
        rows = [[p["title"], p["naive"]["conclusion"], p["correct"]["conclusion"],
                 "yes" if p["applicable"] else "no"] for p in pits["pitfalls"]]
        lines += table(["pitfall", "naive", "measured properly", "applies here"], rows) + [""]
        if plan.small:
            lines += ["Pitfall 7 (restarts) is left out at the small size: its fresh processes take longer "
                      f"than the rest of the lab. `{RESTARTS_ALONE}` measures it.", ""]

    if results:
        lines += ["## Matmul size sweep (x32, quick timing)", ""]
        # JAX's share read from its time on the device where there is one, the blocked call's beside it.
        rows = [[format_shape(r.shape), format_time(r.numpy_runtime.median_s), format_time(r.jax.runtime.median_s),
                 format_time(r.jax_cpu.runtime.median_s) if r.jax_cpu else "n/a", format_factor(r.speedup),
                 percent(r.peak_fraction("jax")) + (f" ({DEVICE_TIME[r.device_time[0]]})" if r.device_time else ""),
                 percent(r.peak_fraction_blocked("jax") if r.device_time else r.peak_fraction("jax")),
                 percent(r.peak_fraction("numpy"))] for r in results]
        lines += table(["shape", "NumPy", "JAX", "JAX on the CPU", "speedup", "JAX of peak", "JAX of peak, blocked",
                        "NumPy of peak"], rows) + [""]
        if results[-1].peak is not None:
            lines += [f"Peaks: JAX against {results[-1].peak.describe()}, NumPy against "
                      f"{results[-1].peak.describe_numpy()}.", ""]

    measured = ([(f"{DOCS_CASE} {format_shape(docs.shape)}", docs)] if docs is not None else []) + [
        (f"matmul {format_shape(r.shape)}", r) for r in results]
    if any(r.backend == "gpu" for _, r in measured):  # NVML reads NVIDIA GPUs only: elsewhere a table of dashes
        lines += ["## GPU clocks (NVML, before → after the timed runtime blocks)", ""]
        lines += table(["run", "SM clock", "memory clock", "temperature", "power", "heat or power limits",
                        "GPU clocks steady"], clock_rows(measured)) + [""]

    if report["left_out"]:
        lines += ["## Left out for time", "",
                  f"Parts that would not have ended within the run's {report['budget_s']:.0f} s budget (`--budget`); "
                  "not failures.", ""]
        lines += [f"- {item['part']}: {left_out_text(item['expected_s'], item['left_s'], report['budget_s'])}"
                  + (f"; `{RESTARTS_ALONE}` measures it on its own" if item["part"] == RESTARTS_PART else "")
                  for item in report["left_out"]] + [""]

    if report["failures"]:
        lines += ["## Failures", "", *[f"- {f}" for f in report["failures"]], ""]

    lines += ["## Environment", ""]
    versions = env.get("versions") or {}
    lines += table(["item", "value"], [
        ["CPU", f"{env.get('cpu_model')}, {env.get('cpu_affinity')} cores usable"],
        ["memory", format_bytes(env.get("memory_total_bytes"))],
        ["platform", env.get("platform")],
        *[[name, version or "not installed"] for name, version in versions.items()],
        *[[f"BLAS ({b.get('internal_api')})", f"{b.get('num_threads')} threads"] for b in env.get("blas") or []],
        *[[var, value] for var, value in (env.get("env_vars") or {}).items()],
    ])
    lines += ["", "Stage durations: " + ", ".join(f"{k} {v:.0f} s" for k, v in report["durations_s"].items()) + ".",
              ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    report: dict[str, Any] = {"failures": [], "left_out": [], "durations_s": {}, "budget_s": args.budget,
                              "deadline": float("inf")}  # the devices are what every later part needs
    with Runner(timeout_s=args.timeout) as runner:
        before = stage("devices", report, lambda: worker_state(runner))
        if before is None:
            return 2
        report["deadline"] = started + args.budget
        accel = accelerators(before["x32"]["env"])
        report["accelerator"] = bool(accel)
        plan = Plan(args.small or not accel)
        plan.platform = accel[0]["platform"] if accel else None
        if accel:
            for d in accel:
                memory = DeviceMemory.from_env(d)
                said = f"{format_bytes(memory.free)} free of {format_bytes(memory.total)}" if memory else "not reported"
                say(f"   {d['platform']}:{d['id']} {d.get('kind')}  memory: {said}")
        else:
            say("   no accelerator was found (no GPU or TPU visible to JAX): running at a small size on the CPU")
        forecast, unlikely = plan.forecast(args.budget)
        if forecast:
            say(f"   as recorded on this platform, about {forecast:.0f} s of the {args.budget:.0f} s budget"
                + (f"; left out for time unless the rest ends early: {', '.join(unlikely)}" if unlikely else ""))
        end = plan.expected_s("end")
        checks = stage("self-check", report, lambda: selfcheck(runner, plan), plan.expected_s("self-check"), end)
        docs = stage(f"JAX docs' example ({DOCS_CASE} {format_shape(plan.docs_shape)})", report,
                     lambda: docs_example(runner, plan), plan.expected_s("docs"), end)
        pits = stage("pitfalls", report, lambda: pitfalls(runner, plan, plan.pitfall_sections),
                     plan.expected_s("pitfalls"), end)
        results = stage("matmul sweep", report, lambda: sweep(runner, plan), plan.expected_s("sweep"), end) or []
        restarts = stage(RESTARTS_PART, report, lambda: pitfalls(runner, plan, ("cache",)),
                         plan.expected_s("restarts"), end) if plan.restarts else None
        if restarts is not None:  # one table: pitfall 7 after the others, each with its own baseline
            pits = restarts if pits is None else {**pits, "pitfalls": pits["pitfalls"] + restarts["pitfalls"]}
        report["deadline"] = float("inf")  # the closing check is quick and always runs
        after = stage("workers at the end", report, lambda: worker_state(runner)) or before
        single, handovers = runner.single_holder, runner.handovers
    alive = all(before[p]["pid"] == after[p]["pid"] for p in before)
    report["workers"] = after
    report["workers_alive"] = (
        f"One process at a time can hold this device, so the x32 and x64 workers took turns: the device went "
        f"from one to the other {handovers} times (pitfall 7's fresh processes had it in between), and each "
        f"start opened it again." if single else
        f"Both workers (x32 pid {after['x32']['pid']}, x64 pid {after['x64']['pid']}) served every job from the "
        f"start: none ran out of memory or was replaced." if alive else
        f"A worker was replaced during the run (x32 pid {before['x32']['pid']} → {after['x32']['pid']}, x64 pid "
        f"{before['x64']['pid']} → {after['x64']['pid']}): see Failures.")
    say(f"\n   {report['workers_alive']}")
    report["elapsed_s"] = time.perf_counter() - started
    report["finished"] = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    (out / "DEVICE.md").write_text(device_md(report, plan, docs, pits, results, checks), encoding="utf-8")
    measured = ([docs] if docs is not None else []) + results
    doc = json.loads(export_json(measured))
    doc["device_check"] = {"accelerator": report["accelerator"], "small": plan.small,
                           "failures": report["failures"], "left_out": report["left_out"],
                           "budget_s": report["budget_s"], "durations_s": report["durations_s"],
                           "selfcheck": checks, "pitfalls": pits}
    (out / "device-check.json").write_text(dumps(doc, indent=1) + "\n", encoding="utf-8")
    left_out = f"; left out for time: {', '.join(i['part'] for i in report['left_out'])}" if report["left_out"] else ""
    say(f"\nwrote {out / 'DEVICE.md'} and {out / 'device-check.json'} ({len(measured)} results) in "
        f"{report['elapsed_s']:.0f} s{left_out}")
    return 1 if report["failures"] else 0  # a part left out for time is no failure


if __name__ == "__main__":
    sys.exit(main())
