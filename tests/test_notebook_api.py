"""jaxcompare.compare() and sweep() on a notebook's own functions, measured for real in the
workers: lambdas, closures and __main__ globals in x32 and x64, bad input in one sentence,
Ctrl-C, History and JSON, and what a result shows in Jupyter."""

from __future__ import annotations

import _thread
import dataclasses
import json
import re
import signal
import sys
import threading
import time
import types

import numpy as np
import pytest
from _results import make_result, with_jax

import jaxcompare
from jaxcompare import BadInput, JaxCompareError, OutputsDisagree, Result
from jaxcompare.analysis.checks import FAIL, checklist
from jaxcompare.analysis.text import STATUS_ORDER
from jaxcompare.history.store import Store
from jaxcompare.model.phases import PHASES
from jaxcompare.notebook import api, display
from jaxcompare.notebook.results import NotebookResult, SweepResult

pytestmark = pytest.mark.slow  # 20 s or more: collected first, so parallel workers end together

jnp = pytest.importorskip("jax.numpy")


@pytest.fixture(scope="module", autouse=True)
def _workers():
    """compare() starts its own Runner; stop its workers when this module is done."""
    yield
    jaxcompare.shutdown()


def _matrix(n: int = 48, dtype=np.float64) -> np.ndarray:
    return np.random.default_rng(3).standard_normal((n, n)).astype(dtype)


def _closure(factor: float):
    def scaled_gram(x):  # a closure over `factor`, as a notebook cell would write it
        return factor * (x.T @ (x - x.mean(axis=0)))
    return scaled_gram


@pytest.fixture(scope="module", params=["x32", "x64"])
def notebook_result(request) -> NotebookResult:
    """A lambda against a closure, given a float64 array, in each precision."""
    return jaxcompare.compare(lambda x: 2.0 * (x.T @ (x - x.mean(axis=0))), _closure(2.0), _matrix(),
                              precision=request.param, timing="quick", name="gram")


def test_compare_runs_a_lambda_and_a_closure_at_the_requested_precision(notebook_result):
    r = notebook_result
    want = "float64" if r.precision == "x64" else "float32"
    assert isinstance(r, Result)
    assert r.dtype == want
    assert r.jax.agreement["numpy_dtype"] == want and r.jax.agreement["jax_dtype"] == want, r.jax.agreement
    assert r.jax.agreement["ok"] is True
    assert r.env["jax"]["x64_enabled"] is (r.precision == "x64")
    for phase in PHASES:
        stats = r.phase(phase)
        assert stats.n >= 1 and stats.median_s > 0, (phase, stats)
    assert r.case == "gram" and r.shape == (48, 48)
    assert r.case_info["source"] == "notebook" and r.spec.cases_file is None


def test_a_cast_of_the_users_dtype_is_noted(notebook_result):
    cast = [n for n in notebook_result.notes if "cast to" in n]
    if notebook_result.precision == "x32":
        assert cast and "float64" in cast[0] and "float32" in cast[0]
    else:
        assert not cast  # float64 given, float64 measured


def test_the_result_round_trips_and_writes_the_clis_json(notebook_result, tmp_path):
    data = notebook_result.to_dict()
    assert Result.from_dict(json.loads(json.dumps(data))).to_dict() == data
    path = tmp_path / "r.json"
    text = notebook_result.to_json(path)
    doc = json.loads(path.read_text())
    assert doc == json.loads(text)
    assert doc["schema"] == "jaxcompare.result/4"
    assert {c["id"] for c in doc["checklist"]} == {c.id for c in checklist(notebook_result)}


def test_its_trust_is_read_in_code_shown_in_its_repr_and_written_in_its_json(notebook_result):
    from _results import with_jax

    from jaxcompare.analysis.trust import direction, trusted

    doc = json.loads(notebook_result.to_json())
    assert doc["trusted"] is notebook_result.trusted is trusted(notebook_result)
    assert doc["direction"] == notebook_result.direction == direction(notebook_result).side
    assert (notebook_result.set_aside is None) is notebook_result.trusted
    assert ("not trusted" in repr(notebook_result)) is not notebook_result.trusted
    failed = NotebookResult.of(with_jax(notebook_result, agreement=notebook_result.jax.agreement | {"ok": False}))
    assert not failed.trusted and failed.set_aside == "a check failed" and "not trusted" in repr(failed)
    assert json.loads(failed.to_json())["trusted"] is False


