"""Where the time goes inside the JAX call: a few steady-state calls traced with
``jax.profiler`` (a Perfetto trace), and a summary anyone can read: the XLA ops that take the
most device time, and the gap between the host's wall time per call and the device's busy time.

Runs in the worker, after every timed phase, so it never changes a reported timing. The trace
is read with the standard library (gzip + json, the Chrome trace format); ``summarize`` also
reads any trace a user captured (engine/worker/trace_file.py reads the file, .xplane.pb included):

- Each traced call is wrapped in a ``jaxcompare call`` annotation on the host thread; its
  duration is the call's wall time (blocked), on the same clock as the device events. A trace
  without them is summarised over its whole window, as one.
- Device ops: on a GPU, the events on the ``/device:GPU:N`` processes' streams (``Stream
  #17(Kernel)``), named by their ``hlo_op`` argument, else by the kernel's own name (kind
  ``kernel``); copies (memcpy events, ROCm's copy kernels) are transfer, not ops. On a TPU, the
  device's ``XLA Ops`` line. On the CPU backend, XLA's thunk events on the host's threads,
  which carry ``hlo_op`` and ``hlo_module`` arguments. Host-side dispatch events (PjitFunction,
  ExecuteHelper, ...) carry neither and are not device time.
- device busy time: the union of the op intervals inside each call (threads running ops in
  parallel overlap; the union counts that time once), overall and per device. Each instant is
  attributed to the ops running then, split evenly between threads and to the innermost op on
  a thread, so the ops' times add up to the busy time exactly. Copy time is the time copies ran
  while no op did.
"""

from __future__ import annotations

import bisect
import glob
import math
import os
import re
import time
from collections.abc import Callable, Hashable, Iterable
from pathlib import Path
from typing import Any

from ...i18n import N_
from ...model.errors import BadInput
from ...model.profile import DeviceTime, OpTime, Profile
from .trace_file import read_trace

CALL_MARK = "jaxcompare call"
TOP_OPS = 10
TRACE_TARGET_S = 0.1  # trace about this much steady-state work...
MAX_CALLS = 20  # ...in at most this many calls (a trace of a tiny call grows with every call)
# Lines the profiler derives from others (they repeat the stream's kernels or are host steps).
DERIVED_LINES = ("XLA Modules", "Steps", "Framework Ops", "Framework Name Scope", "TensorFlow Ops",
                 "Source code", "XLA TraceMe", "Launch Stats", "Host Offload Ops", "_counters_")
# Ops that do the heavy work inside a fusion: what ``holds`` lists.
HEAVY = ("dot", "convolution", "custom-call", "fft", "reduce", "reduce-window", "scatter", "gather", "sort",
         "triangular-solve", "cholesky", "while", "select-and-scatter", "all-reduce")


def calls_for(runtime_s: float) -> int:
    """How many calls to trace: about TRACE_TARGET_S of work, from 1 to MAX_CALLS."""
    if not math.isfinite(runtime_s) or runtime_s <= 0:
        return MAX_CALLS
    return max(1, min(MAX_CALLS, math.ceil(TRACE_TARGET_S / runtime_s)))


def profile_jitted(jitted: Any, args: tuple[Any, ...], directory: str | os.PathLike[str],
                   runtime_s: float) -> Profile:
    """Trace warm, blocked calls of ``jitted(*args)`` into ``directory`` and summarise them.
    Never raises for a profiler problem: the Profile then holds one line in ``error``."""
    import jax

    try:  # the executable is cached: this only reads its HLO, for the ops' kinds
        hlo_text = jitted.lower(*args).compile().as_text() or ""
    except Exception:
        hlo_text = ""
    # A long call dwarfs the tracer's set-up: no untraced-in-the-summary first call for it.
    warmup = not (math.isfinite(runtime_s) and runtime_s > TRACE_TARGET_S / 2)
    return trace_calls(lambda: jax.block_until_ready(jitted(*args)), calls_for(runtime_s), directory, hlo_text,
                       warmup=warmup)


