"""What the pages show: figures, verdict, tables, CSV, banners and environment warnings."""

from __future__ import annotations

from typing import Any

import pytest

from jaxcompare.app import environment_view, views
from jaxcompare.model.formatting import format_crossover, markdown_literal


def test_crossover_text():
    assert format_crossover(250_000, 2, short=True) == "≈ 500x500"
    assert format_crossover(2_500_000, 1, short=True) == "≈ 2.5M elements"
    assert format_crossover(None, 2, short=True) == "none here"
    assert "500x500" in format_crossover(250_000, 2)
    assert format_crossover(250_000, 2) == "≈ 250,000 elements (≈ 500x500)"
    assert format_crossover(311_000, 1) == "≈ 310,000 elements"
    assert format_crossover(7_315.4, 1) == "≈ 7,300 elements"  # placed between two sizes: two figures, not four


CPU_ENV: dict[str, Any] = {
    "cpu_model": "Test CPU", "cpu_count_logical": 2, "cpu_count_physical": 2, "cpu_affinity": 2,
    "memory_available_bytes": 8 * 1024**3, "env_vars": {"XLA_FLAGS": "--xla_foo"},
    "jax": {"default_backend": "cpu", "x64_enabled": False, "compilation_cache": False,
            "devices": [{"platform": "cpu", "id": 0, "kind": "cpu"}]},
    "blas": [{"internal_api": "openblas", "num_threads": 8}],
}


def test_device_banner_says_cpu_fallback_plainly_or_names_the_gpu():
    banner = environment_view.device_banner(CPU_ENV)
    assert banner.level == "warning" and "CPU backend" in banner.text and "Test CPU" in banner.text
    gpu_env = dict(CPU_ENV, jax={"devices": [
        {"platform": "gpu", "id": 0, "kind": "NVIDIA H100", "memory_limit_bytes": 80 * 1024**3}]})
    banner = environment_view.device_banner(gpu_env)
    assert banner.level == "success" and "NVIDIA H100" in banner.text and "80 GiB" in banner.text
    assert environment_view.device_banner(None).level == "info"


def test_environment_warnings_name_what_spoils_numbers():
    x64_env = dict(CPU_ENV, jax=dict(CPU_ENV["jax"], x64_enabled=False))  # wrong: x64 worker without x64
    warnings = environment_view.environment_warnings({"x32": CPU_ENV, "x64": x64_env}, load=1.9)
    text = "\n".join(warnings)
    for needle in ("Shared cores", "Busy machine", "x64 worker", "XLA_FLAGS",
                   "oversubscription"):
        assert needle in text
    assert environment_view.environment_warnings({}) == []


# libtpu's warning at every start, as a TPU v5e VM host's workers recorded it (2026-12-05, the device tool).
HUGEPAGES = ("UserWarning: Transparent hugepages are not enabled. TPU runtime startup and shutdown time should be "
             "significantly improved on TPU v5e and newer. If not already set, you may need to enable transparent "
             "hugepages in your VM image (sudo sh -c \"echo always > /sys/kernel/mm/transparent_hugepage/enabled\")")


def test_a_warning_the_backend_gave_as_it_started_is_a_finding_with_its_cost():
    """Each worker heard it: one finding, what it says and the seconds opening took in each worker."""
    workers = {precision: dict(CPU_ENV, backend_start={"warnings": [HUGEPAGES], "seconds": seconds})
               for precision, seconds in (("x32", 6.2), ("x64", 7.4))}
    found = [w for w in environment_view.environment_warnings(workers) if "backend warned" in w]
    assert len(found) == 1
    assert f"`{HUGEPAGES}`" in found[0]  # verbatim, in a code span: a Chinese page quotes it as it is
    assert "6.2 s in the x32 worker, 7.4 s in the x64 worker" in found[0]
    quiet = {"x32": dict(CPU_ENV, backend_start={"warnings": [], "seconds": 0.8}), "x64": CPU_ENV}
    assert not any("backend warned" in w for w in environment_view.environment_warnings(quiet))


def test_environment_warnings_run_a_table_of_named_rules_in_order():
    assert environment_view.shared_cores in environment_view.ENVIRONMENT_RULES
    machine = environment_view.Machine(CPU_ENV, {"x32": CPU_ENV}, load=None)
    assert list(environment_view.custom_xla_flags(machine)) == ["Custom XLA_FLAGS are active: `--xla_foo`."]
    assert list(environment_view.busy_machine(machine)) == []
    both = dict(CPU_ENV["jax"], x64_enabled=True, compilation_cache=True)
    assert len(list(environment_view.x64_mismatch("x32", both))) == 1
    assert len(list(environment_view.compilation_cache("x32", both))) == 1
    warnings = environment_view.environment_warnings({"x32": CPU_ENV})
    assert warnings[0].startswith("Shared cores") and warnings[-1].startswith("Custom XLA_FLAGS")
    # The CPU fallback is the device banner's to say, once, above these (not a second warning).
    assert not any("GPU or TPU" in text for text in warnings)


def access_hidden(env: dict) -> dict:
    from jaxcompare.history.exchange import PRIVATE_ENV

    return {k: v for k, v in env.items() if k not in PRIVATE_ENV}


