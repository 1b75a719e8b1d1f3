"""`make install` picks the JAX build for the machine's accelerator: checked with fake
`nvidia-smi` programs on PATH, through the Makefile's dry run (`make install-plan`)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# nvidia-smi's own screens, listings and -q reports (README.md there says what each one is).
SMI = ROOT / "tests" / "data" / "nvidia-smi"

SMI_HEADER = """\
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI {driver}             Driver Version: {driver}     CUDA Version: {cuda}     |
|-----------------------------------------+------------------------+----------------------+
"""


def _smi_program(bin_dir: Path, *, listing: str, screen: str, query: str = "", fails: bool = False) -> None:
    """An `nvidia-smi` on PATH that prints these texts for -L, no argument and -q."""
    for name, text in (("listing", listing), ("screen", screen), ("query", query)):
        (bin_dir / f"smi-{name}.txt").write_text(text)
    script = "\n".join([
        "#!/bin/sh",
        "exit 9" if fails else "",
        f'case "$1" in -L) cat "{bin_dir}/smi-listing.txt";; -q) cat "{bin_dir}/smi-query.txt";;',
        f'  *) cat "{bin_dir}/smi-screen.txt";; esac',
        "",
    ])
    path = bin_dir / "nvidia-smi"
    path.write_text(script)
    path.chmod(0o755)


def _fake_smi(bin_dir: Path, *, gpus: int, driver: str = "", cuda: str = "", fails: bool = False) -> None:
    listing = "".join(f"GPU {i}: NVIDIA H200 (UUID: GPU-{i:08d})\n" for i in range(gpus))
    _smi_program(bin_dir, listing=listing, screen=SMI_HEADER.format(driver=driver, cuda=cuda), fails=fails)


def _recorded_smi(bin_dir: Path, listing: str, screen: str, query: str | None = None) -> None:
    _smi_program(bin_dir, listing=(SMI / listing).read_text(), screen=(SMI / screen).read_text(),
                 query=(SMI / query).read_text() if query else "")


def _make(tmp_path: Path, *args: str, accel: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {"PATH": f"{tmp_path}:/usr/bin:/bin", "HOME": str(tmp_path)}
    if accel is not None:
        env["ACCEL"] = accel
    return subprocess.run(["make", "-s", "--no-print-directory", *args, f"PYTHON={shutil.which('python3')}"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)


def _plan(tmp_path: Path, accel: str | None = None) -> subprocess.CompletedProcess[str]:
    return _make(tmp_path, "install-plan", accel=accel)


def _requirement(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip().split()[-1].strip("'")


@pytest.mark.parametrize(("listing", "screen", "want", "said"), [
    ("h100-535.104.12-L.txt", "h100-535.104.12-cuda12.3.txt", "jax[cuda12]",
     "8 NVIDIA GPU(s), driver supports CUDA 12.3"),
    ("h200-L.txt", "h200-570.124.06-cuda12.8.txt", "jax[cuda12]", "1 NVIDIA GPU(s), driver supports CUDA 12.8"),
    # From R580 the rule under the header is +---+, not |---|: the version is read all the same.
    ("h200-L.txt", "h200-580.65.06-cuda13.0.txt", "jax[cuda13]", "1 NVIDIA GPU(s), driver supports CUDA 13.0"),
    # R610 names the kernel and user-mode drivers apart: "CUDA UMD Version", no "CUDA Version:".
    ("h200-L.txt", "h200-610.43.02-umd13.3.txt", "jax[cuda13]", "1 NVIDIA GPU(s), driver supports CUDA 13.3"),
    # Recorded on an H200 (driver 580.159.04) by tools/record_hardware.py: the real screen and listing.
    ("h200-580.159.04-L.txt", "h200-580.159.04-cuda13.0.txt", "jax[cuda13]",
     "1 NVIDIA GPU(s), driver supports CUDA 13.0"),
    # MIG instances listed under GPU 0 are slices of it, not more GPUs.
    ("h100-mig-L.txt", "h100-mig-570.124.06-cuda12.8.txt", "jax[cuda12]",
     "2 NVIDIA GPU(s) (3 MIG device(s)), driver supports CUDA 12.8"),
])
def test_recorded_nvidia_smi_output_picks_the_cuda_build(tmp_path, listing, screen, want, said):
    _recorded_smi(tmp_path, listing, screen)
    proc = _plan(tmp_path)
    assert _requirement(proc) == want
    assert f"({said})" in proc.stderr  # the choice is said, with its reason
    assert "'.[app,cuda]'" in proc.stdout  # NVML's bindings come with the CUDA build


def test_without_the_drivers_cuda_library_the_cpu_build_is_chosen_and_the_fix_is_said(tmp_path):
    """A container without libcuda: the screen says "CUDA Version: N/A", -q "CUDA Version : Not Found"."""
    _recorded_smi(tmp_path, "h100-570.124.06-L.txt", "h100-570.124.06-cuda-na.txt",
                  "h100-570.124.06-q-cuda-not-found.txt")
    proc = _plan(tmp_path)
    assert _requirement(proc) == "jax" and "'.[app]'" in proc.stdout
    assert "1 NVIDIA GPU(s), but nvidia-smi found no CUDA library of the driver (libcuda)" in proc.stderr
    assert "NVIDIA Container Toolkit" in proc.stderr and "ACCEL=cuda12 or cuda13" in proc.stderr


def test_the_recorded_h200_query_names_the_same_cuda_version(tmp_path):
    """The real -q report of that H200, read where a screen names no version: CUDA 13.0 again."""
    _smi_program(tmp_path, listing=(SMI / "h200-580.159.04-L.txt").read_text(), screen="",
                 query=(SMI / "h200-580.159.04-q.txt").read_text())
    proc = _plan(tmp_path)
    assert _requirement(proc) == "jax[cuda13]"
    assert "driver supports CUDA 13.0" in proc.stderr


def test_a_screen_without_a_cuda_version_is_answered_by_the_query(tmp_path):
    """Where the screen names no version, `nvidia-smi -q` is asked, in its own spacing."""
    query = (SMI / "h100-570.124.06-q-cuda-not-found.txt").read_text().replace("Not Found", "12.8")
    _smi_program(tmp_path, listing=(SMI / "h100-570.124.06-L.txt").read_text(), screen="", query=query)
    proc = _plan(tmp_path)
    assert _requirement(proc) == "jax[cuda12]" and "driver supports CUDA 12.8" in proc.stderr


@pytest.mark.parametrize(("cuda", "driver", "want"), [
    ("12.2", "535.104.05", "jax[cuda12]"),
    ("13.0", "580.65.06", "jax[cuda13]"),
])
def test_nvidia_driver_picks_the_cuda_build(tmp_path, cuda, driver, want):
    _fake_smi(tmp_path, gpus=2, driver=driver, cuda=cuda)
    proc = _plan(tmp_path)
    assert _requirement(proc) == want
    assert f"CUDA {cuda}" in proc.stderr


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


@pytest.mark.parametrize(("accel", "want"), [("cuda12", "jax[cuda12]"), ("cpu", "jax")])
def test_accel_on_makes_command_line_overrides_the_detection_too(tmp_path, accel, want):
    """`make run ACCEL=cuda12` acts as `ACCEL=cuda12 make run`: make hands $(shell) only its
    environment, so the Makefile passes ACCEL on itself. The dry run of `make run` shows the
    build it would install and the stamp it would write."""
    _recorded_smi(tmp_path, "h200-L.txt", "h200-580.65.06-cuda13.0.txt")  # detection alone says cuda13
    assert _requirement(_make(tmp_path, "install-plan", f"ACCEL={accel}")) == want
    proc = _make(tmp_path, "-n", "run", f"ACCEL={accel}", "VENV=" + str(tmp_path / "venv"))
    assert proc.returncode == 0, proc.stderr
    stamp = want.replace("[", "-").replace("]", "")
    assert f"'{want}'" in proc.stdout and f"touch {tmp_path}/venv/.installed-{stamp}" in proc.stdout
    assert "cuda13" not in proc.stdout


def test_an_unknown_accel_is_refused_with_the_choices(tmp_path):
    proc = _plan(tmp_path, "rocm")
    assert proc.returncode != 0
    assert "expected one of cpu, cuda12, cuda13, tpu" in proc.stderr


def test_versions_environments_install_the_build_make_install_chose(monkeypatch):
    """`jaxcompare versions` makes its environments from the platform table's builds (model/platforms.py),
    `make install` from tools/accelerator.py, which runs before any package exists: the two must agree on
    every ACCEL, its requirement and its platform."""
    import importlib.util

    from jaxcompare.engine.server import envs
    from jaxcompare.model.platforms import PLATFORMS

    spec = importlib.util.spec_from_file_location("accelerator", ROOT / "tools" / "accelerator.py")
    tools = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tools)
    assert sorted(tools.CHOICES) == list(envs._ACCELS)
    for accel, requirement in tools.CHOICES.items():
        monkeypatch.setenv("ACCEL", accel)
        assert envs.host_accelerator() == accel
        assert envs.jax_requirement("0.4.35", accel) == f"{requirement}==0.4.35"
        assert [name for name, found in PLATFORMS.items() if accel in {b.name for b in found.builds}] == \
            [tools.BACKEND[accel]]
    monkeypatch.setenv("ACCEL", "rocm")
    with pytest.raises(envs.BadInput, match="expected one of cpu, cuda12, cuda13, tpu"):
        envs.host_accelerator()
