"""A user's cases file is code: it runs only in a worker, under the job's deadline, and a
file that hangs or crashes at import leaves the server and the CLI standing."""

from __future__ import annotations

import os
import textwrap
import time
from pathlib import Path

import pytest
from support import QUICK, cli

from jaxcompare import JobFailed, Spec


def marked_cases(path: Path, marker: Path, names=("softplus",)) -> str:
    """A good cases file that notes the pid of every process that imports it or builds its inputs."""
    cases = ",\n".join(
        f"Case(name={n!r}, numpy_fn=lambda x: np.logaddexp(0, x), jax_fn=lambda x: jnp.logaddexp(0, x), "
        f"make_inputs=make, small_shape=(10,), large_shape=(1000,))" for n in names)
    path.write_text(textwrap.dedent(f"""
        import os
        import jax.numpy as jnp
        import numpy as np
        from jaxcompare import Case

        with open({str(marker)!r}, "a") as fh:
            fh.write(f"import {{os.getpid()}} {{os.getppid()}}\\n")

        def make(shape, dtype, rng):
            with open({str(marker)!r}, "a") as fh:
                fh.write(f"inputs {{os.getpid()}} {{os.getppid()}}\\n")
            return (rng.standard_normal(shape).astype(dtype),)

    """) + f"CASES = [{cases}]\n")
    return str(path)


def pids(marker: Path, what: str, column: int = 1) -> list[int]:
    """The pids (column 2: their parents' pids) that imported the file or built its inputs."""
    if not marker.exists():
        return []
    return [int(line.split()[column]) for line in marker.read_text().splitlines() if line.startswith(what)]


@pytest.fixture
def bad_files(tmp_path) -> dict[str, str]:
    files = {"hang": "while True:\n    pass\n",
             "crash": "import ctypes\nctypes.string_at(0)  # a segfault, as a broken extension would\n",
             "exits": "import os\nos._exit(7)\n"}
    for name, text in files.items():
        (tmp_path / f"{name}.py").write_text(text)
    return {name: str(tmp_path / f"{name}.py") for name in files}


def test_cases_are_listed_by_a_worker_once_per_version(runner, tmp_path):
    marker = tmp_path / "marker"
    path = marked_cases(tmp_path / "mine.py", marker)
    listed = runner.list_cases(path)
    assert [c["name"] for c in listed] == ["softplus"]
    assert listed[0]["large_shape"] == [1000] and listed[0]["source"] == path
    assert pids(marker, "import") and os.getpid() not in pids(marker, "import")
    assert runner.list_cases(path) == listed
    assert len(pids(marker, "import")) == 1  # the same version is not run again
    marked_cases(tmp_path / "mine.py", marker, names=("softplus", "softplus2"))
    os.utime(path, ns=(time.time_ns(), time.time_ns() + 10**9))  # a new version, even within one mtime tick
    assert [c["name"] for c in runner.list_cases(path)] == ["softplus", "softplus2"]
    assert len(pids(marker, "import")) == 2


def test_a_user_cases_functions_are_named_by_their_file(runner, tmp_path):
    path = tmp_path / "my_cases.py"
    path.write_text(textwrap.dedent("""
        import jax.numpy as jnp
        import numpy as np
        from jaxcompare import Case

        def softmax_np(x):
            e = np.exp(x - x.max())
            return e / e.sum()

        def softmax_jax(x):
            e = jnp.exp(x - x.max())
            return e / e.sum()

        CASES = [Case(name="softmax", numpy_fn=softmax_np, jax_fn=softmax_jax,
                      make_inputs=lambda s, d, r: (r.standard_normal(s).astype(d),), small_shape=(10,))]
    """))
    listed = runner.list_cases(str(path))
    # Not the import's unique module name (jaxcompare_user_cases_<hash>.softmax_np).
    assert (listed[0]["numpy_name"], listed[0]["jax_name"]) == ("my_cases.softmax_np", "my_cases.softmax_jax")


def test_measuring_a_user_case_runs_none_of_its_code_here(runner, tmp_path):
    marker = tmp_path / "marker"
    path = marked_cases(tmp_path / "mine.py", marker)
    job = runner.submit(Spec("softplus", (1000,), timing=QUICK, cases_file=path), owner="someone")
    assert job.wait(240).jax.agreement["ok"]
    assert pids(marker, "import") and pids(marker, "inputs")
    assert os.getpid() not in pids(marker, "import") + pids(marker, "inputs")  # no import, no memory probe here


# A file that hangs never loads, so a short deadline stops it as surely as a long one; the
# others keep a margin for their worker to reach the crash.
@pytest.mark.parametrize("name, timeout_s, words", [
    ("hang", 1, r"could not be loaded: stopped after its 1 s deadline"),
    ("crash", 3, r"could not be loaded: the worker process died \(exit code -11"),
    ("exits", 3, r"could not be loaded: the worker process died \(exit code 7"),
])
def test_a_file_that_hangs_or_crashes_at_import_is_one_clear_error(runner, bad_files, name, timeout_s, words):
    with pytest.raises(JobFailed, match=words):
        runner.list_cases(bad_files[name], timeout_s=timeout_s)
    assert runner.run(Spec("matmul", (8, 8), timing=QUICK)).jax.agreement["ok"]  # still standing


def test_the_deadline_covers_loading_the_file_for_a_measurement(runner, bad_files):
    job = runner.submit(Spec("x", (4,), timing=QUICK, cases_file=bad_files["hang"]), timeout_s=1)
    with pytest.raises(JobFailed, match="stopped after its 1 s deadline"):
        job.wait(120)


def test_cli_returns_from_a_file_that_hangs_or_crashes(bad_files, tmp_path):
    hang = cli("run", "--cases-file", bad_files["hang"], "--case", "x", "--timeout", "1", cwd=tmp_path)
    assert hang.returncode == 2
    assert hang.stderr.strip().splitlines() == [
        f"jaxcompare: error: cases file {bad_files['hang']!r} could not be loaded: stopped after its 1 s deadline; "
        f"the worker was restarted"]
    crash = cli("list", "--cases-file", bad_files["crash"], cwd=tmp_path)
    assert crash.returncode == 2 and "Traceback" not in crash.stderr
    assert "could not be loaded: the worker process died" in crash.stderr


def test_cli_finds_a_user_case_through_its_worker(tmp_path):
    marker = tmp_path / "marker"
    path = marked_cases(tmp_path / "mine.py", marker)
    listing = cli("list", "--cases-file", path, cwd=tmp_path)
    assert listing.returncode == 0, listing.stderr
    assert any(line.startswith("softplus ") for line in listing.stdout.splitlines())
    wrong = cli("run", "--cases-file", path, "--case", "softplus_", "--quick", cwd=tmp_path)
    assert wrong.returncode == 2 and "unknown case 'softplus_' (did you mean softplus" in wrong.stderr
    # Imported only by the CLI's workers: never by a process whose parent is this test (the CLI itself).
    assert pids(marker, "import") and os.getpid() not in pids(marker, "import", column=2)