def test_save_puts_it_in_history(notebook_result):
    result_id = notebook_result.save()
    store = Store()  # tests point JAXCOMPARE_DB at a temporary database (conftest.py)
    assert store.get(result_id).to_dict() == notebook_result.to_dict()
    assert any(row["id"] == result_id for row in store.list(case="gram"))


def test_functions_of_main_take_their_globals_along():
    """What a notebook cell defines lives in __main__: cloudpickle sends it by value."""
    cell = types.ModuleType("__main__")
    exec(  # noqa: S102 - the test's own code, standing in for a notebook cell
        "import numpy as np\nimport jax.numpy as jnp\nSCALE = 3.0\n"
        "def softplus_np(x):\n    return SCALE * np.logaddexp(0, x)\n"
        "def softplus_jax(x):\n    return SCALE * jnp.logaddexp(0, x)\n"
        "def make_inputs(shape, dtype, rng):\n    return (rng.standard_normal(shape).astype(dtype),)\n",
        cell.__dict__)
    assert cell.softplus_np.__module__ == "__main__"
    r = jaxcompare.compare(cell.softplus_np, cell.softplus_jax, cell.make_inputs, shape=1000, timing="quick")
    assert r.case == "softplus" and r.shape == (1000,) and r.jax.agreement["ok"]
    assert r.case_info["numpy_name"] == "softplus_np"


# --- bad input: one sentence, no worker left busy ------------------------------------------
X = _matrix(8)


def _one_sentence(exc: pytest.ExceptionInfo) -> str:
    text = str(exc.value)
    assert "\n" not in text and "Traceback" not in text
    frames = []
    tb = exc.value.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame.f_code.co_name)
        tb = tb.tb_next
    assert frames[-1] in ("compare", "sweep"), frames  # not our internals' call stack
    return text


@pytest.mark.parametrize(("call", "expected"), [
    (lambda: jaxcompare.compare(np.sin(X), jnp.sin, X), "numpy_fn must be a function, got a NumPy array: pass the"),
    (lambda: jaxcompare.compare(np.sin, "jnp.sin", X), "jax_fn must be a function, got a str"),
    (lambda: jaxcompare.compare(np.sin, jnp.sin, [1.0, 2.0]), "input 1 is a list, not an array"),
    (lambda: jaxcompare.compare(np.sin, jnp.sin, X, 2.0), "input 2 is a float, not an array"),
    (lambda: jaxcompare.compare(np.sin, jnp.sin, np.arange(4)), "input 1 is an array of int64"),
    (lambda: jaxcompare.compare(np.sin, jnp.sin), "give the inputs"),
    (lambda: jaxcompare.compare(np.sin, jnp.sin, lambda s, d, r: (X,)), "make_inputs needs shape="),
    (lambda: jaxcompare.compare(np.sin, jnp.sin, X, shape=(8, 8)), "shape= goes with make_inputs"),
    (lambda: jaxcompare.compare(np.sin, jnp.sin, X, precision="x16"), "precision must be one of x32, x64"),
    (lambda: jaxcompare.compare(np.sin, jnp.sin, X, timing="fast"), "timing must be one of quick"),
    (lambda: jaxcompare.compare(np.sin, jnp.sin, X, device="npu"), "device must be one of"),
    (lambda: jaxcompare.compare(np.sin, jnp.sin, X, matmul_precision="HIGH"),
     "matmul precision must be one of default, high, highest, got 'HIGH'"),
    (lambda: jaxcompare.compare(np.sin, jnp.sin, X, timeout_s=-1), "timeout_s must be a positive number"),
    (lambda: jaxcompare.compare(np.sin, jnp.sin, np.array(1.0)), "every input is a scalar"),
    (lambda: jaxcompare.compare(np.sin, jnp.sin, X, profile=3), "profile must be True, False or a folder"),
    (lambda: jaxcompare.sweep(np.sin, jnp.sin, X, sizes=[10]), "make_inputs must be a function"),
    (lambda: jaxcompare.sweep(np.sin, jnp.sin, lambda s, d, r: (X,), sizes=10), "sizes must be a non-empty list"),
    (lambda: jaxcompare.sweep(np.sin, jnp.sin, lambda s, d, r: (X,), sizes=[10.5]),
     "sizes must be whole numbers (or shapes like '100x200'), got 10.5"),
])
def test_bad_input_is_one_sentence(call, expected):
    with pytest.raises(BadInput) as exc:
        call()
    assert expected in _one_sentence(exc)


