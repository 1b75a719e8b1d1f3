"""Published peak throughput of accelerators, and the ceiling that applies to a computation.

Every number is a vendor's dense figure (no structured sparsity): where a datasheet gives
only "with sparsity" figures, the table holds half of them and the comment says so. Rates are
FLOP/s, bandwidths bytes/s (decimal units, as vendors publish them). A value is None where it
could not be confirmed against the vendor's table; None means "unknown", never "zero".

``fp64`` is the FP64 Tensor Core figure on parts that have one (A100, H100, H200, B200):
cuBLAS runs DGEMM on those units, so that is the ceiling a float64 matmul meets. ``fp32`` is
the non-tensor (CUDA core) rate; ``tf32`` and ``bf16`` are tensor-core rates. TPUs: Google
publishes bf16 peaks only, so their fp32 and fp64 are None; a float32 product at a higher matmul
precision is held to the bf16 peak over its passes, a derived rate (peak_for, is_derived).

Standard library only: this module sits in the model layer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

__all__ = ["DevicePeak", "lookup", "peak_for", "bandwidth_for", "known_devices", "is_derived"]

_T = 1e12  # tera
_P = 1e15  # peta
_GB = 1e9  # bytes/s per GB/s


@dataclass(frozen=True)
class DevicePeak:
    """Published dense peaks of one accelerator; None where not confirmed."""

    name: str
    fp64: float | None = None
    fp32: float | None = None
    tf32: float | None = None
    bf16: float | None = None
    memory_bandwidth: float | None = None


@dataclass(frozen=True)
class _Entry:
    """A table row: the peaks, the device_kind token patterns that select it, and its family."""

    peak: DevicePeak
    # Each pattern is a set of tokens that must all appear in the normalised device_kind;
    # the entry whose matching pattern is longest wins, so "H100 PCIE" beats "H100".
    patterns: tuple[tuple[str, ...], ...]
    family: Literal["nvidia", "tpu"]
    # NVIDIA Ampere and newer: XLA runs float32 dots on TF32 tensor cores at "default" precision.
    tf32_default: bool = False
    # Tokens that rule the entry out (e.g. a "TI" or "LAPTOP" variant with other peaks).
    excludes: tuple[str, ...] = ()


def _nv(name: str, fp64: float | None, fp32: float | None, tf32: float | None, bf16: float | None,
        bw: float | None, *patterns: tuple[str, ...], tf32_default: bool = True,
        excludes: tuple[str, ...] = ()) -> _Entry:
    """An NVIDIA row."""
    return _Entry(DevicePeak(name, fp64, fp32, tf32, bf16, bw), patterns, "nvidia", tf32_default, excludes)


def _tpu(name: str, bf16: float, bw: float, *patterns: tuple[str, ...],
         excludes: tuple[str, ...] = ()) -> _Entry:
    """A Google TPU row (per chip; Google publishes no fp32/fp64 peaks)."""
    return _Entry(DevicePeak(name, None, None, None, bf16, bw), patterns, "tpu", False, excludes)


_TABLE: tuple[_Entry, ...] = (
    # ---- NVIDIA data centre ----  name, fp64, fp32, tf32, bf16, bandwidth, patterns
    # NVIDIA HGX B200 spec table, per-GPU column; "FP64/FP64 Tensor Core" 37 TF; TF32/BF16 halved from sparse
    _nv("B200", 37 * _T, 75 * _T, 2.2 * _P / 2, 4.5 * _P / 2, 7.7e12, ("B200",)),
    # NVIDIA H200 datasheet, SXM column (same compute as H100 SXM); TF32/BF16 halved from sparse
    _nv("H200", 67 * _T, 67 * _T, 989 * _T / 2, 1979 * _T / 2, 4.8e12, ("H200",)),
    # NVIDIA H200 datasheet, NVL column: only the 4.8 TB/s confirmed (FP64 Tensor Core/TF32/BF16 not)
    _nv("H200 NVL", None, None, None, None, 4.8e12, ("H200", "NVL")),
    # NVIDIA H100 datasheet, SXM5 column; TF32/BF16 halved from sparse
    _nv("H100 SXM", 67 * _T, 67 * _T, 989 * _T / 2, 1979 * _T / 2, 3.35e12, ("H100",)),
    # NVIDIA H100 datasheet, PCIe column; TF32/BF16 halved from sparse
    _nv("H100 PCIe", 51 * _T, 51 * _T, 756 * _T / 2, 1513 * _T / 2, 2.0e12, ("H100", "PCIE")),
    # NVIDIA H100 datasheet, NVL column: nothing confirmed
    _nv("H100 NVL", None, None, None, None, None, ("H100", "NVL")),
    # NVIDIA GH200 datasheet: nothing confirmed (bandwidth also differs between HBM3 and HBM3e)
    _nv("GH200", None, None, None, None, None, ("GH200",)),
    # NVIDIA A100 datasheet, 40GB SXM column (dense column given; FP64 Tensor Core 19.5 TF)
    _nv("A100 SXM4 40GB", 19.5 * _T, 19.5 * _T, 156 * _T, 312 * _T, 1555 * _GB, ("A100",)),
    # NVIDIA A100 datasheet, 80GB SXM column
    _nv("A100 SXM4 80GB", 19.5 * _T, 19.5 * _T, 156 * _T, 312 * _T, 2039 * _GB, ("A100", "80GB")),
    # NVIDIA A100 datasheet, 40GB PCIe column (same peaks as SXM)
    _nv("A100 PCIe 40GB", 19.5 * _T, 19.5 * _T, 156 * _T, 312 * _T, 1555 * _GB, ("A100", "PCIE")),
    # NVIDIA A100 datasheet, 80GB PCIe column
    _nv("A100 PCIe 80GB", 19.5 * _T, 19.5 * _T, 156 * _T, 312 * _T, 1935 * _GB, ("A100", "PCIE", "80GB")),
    # NVIDIA A30 datasheet: nothing confirmed
    _nv("A30", None, None, None, None, None, ("A30",)),
    # NVIDIA A10 datasheet: nothing confirmed
    _nv("A10", None, None, None, None, None, ("A10",)),
    # AWS A10G (no NVIDIA datasheet): nothing confirmed
    _nv("A10G", None, None, None, None, None, ("A10G",)),
    # NVIDIA L40S datasheet (dense column given; TF32 183 = 366 sparse / 2); FP64 not published
    _nv("L40S", None, 91.6 * _T, 183 * _T, 362.05 * _T, 864 * _GB, ("L40S",)),
    # NVIDIA L40 datasheet (dense column given); FP64 not published
    _nv("L40", None, 90.5 * _T, 90.5 * _T, 181.05 * _T, 864 * _GB, ("L40",)),
    # NVIDIA L4 datasheet, TF32/BF16 halved from sparse (120, 242); FP64 0.5 TF from Google Cloud GPU table
    _nv("L4", 0.5 * _T, 30.3 * _T, 120 * _T / 2, 242 * _T / 2, 300 * _GB, ("L4",)),
    # NVIDIA V100 datasheet, SXM2 column (no TF32/BF16 tensor cores)
    _nv("V100 SXM2", 7.8 * _T, 15.7 * _T, None, None, 900 * _GB, ("V100",), tf32_default=False),
    # NVIDIA V100 datasheet, PCIe column
    _nv("V100 PCIe", 7 * _T, 14 * _T, None, None, 900 * _GB, ("V100", "PCIE"), tf32_default=False),
    # NVIDIA T4 datasheet (no TF32/BF16); FP64 0.25 TF from Google Cloud GPU table
    _nv("T4", 0.25 * _T, 8.1 * _T, None, None, 320 * _GB, ("T4",), tf32_default=False),
    # ---- NVIDIA workstation and GeForce ----
    # NVIDIA RTX 6000 Ada spec page: FP32 and bandwidth; TF32/BF16 not confirmed
    _nv("RTX 6000 Ada", None, 91.1 * _T, None, None, 960 * _GB, ("RTX", "6000", "ADA")),
    # NVIDIA RTX A6000 spec (PNY board page): bandwidth only confirmed
    _nv("RTX A6000", None, None, None, None, 768 * _GB, ("RTX", "A6000")),
    # NVIDIA GeForce RTX 4090 spec: FP32 and bandwidth; TF32/BF16 not confirmed
    _nv("RTX 4090", None, 82.6 * _T, None, None, 1008 * _GB, ("RTX", "4090"), excludes=("D", "LAPTOP", "MOBILE")),
    # NVIDIA GeForce RTX 3090 spec: nothing confirmed
    _nv("RTX 3090", None, None, None, None, None, ("RTX", "3090"), excludes=("TI", "LAPTOP", "MOBILE")),
    # ---- Google TPU (per chip) ----
    # Google Cloud TPU v4 docs: 275 TFLOPs bf16, HBM2 1200 GBps
    _tpu("TPU v4", 275 * _T, 1200 * _GB, ("TPU", "V4"), excludes=("LITE",)),
    # Google Cloud TPU v5e docs: 197 TFLOPs bf16, HBM2 819 GBps (a newer page says 800 GiBps)
    _tpu("TPU v5e", 197 * _T, 819 * _GB, ("TPU", "V5E"), ("TPU", "V5", "LITE")),
    # Google Cloud TPU v5p docs: 459 TFLOPs bf16, HBM2e 2765 GBps; JAX may report plain "TPU v5"
    _tpu("TPU v5p", 459 * _T, 2765 * _GB, ("TPU", "V5P"), ("TPU", "V5")),
    # Google Cloud TPU v6e (Trillium) docs: 918 TFLOPs bf16, HBM 1638 GBps
    _tpu("TPU v6e", 918 * _T, 1638 * _GB, ("TPU", "V6E"), ("TPU", "V6", "LITE")),
)


def _tokens(device_kind: str) -> frozenset[str]:
    """Upper-case words of a device_kind, split on spaces, dashes, underscores and slashes."""
    return frozenset(re.split(r"[\s\-_/]+", device_kind.strip().upper())) - {""}


def _find(device_kind: str) -> _Entry | None:
    """The most specific table row for a device_kind, or None."""
    words = _tokens(device_kind)
    best: _Entry | None = None
    best_score = 0
    for entry in _TABLE:
        if words & set(entry.excludes):
            continue
        score = max((len(p) for p in entry.patterns if words.issuperset(p)), default=0)
        if score > best_score:
            best, best_score = entry, score
    return best


def lookup(device_kind: str) -> DevicePeak | None:
    """Peaks for a JAX ``device.device_kind`` such as "NVIDIA H100 PCIe" or "TPU v5 lite"."""
    entry = _find(device_kind)
    return entry.peak if entry else None


def known_devices() -> tuple[DevicePeak, ...]:
    """Every row of the table, in table order."""
    return tuple(entry.peak for entry in _TABLE)


_DTYPES = {"float64": "float64", "f64": "float64", "double": "float64",
           "float32": "float32", "f32": "float32", "single": "float32"}
# JAX's names for matmul precision (jax.lax.Precision): "bfloat16"/"fastest" are DEFAULT,
# "bfloat16_3x"/"tensorfloat32" HIGH, "float32" HIGHEST.
_PRECISIONS = {"default": "default", "fastest": "default", "bfloat16": "default",
               "high": "high", "bfloat16_3x": "high", "tensorfloat32": "high",
               "highest": "highest", "float32": "highest"}
# A TPU runs a float32 product at HIGH as three bfloat16 passes and at HIGHEST as six (jax.lax.Precision),
# so its rate there is its published bf16 peak over the passes: derived here, published by no vendor.
TPU_PASSES = {"default": 1, "high": 3, "highest": 6}
DERIVED_LABELS = frozenset(f"BF16/{n}" for n in TPU_PASSES.values() if n > 1)


def is_derived(label: str) -> bool:
    """Whether a ceiling's label names a rate derived from a published one (BF16/3, BF16/6)."""
    return label in DERIVED_LABELS


