"""The app's controls and URL state: parsing, defaults, warnings, and the step-by-step sweep."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from jaxcompare import Spec, TimingConfig, all_cases, get_case
from jaxcompare.app import controls
from jaxcompare.model.errors import JobFailed

CASES = all_cases()


def test_cases_are_grouped_numpy_first_and_labelled_by_library():
    ordered = controls.ordered_cases(CASES)
    groups = [c.group for c in ordered]
    assert groups == sorted(groups, key=lambda g: {"numpy": 0, "scipy": 1}.get(g, 2))
    label = controls.case_label(get_case("matmul"))
    assert label.startswith("NumPy · matmul")


def test_compare_url_defaults_and_round_trip():
    config, warnings = controls.compare_config_from_query({}, CASES)
    assert warnings == []
    # The JAX docs' example at its large size, the Custom box showing that shape.
    assert (config.case, config.size, config.custom_shape, config.precision, config.device, config.timing) == (
        "centered_gram", "large", "1000x1000", "x32", "auto", "careful")
    assert config.query() == {"case": "centered_gram"}
    assert controls.CompareConfig("matmul", size="small").query() == {"case": "matmul", "shape": "small"}
    small, _ = controls.compare_config_from_query({"case": "matmul", "shape": "small"}, CASES)
    assert (small.size, small.custom_shape) == ("small", "10x10")  # the box shows the chosen preset
    custom = controls.CompareConfig("matmul", size="custom", custom_shape="200 x 200", precision="x64",
                               timing="quick")
    again, warnings = controls.compare_config_from_query(custom.query(), CASES)
    assert warnings == []
    assert again.size == "custom" and again.custom_shape == "200x200"
    assert again.precision == "x64" and again.timing == "quick"
    assert again.spec(get_case("matmul")).shape == (200, 200)


def test_compare_url_keeps_the_profile_switch():
    on = controls.CompareConfig("matmul", profile=True)
    assert on.query() == {"case": "matmul", "profile": "1"}  # the large preset: no shape in the URL
    again, warnings = controls.compare_config_from_query(on.query(), CASES)
    assert warnings == [] and again.profile is True
    off, warnings = controls.compare_config_from_query({"case": "matmul", "profile": "yes"}, CASES)
    assert off.profile is False and "profile=yes" in warnings[0]


def test_compare_url_keeps_the_matmul_precision_and_the_spec_carries_it():
    highest = controls.CompareConfig("matmul", matmul_precision="highest")
    assert highest.query() == {"case": "matmul", "matmul_precision": "highest"}
    again, warnings = controls.compare_config_from_query(highest.query(), CASES)
    assert warnings == [] and again.spec(get_case("matmul")).matmul_precision == "highest"
    _bad, warnings = controls.compare_config_from_query({"case": "matmul", "matmul_precision": "HIGH"}, CASES)
    assert "matmul_precision=HIGH" in warnings[0] and _bad.matmul_precision == "default"
    measured = highest.spec(get_case("matmul"))
    assert highest.changed_note(measured.shape, "matmul", measured.shape, "x32", "highest") == ""
    assert controls.CompareConfig("matmul").changed_note(measured.shape, "matmul", measured.shape, "x32", "highest")
    # The Pitfalls page has no such box (pitfall 6 compares default with highest itself): its link ignores it.
    from jaxcompare.app import pitfalls_view as pv

    lab, warnings = pv.config_from_query({"case": "matmul", "matmul_precision": "highest"}, CASES)
    assert warnings == [] and lab.matmul_precision == "default"


def test_compare_url_bad_values_warn_and_fall_back():
    query = {"case": "matmull", "shape": "12x", "precision": "x16", "device": "fpga", "timing": "slow"}
    config, warnings = controls.compare_config_from_query(query, CASES)
    assert config == controls.CompareConfig("centered_gram", custom_shape="1000x1000")
    assert len(warnings) == 5
    assert "did you mean matmul" in warnings[0]
    assert all("was ignored" in w and "Using the default" in w for w in warnings)


def test_compare_url_shape_checked_against_the_case():
    config, warnings = controls.compare_config_from_query({"case": "fft", "shape": "64x64"}, CASES)
    assert config.case == "fft" and config.size == "large"
    assert "1-D" in warnings[0]
    config, warnings = controls.compare_config_from_query({"case": "fft", "shape": "large"}, CASES)
    assert warnings == [] and config.shape(get_case("fft")) == get_case("fft").large_shape
    config, _ = controls.compare_config_from_query({"case": "matmul", "shape": "1000x1000"}, CASES)
    assert config.size == "large"  # a typed preset is the preset


def test_sweep_url_round_trip_and_bad_values():
    config = controls.SweepConfig("matmul", precisions=("x32", "x64"), steps=4, largest="300x300")
    again, warnings = controls.sweep_config_from_query(config.query(), CASES)
    assert warnings == [] and again == config
    assert again.shapes(get_case("matmul"))[-1] == (300, 300)
    bad, warnings = controls.sweep_config_from_query(
        {"case": "matmul", "precision": "x99", "steps": "40", "largest": "5x5"}, CASES)
    assert bad == controls.SweepConfig("matmul")
    assert len(warnings) == 3
    assert controls.SweepConfig("matmul").query() == {"case": "matmul"}  # the defaults stay out of the URL


def test_each_page_reads_back_from_its_widgets_what_it_seeded_there():
    """A page's widget keys and values come from its config's fields: what seed_from_url writes,
    from_widgets reads back, under the keys the pages' widgets (and their tests) use."""
    from jaxcompare.app import pitfalls_view as pv

    compare = controls.CompareConfig("matmul", size="custom", custom_shape="200x200", precision="x64",
                                     device="cpu", timing="thorough", profile=True, matmul_precision="highest",
                                     ports=("jnp", "pallas"))
    sweep = controls.SweepConfig("matmul", precisions=("x32", "x64"), steps=4, largest="300x300", device="gpu",
                                 timing="careful")
    pitfalls = pv.PitfallsConfig("matmul", size="small", custom_shape="10x10", device="cpu", timing="quick")
    for config in (compare, sweep, pitfalls):
        assert type(config).from_widgets(config.widgets()) == config
    assert set(compare.widgets()) == {"case", "size", "custom_shape", "precision", "device", "timing", "profile",
                                      "matmul_precision", "ports"}
    assert set(sweep.widgets()) == {"sweep_case", "sweep_precisions", "sweep_steps", "sweep_largest",
                                    "sweep_device", "sweep_timing", "sweep_matmul_precision", "sweep_ports"}
    assert set(pitfalls.widgets()) == {"pf_case", "pf_size", "pf_custom_shape", "pf_precision", "pf_device",
                                       "pf_timing"}  # the lab has no profile switch, and pitfall 6 its own precisions
    assert sweep.widgets()["sweep_precisions"] == ["x32", "x64"]  # a multi-select holds a list
    # As the widgets hold them: precisions in click order, the slider's number, a padded text box.
    held = {**sweep.widgets(), "sweep_precisions": ["x64", "x32"], "sweep_steps": 4.0, "sweep_largest": " 300x300 "}
    assert controls.SweepConfig.from_widgets(held) == sweep


