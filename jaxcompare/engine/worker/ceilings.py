"""The ceilings for the fraction of peak, found in the worker: a GPU's or TPU's published peak
(model/peaks.py) at the matmul precision this worker uses, and this CPU's matmul rate, measured
once per host and cached beside the results database.

A CPU has no table: its peak depends on the cores this process may use, their vector units and
clocks, and the BLAS. So the ceiling is measured, as the best rate of a large square matmul by
NumPy's BLAS and by XLA's CPU backend (the faster of the two: both sides are held to it). Its
memory bandwidth is measured the same way, once per host: a STREAM-style triad and a read-only
sum in NumPy and in XLA, the best of them. An accelerator's bandwidth is its published figure.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ...model.peaks import bandwidth_for, peak_for
from ...model.platforms import HOST, is_host
from ...model.sides import Peak
from ..common.ceilings_cache import BUSY_RETRIES, cache_path, read_cache, write_cache
from ..common.host import cpu_model, host_info
from ..common.load import LoadMeter, is_busy
from .timing import Clock

# Each library's best call within this budget is its rate; sizing comes first (below).
BUDGET_S = 0.4
# The matmul grows (doubling from 256) until one NumPy call takes this long, so threads,
# caches and clocks are at their steady state, or until MAX_N.
MIN_CALL_S = 0.03
MAX_N = 4096
# The operands and products of both libraries may use this share of the available memory.
MEMORY_SHARE = 0.05
MIN_N = 128
# The bandwidth kernels' working set: past any core's private cache, and as large as the catalog's
# large cases (a 4000x4000 float32 matrix is 64 MiB), so their traffic meets a rate measured alike.
BANDWIDTH_BYTES = 64 * 2**20
# NumPy's triad runs in chunks this long (float32: 128 KiB), so s*c stays in cache and each of
# a, b, c crosses memory once, as in STREAM's one-loop triad.
TRIAD_CHUNK = 2**15
TRIAD_SCALAR = 3.0
# The transcendental rate: sin, exp and tanh over this many elements (4 MiB in float32: each
# call costs far more in arithmetic than in memory traffic, and XLA's CPU code runs threaded).
TRANSCENDENTAL_N = 2**20
TRANSCENDENTAL_FNS = ("sin", "exp", "tanh")


def host_key(dtype: str) -> str:
    """What the measured rate depends on: the CPU, the cores this process may use, the
    libraries' versions, and the dtype."""
    info = host_info()
    versions = info["versions"]
    return (f"{cpu_model()} | {info['cpu_affinity']} cores | numpy {versions.get('numpy')} | "
            f"jax {versions.get('jax')} | {np.dtype(dtype).name}")


def matmul_precision() -> str:
    """The default matmul precision this process's JAX uses ("default" unless configured)."""
    import jax

    value = jax.config.jax_default_matmul_precision
    return str(value).lower() if value else "default"


def use_matmul_precision(precision: str) -> contextlib.AbstractContextManager[Any]:
    """A context in which this thread's JAX runs float32 products at a Spec's matmul precision
    ('default', 'high', 'highest'): traced, compiled and run under it, and matmul_precision()
    reports it. measure() and pitfall 7's fresh processes both enter it."""
    import jax

    return jax.default_matmul_precision(precision)


def device_ceiling(device_kind: str, dtype: str, precision: str) -> tuple[float, str] | None:
    """The published peak and its label for an accelerator, or None when the table does not
    know the device, the precision, or that column."""
    try:
        return peak_for(device_kind, dtype, precision)
    except ValueError:  # a matmul precision the table has no column for
        return None


def _best_time(call: Any, budget_s: float, clock: Clock) -> float:
    """The fastest of at least three calls within ``budget_s``, in seconds."""
    best = float("inf")
    deadline = clock() + budget_s * 1e9
    calls = 0
    while calls < 3 or clock() < deadline:
        start = clock()
        call()
        best = min(best, (clock() - start) * 1e-9)
        calls += 1
    return best


def _best_rate(call: Any, n: int, budget_s: float, clock: Clock) -> float:
    """2n³ over the fastest of at least three calls within ``budget_s``."""
    return 2.0 * n**3 / _best_time(call, budget_s, clock)


def _size(dtype: np.dtype, clock: Clock) -> int:
    """The matmul size: doubled until one NumPy call lasts MIN_CALL_S, within memory."""
    limit = int((MEMORY_SHARE * _available() / (6 * dtype.itemsize)) ** 0.5)
    n = MIN_N
    while 2 * n <= min(MAX_N, max(limit, MIN_N)):
        a = np.ones((n, n), dtype)
        a @ a  # the first call at a size pays for page faults and waking BLAS's threads
        start = clock()
        a @ a
        if (clock() - start) * 1e-9 >= MIN_CALL_S:
            break
        n *= 2
    return n