def trace_calls(call: Callable[[], Any], calls: int, directory: str | os.PathLike[str],
                hlo_text: str = "", *, warmup: bool = True) -> Profile:
    """Trace ``calls`` calls of ``call`` (which must block until done) and summarise them;
    ``warmup``: one more call first, traced but left out of the summary."""
    import jax

    directory = Path(directory).expanduser()
    problem = _writable(directory)
    if problem is not None:
        return Profile.failed(problem)
    options = jax.profiler.ProfileOptions()
    options.python_tracer_level = 0  # Python frames would slow the host side the summary measures
    options.raise_error_on_start_failure = True
    try:
        jax.profiler.start_trace(str(directory), create_perfetto_trace=True, profiler_options=options)
    except Exception as exc:
        return Profile.failed(N_("the profiler could not start ({error}); the timings are unaffected").format(
            error=_line(exc)))
    try:
        if warmup:  # traced but not summarised: the first call after the start pays the tracer's set-up
            call()
        for k in range(calls):
            with jax.profiler.TraceAnnotation(CALL_MARK, call=k):
                call()
    except Exception as exc:
        _stop(jax)
        return Profile.failed(N_("a traced call failed: {error}").format(error=_line(exc)))
    stop_problem = _stop(jax)
    if stop_problem is not None:
        return Profile.failed(N_("the profiler could not write its trace to {directory}: {error}").format(
            directory=directory, error=stop_problem))
    trace_file = _trace_file(directory)
    if trace_file is None:
        return Profile.failed(N_("the profiler wrote no trace file under {directory}").format(directory=directory))
    try:
        trace = read_trace(trace_file)
    except BadInput as exc:
        return Profile.failed(str(exc), str(trace_file))
    return summarize_checked(trace, hlo_text, trace_file=str(trace_file))


def summarize_file(path: str | os.PathLike[str], *, top: int = TOP_OPS) -> Profile:
    """The summary of a trace file a user has (.xplane.pb, .trace.json.gz, .json); BadInput when
    it cannot be read, a failed Profile when it holds nothing to summarise."""
    return summarize_checked(read_trace(path), trace_file=str(path), top=top)


def summarize_checked(trace: dict[str, Any], hlo_text: str = "", *, trace_file: str | None = None,
                      top: int = TOP_OPS) -> Profile:
    """``summarize``, with a trace in a shape this parser does not know as a failed Profile."""
    try:
        return summarize(trace, hlo_text, trace_file=trace_file, top=top)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        return Profile.failed(N_("the trace {trace_file} could not be summarised: {error}").format(
            trace_file=trace_file, error=_line(exc)), trace_file)


