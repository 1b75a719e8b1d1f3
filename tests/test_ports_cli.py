"""`run --ports` end to end on the CPU, real workers and real JAX, quick timing: every port gets the
whole protocol and its own result, the race is the analysis's on those results, a Pallas kernel is
flagged interpreted, and a port that fails to compile is one plain line while the others stand."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from support import cli

from jaxcompare import Result
from jaxcompare.analysis.ports import PortRun, ports_verdict


def test_ports_run_each_port_and_race_them_in_one_json_document(tmp_path):
    proc = cli("run", "--case", "cumsum", "--shape", "20000", "--quick", "--ports", "scan,jnp", "--json", "-",
               "--profile", str(tmp_path / "traces"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    doc = json.loads(proc.stdout)  # stdout holds the one document and nothing else
    assert doc["schema"] == "jaxcompare.ports/1" and [p["name"] for p in doc["ports"]] == ["scan", "jnp"]
    results = {p["name"]: Result.from_dict(p["result"]) for p in doc["ports"]}
    for name, result in results.items():
        assert result.spec.port == name and result.port == name and result.case_info["port"] == name
        assert result.jax.agreement["ok"] and {"checklist", "trusted"} <= set(doc["ports"][0]["result"])
    assert results["scan"].case_info["jax_name"].startswith("jax.lax.scan")
    verdict = ports_verdict([PortRun(n, r) for n, r in results.items()])
    assert (doc["fastest"], doc["runner_up"], doc["decided"]) == (verdict.fastest, verdict.runner_up, verdict.decided)
    low, high = doc["ratio_range"]
    assert doc["decided"] == (low > 1) and low <= doc["ratio"] <= high
    # The race on calls back to back has its range at quick timing too: enough loops a port for one.
    assert all(r.jax.back_to_back.n >= 6 for r in results.values())
    b2b_low, b2b_high = doc["back_to_back"]["ratio_range"]
    assert b2b_low is not None and b2b_low <= doc["back_to_back"]["ratio"] <= b2b_high
    assert "measuring cumsum port scan" in proc.stderr and "measuring cumsum port jnp" in proc.stderr
    assert "credibility checklist" in proc.stderr and "fastest" in proc.stderr  # the readable race, on stderr
    # --profile traces each port's run on its own, so each port has its time on the device.
    traces = {name: Path(r.profile.trace_file) for name, r in results.items()}
    assert len(set(traces.values())) == 2 and all(
        t.is_file() and t.is_relative_to(tmp_path / "traces" / results[n].id) for n, t in traces.items())


def test_a_port_that_fails_to_compile_is_one_line_and_an_interpreted_kernel_is_no_speed_figure(tmp_path):
    cases = tmp_path / "kernels.py"
    cases.write_text(textwrap.dedent("""
        import numpy as np
        import jax, jax.numpy as jnp
        from jax.experimental import pallas as pl
        from jaxcompare import Case, Port

        def _double(x_ref, o_ref):
            o_ref[...] = x_ref[...] * 2

        def kernel(x, interpret):
            return pl.pallas_call(_double, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), interpret=interpret)(x)

        CASES = [Case("double", lambda x: x * 2, lambda x: x * 2,
                      lambda shape, dtype, rng: (rng.standard_normal(shape).astype(dtype),),
                      ports=[Port("interpreted", lambda x: kernel(x, True), pallas=True),
                             Port("mosaic", lambda x: kernel(x, False), pallas=True)])]
    """))
    proc = cli("run", "--cases-file", str(cases), "--case", "double", "--shape", "8x128", "--quick",
               "--ports", "all", "--json", str(tmp_path / "ports.json"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    doc = json.loads((tmp_path / "ports.json").read_text())
    by_name = {p["name"]: p for p in doc["ports"]}
    failed = by_name["mosaic"]
    assert failed["result"] is None and "Only interpret mode is supported on CPU" in failed["error"]
    assert "\n" not in failed["error"]
    assert by_name["interpreted"]["result"]["port"] == {"name": "interpreted", "pallas": True, "interpreted": True}
    assert "not a speed figure" in by_name["interpreted"]["left_out"]
    assert doc["fastest"] == "jnp" and doc["runner_up"] is None
    assert "jaxcompare: port mosaic: " in proc.stderr
    assert "mosaic: did not run: " in proc.stdout
    assert "interpreted: a Pallas kernel interpreted on the CPU" in proc.stdout


def test_an_unknown_port_is_refused_with_the_cases_ports_before_measuring():
    proc = cli("run", "--case", "matmul", "--shape", "8x8", "--quick", "--ports", "jnp,tiled")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip() == "jaxcompare: error: case 'matmul' has no port 'tiled'; its ports: jnp, pallas"


def test_list_names_each_cases_ports():
    proc = cli("list")
    line = next(line for line in proc.stdout.splitlines() if line.startswith("cumsum "))
    assert "[ports: jnp, associative_scan, scan]" in line


def test_a_sweep_of_ports_measures_each_at_every_size_and_drops_a_failed_ports_larger_sizes(tmp_path):
    """`sweep --ports`: each port at each size (the Size sweep page's and the notebook's ports, on the CLI),
    a verdict per port, one document whose results hold every port's (so `import` reads it); a port that
    fails at a size is one line and is not measured at the larger ones, as on the page."""
    cases = tmp_path / "halves.py"
    cases.write_text(textwrap.dedent("""
        import jax
        from jax.experimental import pallas as pl
        from jaxcompare import Case, Port

        def small_only(x):
            if x.size > 64:
                raise ValueError("this port takes at most 64 elements")
            return x * 0.5

        def _half(x_ref, o_ref):
            o_ref[...] = x_ref[...] * 0.5

        def kernel(x):
            return pl.pallas_call(_half, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), interpret=True)(x)

        CASES = [Case("halves", lambda x: x * 0.5, lambda x: x * 0.5,
                      lambda shape, dtype, rng: (rng.standard_normal(shape).astype(dtype),),
                      small_shape=(8,), large_shape=(1024,),
                      ports=[Port("small_only", small_only), Port("kernel", kernel, pallas=True)])]
    """))
    doc_path, db = tmp_path / "sweep.json", tmp_path / "h.sqlite3"
    proc = cli("sweep", "--cases-file", str(cases), "--case", "halves", "--sizes", "8", "256", "1024", "--quick",
               "--ports", "jnp,small_only,kernel", "--json", str(doc_path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    doc = json.loads(doc_path.read_text())
    ports = {p["name"]: p for p in doc["ports"]}
    assert [p["name"] for p in doc["ports"]] == ["jnp", "small_only", "kernel"]
    assert ports["jnp"]["failed_at"] is None and ports["small_only"]["failed_at"] == [256]
    assert "this port takes at most 64 elements" in ports["small_only"]["error"]
    assert [(r["spec"]["shape"], r["spec"]["port"]) for r in doc["results"]] == [
        ([8], "jnp"), ([8], "small_only"), ([8], "kernel"), ([256], "jnp"), ([256], "kernel"), ([1024], "jnp"),
        ([1024], "kernel")]
    assert all({"trusted", "set_aside", "direction"} <= set(r) for r in doc["results"])
    # An interpreted kernel's time is no speed figure: no size of it may lead, and its verdict says why.
    assert "not a speed figure" in ports["kernel"]["left_out"] and ports["kernel"]["crossover_elements"] is None
    assert all((r["trusted"], r["set_aside"]) == (False, "interpreted")
               for r in doc["results"] if r["spec"]["port"] == "kernel")
    assert "jaxcompare: port small_only at 256: " in proc.stderr and "larger sizes are not measured" in proc.stderr
    names = (["jnp"], ["small_only"], ["kernel"])
    rows = [line.split()[:2] for line in proc.stdout.splitlines() if line.split()[:1] in names]
    assert rows == [["jnp", "8"], ["small_only", "8"], ["kernel", "8"], ["jnp", "256"], ["kernel", "256"],
                    ["jnp", "1024"], ["kernel", "1024"]]
    verdicts = {line.split(":")[0]: line for line in proc.stdout.splitlines() if line.startswith("port ")}
    assert "From 256 up it was not measured: " in verdicts["port small_only"]  # not "try larger sizes" alone
    assert "its time is not a speed figure" in verdicts["port kernel"] and "speedup" not in verdicts["port kernel"]
    assert "port jnp" in verdicts
    # Which port was fastest at each size two or more ran at: at 8 the two plain ports raced (the interpreted
    # kernel set aside), above it jnp alone was a speed figure.
    races = {tuple(race["shape"]): race for race in doc["races"]}
    assert list(races) == [(8,), (256,), (1024,)]
    assert {races[(8,)]["fastest"], races[(8,)]["runner_up"]} == {"jnp", "small_only"}
    assert (races[(256,)]["fastest"], races[(256,)]["runner_up"]) == ("jnp", None)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("fastest at ")]
    assert [line.split(":")[0] for line in lines] == ["fastest at 8", "fastest at 256", "fastest at 1024"]
    assert lines[0] == f"fastest at 8: {races[(8,)]['verdict']}" and "only jnp was measured" in lines[1]
    imported = cli("import", str(doc_path), "--db", str(db))
    assert imported.returncode == 0 and "imported 7 results (0 already present)" in imported.stdout, imported.stderr