def measure_cpu_rates(dtype: str, cpu_device: Any | None, *, budget_s: float = BUDGET_S,
                      clock: Clock = time.perf_counter_ns) -> dict[str, Any]:
    """NumPy's and (where this process's JAX holds ``dtype`` and has a CPU device) XLA's best
    square-matmul rate in FLOP/s, and the size used."""
    dt = np.dtype(dtype)
    n = _size(dt, clock)
    entry: dict[str, Any] = {"n": n, "numpy_flops_per_s": None, "jax_flops_per_s": None}
    use_jax = cpu_device is not None and _jax_holds(dt)
    # The size below too, on a quarter of the budget: a second chance at the plateau (an H200's 16-core
    # host recorded 853 GFLOP/s once, then measured 1226 at the sizing's 4096 and 1254 at 2048).
    for size, share in ((n, 1.0), (n // 2, 0.25)) if n // 2 >= MIN_N else ((n, 1.0),):
        rates = _rates_at(size, dt, cpu_device if use_jax else None, budget_s * share, clock)
        for key, rate in rates.items():
            if rate is not None and rate > (entry[key] or 0.0):
                entry[key] = rate
                if key == "numpy_flops_per_s":
                    entry["n"] = size
    entry["measured"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    entry["measurements"] = 1
    return entry


def _rates_at(n: int, dt: np.dtype, cpu_device: Any | None, budget_s: float, clock: Clock) -> dict[str, float | None]:
    """NumPy's and (with ``cpu_device``) XLA's best n x n matmul rate in FLOP/s."""
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((n, n)).astype(dt) for _ in range(2))
    rates: dict[str, float | None] = {"numpy_flops_per_s": _best_rate(lambda: a @ b, n, budget_s, clock),
                                      "jax_flops_per_s": None}
    if cpu_device is not None:
        import jax
        import jax.numpy as jnp

        x, y = jax.device_put((a, b), cpu_device)
        matmul = jax.jit(jnp.matmul)
        matmul(x, y).block_until_ready()
        rates["jax_flops_per_s"] = _best_rate(lambda: matmul(x, y).block_until_ready(), n, budget_s, clock)
    return rates


def _jax_holds(dtype: np.dtype) -> bool:
    """Whether this process's JAX keeps ``dtype`` (an x32 process turns float64 into float32)."""
    import jax

    return np.dtype(jax.dtypes.canonicalize_dtype(dtype)) == dtype


def cpu_rate(dtype: str, cpu_device: Any | None, *, path: Path | None = None,
             clock: Clock = time.perf_counter_ns) -> float:
    """This CPU's matmul rate at ``dtype`` (FLOP/s): the faster of NumPy and XLA, from the cache
    when this host measured it before, else measured now (about a second) and cached
    (_cached_entry: measured again after a busy measurement)."""
    can_jax = cpu_device is not None and _jax_holds(np.dtype(dtype))
    return _cached_best(path or cache_path(), host_key(dtype), ("numpy_flops_per_s", "jax_flops_per_s"),
                        lambda: measure_cpu_rates(dtype, cpu_device if can_jax else None, clock=clock), can_jax)


def bandwidth_key() -> str:
    """What the measured bandwidth depends on: the CPU, the cores this process may use and the
    libraries' versions (float32 kernels only: bytes are bytes)."""
    info = host_info()
    versions = info["versions"]
    return (f"bandwidth | {cpu_model()} | {info['cpu_affinity']} cores | numpy {versions.get('numpy')} | "
            f"jax {versions.get('jax')}")


def measure_cpu_bandwidth(cpu_device: Any | None, *, budget_s: float = BUDGET_S,
                          clock: Clock = time.perf_counter_ns) -> dict[str, Any]:
    """NumPy's and (with a CPU device) XLA's best memory bandwidth in bytes/s, each the better of
    a triad a = b + s*c (3 arrays' bytes a call) and a read-only sum (1 array's): reads stream
    faster than the triad's mix with writes, and a reduction is all reads."""
    dt = np.dtype("float32")
    size = min(BANDWIDTH_BYTES, int(MEMORY_SHARE * _available() / 2))
    n = max(size // (3 * dt.itemsize), TRIAD_CHUNK)
    rng = np.random.default_rng(0)
    b, c = (rng.standard_normal(n).astype(dt) for _ in range(2))
    a, tmp, s = np.empty_like(b), np.empty(TRIAD_CHUNK, dt), dt.type(TRIAD_SCALAR)
    x = rng.standard_normal(3 * n).astype(dt)
    triad_bytes, read_bytes = 3 * b.nbytes, x.nbytes

    def numpy_triad() -> None:
        for k in range(0, n, TRIAD_CHUNK):
            part = slice(k, k + TRIAD_CHUNK)
            m = min(TRIAD_CHUNK, n - k)
            np.multiply(c[part], s, out=tmp[:m])
            np.add(b[part], tmp[:m], out=a[part])

    kernels = {"numpy_triad": triad_bytes / _best_time(numpy_triad, budget_s / 2, clock),
               "numpy_read": read_bytes / _best_time(x.sum, budget_s / 2, clock)}
    if cpu_device is not None:
        import jax
        import jax.numpy as jnp

        bj, cj, xj = jax.device_put((b, c, x), cpu_device)
        triad = jax.jit(lambda b, c: b + s * c)
        read = jax.jit(jnp.sum)
        jax.block_until_ready((triad(bj, cj), read(xj)))
        kernels["jax_triad"] = triad_bytes / _best_time(lambda: triad(bj, cj).block_until_ready(), budget_s / 2, clock)
        kernels["jax_read"] = read_bytes / _best_time(lambda: read(xj).block_until_ready(), budget_s / 2, clock)
    return {"bytes": triad_bytes, "kernels": kernels,
            "numpy_bytes_per_s": max(kernels["numpy_triad"], kernels["numpy_read"]),
            "jax_bytes_per_s": max(kernels["jax_triad"], kernels["jax_read"]) if cpu_device is not None else None,
            "measured": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "measurements": 1}


def cpu_bandwidth(cpu_device: Any | None, *, path: Path | None = None,
                  clock: Clock = time.perf_counter_ns) -> float:
    """This CPU's memory bandwidth (bytes/s): the better of NumPy's and XLA's, cached like the
    matmul rate under its own key (bandwidth_key) and measured again the same way when busy."""
    return _cached_best(path or cache_path(), bandwidth_key(), ("numpy_bytes_per_s", "jax_bytes_per_s"),
                        lambda: measure_cpu_bandwidth(cpu_device, clock=clock), cpu_device is not None)


def transcendental_key(dtype: str) -> str:
    """What the measured transcendental rate depends on: as the matmul rate's key (host_key)."""
    return f"transcendentals | {host_key(dtype)}"


def measure_cpu_transcendentals(dtype: str, cpu_device: Any | None, *, budget_s: float = BUDGET_S,
                                clock: Clock = time.perf_counter_ns) -> dict[str, Any]:
    """NumPy's and (with a CPU device) XLA's transcendentals per second at ``dtype``: an equal mix
    of sin, exp and tanh (TRANSCENDENTAL_FNS), each timed on its own, the mix's rate being
    3n over the three best times."""
    dt = np.dtype(dtype)
    x = np.random.default_rng(0).uniform(-2.0, 2.0, TRANSCENDENTAL_N).astype(dt)
    share = budget_s / (2 * len(TRANSCENDENTAL_FNS))
    out = np.empty_like(x)
    numpy_s = 0.0
    for name in TRANSCENDENTAL_FNS:
        fn = getattr(np, name)
        numpy_s += _best_time(lambda fn=fn: fn(x, out=out), share, clock)
    rates = {"numpy_per_s": len(TRANSCENDENTAL_FNS) * x.size / numpy_s, "jax_per_s": None}
    if cpu_device is not None and _jax_holds(dt):
        import jax
        import jax.numpy as jnp

        xj = jax.device_put(x, cpu_device)
        jax_s = 0.0
        for name in TRANSCENDENTAL_FNS:
            fn = jax.jit(getattr(jnp, name))
            fn(xj).block_until_ready()
            jax_s += _best_time(lambda fn=fn: fn(xj).block_until_ready(), share, clock)
        rates["jax_per_s"] = len(TRANSCENDENTAL_FNS) * x.size / jax_s
    return {"n": x.size, "functions": list(TRANSCENDENTAL_FNS), **rates,
            "measured": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "measurements": 1}


def cpu_transcendental_rate(dtype: str, cpu_device: Any | None, *, path: Path | None = None,
                            clock: Clock = time.perf_counter_ns) -> float:
    """This CPU's transcendentals per second at ``dtype``: the better of NumPy's and XLA's,
    cached and measured again when busy like the matmul rate."""
    return _cached_best(path or cache_path(), transcendental_key(dtype), ("numpy_per_s", "jax_per_s"),
                        lambda: measure_cpu_transcendentals(dtype, cpu_device, clock=clock),
                        cpu_device is not None and _jax_holds(np.dtype(dtype)))


def _cached_best(path: Path, key: str, rates: tuple[str, str], measure: Callable[[], dict[str, Any]],
                 can_jax: bool) -> float:
    """The better of the two libraries' rates in the cache's entry at ``key`` (_cached_entry)."""
    entry = _cached_entry(path, key, rates, measure, can_jax)
    return max(r for r in (entry.get(rate) for rate in rates) if r)


def _cached_entry(path: Path, key: str, rates: tuple[str, str], measure: Callable[[], dict[str, Any]],
                  can_jax: bool) -> dict[str, Any]:
    """The cache's entry at ``key`` (NumPy's rate, then XLA's: ``rates``), measured now when missing.

    A rate measured while other processes took load.BUSY_CORES or more (load.is_busy; this process
    tree's own work does not count) understates the peak, so such an entry is measured again on
    later runs (at most BUSY_RETRIES times), keeping each library's best. An
    entry that lacks XLA's rate (measured in a process whose JAX could not hold the dtype) gains
    it when this process can."""
    numpy_rate, jax_rate = rates
    entry = read_cache(path).get(key)
    valid = _valid(entry, numpy_rate)
    stale = valid and entry.get("busy") and entry.get("measurements", 1) <= BUSY_RETRIES
    if not valid or stale or (can_jax and not entry.get(jax_rate)):
        meter = LoadMeter()
        with meter.phase("ceiling") as span:
            fresh = measure()
        fresh["busy"] = meter.available and is_busy(span.others_cores)
        if valid:
            for rate in rates:
                fresh[rate] = max((r for r in (fresh.get(rate), entry.get(rate)) if r), default=None)
            fresh["busy"] = fresh["busy"] and bool(entry.get("busy"))
            fresh["measurements"] = entry.get("measurements", 1) + 1
        entry = fresh
        write_cache(path, key, entry)
    return entry


def _available() -> int:
    try:
        import psutil

        return int(psutil.virtual_memory().available)
    except Exception:
        return 2 * 1024**3


def _valid(entry: Any, key: str = "numpy_flops_per_s") -> bool:
    rate = entry.get(key) if isinstance(entry, dict) else None
    return isinstance(rate, int | float) and not isinstance(rate, bool) and rate > 0


def cpu_device_or_none() -> Any | None:
    """JAX's first CPU device; None where JAX_PLATFORMS left the CPU backend out."""
    import jax

    try:
        return jax.devices(HOST.name)[0]
    except RuntimeError:
        return None


def ceilings(device: Any, dtype: str, numpy_dtype: str, *, with_cpu_side: bool,
             clock: Clock = time.perf_counter_ns) -> Peak:
    """The Peak for a run on ``device`` at ``dtype``: the device's ceiling (table, or the CPU's
    measured rate on the CPU backend), NumPy's (the CPU's measured rate at the dtype NumPy
    computes in) and, with a third side, JAX on the CPU's (the CPU's rate at ``dtype``)."""
    cpu = cpu_device_or_none()
    precision = matmul_precision()
    rates: dict[str, float] = {}

    def rate(dt: str) -> float:
        if dt not in rates:
            rates[dt] = cpu_rate(dt, cpu, clock=clock)
        return rates[dt]

    numpy_rate = rate(numpy_dtype)
    kind = getattr(device, "device_kind", device.platform)
    if is_host(device.platform):
        flops, source, label, name = rate(dtype), "measured", f"{dtype} matmul", cpu_model()
    else:
        found = device_ceiling(kind, dtype, precision)
        flops, label = found if found else (None, "")
        source, name = ("table" if found else None), kind
    return Peak(flops_per_s=flops, source=source, device=name, label=label, numpy_flops_per_s=numpy_rate,
                numpy_label=f"{numpy_dtype} matmul", cpu=cpu_model(),
                cpu_flops_per_s=rate(dtype) if with_cpu_side else None, matmul_precision=precision)


def bandwidth_ceiling(device: Any, cpu_bytes_per_s: float) -> tuple[float | None, str | None]:
    """JAX's memory ceiling on ``device`` and its source: this CPU's measured bandwidth (read once
    a run and passed in) on the CPU backend ("measured"), else the device's published figure
    ("table"), else (None, None). Reading the cache again could measure again (a busy entry is
    retried), and NumPy and JAX on one CPU would then get two different ceilings."""
    if is_host(device.platform):
        return cpu_bytes_per_s, "measured"
    found = bandwidth_for(getattr(device, "device_kind", device.platform))
    return found, ("table" if found else None)


def transcendental_ceiling(device: Any, cpu_rate: float | None) -> tuple[float | None, str | None]:
    """JAX's transcendental rate on ``device`` and its source: this CPU's measured rate (read once
    a run and passed in, as for bandwidth_ceiling) on the CPU backend; no accelerator publishes
    one (a GPU's special-function units are not a table figure), so (None, None) there and
    transcendentals count as FLOPs (model/roofline.py)."""
    if is_host(device.platform):
        return cpu_rate, "measured"
    return None, None