def test_environment_page_tables():
    ev = environment_view
    host = {"memory_available_bytes": 3 * 1024**3, "env_vars": {"XLA_FLAGS": "--app"}}
    machine = {row["Item"]: row["Value"] for row in ev.machine_rows(CPU_ENV, host, load=1.25)}
    assert machine["CPU model"] == "Test CPU" and machine["Load average (1 min)"] == "1.25"
    assert machine["Memory available"] == "3 GiB" and machine["Memory total"] == "—"
    # A hosted demo hides the interpreter's path: no row, rather than an empty one.
    assert ev.machine_rows(CPU_ENV | {"python_executable": "/usr/bin/python3"}, host, None)[-1]["Value"] == (
        "/usr/bin/python3")
    assert "Python" not in {row["Item"] for row in ev.machine_rows(access_hidden(CPU_ENV), host, None)}
    assert ev.worker_rows({"x32": CPU_ENV})[0] == {
        "Worker": "x32", "Backend": "cpu", "jax_enable_x64": "off", "Default float": None,
        "Compilation cache": "off", "Devices": 1}
    assert ev.device_rows(CPU_ENV)[0]["Memory limit"] == "n/a (host memory)"
    assert ev.blas_rows(CPU_ENV)[0]["Library"] == "openblas" and ev.blas_rows({}) == []
    rows = ev.env_var_rows(("XLA_FLAGS", "OMP_NUM_THREADS"), host, {"x32": CPU_ENV})
    assert rows == [{"Variable": "XLA_FLAGS", "App process": "--app", "x32 worker": "--xla_foo"}]
    assert ev.version_rows({"jax": "0.11", "scipy": None})[1] == {"Package": "scipy", "Version": "not installed"}


def test_device_problem_only_for_missing_devices():
    assert environment_view.device_problem("auto", CPU_ENV) is None
    assert environment_view.device_problem("cpu", CPU_ENV) is None
    assert "No GPU" in environment_view.device_problem("gpu", CPU_ENV)
    assert environment_view.device_problem("gpu", None) is None


def test_phase_table(sample_result):
    rows = views.phase_table(sample_result)
    assert len(rows) == 9 and rows[0]["Phase"] == "NumPy runtime"  # NumPy's runtime and JAX's eight phases


def test_the_compare_pages_verdict_points_at_the_size_sweep_page(sample_result):
    """The sentences are analysis/summary's (tests/test_summary.py); the app names its own page."""
    from _results import make_result

    from jaxcompare.analysis import summary

    slower = make_result(numpy_s=1e-4, jax_s=1e-3)
    assert views.verdict_lines(slower) == [summary.verdict(slower, "The Size sweep page")]
    assert views.verdict_lines(slower)[0].endswith(" The Size sweep page shows whether larger inputs change that.")
    assert views.verdict_lines(sample_result) == [summary.verdict(sample_result)]


@pytest.fixture
def sample_result():
    from _results import make_result

    return make_result()


def test_compare_page_words_come_from_views(sample_result):
    from jaxcompare.analysis.checks import checklist

    r = sample_result
    assert views.file_stem(r) == "matmul_10x10_x32"
    caption = views.result_caption(r, " · changed")
    assert caption.startswith("`numpy.matmul` vs `jax.numpy.matmul` · shape 10x10 · x32 (float32) · cpu device")
    assert caption.endswith("measured 2026-01-01 00:00 UTC · changed")
    checks = checklist(r)
    assert views.checks_tab_label(checks) == "Checks: warn"  # the synthetic result's thread check warns
    rows = views.checklist_rows(checks, lambda pitfall: None if pitfall is None else f"Pitfalls#{pitfall}")
    assert len(rows) == len(checks) and {"", "Pitfalls#size"} <= {row["Explained in"] for row in rows}
    assert all(row["Why"] == markdown_literal(c.reason) for row, c in zip(rows, checks, strict=True))  # plain text
    assert rows[0]["Status"] == "✓ pass"
    ok, text = views.agreement_text(r)
    assert ok and text.startswith("JAX and NumPy agree: max abs error 1e-07") and text.endswith("compared directly).")
    assert views.dtypes_text(r) == "Output dtypes: NumPy `float32`, JAX `float32`; inputs `float32`."
    assert views.float64_rows(r.jax.agreement) == []
    ref = {"numpy_max_abs_err": 1e-6, "numpy_max_rel_err": 2e-7, "jax_max_abs_err": 3e-6, "jax_max_rel_err": 4e-7}
    assert views.float64_rows({"vs_float64": ref})[1] == {
        "Side": "JAX", "Max abs error vs float64": "3e-06", "Max rel error vs float64": "4e-07"}
    notes, first_call = views.notes_markdown(r)
    assert notes == ("- a synthetic result\n- JAX on the CPU (the third side, for runs on a GPU or TPU): n/a here, "
                     "JAX already ran on the CPU.") and first_call.startswith("- A naive first call took **20.2 ms**")


def test_size_sweep_tiles(sample_result):
    tile = views.crossover_figure("x32", 250_000, 2, finished=True)
    assert (tile.label, tile.value) == ("Crossover (x32)", "≈ 500x500") and "250,000 elements" in tile.help
    assert views.crossover_figure("x64", None, 2, finished=False).value == "not yet"
    assert views.crossover_figure("x64", None, 2, finished=True).value == "—"  # no trusted size placed one
    best = views.best_speedup_figure([sample_result])
    assert (best.value, best.detail) == ("5.00x", "95%: 4.23x–5.91x")  # a headline speedup carries its range
    assert best.help == "At 10x10 x32, among the trusted sizes."


def test_a_quoted_message_stays_one_code_span_whatever_it_holds():
    from jaxcompare.model.formatting import markdown_code

    assert markdown_code("a\n  b") == "`a b`"
    assert markdown_code("use `x` here") == "``use `x` here``"  # a single backtick would end the span
    assert markdown_code("`x``") == "``` `x`` ```"
