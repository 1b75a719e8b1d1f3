"""engine.worker.memory.keep_freed_memory: a measuring process reuses the memory each call frees, so a
NumPy call is timed at one speed instead of two that depend on the heap's history (page faults)."""

from __future__ import annotations

import platform
import subprocess
import sys

import pytest

# Allocate and free a 40 MB array, above glibc's largest dynamic mmap threshold (32 MiB), so by
# default every round maps fresh pages and faults each of them in; print the faults after round 1.
ROUNDS = """
import resource, sys
import numpy as np
if sys.argv[1] == "keep":
    from jaxcompare.engine.worker.memory import keep_freed_memory
    assert keep_freed_memory()
np.ones(5_000_000).sum()
start = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(10):
    np.ones(5_000_000).sum()
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - start)
"""


def faults(mode: str) -> int:
    out = subprocess.run([sys.executable, "-c", ROUNDS, mode], capture_output=True, text=True, timeout=120, check=True)
    return int(out.stdout.strip())


GLIBC = platform.libc_ver()[0] == "glibc"


@pytest.mark.skipif(not GLIBC, reason="glibc's mallopt")
def test_freed_memory_is_reused_instead_of_faulted_in_again():
    default, kept = faults("default"), faults("keep")
    # By default each round faults its 40 MB in again: 19 huge pages at the least (NumPy asks for 2 MiB
    # pages), 9766 small ones at most (measured: 568 a round); kept, the rounds reuse round 1's pages.
    assert default >= 10 * 19, default
    assert kept < default / 20, (kept, default)


def test_a_result_records_whether_freed_memory_was_kept():
    from jaxcompare import Spec, TimingConfig
    from jaxcompare.engine.worker.measure import measure
    from jaxcompare.engine.worker.memory import keep_freed_memory

    r = measure(Spec("elementwise", (1000,), timing=TimingConfig.quick()), recheck=False)
    assert r.env["freed_memory_kept"] is keep_freed_memory() is GLIBC
