"""Which JAX build this machine needs: `make install` asks before it installs, and checks after.

    python3 tools/accelerator.py choose   # prints the pip requirement (jax, jax[cuda12], ...)
    python3 tools/accelerator.py verify   # after install: does JAX see what was chosen?

``ACCEL=cpu|cuda12|cuda13|tpu`` overrides the detection. Standard library only: this runs
before the virtual environment exists.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys

CHOICES = {"cpu": "jax", "cuda12": "jax[cuda12]", "cuda13": "jax[cuda13]", "tpu": "jax[tpu]"}
BACKEND = {"cpu": "cpu", "cuda12": "gpu", "cuda13": "gpu", "tpu": "tpu"}


def _nvidia_smi(*args: str) -> str | None:
    exe = shutil.which("nvidia-smi")
    if not exe:
        return None
    try:
        proc = subprocess.run([exe, *args], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout if proc.returncode == 0 else None


# The CUDA version the driver supports, as the screen prints it: "CUDA Version: 12.8" up to R580;
# R610 prints "KMD Version: ...  CUDA UMD Version: 13.3" instead. `nvidia-smi -q` spaces it "CUDA Version : 12.8".
CUDA_VERSION = re.compile(r"CUDA (?:UMD )?Version\s*:\s*(\d+)\.(\d+)")
# Where nvidia-smi could not load the driver's CUDA library (libcuda): "N/A" on the screen, "Not Found" in -q.
CUDA_MISSING = re.compile(r"CUDA (?:UMD )?Version\s*:\s*(?:N/A|Not Found)")


def cuda_version(text: str) -> tuple[int, int] | None:
    match = CUDA_VERSION.search(text)
    return (int(match.group(1)), int(match.group(2))) if match else None


def nvidia_choice(listing: str, screen: str, query: str | None = None) -> tuple[str, str]:
    """(choice, why) from `nvidia-smi -L`, the plain `nvidia-smi` screen and, where the screen
    names no CUDA version, `nvidia-smi -q`."""
    lines = listing.splitlines()
    gpus = sum(line.startswith("GPU ") for line in lines)
    if not gpus:
        return "cpu", "no NVIDIA GPU (nvidia-smi)"
    # MIG instances are listed indented under their GPU: they are slices of it, not more GPUs.
    migs = sum(line.strip().startswith("MIG ") for line in lines)
    found = f"{gpus} NVIDIA GPU(s)" + (f" ({migs} MIG device(s))" if migs else "")
    version = cuda_version(screen) or cuda_version(query or "")
    if version is None:
        if CUDA_MISSING.search(screen) or CUDA_MISSING.search(query or ""):
            return "cpu", (f"{found}, but nvidia-smi found no CUDA library of the driver (libcuda), which JAX's CUDA "
                           "build needs: install the driver's CUDA part (in a container, give it the GPU with the "
                           "NVIDIA Container Toolkit), or set ACCEL=cuda12 or cuda13")
        return "cpu", f"nvidia-smi lists {found} but no CUDA version; set ACCEL=cuda12 or cuda13"
    major, minor = version
    if major >= 13:
        return "cuda13", f"{found}, driver supports CUDA {major}.{minor}"
    if major == 12:
        return "cuda12", f"{found}, driver supports CUDA {major}.{minor}"
    return "cpu", (f"{found}, but the driver supports only CUDA {major}.{minor}; JAX needs a "
                   "driver for CUDA 12 or newer (update the driver, then run make again)")


def detect() -> tuple[str, str]:
    """(choice, why): an NVIDIA GPU by its driver's CUDA version, a TPU VM, else the CPU."""
    listing = _nvidia_smi("-L") or ""
    if any(line.startswith("GPU ") for line in listing.splitlines()):
        screen = _nvidia_smi() or ""
        query = None if cuda_version(screen) else _nvidia_smi("-q")
        return nvidia_choice(listing, screen, query)
    # TPU VMs expose their chips as /dev/accel* (v2-v4) or /dev/vfio/<n> (v5e and newer).
    if glob.glob("/dev/accel*") or glob.glob("/dev/vfio/[0-9]*"):
        return "tpu", "TPU devices in /dev"
    return "cpu", "no NVIDIA GPU (nvidia-smi) and no TPU found"


def choose() -> tuple[str, str]:
    forced = os.environ.get("ACCEL", "").strip().lower()
    if forced:
        if forced not in CHOICES:
            raise SystemExit(f"accelerator: ACCEL={forced!r}: expected one of {', '.join(CHOICES)}")
        return forced, "ACCEL set"
    return detect()


def main(argv: list[str]) -> int:
    command = argv[0] if argv else "choose"
    choice, why = choose()
    if command == "choose":
        print(f"accelerator: {choice} ({why}) -> pip install '{CHOICES[choice]}'", file=sys.stderr)
        print(CHOICES[choice])
        return 0
    if command == "verify":
        if choice == "cpu":
            return 0
        code = "import jax; print(jax.default_backend())"
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        backend = proc.stdout.strip() or "none"
        if backend != BACKEND[choice]:
            print(f"accelerator: expected JAX on the {BACKEND[choice].upper()} ({choice}: {why}), but JAX "
                  f"sees '{backend}'. Check the driver (nvidia-smi), or install for the CPU with "
                  f"ACCEL=cpu, then run make again.\n{proc.stderr.strip()[-800:]}", file=sys.stderr)
            return 1
        print(f"accelerator: JAX runs on the {backend.upper()}", file=sys.stderr)
        return 0
    raise SystemExit(f"usage: {sys.argv[0]} choose|verify")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
