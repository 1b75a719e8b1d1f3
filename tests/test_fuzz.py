"""Property-based fuzzing of every user-controlled input: a clear JaxCompareError or a
valid value, never another exception (which would surface as a traceback)."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jaxcompare import BadInput, JaxCompareError, JobFailed, Spec, TimingConfig, TooLarge, parse_shape
from jaxcompare.catalog import builtin_cases, get_case
from jaxcompare.engine.server.settings import Settings, preflight
from jaxcompare.model.result import Result

pytestmark = pytest.mark.slow  # 20 s or more: collected first, so parallel workers end together

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
CASE_NAMES = [c.name for c in builtin_cases()]

shape_texts = st.one_of(
    st.text(max_size=30),
    st.lists(st.integers(-10, 10**7), max_size=6).map(lambda xs: "x".join(map(str, xs))),
    st.lists(st.one_of(st.integers(-5, 10**6), st.floats(allow_nan=True), st.booleans(), st.none(),
                       st.text(max_size=4)), max_size=6),
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


@FUZZ
@given(shape_texts)
def test_any_shape_text_is_parsed_or_refused_clearly(text):
    try:
        shape = parse_shape(text)
    except JaxCompareError as exc:
        assert str(exc)
        return
    assert shape and all(isinstance(n, int) and n > 0 for n in shape)
    assert math.prod(shape) <= 2**31


@FUZZ
@given(
    case=st.one_of(st.sampled_from(CASE_NAMES), st.text(max_size=20)),
    shape=shape_texts,
    precision=st.one_of(st.sampled_from(["x32", "x64"]), st.text(max_size=4)),
    device=st.one_of(st.sampled_from(["auto", "cpu", "gpu", "tpu"]), st.text(max_size=4)),
    seed=st.one_of(st.integers(-3, 2**40), st.text(max_size=3), st.none()),
    hosted=st.booleans(),
)
def test_any_request_is_accepted_or_refused_clearly(case, shape, precision, device, seed, hosted):
    try:
        spec = Spec(case, shape, precision=precision, device=device, seed=seed, timing=TimingConfig.quick())
        preflight(spec, Settings.hosted() if hosted else Settings())
    except JaxCompareError as exc:
        assert str(exc) and "Traceback" not in str(exc)
        return
    get_case(spec.case).check_shape(spec.shape)  # accepted means really runnable


@FUZZ
@given(json_values)
def test_any_json_is_a_result_or_refused_clearly(value):
    try:
        Result.from_dict(value)
    except JaxCompareError:
        return


@FUZZ
@given(st.dictionaries(st.sampled_from(["case", "shape", "precision", "device", "seed", "timing",
                                        "cases_file", "extra"]), json_values, max_size=7))
def test_any_spec_dict_is_a_spec_or_refused_clearly(data):
    try:
        spec = Spec.from_dict(data)
    except JaxCompareError:
        return
    assert Spec.from_dict(json.loads(json.dumps(spec.to_dict()))) == spec


@FUZZ
@given(st.dictionaries(st.sampled_from(["JAXCOMPARE_MODE", "JAXCOMPARE_MAX_ELEMENTS", "JAXCOMPARE_JOB_TIMEOUT_S",
                                        "JAXCOMPARE_ALLOW_CASES_FILE", "JAXCOMPARE_MAX_SWEEP_POINTS",
                                        "JAXCOMPARE_MAX_JOBS_PER_MINUTE"]), st.text(max_size=8), max_size=6))
def test_any_settings_environment_is_valid_or_refused_clearly(env):
    try:
        Settings.from_env(env)
    except JaxCompareError as exc:
        assert str(exc)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(case=st.sampled_from(CASE_NAMES), dims=st.lists(st.integers(1, 40), min_size=1, max_size=3),
       scale=st.floats(0.01, 2.0), scaled=st.booleans(), precision=st.sampled_from(["x32", "x64"]))
def test_odd_small_shapes_run_or_fail_clearly_in_the_worker(runner, case, dims, scale, scaled, precision):
    # Half the examples shrink the case's own preset (so its shape rule holds: 1x1, 2x2, ...).
    small = get_case(case).small_shape
    spec_shape = tuple(max(1, int(d * scale)) for d in small) if scaled else tuple(dims)
    try:
        spec = Spec(case, spec_shape, precision=precision, timing=TimingConfig(
            target_sample_s=0.001, min_samples=3, max_samples=5, phase_budget_s=0.02, rel_ci=0.5,
            compile_samples=1, warmup_s=0.0005, first_call_processes=0))
        job = runner.submit(spec, timeout_s=120)
    except JaxCompareError:
        return
    try:
        result = job.wait(180)
    except (BadInput, TooLarge) as exc:  # the input refused in one clear line
        assert str(exc) and "Traceback" not in str(exc) and "\n" not in str(exc)
        return
    except JobFailed as exc:  # a worker that died, hung or raised something unexpected is a defect
        pytest.fail(f"{case} {spec_shape} {precision}: {exc}")
    assert result.jax.runtime.median_s > 0


url_values = st.one_of(st.text(max_size=24), st.lists(st.text(max_size=8), max_size=3),
                       st.sampled_from(["large", "small", "x64", "gpu", "quick", "10x10", "0x0", "-1", "1e9"]))
url_keys = st.sampled_from(["case", "shape", "precision", "device", "timing", "sizes", "largest",
                            "precisions", "steps", "section", "zzz"])


@FUZZ
@given(st.dictionaries(url_keys, url_values, max_size=8))
def test_any_url_gives_a_valid_configuration_and_warnings(query):
    from jaxcompare.app import controls, pitfalls_view

    cases = list(builtin_cases())
    for parse in (controls.compare_config_from_query, controls.sweep_config_from_query,
                  pitfalls_view.config_from_query):
        config, warnings = parse(query, cases)
        assert all(isinstance(w, str) and w for w in warnings)
        case = get_case(config.case)  # whatever the URL said, the result is runnable
        if hasattr(config, "plan"):
            for point in config.plan(case).points:
                case.check_shape(point[0])
        else:
            case.check_shape(config.spec(case).shape)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(st.one_of(st.binary(max_size=300), json_values.map(lambda v: json.dumps(v).encode()),
                 st.sampled_from([b"", b"{", b'{"schema": "jaxcompare.export/1"}', b'{"results": []}',
                                  b'{"schema": "jaxcompare.export/1", "results": [{}]}', b"\xff\xfe"])))
def test_any_imported_file_is_refused_clearly_and_changes_nothing(tmp_path, data):
    from jaxcompare.history.store import Store

    store = Store(tmp_path / "fuzz.sqlite3")
    before = store.count()
    try:
        store.import_json(data, source="fuzz.json")
    except JaxCompareError as exc:
        assert str(exc) and "\n" not in str(exc)
    assert store.count() == before


def test_unicode_digits_in_a_url_are_a_warning_not_a_traceback():
    # '²'.isdigit() is True but int('²') raises: found by the URL fuzz test above.
    from jaxcompare.app import controls

    cases = list(builtin_cases())
    config, warnings = controls.sweep_config_from_query({"steps": "²"}, cases)
    assert config.steps == controls.sweep_config_from_query({}, cases)[0].steps
    assert any("steps" in w for w in warnings)