def summarize(trace: dict[str, Any], hlo_text: str = "", *, trace_file: str | None = None,
              top: int = TOP_OPS) -> Profile:
    """The summary of a Chrome-format trace: per ``jaxcompare call`` annotation, or, in a trace
    without them (one a user captured), over its whole window as one (``calls`` 0)."""
    events = [e for e in trace.get("traceEvents", ()) if isinstance(e, dict)]
    processes, threads = _names(events)
    module, index = hlo_index(hlo_text)
    windows = sorted((float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in _complete(events)
                     if e.get("name") == CALL_MARK)
    calls = len(windows)
    if not windows:
        spans = [(float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in _complete(events)]
        if not spans:
            return Profile.failed(N_("{trace_file} holds no timed events: not a profiler trace, or an empty "
                                     "one").format(trace_file=trace_file or N_("the trace")), trace_file)
        windows = [(min(s for s, _ in spans), max(e for _, e in spans))]
    ops, copies, where, on_device = device_ops(events, processes, threads, module)
    if calls == 0 and not ops and not copies:  # nothing to summarise over a whole window
        return Profile.failed(N_("{trace_file} holds no device ops ({where})").format(
            trace_file=trace_file or N_("the trace"), where=where), trace_file)
    per_op: dict[Hashable, float] = {}
    per_device: dict[Any, list[float]] = {}  # pid: [busy, copy, copies], summed over the windows
    for start, end in windows:
        inside = [(max(s, start), min(e, end), lane, key) for s, e, lane, key in ops if s < end and e > start]
        moved = [(max(s, start), min(e, end), lane, key) for s, e, lane, key in copies if s < end and e > start]
        for pid in {lane[0] for _, _, lane, _ in inside + moved}:
            mine = [iv for iv in inside if iv[2][0] == pid]
            theirs = [iv for iv in moved if iv[2][0] == pid]
            busy, device_ops_time = attribute(mine)
            for key, t in device_ops_time.items():
                per_op[key] = per_op.get(key, 0.0) + t
            device = per_device.setdefault(pid, [0.0, 0.0, 0])
            device[0] += busy
            device[1] += _union(mine + theirs) - busy
            device[2] += len(theirs)
    n = len(windows)
    # Per call and per device: on several devices (one program on each), the mean over them.
    scale = 1e-6 / n / max(len(per_device), 1)
    wall_s = sum(e - s for s, e in windows) / n * 1e-6
    ranked = sorted(per_op.items(), key=lambda item: -item[1])
    listed = []
    for (name, by_kernel), t in ranked[:top]:
        kind, holds = ("kernel", ()) if by_kernel else index.get(name, ("op", ()))
        listed.append(OpTime(name, kind, t * scale, _share(t * scale, wall_s), holds))
    devices = sorted((DeviceTime(str(processes.get(pid, pid)), b / n * 1e-6, c / n * 1e-6, int(k))
                      for pid, (b, c, k) in per_device.items()), key=lambda d: _in_order(d.name))
    busy_s = sum(d[0] for d in per_device.values()) * scale
    copy_s = sum(d[1] for d in per_device.values()) * scale
    return Profile(trace_file=trace_file, ops=tuple(listed), device_busy_s=busy_s, wall_s=wall_s, calls=calls,
                   other_ops_s=sum(t for _, t in ranked[top:]) * scale, where=where, copy_s=copy_s,
                   devices=tuple(devices))


def _in_order(name: str) -> tuple[str, int]:
    """/device:GPU:2 before /device:GPU:10."""
    head, _, number = name.rpartition(":")
    return (head, int(number)) if number.isdigit() else (name, -1)


def _share(time_s: float, wall_s: float) -> float:
    return min(max(time_s / wall_s, 0.0), 1.0) if wall_s > 0 else 0.0


# --- which events are device ops ---------------------------------------------------------------
# An op's key: its name and whether that is a kernel's own name (no hlo_op named it).
OpKey = tuple[str, bool]
Interval = tuple[float, float, tuple[Any, Any], Hashable]  # start, end (µs), lane (pid, tid), op key
# Copies are transfer, not compute: CUDA's memcpy events (with memcpy_details) and ROCm's copy kernels.
_COPY_NAME = re.compile(r"^(memcpy|__amd_rocclr_copy)", re.IGNORECASE)


def is_copy(event: dict[str, Any]) -> bool:
    return "memcpy_details" in _args(event) or bool(_COPY_NAME.match(str(event.get("name", ""))))


def device_ops(events: list[dict[str, Any]], processes: dict[Any, str], threads: dict[tuple[Any, Any], str],
               module: str | None = None) -> tuple[list[Interval], list[Interval], str, bool]:
    """The device-op intervals of a trace, its copies' intervals, a few words on where they
    were found, and whether they ran on an accelerator. Device processes (``/device:GPU:0``...)
    win when they hold any event; else XLA:CPU's thunk events, the host events that name an
    ``hlo_op`` (the CPU backend has no copies to tell apart)."""
    device_pids = {pid for pid, name in processes.items() if name.startswith("/device:")}
    lanes = {key: name for key, name in threads.items() if key[0] in device_pids}
    keep = {key for pid in device_pids for key in _device_lanes(pid, lanes)}
    chosen = [e for e in _complete(events) if e.get("pid") in device_pids
              and ((e.get("pid"), e.get("tid")) in keep or (e.get("pid"), e.get("tid")) not in lanes)]
    on_device = bool(chosen)
    if on_device:
        kinds = sorted({processes[pid].split(":")[1] for pid in device_pids if processes[pid].count(":") >= 2})
        where = (N_("{kinds} kernels on the device's streams").format(kinds="/".join(kinds)) if kinds
                 else N_("device kernels on the device's streams"))
    else:
        chosen = [e for e in _complete(events) if "hlo_op" in _args(e)]
        where = N_("XLA:CPU thunks (ops) on the host's threads")
    if module:  # another module's ops (an unrelated jit in the same process) are not this call's
        mine = [e for e in chosen if _args(e).get("hlo_module") in (None, module)]
        chosen = mine or chosen
    ops, copies = [], []
    for e in chosen:
        start = float(e["ts"])
        hlo_op = _args(e).get("hlo_op")
        key: OpKey = (str(hlo_op), False) if hlo_op else (str(e.get("name", "?")), True)
        interval = (start, start + float(e["dur"]), (e.get("pid"), e.get("tid")), key)
        (copies if on_device and is_copy(e) else ops).append(interval)
    return (ops if on_device else _until_completed(ops, events)), copies, where, on_device


def _device_lanes(pid: Any, lanes: dict[tuple[Any, Any], str]) -> set[tuple[Any, Any]]:
    """The threads of one device process whose events are its ops: a GPU's streams
    (``Stream #17(Kernel)``); else a derived ``XLA Ops`` line (TPU), which has one event per op;
    else every line but the other derived ones, which repeat the ops or are host steps."""
    mine = {key: name for key, name in lanes.items() if key[0] == pid}
    return ({key for key, name in mine.items() if name.startswith("Stream #")}
            or {key for key, name in mine.items() if name == "XLA Ops"}
            or {key for key, name in mine.items() if name not in DERIVED_LINES})


def _until_completed(ops: list[Interval], events: list[dict[str, Any]]) -> list[Interval]:
    """XLA:CPU runs some thunks asynchronously (a dot on Eigen's threads): the op's event then
    covers only its launch, and an ``end: <op>`` marker shows when the executor saw it complete.
    Each op runs until the last such marker before that op's next start (a loop runs it again)."""
    markers: dict[str, list[float]] = {}
    for e in _complete(events):
        name = e.get("name")
        if isinstance(name, str) and name.startswith("end: "):
            markers.setdefault(name[5:], []).append(float(e["ts"]) + float(e["dur"]))
    for times in markers.values():
        times.sort()
    starts: dict[Hashable, list[float]] = {}
    for s, _, _, key in ops:
        starts.setdefault(key, []).append(s)
    for times in starts.values():
        times.sort()
    out = []
    for s, e, lane, key in ops:
        following = starts[key][bisect.bisect_right(starts[key], s):]
        limit = following[0] if following else math.inf
        ends = markers.get(key[0] if isinstance(key, tuple) else key, [])
        last = bisect.bisect_left(ends, limit) - 1
        if last >= 0 and ends[last] > e:
            e = ends[last]
        out.append((s, e, lane, key))
    return out


def _union(intervals: Iterable[Interval]) -> float:
    """How long any of ``intervals`` ran (overlaps counted once)."""
    total, reach = 0.0, -math.inf
    for s, e in sorted((iv[0], iv[1]) for iv in intervals if iv[1] > iv[0]):
        if e > reach:
            total += e - max(s, reach)
            reach = e
    return total


def attribute(intervals: Iterable[Interval]) -> tuple[float, dict[Hashable, float]]:
    """The union of ``intervals`` (busy time) and each op's part of it. An instant where several
    threads run ops is split evenly between the threads; on one thread it goes to the innermost
    op (the latest started), as a parent op (a while loop) holds its body's ops."""
    items = sorted((s, e, lane, name) for s, e, lane, name in intervals if e > s)
    points = sorted({p for s, e, _, _ in items for p in (s, e)})
    busy, per_op = 0.0, {}  # type: ignore[var-annotated]
    active: list[Interval] = []
    nxt = 0
    for t0, t1 in zip(points, points[1:], strict=False):
        while nxt < len(items) and items[nxt][0] <= t0:
            active.append(items[nxt])
            nxt += 1
        active = [iv for iv in active if iv[1] > t0]
        if not active:
            continue
        innermost: dict[Any, Interval] = {}
        for iv in active:
            held = innermost.get(iv[2])
            if held is None or (iv[0], -iv[1]) > (held[0], -held[1]):
                innermost[iv[2]] = iv
        span = t1 - t0
        busy += span
        for iv in innermost.values():
            per_op[iv[3]] = per_op.get(iv[3], 0.0) + span / len(innermost)
    return busy, per_op


# --- the HLO: what each op is --------------------------------------------------------------------
_COMPUTATION = re.compile(r"^(?:ENTRY\s+)?%?([\w.\-]+)\s.*\{\s*$")
_INSTRUCTION = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*(.*)$")
_CALLS = re.compile(r"\bcalls=%?([\w.\-]+)")
_TARGET = re.compile(r'custom_call_target="([^"]+)"')
_MODULE = re.compile(r"^HloModule\s+([\w.\-]+)", re.M)


def hlo_index(hlo_text: str) -> tuple[str | None, dict[str, tuple[str, tuple[str, ...]]]]:
    """From an executable's HLO text: its module name, and for every instruction its opcode and
    what it holds (a fusion's heavy ops, a custom call's target)."""
    module = _MODULE.search(hlo_text)
    computations: dict[str, list[tuple[str, str, str]]] = {}
    current = None
    for line in hlo_text.splitlines():
        inst = _INSTRUCTION.match(line) if current is not None else None
        if inst is not None:
            opcode = _opcode(inst.group(2))
            if opcode:
                computations[current].append((inst.group(1), opcode, inst.group(2)))  # type: ignore[index]
            continue
        comp = _COMPUTATION.match(line)
        if comp is not None and "=" not in line.split("(")[0]:
            current = comp.group(1)
            computations[current] = []
        elif line.startswith("}"):
            current = None
    index: dict[str, tuple[str, tuple[str, ...]]] = {}
    for body in computations.values():
        for name, opcode, rest in body:
            holds: tuple[str, ...] = ()
            if opcode == "fusion":
                called = _CALLS.search(rest)
                inner = computations.get(called.group(1), []) if called else []
                holds = tuple(dict.fromkeys(op for _, op, _ in inner if op in HEAVY))
            elif opcode == "custom-call":
                target = _TARGET.search(rest)
                holds = (target.group(1),) if target else ()
            index[name] = (opcode, holds)
    return (module.group(1) if module else None), index


def _opcode(rest: str) -> str | None:
    """The opcode after an instruction's ``=``: past its type (a token, or a tuple in parens)."""
    rest = rest.lstrip()
    if rest.startswith("("):
        depth = 0
        for i, ch in enumerate(rest):
            depth += {"(": 1, ")": -1}.get(ch, 0)
            if depth == 0:
                rest = rest[i + 1:]
                break
    else:
        rest = rest.split(None, 1)[1] if " " in rest else ""
    match = re.match(r"\s*([\w\-]+)\(", rest)
    return match.group(1) if match else None


# --- helpers ------------------------------------------------------------------------------------------
def _names(events: list[dict[str, Any]]) -> tuple[dict[Any, str], dict[tuple[Any, Any], str]]:
    processes, threads = {}, {}
    for e in events:
        if e.get("ph") != "M":
            continue
        name = str(_args(e).get("name", ""))
        if e.get("name") == "process_name":
            processes[e.get("pid")] = name
        elif e.get("name") == "thread_name":
            threads[(e.get("pid"), e.get("tid"))] = name
    return processes, threads


def _complete(events: list[dict[str, Any]]) -> Iterable[dict[str, Any]]:
    """Complete ('X') events with a start and a duration."""
    for e in events:
        if e.get("ph") == "X" and isinstance(e.get("ts"), int | float) and isinstance(e.get("dur"), int | float):
            yield e


def _args(event: dict[str, Any]) -> dict[str, Any]:
    args = event.get("args")
    return args if isinstance(args, dict) else {}


def _writable(directory: Path) -> str | None:
    """Why the trace cannot be written to ``directory`` (None when it can): checked before the
    profiler starts, as a failed export leaves JAX's profiler believing a trace still runs."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        probe = directory / f".jaxcompare-probe-{os.getpid()}-{time.monotonic_ns()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        return N_("cannot write the trace to {directory}: {error}").format(directory=directory,
                                                                           error=exc.strerror or exc)
    return None


def _stop(jax: Any) -> str | None:
    """Stop the trace; on failure, make sure JAX no longer counts it as running (else every
    later trace in this worker is refused), and say why in one line."""
    try:
        jax.profiler.stop_trace()
    except Exception as exc:
        state = getattr(getattr(jax, "_src", None), "profiler", None)
        reset = getattr(getattr(state, "_profile_state", None), "reset", None)
        if callable(reset):
            reset()
        return _line(exc)
    return None


def _trace_file(directory: Path) -> Path | None:
    """The Perfetto trace the last session wrote (plugins/profile/<run>/perfetto_trace.json.gz)."""
    found = glob.glob(str(directory / "plugins" / "profile" / "*" / "perfetto_trace.json.gz"))
    return Path(max(found, key=os.path.getmtime)) if found else None


def _line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:300]}" if text else type(exc).__name__