def test_a_sweeps_sizes_may_be_numpys_integers_or_whole_floats():
    assert api._sweep_shapes([np.int64(30), 10.0, "5x6"], 2) == [(5, 6), (10, 10), (30, 30)]


def test_the_matmul_precision_travels_in_the_spec_and_the_title_names_it():
    _case, spec, _notes = api._request(np.sin, jnp.sin, (X,), precision="x32", device="auto", timing="quick",
                                       name=None, shape=None, seed=0, tolerance=1.0, canonical=None,
                                       timeout_s=None, matmul_precision="highest")
    assert spec.matmul_precision == "highest"
    plain = make_result()
    assert "matmul precision" not in display.title(plain)
    high = with_jax(dataclasses.replace(plain, spec=dataclasses.replace(plain.spec, matmul_precision="high")),
                    protocol={"matmul_precision": "high"})
    assert display.title(high).endswith(" · matmul precision: high (a TPU: three bfloat16 passes; an NVIDIA GPU: TF32)")


def test_a_function_that_cannot_be_pickled_is_named():
    lock = threading.Lock()

    def guarded_sin(x):
        with lock:
            return jnp.sin(x)

    with pytest.raises(BadInput) as exc:
        jaxcompare.compare(np.sin, guarded_sin, X)
    text = _one_sentence(exc)
    assert "jax_fn" in text and "guarded_sin" in text and "_thread.lock" in text
    assert api.runner().queue_length() == 0  # refused before anything was queued

    numbers = (i for i in range(3))
    with pytest.raises(BadInput, match=r"numpy_fn .* generator"):
        jaxcompare.compare(lambda x: np.sin(x) + next(numbers), jnp.sin, X)


def test_a_module_the_worker_cannot_import_is_explained(monkeypatch):
    """Functions of an importable module go by reference; one that exists only in this
    process cannot be loaded in the worker, and the error says what to do."""
    ghost = types.ModuleType("jaxcompare_ghost_module")
    exec("import numpy as np\ndef ghost_sin(x):\n    return np.sin(x)\n", ghost.__dict__)  # noqa: S102
    monkeypatch.setitem(sys.modules, ghost.__name__, ghost)
    with pytest.raises(BadInput) as exc:
        jaxcompare.compare(ghost.ghost_sin, jnp.sin, X, timing="quick")
    text = _one_sentence(exc)
    assert "could not load" in text and "register_pickle_by_value" in text
    assert api.runner().wait_idle(timeout=5)


def test_outputs_that_disagree_raise_with_the_measurement():
    with pytest.raises(OutputsDisagree) as exc:
        jaxcompare.compare(np.sin, jnp.cos, X, timing="quick")
    text = _one_sentence(exc)
    assert "disagree" in text and ".result" in text
    assert isinstance(exc.value, JaxCompareError)
    assert exc.value.result.jax.agreement["ok"] is False


def test_outputs_of_another_shape_or_dtype_are_named_as_such():
    # Said only as an infinite relative error before: the shapes (and a dtype that differs) say what to fix.
    x = np.ones((20, 30), dtype=np.float32)
    with pytest.raises(OutputsDisagree) as exc:
        jaxcompare.compare(lambda a: 2 * a, lambda a: (2 * a).T, x, timing="quick")
    text = _one_sentence(exc)
    assert "NumPy returned 20x30, JAX 30x20" in text, text
    check = next(c for c in checklist(exc.value.result) if c.id == "agreement")
    assert check.status == FAIL and "20x30" in check.reason and "30x20" in check.reason
    with pytest.raises(OutputsDisagree) as exc:
        jaxcompare.compare(lambda a: 2 * a + 1e-3, lambda a: (2 * a).astype(jnp.float16), x, timing="quick")
    assert "NumPy's in float32, JAX's in float16" in _one_sentence(exc)


