"""Accelerator peak table: device_kind matching, the ceiling for a dtype, and typo guards."""

from __future__ import annotations

import ast
import json
import math
from pathlib import Path

import pytest

from jaxcompare.model import peaks
from jaxcompare.model.peaks import DevicePeak, known_devices, lookup, peak_for


@pytest.mark.parametrize("kind, name", [
    ("NVIDIA H200", "H200"),
    ("NVIDIA H200 NVL", "H200 NVL"),
    ("NVIDIA H100 80GB HBM3", "H100 SXM"),
    ("NVIDIA H100", "H100 SXM"),
    ("NVIDIA H100 PCIe", "H100 PCIe"),
    ("NVIDIA H100 NVL", "H100 NVL"),
    ("NVIDIA GH200 480GB", "GH200"),
    ("NVIDIA B200", "B200"),
    ("NVIDIA A100-SXM4-80GB", "A100 SXM4 80GB"),
    ("NVIDIA A100-SXM4-40GB", "A100 SXM4 40GB"),
    ("NVIDIA A100-PCIE-40GB", "A100 PCIe 40GB"),
    ("NVIDIA A100 80GB PCIe", "A100 PCIe 80GB"),
    ("NVIDIA A30", "A30"),
    ("NVIDIA A10", "A10"),
    ("NVIDIA A10G", "A10G"),
    ("NVIDIA L40S", "L40S"),
    ("NVIDIA L40", "L40"),
    ("NVIDIA L4", "L4"),
    ("Tesla V100-SXM2-16GB", "V100 SXM2"),
    ("Tesla V100-PCIE-32GB", "V100 PCIe"),
    ("Tesla T4", "T4"),
    ("NVIDIA GeForce RTX 4090", "RTX 4090"),
    ("NVIDIA GeForce RTX 3090", "RTX 3090"),
    ("NVIDIA RTX 6000 Ada Generation", "RTX 6000 Ada"),
    ("NVIDIA RTX A6000", "RTX A6000"),
    ("TPU v4", "TPU v4"),
    ("TPU v5 lite", "TPU v5e"),
    ("TPU v5e", "TPU v5e"),
    ("TPU v5p", "TPU v5p"),
    ("TPU v6 lite", "TPU v6e"),
    ("TPU v6e", "TPU v6e"),
])
def test_lookup_picks_the_right_entry(kind, name):
    peak = lookup(kind)
    assert isinstance(peak, DevicePeak) and peak.name == name


# device_kind strings real GPUs and TPUs report, each with the row it must select (or none).
DEVICE_KINDS = json.loads((Path(__file__).parent / "data" / "device-kinds.json").read_text())["kinds"]


@pytest.mark.parametrize("entry", DEVICE_KINDS, ids=[e["device_kind"] for e in DEVICE_KINDS])
def test_real_device_kinds_select_their_row_or_none(entry):
    """Never a wrong row: "TPU v5" (v5p) is not "TPU v5 lite" (v5e), an H100 PCIe or NVL is not the
    SXM part, an H200 named with its memory is still the H200, a GB200 is not a B200."""
    kind, row = entry["device_kind"], entry["row"]
    peak = lookup(kind)
    assert (peak.name if peak else None) == row
    for dtype in ("float32", "float64"):
        ceiling = peak_for(kind, dtype)
        if row is None:
            assert ceiling is None
        elif ceiling is not None:  # the ceiling is that row's own figure
            assert ceiling[0] in (peak.fp64, peak.fp32, peak.tf32, peak.bf16)


def test_the_real_device_kinds_reach_distinct_rows_where_the_parts_differ():
    rows = {e["device_kind"]: e["row"] for e in DEVICE_KINDS}
    assert len({rows["TPU v5"], rows["TPU v5 lite"], rows["TPU v6 lite"], rows["TPU v4"]}) == 4
    assert len({rows["NVIDIA H100 80GB HBM3"], rows["NVIDIA H100 PCIe"], rows["NVIDIA H100 NVL"]}) == 3
    assert lookup("NVIDIA H100 PCIe").bf16 < lookup("NVIDIA H100 80GB HBM3").bf16  # the PCIe card is slower
    assert lookup("TPU v5").bf16 > lookup("TPU v5 lite").bf16


@pytest.mark.parametrize("kind", ["nvidia h100 pcie", "  NVIDIA_H100_PCIe ", "NVIDIA-H100-PCIE", "nvidia  h100\tpcie"])
def test_lookup_ignores_case_spaces_and_dashes(kind):
    assert lookup(kind).name == "H100 PCIe"


def test_pcie_and_sxm_are_different_entries():
    assert lookup("NVIDIA H100 PCIe") != lookup("NVIDIA H100 80GB HBM3")
    assert lookup("NVIDIA A100-SXM4-80GB").name.startswith("A100 SXM")
    assert lookup("NVIDIA A100-PCIE-40GB").name.startswith("A100 PCIe")


@pytest.mark.parametrize("kind", [
    "cpu", "Intel Xeon", "", "   ", "NVIDIA GeForce RTX 4090 D", "NVIDIA GeForce RTX 3090 Ti",
    "Quadro RTX 6000", "Tesla V100S-PCIE-32GB", "TPU v4 lite", "NVIDIA GB200", "AMD Instinct MI300X",
])
def test_unknown_kinds_give_none(kind):
    assert lookup(kind) is None
    assert peak_for(kind, "float32") is None


def test_peak_for_on_h200():
    h200 = lookup("NVIDIA H200")
    assert peak_for("NVIDIA H200", "float32") == (h200.tf32, "TF32")
    assert peak_for("NVIDIA H200", "float32", "highest") == (h200.fp32, "FP32")
    assert peak_for("NVIDIA H200", "float64") == (h200.fp64, "FP64")
    assert peak_for("NVIDIA H200", "float64", "highest") == (h200.fp64, "FP64")
    assert h200.tf32 > h200.fp32


