"""`make install` picks the JAX build for the machine's accelerator: checked with fake
`nvidia-smi` programs on PATH, through the Makefile's dry run (`make install-plan`)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

SMI_HEADER = """\
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI {driver}             Driver Version: {driver}     CUDA Version: {cuda}     |
|-----------------------------------------+------------------------+----------------------+
"""


def _fake_smi(bin_dir: Path, *, gpus: int, driver: str = "", cuda: str = "", fails: bool = False) -> None:
    listing = "\n".join(f"GPU {i}: NVIDIA H200 (UUID: GPU-{i:08d})" for i in range(gpus))
    script = "\n".join([
        "#!/bin/sh",
        "exit 9" if fails else "",
        f"if [ \"$1\" = \"-L\" ]; then printf '%s\\n' '{listing}'; exit 0; fi",
        "cat <<'SMI'",
        SMI_HEADER.format(driver=driver, cuda=cuda) + "SMI",
        "",
    ])
    path = bin_dir / "nvidia-smi"
    path.write_text(script)
    path.chmod(0o755)


def _plan(tmp_path: Path, accel: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {"PATH": f"{tmp_path}:/usr/bin:/bin", "HOME": str(tmp_path)}
    if accel is not None:
        env["ACCEL"] = accel
    return subprocess.run(["make", "-s", "--no-print-directory", "install-plan", f"PYTHON={shutil.which('python3')}"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)


def _requirement(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip().split()[-1].strip("'")


@pytest.mark.parametrize(("cuda", "driver", "want"), [
    ("12.2", "535.104.05", "jax[cuda12]"),
    ("12.8", "570.86.10", "jax[cuda12]"),
    ("13.0", "580.65.06", "jax[cuda13]"),
])
def test_nvidia_driver_picks_the_cuda_build(tmp_path, cuda, driver, want):
    _fake_smi(tmp_path, gpus=2, driver=driver, cuda=cuda)
    proc = _plan(tmp_path)
    assert _requirement(proc) == want
    assert f"CUDA {cuda}" in proc.stderr  # the choice is said, with its reason


def test_a_driver_too_old_for_jax_falls_back_to_cpu_and_says_why(tmp_path):
    _fake_smi(tmp_path, gpus=1, driver="470.57.02", cuda="11.4")
    proc = _plan(tmp_path)
    assert _requirement(proc) == "jax"
    assert "only CUDA 11.4" in proc.stderr and "update the driver" in proc.stderr


@pytest.mark.parametrize("smi", ["none", "no-gpus", "broken"])
def test_no_usable_gpu_means_the_cpu_build(tmp_path, smi):
    if smi != "none":
        _fake_smi(tmp_path, gpus=0, driver="535.104.05", cuda="12.2", fails=smi == "broken")
    assert _requirement(_plan(tmp_path)) == "jax"


@pytest.mark.parametrize(("accel", "want"), [("cpu", "jax"), ("cuda12", "jax[cuda12]"), ("cuda13", "jax[cuda13]"),
                                             ("tpu", "jax[tpu]")])
def test_accel_overrides_the_detection(tmp_path, accel, want):
    _fake_smi(tmp_path, gpus=1, driver="580.65.06", cuda="13.0")
    assert _requirement(_plan(tmp_path, accel)) == want


def test_an_unknown_accel_is_refused_with_the_choices(tmp_path):
    proc = _plan(tmp_path, "rocm")
    assert proc.returncode != 0
    assert "expected one of cpu, cuda12, cuda13, tpu" in proc.stderr
