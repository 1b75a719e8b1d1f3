"""``%load_ext jaxcompare`` and the ``%jaxcompare`` / ``%%jaxcompare`` magics in a real IPython
InteractiveShell: the calls' callees are the functions, their arguments the notebook's
variables; bad input is one UsageError line; a result displays as HTML and as text."""

from __future__ import annotations

import pytest

import jaxcompare
from jaxcompare.history.store import Store
from jaxcompare.notebook.results import NotebookResult

pytest.importorskip("jax")
InteractiveShell = pytest.importorskip("IPython.core.interactiveshell").InteractiveShell


@pytest.fixture(scope="module")
def shell():
    """A real IPython shell with the extension loaded and a notebook's variables defined."""
    ip = InteractiveShell.instance()
    assert ip.run_cell("%load_ext jaxcompare").success
    setup = ip.run_cell("import numpy as np\nimport jax.numpy as jnp\n"
                        "x = np.random.default_rng(0).standard_normal((32, 32))\ny = x + 1.0\nk = 3\n")
    assert setup.success
    yield ip
    jaxcompare.shutdown()
    InteractiveShell.clear_instance()


def test_the_extension_registers_line_and_cell_magics(shell):
    magics = shell.magics_manager.magics
    assert "jaxcompare" in magics["line"] and "jaxcompare" in magics["cell"]


@pytest.fixture(scope="module")
def svd_outcome(shell):
    return shell.run_cell("%jaxcompare -p x64 -q np.linalg.svd(x) jnp.linalg.svd(x)")


def test_line_magic_compares_two_calls_on_the_notebooks_variables(shell, svd_outcome):
    assert svd_outcome.success, svd_outcome.error_in_exec
    r = svd_outcome.result
    assert isinstance(r, NotebookResult)
    assert r.precision == "x64" and r.dtype == "float64" and r.jax.agreement["jax_dtype"] == "float64"
    assert r.env["jax"]["x64_enabled"] is True
    assert r.case == "svd" and r.shape == (32, 32) and r.jax.agreement["ok"]
    assert r.case_info["numpy_name"] == "np.linalg.svd(x)" and r.case_info["jax_name"] == "jnp.linalg.svd(x)"


def test_cell_magic_with_keywords_two_inputs_and_save(shell):
    outcome = shell.run_cell("%%jaxcompare -q -s -n dot_axis\n"
                             "# the NumPy call, then the JAX call\n"
                             "np.tensordot(x, y, axes=1)\n"
                             "jnp.tensordot(x, y, axes=1)\n")
    assert outcome.success, outcome.error_in_exec
    r = outcome.result
    assert r.case == "dot_axis" and r.precision == "x32" and r.dtype == "float32" and r.jax.agreement["ok"]
    assert r.spec.timing.preset_name == "quick"
    assert Store().get(r.id).to_dict() == r.to_dict()  # -s saved it (a temporary database in tests)


def test_the_magic_runs_at_the_matmul_precision_asked_for(shell):
    outcome = shell.run_cell("%jaxcompare -q --matmul-precision highest np.matmul(x, x) jnp.matmul(x, x)")
    assert outcome.success, outcome.error_in_exec
    r = outcome.result
    assert r.spec.matmul_precision == r.jax.protocol["matmul_precision"] == "highest"


@pytest.mark.parametrize(("line", "expected"), [
    ("%jaxcompare -x np.sum(x) jnp.sum(x)", "unknown option -x"),
    ("%jaxcompare np.sum(x, k) jnp.sum(x, k)", "argument 2 (k) is an int, not an array"),
    ("%jaxcompare np.sum(x) jnp.sum(y)", "must take the same inputs"),
    ("%jaxcompare np.sum(z) jnp.sum(z)", "z failed in the notebook: NameError"),
    ("%jaxcompare np.sum(x)", "could not read two calls"),
    ("%jaxcompare -p x128 np.sum(x) jnp.sum(x)", "precision must be one of x32, x64"),
    ("%jaxcompare -q -t thorough np.sum(x) jnp.sum(x)", "contradict"),
    ("%jaxcompare -m fast np.sum(x) jnp.sum(x)", "matmul precision"),
])
def test_bad_input_is_one_usage_error_line(shell, capsys, line, expected):
    outcome = shell.run_cell(line)
    assert not outcome.success
    assert type(outcome.error_in_exec).__name__ == "UsageError"
    assert expected in str(outcome.error_in_exec)
    err = capsys.readouterr()
    shown = (err.out + err.err).strip()
    assert shown.startswith("UsageError:") and "Traceback" not in shown and len(shown.splitlines()) == 1


def test_a_result_displays_as_html_and_text_in_ipython(shell, svd_outcome):
    bundle, _ = shell.display_formatter.format(svd_outcome.result)
    assert "<svg" in bundle["text/html"] and "Credibility checklist" in bundle["text/html"]
    assert "credibility checklist" in bundle["text/plain"] and "<svg" not in bundle["text/plain"]
