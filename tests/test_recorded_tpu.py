"""What a TPU v5e recorded (tests/data/tpu/README.md) read by the engine: its float32 products at one
bfloat16 pass judged with that pass's tolerance, its profiler capture read as TPU kernels, and its
device check's results imported into a history."""

from __future__ import annotations

import json
from pathlib import Path

import jax
import numpy as np
import pytest

from jaxcompare.catalog import get_case
from jaxcompare.engine.agreement import compare_outputs, reduced_products, tolerance
from jaxcompare.engine.profile import summarize_file
from jaxcompare.history.store import Store
from jaxcompare.model.platforms import PLATFORMS

DATA = Path(__file__).parent / "data" / "tpu"


def recorded(precision: str) -> dict[str, dict]:
    lines = (DATA / f"selfcheck-{precision}.jsonl").read_text().splitlines()
    return {r["case"]: r for r in map(json.loads, lines) if "case" in r}


X32 = recorded("x32")
# The x32 cases whose error on the TPU was beyond float32's tolerance: those with matrix products.
BF16_CASES = sorted(name for name, r in X32.items() if r["max_rel_err"] > r["rtol"])


def lowered(name: str) -> str:
    case = get_case(name)
    inputs = case.make_inputs(case.small_shape, np.float32, np.random.default_rng(0))
    return jax.jit(case.jax_fn).lower(*inputs).as_text()


def test_the_recorded_float32_misses_are_the_cases_with_products():
    assert BF16_CASES == ["centered_gram", "convolve2d", "einsum", "matmul"]
    for name in BF16_CASES:
        # A TPU at the default matmul precision runs these products as one bfloat16 pass...
        assert reduced_products("float32", "tpu", "default", lambda n=name: lowered(n)) == "bfloat16"
        # ...but not at 'highest' (six passes), on a CPU, or in float64.
        assert reduced_products("float32", "tpu", "highest", lambda n=name: lowered(n)) is None
        assert reduced_products("float32", "cpu", "default", lambda n=name: lowered(n)) is None
        assert reduced_products("float64", "tpu", "default", lambda n=name: lowered(n)) is None
    # Cases without a product keep float32's tolerance on a TPU, and met it there.
    assert reduced_products("float32", "tpu", "default", lambda: lowered("logsumexp")) is None
    assert X32["logsumexp"]["max_rel_err"] <= X32["logsumexp"]["rtol"]


@pytest.mark.parametrize("name", BF16_CASES)
def test_a_recorded_bfloat16_error_passes_at_its_tolerance_and_not_at_float32s(name):
    record = X32[name]
    case = get_case(name)
    err = record["max_rel_err"]
    float32_rtol, _ = tolerance(case, "float32")
    bf16_rtol, _ = tolerance(case, "float32", products="bfloat16")
    assert float32_rtol < err < bf16_rtol, (err, float32_rtol, bf16_rtol)
    # The same error in an output, judged as the worker judges it: fails at float32, agrees named bfloat16.
    ref = np.random.default_rng(1).standard_normal((16, 16))
    got = ref + err * np.abs(ref).max() * 0.99 * np.eye(16)
    inputs = (ref.astype(np.float32),)
    plain = compare_outputs(case, "float32", inputs, (ref.astype(np.float32),), (got.astype(np.float32),))
    judged = compare_outputs(case, "float32", inputs, (ref.astype(np.float32),), (got.astype(np.float32),),
                             products="bfloat16")
    assert not plain["ok"] and plain["products"] is None
    assert judged["ok"] and judged["products"] == "bfloat16" and judged["tf32"] is False
    assert judged["rtol"] == bf16_rtol and PLATFORMS["tpu"].float32_products == "bfloat16"


def test_the_tpu_profile_reads_as_tpu_kernels_with_the_device_mostly_idle():
    profile = summarize_file(DATA / "tpu-centered-gram.xplane.pb")
    assert [d.name for d in profile.devices] == ["/device:TPU:0"]
    names = [op.name for op in profile.ops]
    assert "fusion" in names and profile.device_busy_s > 0
    assert profile.device_busy_s <= sum(op.time_s for op in profile.ops) + 1e-12
    # Five calls of the docs' example kept the chip busy for well under a millisecond of the capture's
    # wall time: the host round trip, not the chip, is most of a blocked call there.
    assert profile.gap_share > 0.9


def test_the_tpu_device_check_imports_into_a_fresh_history(tmp_path):
    # A TPU names its device "TPU_0(process=0,(0,0,0,0))": the import once refused it as "not a name".
    doc = json.loads((DATA / "device-check.json").read_text())
    store = Store(tmp_path / "fresh.sqlite3")
    added, skipped = store.import_file(DATA / "device-check.json")
    assert added == doc["count"] == 4 and skipped == 0
    results = store.load(store.all_ids())
    assert {r.jax.device for r in results} == {"TPU_0(process=0,(0,0,0,0))"}
    assert {r.jax.agreement["products"] for r in results} == {"bfloat16"}
    assert sorted(r.shape[0] for r in results if r.case == "matmul") == [256, 1024, 4096]