def test_outputs_that_are_nan_everywhere_agree_with_a_warning():
    r = jaxcompare.compare(np.log, jnp.log, -np.abs(X) - 1, timing="quick")
    check = next(c for c in checklist(r) if c.id == "agreement")
    assert r.jax.agreement["ok"] and r.jax.agreement["all_nan"] is True
    assert check.status == "warn" and "NaN everywhere" in check.reason


def test_numpy_in_the_jax_slot_is_told_to_use_jax_numpy():
    # np.sin, a ufunc, cannot be weakly referenced: JAX 0.10.2's jit crashed the worker on it (a segfault).
    with pytest.raises(BadInput) as exc:
        jaxcompare.compare(np.sin, np.sin, X, timing="quick")
    text = _one_sentence(exc)
    assert "TracerArrayConversionError" in text and "jax.numpy" in text, text


def test_a_failing_port_is_named_not_only_its_case():
    def broken(a):
        raise ValueError("this port is broken")

    race = jaxcompare.compare(np.sin, {"fine": jnp.sin, "broken": broken}, X, timing="quick")
    line = next(line for line in str(race).splitlines() if line.strip().startswith("broken:"))
    assert "jax_fn (broken) failed" in line and "this port is broken" in line, line


def test_svd_is_compared_by_its_invariants():
    """Singular vectors differ in sign between LAPACK and XLA; compare() knows np.linalg.svd."""
    r = jaxcompare.compare(np.linalg.svd, jnp.linalg.svd, _matrix(24), precision="x64", timing="quick")
    assert r.case == "svd" and r.jax.agreement["ok"] and r.jax.agreement["method"] == "invariants"
    assert r.case_info["numpy_computes_in"] == "float64"


def test_ctrl_c_stops_the_running_job_and_the_next_call_runs():
    """A kernel interrupt (KeyboardInterrupt in the main thread) while compare() waits cancels
    the job: its worker is stopped, nothing stays queued or running."""
    seen: list = []

    def interrupt_once_running() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            job = api.current_job()
            if job is not None and job.status == "running" and job.phase not in ("queued", "starting worker"):
                seen.append(job)
                _thread.interrupt_main()
                return
            threading.Event().wait(0.02)

    # A kernel's SIGINT handler raises KeyboardInterrupt, as Python's own does; a library another
    # test ran in this process (an event loop's signal handling) may have left one that does not.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    thread = threading.Thread(target=interrupt_once_running, daemon=True)
    thread.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            # thorough timing at this size takes many seconds: long enough to be interrupted
            jaxcompare.compare(np.matmul, jnp.matmul, _matrix(400, np.float32), _matrix(400, np.float32),
                               timing="thorough")
    finally:
        signal.signal(signal.SIGINT, previous)
    thread.join(timeout=5)
    assert seen, "the job never started running"
    job = seen[0]
    assert job.done and job.status == "cancelled", (job.status, job.error)
    assert api.current_job() is None
    assert api.runner().queue_length() == 0 and api.runner().wait_idle(timeout=0)
    r = jaxcompare.compare(np.sin, jnp.sin, X, timing="quick")  # a fresh worker takes the next job
    assert r.jax.agreement["ok"]


def test_sweep_measures_each_size_and_finds_the_crossover(tmp_path):
    def make_inputs(shape, dtype, rng):
        return (rng.standard_normal(shape).astype(dtype),)

    sweep = jaxcompare.sweep(lambda x: np.tanh(x) * x, lambda x: jnp.tanh(x) * x, make_inputs, sizes=[64, 8],
                             timing="quick", name="tanh_x")
    assert isinstance(sweep, SweepResult) and len(sweep) == 2
    assert [r.shape for r in sweep.results] == [(8, 8), (64, 64)]  # smallest first
    assert sweep.crossover_elements is None or 64 <= sweep.crossover_elements <= 64 * 64
    doc = json.loads(sweep.to_json(tmp_path / "sweep.json"))
    assert set(doc) == {"case", "precision", "crossover_elements", "results"}
    assert [Result.from_dict(d).shape for d in doc["results"]] == [(8, 8), (64, 64)]
    assert "<svg" in sweep._repr_html_() and "tanh_x" in str(sweep)
    assert len(sweep.save()) == 2


