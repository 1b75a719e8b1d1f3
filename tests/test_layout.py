"""The package's shape as users meet it: the engine and CLI without the app's libraries, the
console script, results saved by earlier versions, and docs whose links resolve."""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

from jaxcompare import Result
from jaxcompare.history.store import Store

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).parent / "data"
APP_ONLY = ("streamlit", "altair", "vl_convert")

# Run before anything else imports: a finder that refuses the app's libraries, as if they
# were not installed.
_BLOCK_APP_LIBRARIES = f"""
import sys
class _NotInstalled:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {APP_ONLY!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}")
sys.meta_path.insert(0, _NotInstalled())
"""


def _python_without_app(tmp_path: Path, code: str, *args: str) -> subprocess.CompletedProcess[str]:
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(_BLOCK_APP_LIBRARIES)
    env = {"PYTHONPATH": f"{site}:{ROOT}", "JAX_PLATFORMS": "cpu", "JAXCOMPARE_DB": str(tmp_path / "db.sqlite3"),
           "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env,
                          timeout=240, cwd=tmp_path)


def test_the_blocker_really_blocks(tmp_path):
    proc = _python_without_app(tmp_path, "import streamlit")
    assert proc.returncode != 0 and "No module named 'streamlit'" in proc.stderr


def test_engine_and_cli_run_without_the_app_libraries(tmp_path):
    """`import jaxcompare` and a whole `run` work where only the engine's dependencies are."""
    code = ("import sys, jaxcompare\n"
            "from jaxcompare.cli import main\n"
            "rc = main(sys.argv[1:])\n"
            f"loaded = sorted(m for m in sys.modules if m.split('.')[0] in {APP_ONLY!r})\n"
            "print('APP-LIBS', loaded, file=sys.stderr)\n"
            "sys.exit(rc)\n")
    proc = _python_without_app(tmp_path, code, "run", "--case", "matmul", "--shape", "32x32", "--timing", "quick",
                               "--json", "-")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["case"] == "matmul"
    assert "APP-LIBS []" in proc.stderr


def test_app_libraries_are_an_extra():
    """pyproject: Streamlit, Altair and vl-convert only under the `app` extra."""
    requires = metadata.requires("jaxcompare") or []
    core = [r for r in requires if "extra ==" not in r]
    app = [r for r in requires if re.search(r"extra == .app.", r)]
    names = {re.split(r"[<>=!~ ;\[]", r, maxsplit=1)[0].lower().replace("_", "-") for r in core}
    assert {"jax", "numpy", "scipy"} <= names
    assert not names & {"streamlit", "altair", "vl-convert-python"}
    assert {re.split(r"[<>=!~ ;\[]", r, maxsplit=1)[0].lower() for r in app} >= {"streamlit", "altair"}


def test_console_script_runs_the_cli():
    script = shutil.which("jaxcompare", path=str(Path(sys.executable).parent))
    assert script, "the `jaxcompare` console script is not installed next to this Python"
    proc = subprocess.run([script, "list", "--json", "-"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "centered_gram" in {case["name"] for case in json.loads(proc.stdout)}


def test_results_saved_before_the_layout_change_still_load(tmp_path):
    """A database and an export written by jaxcompare 0.1 before the package was split."""
    db = tmp_path / "old.sqlite3"
    shutil.copy(DATA / "results-v0.1-before-layout.sqlite3", db)
    old_ids = {row[0] for row in sqlite3.connect(db).execute("SELECT id FROM results")}
    store = Store(db)
    results = store.load(store.all_ids())
    assert {r.id for r in results} == old_ids and len(old_ids) == 2
    assert {r.spec.case for r in results} == {"centered_gram", "svd"}
    assert all(r.jax.runtime.median_s > 0 and r.numpy_runtime.n > 0 for r in results)
    # Saved before the third side and the fraction of peak: both read as "not measured".
    assert all(r.jax_cpu is None and r.peak is None and r.jax.transfer_bytes is None for r in results)
    assert all(r.to_dict()["jax_cpu"] is None and r.to_dict()["peak"] is None for r in results)

    fresh = Store(tmp_path / "fresh.sqlite3")
    added, _ = fresh.import_file(DATA / "export-v0.1-before-layout.json")
    assert added == 2
    doc = json.loads((DATA / "export-v0.1-before-layout.json").read_text())
    again = Result.from_dict(doc["results"][0])
    assert again.to_dict()["speedup"] == pytest.approx(doc["results"][0]["speedup"])


LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def _docs() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("**/*.md")), *sorted((ROOT / "benchmarks").glob("*.md"))]


