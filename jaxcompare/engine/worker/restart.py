"""The child of a fresh process (common/fresh.py starts it): imports JAX with the persistent
compilation cache as asked, builds the case's inputs, times one first jitted call, and reports it and
what the cache saw as a line of JSON.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections import Counter
from typing import Any

from ...model.spec import Spec
from ..common.child import run_child

BACKEND_COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"  # jax._src.dispatch: compile or cache read
CACHE_HIT_EVENT, CACHE_MISS_EVENT = "/jax/compilation_cache/cache_hits", "/jax/compilation_cache/cache_misses"


def child_main(request: str) -> None:
    """Report one first call (child.run_child)."""
    run_child(lambda: _first_call(json.loads(request)))


def _first_call(request: dict[str, Any]) -> dict[str, Any]:
    from ...catalog import get_case

    spec = Spec.from_dict(request["spec"])
    cache_dir = request["cache_dir"]
    if request.get("case_on_stdin"):
        import cloudpickle

        case = cloudpickle.loads(sys.stdin.buffer.read())
    else:
        case = get_case(spec.case, spec.cases_file)
    case = case.for_port(spec.port)  # the port the worker measures (measure.py), not the case's default
    import jax

    jax.config.update("jax_enable_x64", spec.precision == "x64")
    if cache_dir is None:
        jax.config.update("jax_enable_compilation_cache", False)
    else:
        jax.config.update("jax_enable_compilation_cache", True)
        jax.config.update("jax_compilation_cache_dir", cache_dir)
        # The defaults skip what compiles in under a second, so a small function is never
        # cached; -1 also stops JAX raising the size floor for the file system (JAX docs).
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
    events: Counter[str] = Counter()
    compile_s: list[float] = []
    jax.monitoring.register_event_listener(lambda event, **_: events.update([event]))
    jax.monitoring.register_event_duration_secs_listener(
        lambda event, duration_secs, **_: compile_s.append(duration_secs) if event == BACKEND_COMPILE_EVENT else None)
    from .ceilings import matmul_precision, use_matmul_precision
    from .environment import pin_device, resolve_device
    from .inputs import build_inputs
    from .jax_phases import user_call

    pinned = os.environ.get("JAXCOMPARE_WORKER_DEVICE")
    if pinned:
        jax.config.update("jax_default_device", pin_device(pinned))
    device = resolve_device(spec.device)
    ready_ns = time.monotonic_ns()
    dev = jax.block_until_ready(jax.device_put(build_inputs(case, spec), device))
    compiled_before = len(compile_s)  # none: device_put compiles nothing, and nothing else ran here
    compile_s.clear()  # only the first call's compile and cache lookups count
    events.clear()
    with use_matmul_precision(spec.matmul_precision):  # as the worker measured it (measure.py)
        precision = matmul_precision()
        started = time.perf_counter_ns()
        # Blocks like the plain call; names an operation the device lacks at this precision plainly.
        user_call(case, "jax_fn", jax.jit(case.jax_fn), dev, where=(device.platform, spec.precision))
        first_call_s = (time.perf_counter_ns() - started) / 1e9
    return {"first_call_s": first_call_s, "compile_s": sum(compile_s) if compile_s else None,
            "ready_ns": ready_ns, "cache_hits": events[CACHE_HIT_EVENT], "cache_misses": events[CACHE_MISS_EVENT],
            "compiled_before": compiled_before, "matmul_precision": precision}