# --- what a result shows -------------------------------------------------------------------
def test_the_html_shows_figures_chart_verdict_and_the_checklist_warnings_first(notebook_result):
    failing = with_jax(notebook_result, agreement=notebook_result.jax.agreement | {"ok": False})
    page = failing._repr_html_()
    for label in ("NumPy runtime", "JAX runtime", "Speedup", "Compile", "Transfer", "Break-even"):
        assert f">{label}<" in page
    assert "<svg" in page and "Where the time goes" in page
    for line in display.verdict_lines(failing):  # the verdict, bold where the app's is bold
        assert display.markdown_html(line) in page
    statuses = re.findall(r"[✓⚠✗–] (pass|warn|fail|n/a)</td>", page)
    assert len(statuses) == len(checklist(failing))
    assert statuses[0] == FAIL and statuses == sorted(statuses, key=STATUS_ORDER.get)


def test_the_html_draws_the_roofline_as_inline_svg_or_says_not_recorded(notebook_result):
    # A user's own function gets XLA's counts: its roofline is drawn, each side's dot with its limit.
    assert notebook_result.roofline is not None and notebook_result.roofline.intensity is not None
    page = notebook_result._repr_html_()
    drawn = re.search(r'<svg role="img" aria-label="Roofline".*?</svg>', page, re.S)
    assert drawn is not None and drawn.group(0).count("<circle") == 2  # NumPy and JAX
    assert "of its bound" in page and "ridge point" in drawn.group(0)
    old = dataclasses.replace(notebook_result, roofline=None)._repr_html_()  # saved before the roofline
    assert 'aria-label="Roofline"' not in old and "roofline: not recorded" in old
    assert 'aria-label="Where the time goes"' in old


def test_the_text_repr_for_a_terminal(notebook_result):
    text = str(notebook_result)
    assert display.markdown_text(display.verdict_lines(notebook_result)[0]) in text
    assert "credibility checklist" in text and "**" not in text
    assert "<" not in text.split("\n")[0]
    assert repr(notebook_result).startswith("<jaxcompare Result gram 48x48")


def test_the_verdicts_markdown_renders_as_html_or_as_plain_text():
    line = "JAX is **2.00x faster** per call (1 ms → 500 µs): see *Samples stable* below. a<b & c"
    assert display.markdown_html(line) == ("JAX is <b>2.00x faster</b> per call (1 ms → 500 µs): see "
                                           "<i>Samples stable</i> below. a&lt;b &amp; c")
    assert display.markdown_text(line) == ("JAX is 2.00x faster per call (1 ms → 500 µs): see Samples stable "
                                           "below. a<b & c")


def test_import_jaxcompare_stays_light():
    """compare() is on the top package, but IPython (the magic) and JAX load only when used."""
    import subprocess

    code = ("import sys, jaxcompare\n"
            "assert callable(jaxcompare.compare) and callable(jaxcompare.load_ipython_extension)\n"
            "print(sorted(m for m in ('IPython', 'jax', 'cloudpickle') if m in sys.modules))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_compare_can_profile_and_the_notebook_shows_where_the_time_goes(tmp_path):
    """compare(profile=...) sends the option to the worker by name, as the CLI and the app do: the
    result carries its profile, the trace lies in the folder given, and both reprs show the ops."""
    r = jaxcompare.compare(lambda a: a @ a.T, lambda a: a @ a.T, np.ones((200, 200), np.float32), timing="quick",
                           profile=tmp_path)
    assert r.profile is not None and r.profile.ok and r.profile.ops
    assert str(tmp_path) in r.profile.trace_file and (tmp_path / r.id).is_dir()
    text = str(r)
    assert "traced call(s)" in text and r.profile.ops[0].name[:20] in text
    assert "Profile</div>" in r._repr_html_()
