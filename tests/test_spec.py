"""Shape parsing and Spec validation: every bad input is a BadInput with a clear line."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from jaxcompare import BadInput, Spec, TimingConfig, parse_shape
from jaxcompare.model.spec import MIN_SAMPLES_FOR_RANGE


@pytest.mark.parametrize("text, shape", [
    ("1000x1000", (1000, 1000)), ("10", (10,)), (" 3 x 4 x 5 ", (3, 4, 5)), ("100,50", (100, 50)),
    ("(8, 8)", (8, 8)), ("1_000", (1000,)), ([4, 4], (4, 4)), ("64×64", (64, 64)), (" 500 X 500 ", (500, 500)),
    ("(1000,)", (1000,)),
])
def test_parse_shape_accepts(text, shape):
    assert parse_shape(text) == shape


@pytest.mark.parametrize("text, words", [
    ("", "empty"), ("10x-1", "positive"), ("0x5", "positive"), ("abc", "whole number"),
    ("1.5x2", "whole number"), ("1x1x1x1x1", "dimensions"), ("100000x100000x1000", "elements"),
    ([True, 3], "not a size"), ("5x5x", "missing"), ("x5", "missing"), ("5,,5", "missing"),
])
def test_parse_shape_rejects_with_reason(text, words):
    with pytest.raises(BadInput, match=words):
        parse_shape(text)


def test_spec_round_trip_and_dtype():
    spec = Spec("matmul", "100x100", precision="x64", timing=TimingConfig.quick())
    assert spec.shape == (100, 100) and spec.dtype == "float64"
    assert Spec.from_dict(spec.to_dict()) == spec


@pytest.mark.parametrize("kwargs, words", [
    ({"precision": "x16"}, "precision"), ({"device": "npu"}, "device"), ({"seed": -1}, "seed"),
    ({"case": " "}, "case"),
    ({"matmul_precision": "HIGHEST"}, "matmul precision must be one of default, high, highest"),
    ({"matmul_precision": "float32"}, "matmul precision"), ({"matmul_precision": None}, "matmul precision"),
])
def test_spec_rejects(kwargs, words):
    base = {"case": "matmul", "shape": (4, 4)} | kwargs
    with pytest.raises(BadInput, match=words):
        Spec(**base)


def test_the_matmul_precision_round_trips_and_older_json_means_default():
    spec = Spec("matmul", (8, 8), matmul_precision="high")
    assert spec.to_dict()["matmul_precision"] == "high" and Spec.from_dict(spec.to_dict()) == spec
    older = {"case": "matmul", "shape": [8, 8], "precision": "x32", "device": "auto", "cases_file": None, "seed": 0}
    assert Spec.from_dict(older).matmul_precision == "default"


def test_spec_from_dict_rejects_unknown_fields():
    with pytest.raises(BadInput, match="unknown"):
        Spec.from_dict({"case": "matmul", "shape": [2, 2], "colour": "red"})


def test_timing_config_rejects_nonsense():
    with pytest.raises(BadInput):
        TimingConfig(min_samples=0)
    with pytest.raises(BadInput):
        TimingConfig(min_samples=10, max_samples=5)


@pytest.mark.parametrize("seconds, text", [
    (0.0009997, "1 ms"), (0.9996, "1 s"), (485e-6, "485 µs"), (16.2e-3, "16.2 ms"), (2.5e-8, "25 ns"),
    (0.0, "0 s"), (None, "—"), (float("inf"), "—"),
])
def test_format_time_picks_the_unit_after_rounding(seconds, text):
    from jaxcompare.model.formatting import format_time

    assert format_time(seconds) == text


def test_speedup_words_come_from_one_place():
    from jaxcompare.model.formatting import faster_or_slower, format_factor, format_speedup

    assert format_factor(2.5) == "2.50x" and format_factor(None) == "—" and format_factor(float("inf")) == "—"
    assert faster_or_slower(2.0) == ("faster", 2.0) and faster_or_slower(0.5) == ("slower", 2.0)
    assert format_speedup(2.5) == "2.50x (JAX faster)" and format_speedup(0.5) == "0.50x (JAX 2.0x slower)"
    assert format_speedup(float("nan")) == "—"


@pytest.mark.parametrize("n, text", [
    (None, "—"), (0, "0 B"), (512, "512 B"), (80 * 1024**3, "80 GiB"), (1.5 * 1024**2, "1.5 MiB"),
])
def test_format_bytes_one_function_for_the_app_and_the_memory_check(n, text):
    from jaxcompare.model.formatting import format_bytes

    assert format_bytes(n) == text


@pytest.mark.parametrize("shape, text", [((1000, 1000), "1000x1000"), ([8, 100, 100], "8x100x100"), ((7,), "7")])
def test_format_shape_writes_what_parse_shape_reads(shape, text):
    from jaxcompare.model.cases import format_shape

    assert format_shape(shape) == text and parse_shape(text) == tuple(shape)


def test_timing_presets_round_trip_and_name_themselves():
    for name in ("quick", "careful", "thorough"):
        config = TimingConfig.preset(name)
        assert config.preset_name == name
        spec = Spec("matmul", (8, 8), timing=config)
        assert Spec.from_dict(spec.to_dict()).timing.preset_name == name
    assert TimingConfig() == TimingConfig.preset("careful")
    assert TimingConfig(rel_ci=0.05).preset_name == "custom"
    with pytest.raises(BadInput, match="timing must be one of"):
        TimingConfig.preset("slow")


def test_runtime_settings_apply_only_to_the_speedup_phases():
    careful = TimingConfig()
    # No runtime settings: every phase alike, but for the samples a 95% range needs.
    assert careful.for_runtime() == dataclasses.replace(careful, min_samples=MIN_SAMPLES_FOR_RANGE)
    thorough = TimingConfig.thorough()
    runtime = thorough.for_runtime()
    assert (runtime.rel_ci, runtime.phase_budget_s) == (0.01, 2.5)
    assert (thorough.rel_ci, thorough.phase_budget_s) == (careful.rel_ci, careful.phase_budget_s)


def test_older_saved_specs_without_runtime_settings_still_load():
    data = Spec("matmul", (8, 8)).to_dict()
    for key in ("runtime_budget_s", "runtime_rel_ci", "runtime_blocks"):
        del data["timing"][key]
    assert Spec.from_dict(data).timing == TimingConfig()
    data["timing"]["runtime_blocks"] = 2.0  # a whole number written by another JSON tool
    assert Spec.from_dict(data).timing.runtime_blocks == 2


@pytest.mark.parametrize("kwargs", [{"runtime_rel_ci": 0}, {"runtime_budget_s": -1.0},
                                    {"runtime_budget_s": float("nan")}, {"min_samples": True}])
def test_timing_config_rejects_bad_runtime_settings(kwargs):
    with pytest.raises(BadInput, match="positive number"):
        TimingConfig(**kwargs)


def test_the_pairs_range_quantiles_are_scipys():
    from scipy.stats import studentized_range

    from jaxcompare.model.spec import _RANGE_Q95

    for k, q in _RANGE_Q95.items():
        assert q == pytest.approx(studentized_range.ppf(0.95, k, np.inf), abs=1e-4)


def test_first_call_processes_per_preset_and_in_older_json():
    from dataclasses import asdict

    assert [TimingConfig.preset(n).first_call_processes for n in ("quick", "careful", "thorough")] == [0, 1, 3]
    # Saved before the field existed, every first call was the worker's: 0, and the preset still reads.
    old = {k: v for k, v in asdict(TimingConfig()).items() if k != "first_call_processes"}
    read = Spec.from_dict({"case": "matmul", "shape": [8, 8], "timing": old}).timing
    assert read.first_call_processes == 0 and read.preset_name == "careful"
    with pytest.raises(BadInput, match="first_call_processes must be a whole number from 0 to 5"):
        TimingConfig(first_call_processes=9)


def test_a_speedup_below_a_hundredth_keeps_two_significant_digits():
    """A 10x10 reduction on a TPU ran at 0.0021x NumPy's speed: '0.00x' would say nothing, or zero."""
    from jaxcompare.model.formatting import format_factor

    assert format_factor(0.0021) == "0.0021x"
    assert format_factor(0.000020) == "0.000020x"
    assert format_factor(0.013) == "0.01x" and format_factor(2.5) == "2.50x" and format_factor(None) == "—"