def test_peak_for_on_tpu():
    v5e = lookup("TPU v5 lite")
    assert peak_for("TPU v5 lite", "float32") == (v5e.bf16, "BF16")
    assert peak_for("TPU v5e", "float32", "default") == (v5e.bf16, "BF16")
    assert peak_for("TPU v5e", "float64") is None
    # Google publishes no fp32 peak: HIGH (3 bf16 passes) and HIGHEST (6) are held to a derived share of bf16's.
    assert peak_for("TPU v5e", "float32", "high") == (pytest.approx(v5e.bf16 / 3), "BF16/3")
    assert peak_for("TPU v5e", "float32", "highest") == (pytest.approx(v5e.bf16 / 6), "BF16/6")
    assert peak_for("TPU v5e", "float32", "bfloat16_3x") == peak_for("TPU v5e", "float32", "high")


def test_high_on_an_nvidia_gpu_is_tf32_as_xla_runs_it():
    # jax.lax.Precision: HIGH on a GPU "uses tensorfloat32 where available, otherwise float32".
    h200, t4 = lookup("NVIDIA H200"), lookup("Tesla T4")
    assert peak_for("NVIDIA H200", "float32", "high") == (h200.tf32, "TF32")
    assert peak_for("NVIDIA H200", "float32", "tensorfloat32") == (h200.tf32, "TF32")
    assert peak_for("Tesla T4", "float32", "high") == (t4.fp32, "FP32")
    assert peak_for("NVIDIA H200", "float64", "high") == (h200.fp64, "FP64")


def test_peak_for_before_ampere_is_fp32():
    t4 = lookup("Tesla T4")
    assert peak_for("Tesla T4", "float32") == (t4.fp32, "FP32")
    assert peak_for("Tesla V100-SXM2-16GB", "float32") == (lookup("Tesla V100-SXM2-16GB").fp32, "FP32")


def test_peak_for_is_none_when_the_peak_is_unknown():
    # An Ampere-or-newer part without a confirmed TF32 figure: no ceiling, not the (too low) FP32 one.
    assert lookup("NVIDIA RTX 6000 Ada Generation").tf32 is None
    assert peak_for("NVIDIA RTX 6000 Ada Generation", "float32") is None
    assert peak_for("NVIDIA H100 NVL", "float64") is None


@pytest.mark.parametrize("dtype", ["int32", "bfloat16", "complex64", "float16", ""])
def test_peak_for_other_dtypes_is_none(dtype):
    assert peak_for("NVIDIA H200", dtype) is None


def test_peak_for_accepts_jax_precision_aliases_and_rejects_typos():
    assert peak_for("NVIDIA H200", "float32", "float32") == peak_for("NVIDIA H200", "float32", "highest")
    assert peak_for("NVIDIA H200", "float32", "bfloat16") == peak_for("NVIDIA H200", "float32", "default")
    assert peak_for("NVIDIA H200", "float32", "HIGHEST")[1] == "FP32"
    with pytest.raises(ValueError, match="matmul_precision"):
        peak_for("NVIDIA H200", "float32", "higest")


def test_every_number_is_positive_or_none_and_ordered():
    rows = known_devices()
    assert len({row.name for row in rows}) == len(rows)
    for row in rows:
        values = (row.fp64, row.fp32, row.tf32, row.bf16, row.memory_bandwidth)
        for value in values:
            assert value is None or (isinstance(value, float) and math.isfinite(value) and value > 0), row
        # Typo guards: tensor formats are never slower than the format they stand in for.
        if row.tf32 is not None and row.fp32 is not None:
            assert row.tf32 >= row.fp32, row
        if row.bf16 is not None and row.tf32 is not None:
            assert row.bf16 >= row.tf32, row
        # Sanity of magnitudes: FLOP/s between 1e11 and 1e17, bandwidth between 1e11 and 1e14 bytes/s.
        for value in values[:4]:
            assert value is None or 1e11 <= value <= 1e17, row
        assert row.memory_bandwidth is None or 1e11 <= row.memory_bandwidth <= 1e14, row


def test_every_entry_is_reachable_by_its_own_name():
    for row in known_devices():
        kind = row.name if row.name.startswith("TPU") else f"NVIDIA {row.name}"
        assert lookup(kind) == row, kind


def test_h200_shares_h100_sxm_compute_but_has_more_bandwidth():
    h200, h100 = lookup("NVIDIA H200"), lookup("NVIDIA H100 80GB HBM3")
    assert (h200.fp64, h200.fp32, h200.tf32, h200.bf16) == (h100.fp64, h100.fp32, h100.tf32, h100.bf16)
    assert h200.memory_bandwidth > h100.memory_bandwidth


def test_dense_figures_are_half_the_sparse_ones():
    h100 = lookup("NVIDIA H100 80GB HBM3")
    assert h100.tf32 == pytest.approx(494.5e12) and h100.bf16 == pytest.approx(989.5e12)
    a100 = lookup("NVIDIA A100-SXM4-40GB")
    assert (a100.fp64, a100.tf32, a100.bf16) == (19.5e12, 156e12, 312e12)


def test_device_peak_is_frozen():
    with pytest.raises(AttributeError):
        lookup("NVIDIA H200").fp32 = 1.0


def test_module_imports_only_the_standard_library():
    tree = ast.parse(Path(peaks.__file__).read_text())
    roots = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, "no relative imports"
            roots.add(node.module.split(".")[0])
    assert roots <= {"__future__", "re", "dataclasses", "typing"}, roots