def peak_for(device_kind: str, dtype: str, matmul_precision: str = "default") -> tuple[float, str] | None:
    """The compute ceiling for a float32/float64 computation on a device, and its label.

    float64 -> FP64. float32 on a TPU: BF16 at "default" (one bf16 pass), and derived from it at
    "high" (BF16/3: three passes) and "highest" (BF16/6: six), since Google publishes no fp32 peak.
    float32 on NVIDIA: FP32 at "highest"; TF32 at "default" and "high" on Ampere and newer (XLA
    uses TF32 for float32 dots there, jax.lax.Precision), else FP32.
    None when the device, the dtype or that peak is unknown. An unknown precision is an error.
    """
    precision = _PRECISIONS.get(str(matmul_precision).strip().lower())
    if precision is None:
        raise ValueError(f"matmul_precision must be one of {sorted(_PRECISIONS)}, not {matmul_precision!r}")
    kind = _DTYPES.get(str(dtype).strip().lower())
    entry = _find(device_kind)
    if kind is None or entry is None:
        return None
    peak = entry.peak
    if kind == "float64":
        value, label = peak.fp64, "FP64"
    elif entry.family == "tpu":
        passes = TPU_PASSES[precision]
        value = peak.bf16 / passes if peak.bf16 is not None else None
        label = "BF16" if passes == 1 else f"BF16/{passes}"
    elif precision == "highest":
        value, label = peak.fp32, "FP32"
    elif entry.tf32_default:
        value, label = peak.tf32, "TF32"
    else:
        value, label = peak.fp32, "FP32"
    return (value, label) if value is not None else None


def bandwidth_for(device_kind: str) -> float | None:
    """The published memory (HBM) bandwidth of an accelerator in bytes/s, the roofline's memory
    ceiling; None when the device or its bandwidth is not in the table."""
    entry = _find(device_kind)
    return entry.peak.memory_bandwidth if entry else None