def test_every_relative_link_in_readme_and_docs_resolves_inside_the_repository():
    broken = []
    for doc in _docs():
        for target in LINK.findall(doc.read_text(encoding="utf-8")):
            if re.match(r"[a-z]+:", target):  # http(s), mailto: not a file
                continue
            path = (doc.parent / target).resolve()
            if not path.exists() or ROOT not in path.parents:
                broken.append(f"{doc.relative_to(ROOT)} -> {target}")
    assert not broken, broken


def test_each_page_is_declared_once_in_the_package():
    """app.py and pages/ hold exactly the pages the app's list declares, and no page's path or
    title is typed anywhere else in the app (a renamed page would leave a dead link)."""
    from jaxcompare.app import navigation

    files = {"app.py", *(f"pages/{p.name}" for p in (ROOT / "pages").glob("*.py"))}
    assert {page.path for page in navigation.PAGES} == files
    assert len({page.title for page in navigation.PAGES}) == len(navigation.PAGES)
    sources = [ROOT / "app.py", *(ROOT / "pages").glob("*.py"),
               *(p for p in (ROOT / "jaxcompare").rglob("*.py") if p.name != "navigation.py")]
    for source in sources:
        text = source.read_text(encoding="utf-8")
        for page in navigation.PAGES:
            assert page.path not in text or page.path == "app.py", f"{source.name} types {page.path}"
            assert f'_("{page.title}")' not in text, f"{source.name} types the title {page.title!r}"