def test_default_largest_grows_on_accelerators():
    case = get_case("matmul")
    assert controls.default_largest(case, "cpu") == case.large_shape
    assert controls.default_largest(case, "gpu") == tuple(2 * n for n in case.large_shape)


@dataclass
class FakeJob:
    spec: Spec
    done: bool = False
    value: Any = None
    error: Any = None
    progress: float = 0.0
    cancelled: bool = False

    def cancel(self) -> None:
        self.cancelled = True


def test_sweep_run_submits_one_job_at_a_time_and_keeps_partial_results():
    base = Spec("matmul", (10, 10), timing=TimingConfig.quick())
    run = controls.SweepRun.plan(base, [(10, 10), (20, 20), (40, 40)], ["x32", "x64"])
    assert run.total == 6 and run.points[:2] == [((10, 10), "x32"), ((10, 10), "x64")]
    assert run.extent() == (100.0, 1600.0)
    submitted: list[FakeJob] = []

    def submit(spec: Spec) -> FakeJob:
        submitted.append(FakeJob(spec))
        return submitted[-1]

    assert run.advance(submit) is False and len(submitted) == 1
    assert run.advance(submit) is False and len(submitted) == 1  # still running: nothing new
    submitted[0].progress = 0.5
    assert run.fraction() == pytest.approx(0.5 / 6)
    submitted[0].done, submitted[0].value = True, "result-1"
    assert run.advance(submit) is True and len(submitted) == 2
    assert submitted[1].spec.precision == "x64" and submitted[1].spec.shape == (10, 10)
    run.stop()
    assert submitted[-1].cancelled and not run.finished
    submitted[-1].done, submitted[-1].error = True, JobFailed("cancelled")
    run.advance(submit)
    assert run.finished and len(submitted) == 2 and run.results == ["result-1"]
    assert run.failures == []  # a job the user stopped is not a failure


def test_sweep_run_stops_at_the_first_failure():
    base = Spec("matmul", (10, 10), timing=TimingConfig.quick())
    run = controls.SweepRun.plan(base, [(10, 10), (20, 20)], ["x32"])
    jobs: list[FakeJob] = []
    run.advance(lambda spec: jobs.append(FakeJob(spec)) or jobs[-1])
    jobs[0].done, jobs[0].error = True, JobFailed("out of memory")
    assert run.advance(lambda spec: jobs.append(FakeJob(spec)) or jobs[-1]) is True
    assert run.finished and len(jobs) == 1
    assert run.failures == [("10x10 x32", "out of memory")]


def test_page_controls_words_come_from_controls():
    matmul = get_case("matmul")
    assert controls.precision_label("x32") == "x32 · float32" and controls.precision_label("x64") == "x64 · float64"
    large = "x".join(map(str, matmul.large_shape))
    assert controls.size_labels(matmul) == {"small": "Small · 10x10", "large": f"Large · {large}", "custom": "Custom"}
    assert controls.preset_shape_text(matmul, "small") == "10x10"
    config = controls.CompareConfig(case="matmul")
    assert config.changed_note((10, 10), "matmul", [10, 10], "x32") == ""
    assert "have changed" in config.changed_note(None, "matmul", (10, 10), "x32")
    assert "have changed" in config.changed_note((10, 10), "matmul", (10, 10), "x64")
    assert controls.known_backend("auto", None) is None and controls.known_backend("gpu", None) == "gpu"
    assert controls.known_backend("auto", {"jax": {"default_backend": "tpu"}}) == "tpu"


def test_sweep_run_says_its_plan_and_which_point_runs():
    base = Spec("matmul", (10, 10), timing=TimingConfig.quick())
    run = controls.SweepRun.plan(base, [(10, 10), (20, 20)], ["x32", "x64"])
    assert run.plan_text() == "10x10 → 20x20: 4 measurement(s)."
    run.advance(lambda spec: FakeJob(spec))
    assert run.progress_label() == "Size 1 of 4: 10x10 x32"
