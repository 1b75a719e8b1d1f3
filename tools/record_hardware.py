"""Record what this machine's accelerator prints, as test fixtures (tests/data/*/README.md):

    python tools/record_hardware.py OUT_DIR

writes into OUT_DIR, each file whole as the hardware or driver gave it:
- ``nvidia-smi.txt``, ``nvidia-smi-L.txt``, ``nvidia-smi-q.txt``: the three outputs
  tools/accelerator.py reads (where nvidia-smi exists);
- ``memory-stats.json``: each JAX device's platform, ``device_kind`` and ``memory_stats()``,
  once idle and once holding a 1000x1000 float32 comparison's arrays;
- ``nvml.json``: NVML's readings of the first GPU (the keys of model/clocks.py), idle and then
  right after a second of matrix products, as ClockWatch reads them around the runtime blocks;
- ``tpu.json``: a TPU's device kind, the JAX, jaxlib and libtpu versions, the backend's platform
  version and the warnings it gave while starting; ``tpu-centered-gram.xplane.pb``: a profiler
  capture of the JAX docs' example (centered Gram, 1000x1000 float32, five calls) on it.

No accelerator: it writes what it could and says what was missing. It needs JAX, pynvml and this
checkout (the readings are engine/gpu_clocks.nvml_values, as a run takes them), nothing else.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from jaxcompare.engine.worker.gpu_clocks import nvml_values  # noqa: E402


def nvidia_smi(out: Path) -> None:
    exe = shutil.which("nvidia-smi")
    if not exe:
        print("no nvidia-smi on PATH")
        return
    for suffix, args in (("", []), ("-L", ["-L"]), ("-q", ["-q"])):
        proc = subprocess.run([exe, *args], capture_output=True, text=True, timeout=60)
        (out / f"nvidia-smi{suffix}.txt").write_text(proc.stdout, encoding="utf-8")
        print(f"nvidia-smi {' '.join(args)}: exit {proc.returncode}, {len(proc.stdout.splitlines())} lines")


def devices() -> list[dict[str, Any]]:
    import jax

    rows = []
    for d in jax.devices():
        try:
            stats = d.memory_stats()
        except Exception as exc:  # noqa: BLE001 - what the backend says is the record
            stats = {"error": f"{type(exc).__name__}: {exc}"}
        rows.append({"platform": d.platform, "id": d.id, "device_kind": d.device_kind, "memory_stats": stats})
    return rows


def memory_stats(out: Path) -> None:
    import jax
    import jax.numpy as jnp
    import numpy as np

    idle = devices()
    # What the workers hold during the JAX docs' example: two 1000x1000 float32 arrays and a result.
    x = jax.device_put(np.random.default_rng(0).standard_normal((1000, 1000), dtype=np.float32))
    y = jax.block_until_ready(jnp.dot(x - x.mean(0), (x - x.mean(0)).T))
    holding = devices()
    del x, y
    doc = {"jax": jax.__version__, "idle": idle, "holding_1000x1000_float32": holding}
    (out / "memory-stats.json").write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print("devices:", ", ".join(f"{d['platform']}:{d['id']} {d['device_kind']!r}" for d in idle))


def nvml_clocks(out: Path) -> None:
    try:
        import pynvml as nvml
    except ImportError:
        print("no pynvml (pip install nvidia-ml-py)")
        return
    import jax
    import jax.numpy as jnp

    if not any(d.platform == "gpu" for d in jax.devices()):
        print("no GPU visible to JAX: no NVML readings")
        return
    nvml.nvmlInit()
    handle = nvml.nvmlDeviceGetHandleByIndex(0)
    name = nvml.nvmlDeviceGetName(handle)
    name = name.decode() if isinstance(name, bytes) else str(name)
    time.sleep(2.0)  # let the GPU fall back to idle after memory_stats' work
    before = nvml_values(nvml, handle)
    a = jnp.ones((8192, 8192), jnp.float32)
    matmul = jax.jit(lambda m: m @ m)
    jax.block_until_ready(matmul(a))
    end = time.perf_counter() + 1.0
    while time.perf_counter() < end:
        jax.block_until_ready(matmul(a))
    after = nvml_values(nvml, handle)
    doc = {"device": name, "jax_device_kind": jax.devices("gpu")[0].device_kind,
           "driver": nvml.nvmlSystemGetDriverVersion(), "before": before, "after": after}
    (out / "nvml.json").write_text(json.dumps(doc, indent=1, default=str) + "\n", encoding="utf-8")
    print(f"NVML {name}: SM {before['clock_sm_mhz']} -> {after['clock_sm_mhz']} MHz")


def tpu(out: Path) -> None:
    import importlib.metadata as metadata
    import tempfile
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        import jax

        tpus = [d for d in jax.devices() if d.platform == "tpu"]
    if not tpus:
        print("no TPU visible to JAX: no TPU record")
        return
    import jax.numpy as jnp
    import numpy as np

    versions = {}
    for name in ("jax", "jaxlib", "libtpu", "libtpu-nightly"):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    doc = {"device_kind": tpus[0].device_kind, "devices": len(tpus), "versions": versions,
           "platform_version": jax.devices()[0].client.platform_version,
           "warnings": [f"{w.category.__name__}: {w.message}" for w in caught]}
    (out / "tpu.json").write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print(f"TPU {doc['device_kind']!r} x{len(tpus)}, {versions}")
    x = jax.device_put(np.random.default_rng(0).standard_normal((1000, 1000), dtype=np.float32))
    gram = jax.jit(lambda m: jnp.dot(m - m.mean(0), (m - m.mean(0)).T))
    jax.block_until_ready(gram(x))
    with tempfile.TemporaryDirectory() as tmp:
        with jax.profiler.trace(tmp):
            for _ in range(5):
                jax.block_until_ready(gram(x))
        captures = sorted(Path(tmp).rglob("*.xplane.pb"))
        if captures:
            shutil.copy(captures[0], out / "tpu-centered-gram.xplane.pb")
            print(f"profile: {captures[0].stat().st_size} bytes")


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    nvidia_smi(out)
    memory_stats(out)
    nvml_clocks(out)
    tpu(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
