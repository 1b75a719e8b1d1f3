"""Probe (not part of the tool): what in the worker's setting moves NumPy's kept figure and the
back-to-back loop on the TPU host. Plain JAX and NumPy only; run with MALLOC_* at 1 GiB."""
import json
import sys
import threading
import time
import timeit

import numpy as np


def per_call(stmt, n):
    t = timeit.Timer(stmt)
    return sorted(x / n for x in t.repeat(7, n))[3]

def f_np(x):
    mu = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5)

out = {}
xl = np.ones((4096, 1024), dtype=np.float32)
xr = np.random.default_rng(0).standard_normal((4096, 1024), dtype=np.float32)
out["ln_ones_before"] = per_call(lambda: f_np(xl), 20)
out["ln_rand_before"] = per_call(lambda: f_np(xr), 20)
import jax  # noqa: E402 (NumPy timed first without, then with, the backend up)

dev = jax.devices()[0]
out["device"] = str(dev)
out["ln_ones_after"] = per_call(lambda: f_np(xl), 20)
out["ln_rand_after"] = per_call(lambda: f_np(xr), 20)

def f(x):
    return x.T @ (x - x.mean(axis=0))
N = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
x_np = np.ones((N, N), dtype=np.float32)
f_jit = jax.jit(f)
u = jax.block_until_ready(jax.device_put(x_np))
c = jax.block_until_ready(jax.device_put(x_np, dev))
f_jit(u).block_until_ready()
f_jit(c).block_until_ready()

def b2b(x):
    def loop():
        y = None
        for _ in range(200):
            y = f_jit(x)
        y.block_until_ready()
    return per_call(loop, 3) / 200

def rounds(tag):
    for _ in range(3):
        for name, x in (("u", u), ("c", c)):
            out.setdefault(f"b2b_{tag}_{name}", []).append(b2b(x))
    out[f"blocked_{tag}_u"] = per_call(lambda: f_jit(u).block_until_ready(), 50)
    out[f"blocked_{tag}_c"] = per_call(lambda: f_jit(c).block_until_ready(), 50)

rounds("plain")
jax.config.update("jax_default_device", dev)
rounds("default_device")
stop = False
def watch():
    while not stop:
        time.sleep(0.2)
threading.Thread(target=watch, daemon=True).start()
rounds("watcher")
out["ln_rand_end"] = per_call(lambda: f_np(xr), 20)
print(json.dumps(out))
