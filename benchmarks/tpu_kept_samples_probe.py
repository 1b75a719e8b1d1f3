"""Probe (not part of the tool): on the TPU host the worker's kept NumPy figure for a layernorm reads
1.12-1.22 of the docs' lines under both glibc thresholds, while its fastest sample (8.30 ms) is the docs'
(8.14 ms). Its samples hold two calls (careful's 20 ms target), the docs' %timeit about 25. Is the first
call of a short sample the slow one, and what between samples makes it so (the sampler's watch, which
reads every thread's schedstat: about 200 threads in a TPU worker; a JAX call on the device; a progress message
to another process; any 200 system calls)? The tool's sampler now leaves each sample's first call untimed. One process,
thresholds set by mallopt at start as the worker sets them, the backend up. Prints one JSON line.

    python benchmarks/tpu_kept_samples_probe.py [--shape 4096x1024]
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import sys
import time
import timeit

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

libc = ctypes.CDLL("libc.so.6")
MALLOPT = [libc.mallopt(-3, 1 << 30), libc.mallopt(-1, 1 << 30)]

import numpy as np  # noqa: E402


def f_np(x):
    mu = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5)


def per_call_timeit(x) -> float:
    """%timeit: autorange, seven repeats, the median per-loop time."""
    timer = timeit.Timer(lambda: f_np(x))
    loops, _ = timer.autorange()
    return sorted(t / loops for t in timer.repeat(7, loops))[3]


def one_by_one(x, calls: int, between=None) -> list[float]:
    """Each call timed alone; ``between()`` untimed before each call."""
    out = []
    for _ in range(calls):
        if between is not None:
            between()
        start = time.perf_counter()
        f_np(x)
        out.append(time.perf_counter() - start)
    return out


def summary(stats) -> dict:
    """The tool's Stats as the probe prints them."""
    return {"median": stats.median_s, "min": stats.min_s, "loops": stats.loops, "n": stats.n}


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--shape", default="4096x1024")
    shape = tuple(int(n) for n in p.parse_args().shape.split("x"))

    import jax
    import jax.numpy as jnp

    from jaxcompare.engine.common.load import SampleWatch
    from jaxcompare.engine.worker.timing import bound_call, sample
    from jaxcompare.model.spec import TimingConfig

    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    x_dev = jax.device_put(x)
    f_jit = jax.jit(lambda a: (a - a.mean(-1, keepdims=True)) / jnp.sqrt(a.var(-1, keepdims=True) + 1e-5))
    f_jit(x_dev).block_until_ready()
    watch = SampleWatch(len(os.sched_getaffinity(0)), per_block=10**6)

    def watched() -> None:
        watch.begin()
        watch.end()

    out: dict = {"mallopt": MALLOPT, "backend": jax.default_backend(), "shape": list(shape),
                 "threads": len(os.listdir("/proc/self/task"))}
    out["timeit_s"] = per_call_timeit(x)
    careful = TimingConfig.preset("careful")
    for name, kwargs in (("tool_sample_s", {}), ("tool_sample_watched_s", {"watch": SampleWatch(
            len(os.sched_getaffinity(0)), per_block=10**6)})):
        stats = sample(bound_call(f_np, (x,)), careful, **kwargs)
        out[name] = summary(stats)
    # What between samples slows the next call: a message to another process (the worker's progress), the
    # watch's listing of the threads, its reads of their schedstat, or any 200 system calls.
    import subprocess

    reader = subprocess.Popen([sys.executable, "-c", "import sys\nwhile sys.stdin.buffer.read(64): pass"],
                              stdin=subprocess.PIPE)
    fds = []
    for tid in os.listdir("/proc/self/task"):
        try:
            fds.append(os.open(f"/proc/self/task/{tid}/schedstat", os.O_RDONLY))
        except OSError:  # a thread that ended since the listing (one of libtpu's did)
            pass

    def send() -> None:
        reader.stdin.write(b"p" * 64)
        reader.stdin.flush()

    out["calls_after_send_s"] = one_by_one(x, 12, send)
    out["calls_after_listdir_s"] = one_by_one(x, 12, lambda: os.listdir("/proc/self/task"))
    out["calls_after_preads_s"] = one_by_one(x, 12, lambda: [os.pread(fd, 128, 0) for fd in fds])
    out["calls_after_getpid_s"] = one_by_one(x, 12, lambda: [os.getppid() for _ in range(len(fds))])
    # The tool's sampler with a message between samples, as the worker's progress: it leaves each sample's
    # first call untimed now, so this row reads as if nothing came between them when that works.
    stats = sample(bound_call(f_np, (x,)), careful, on_sample=lambda n: send())
    out["tool_sample_progress_s"] = summary(stats)
    reader.stdin.close()
    reader.wait()
    for fd in fds:
        os.close(fd)
    out["calls_in_a_row_s"] = one_by_one(x, 12)
    out["calls_after_watch_s"] = one_by_one(x, 12, watched)
    out["calls_after_tpu_call_s"] = one_by_one(x, 12, lambda: f_jit(x_dev).block_until_ready())
    out["calls_after_python_garbage_s"] = one_by_one(x, 12, lambda: [str(i) for i in range(2000)])
    out["timeit_again_s"] = per_call_timeit(x)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
