"""Small things many test modules share and no other support module owns: the repository's root,
quick timing and a spec measured with it, the CLI as a user runs it, a message in Chinese."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from jaxcompare import Spec, TimingConfig, i18n

ROOT = Path(__file__).resolve().parents[1]
QUICK = TimingConfig.quick()
TPU_ATLAS = ROOT / "tests" / "data" / "atlas" / "tpu-v5e-jax0.10.2.json.gz"


def quick_spec(case: str = "matmul", shape: tuple[int, ...] = (8, 8), **kw) -> Spec:
    """A small spec with quick timing: for tests about running a job, not about its numbers."""
    return Spec(case, shape, timing=QUICK, **kw)


def cli(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
        timeout: float = 240) -> subprocess.CompletedProcess[str]:
    """`python -m jaxcompare ARGS` in a subprocess, importing this checkout's package from any
    ``cwd``; ``env`` adds to (or overrides) this process's environment."""
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    return subprocess.run([sys.executable, "-m", "jaxcompare", *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": path, **(env or {})}, timeout=timeout)


def zh(message: str) -> str:
    """``message`` as the Chinese app shows it."""
    with i18n.using("zh"):
        return i18n.gettext(message)


def partial_tpu_atlas():
    """The recorded TPU atlas as a run stopped partway leaves one: float64 cumsum (every size) and float64
    eigh at 1000x1000 not yet there, its plan whole (the recording itself holds every planned cell)."""
    from jaxcompare.analysis import atlas as am

    atlas = am.load(TPU_ATLAS)
    for cell_id, cell in list(atlas.cells.items()):
        key = cell.key
        if key.precision == "x64" and (key.case == "cumsum" or (key.case, key.size) == ("eigh", "large")):
            del atlas.cells[cell_id]
    return atlas