def test_the_home_page_imports_neither_altair_nor_jax():
    """Home shows no chart and measures nothing: what it imports is its first paint's wait."""
    code = ("import ast, sys; tree = ast.parse(open('app.py').read())\n"
            "for node in ast.walk(tree):\n"
            "    if isinstance(node, ast.ImportFrom) and node.module.startswith('jaxcompare'):\n"
            "        __import__(node.module, fromlist=[a.name for a in node.names])\n"
            "print(sorted(m for m in ('altair', 'pandas', 'jax', 'vl_convert') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_pages_use_the_engine_through_its_front_door():
    """pages/ and app.py sit outside the package, where import-linter's contract for the front ends
    (pyproject.toml) does not reach: they too import the engine as ``jaxcompare.engine`` only."""
    import ast

    for source in [ROOT / "app.py", *(ROOT / "pages").glob("*.py")]:
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            names = ([node.module or ""] if isinstance(node, ast.ImportFrom)
                     else [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            for name in names:
                assert not name.startswith("jaxcompare.engine."), f"{source.name} imports {name}"


def test_the_architecture_page_names_every_module():
    """docs/architecture.md is where a newcomer finds the package's modules: each one is named there."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    modules = [p for p in (ROOT / "jaxcompare").glob("*/**/*.py")
               if p.name != "__init__.py" and "locale" not in p.parts]
    assert len(modules) > 100
    missing = [p.relative_to(ROOT / "jaxcompare").as_posix() for p in modules if f"`{p.stem}`" not in text]
    assert not missing, missing


def test_the_engines_front_door_loads_nothing_of_the_worker_half():
    """Importing jaxcompare.engine and naming its runner loads the server half only: the worker's
    modules (and JAX) stay out of the Streamlit process."""
    code = ("import sys, jaxcompare.engine as engine; engine.Runner, engine.Estimate, engine.Settings\n"
            "print(sorted(m for m in sys.modules if m.startswith('jaxcompare.engine.worker') or m == 'jax'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_the_home_page_loads_nothing_of_the_engines_worker_half():
    """What app.py imports brings the engine's server half into the Streamlit process, never a module
    of its worker half (those are the worker processes')."""
    code = ("import ast, sys; tree = ast.parse(open('app.py').read())\n"
            "for node in ast.walk(tree):\n"
            "    if isinstance(node, ast.ImportFrom) and node.module.startswith('jaxcompare'):\n"
            "        __import__(node.module, fromlist=[a.name for a in node.names])\n"
            "print(sorted(m for m in sys.modules if m.startswith('jaxcompare.engine.worker')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_the_home_pages_first_run_skips_streamlits_emoji_catalog(tmp_path):
    """Streamlit loads its emoji catalog (90 ms, before the first heading) when a widget's option or
    an alert without an icon holds non-ASCII text, such as the language switch's 中文."""
    code = ("import importlib.util, sys; from streamlit.testing.v1 import AppTest\n"
            "assert importlib.util.find_spec('streamlit.emojis') is not None  # the module this looks for\n"
            "at = AppTest.from_file('app.py', default_timeout=60); at.run()\n"
            "assert not at.exception, at.exception\n"
            "print('streamlit.emojis' in sys.modules)")
    env = {**os.environ, "JAXCOMPARE_DB": str(tmp_path / "results.sqlite3")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


PLATFORM_NAMES = {"cpu", "gpu", "tpu", "cuda", "rocm"}
# Modules that may still test a platform's name: the table itself; the peaks table, whose row family
# ("nvidia", "tpu") is a vendor's, chosen by device kind; and the atlas, whose facets are keyed by device
# name (not yet moved onto the table).
PLATFORM_NAME_TESTS_ALLOWED = {"model/platforms.py", "model/peaks.py", "analysis/atlas.py",
                               "analysis/atlas_text.py", "cli/atlas.py"}


def test_platform_facts_live_in_the_platform_table():
    """A new platform is one row of model/platforms.PLATFORMS: no other module compares a backend with a
    platform's name ('cpu', in ("gpu", "tpu")) or keeps its own table keyed by platform names; each reads the
    row's fact (host, label, ray_resource, builds, links, pallas_compiles...) instead."""
    import ast

    def is_name(node: ast.AST | None) -> bool:
        return isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in PLATFORM_NAMES

    package = ROOT / "jaxcompare"
    found = []
    for path in sorted(package.rglob("*.py")):
        module = path.relative_to(package).as_posix()
        if module in PLATFORM_NAME_TESTS_ALLOWED:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Compare):
                operands = [node.left, *node.comparators]
                named = any(is_name(e) for o in operands
                            for e in (o.elts if isinstance(o, ast.Tuple | ast.List | ast.Set) else [o]))
            else:
                named = isinstance(node, ast.Dict) and sum(map(is_name, node.keys)) >= 2
            if named:
                found.append(f"{module}:{node.lineno}")
    assert not found, found


def test_the_engine_stays_in_files_a_newcomer_can_read():
    # The runner routes (jobs, lanes, dispatch, estimates each in their own module); no engine file grows past 500.
    lines = {path.relative_to(ROOT).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
             for path in (ROOT / "jaxcompare" / "engine").rglob("*.py")}
    assert lines["jaxcompare/engine/server/runner.py"] < 300
    assert {name: n for name, n in lines.items() if n > 500} == {}


def test_the_protocols_phase_list_is_typed_once():
    """The protocol's phases are rows of model/phases.py (MEASURING, FIGURES); every other module takes its list
    from there (PHASES, JAX_PHASES...). A list typed again (three or more phase names in a tuple, list or set)
    is one a new phase would miss: JaxSide's JSON dropped a new figure, the third side's progress raised on it."""
    import ast

    from jaxcompare.model.phases import MEASURING, PHASES

    names = set(PHASES) | {phase.name for phase in MEASURING}
    package = ROOT / "jaxcompare"
    found = []
    for path in sorted(package.rglob("*.py")):
        if path == package / "model" / "phases.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Tuple | ast.List | ast.Set):
                typed = [e.value for e in node.elts if isinstance(e, ast.Constant) and e.value in names]
                if len(typed) >= 3:
                    found.append(f"{path.relative_to(package).as_posix()}:{node.lineno} {typed}")
    assert not found, found


def test_every_jax_figure_survives_a_sides_json_round_trip():
    # JaxSide's JSON layout walks the figures table: a figure added there is written and read back, not dropped.
    import dataclasses

    from _results import make_result

    from jaxcompare.model.phases import JAX_PHASES
    from jaxcompare.model.sides import JaxSide
    from jaxcompare.model.stats import Stats

    side = make_result().jax
    side = dataclasses.replace(side, **{name: Stats.from_samples([1e-3 * (i + 1)] * 3)
                                        for i, name in enumerate(JAX_PHASES)})
    again = JaxSide.from_dict(json.loads(json.dumps(side.to_dict())))
    assert {name: again.phase(name) for name in JAX_PHASES} == {name: side.phase(name) for name in JAX_PHASES}
