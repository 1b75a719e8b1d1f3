"""jaxcompare.compare(numpy_fn, {"jnp": f, "scan": g}, x) (#51): each port of a notebook's own pair
measured for real, one job after another; the race with each port's Result, a port that fails as its
one line, the ports JSON and History; and the two-function form unchanged."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

import jaxcompare
from jaxcompare import BadInput
from jaxcompare.history.store import Store
from jaxcompare.notebook.results import NotebookResult, PortsResult

pytestmark = pytest.mark.slow

jax = pytest.importorskip("jax")
jnp = jax.numpy


@pytest.fixture(scope="module", autouse=True)
def _workers():
    yield
    jaxcompare.shutdown()


def scan_cumsum(x):
    return jax.lax.scan(lambda total, v: (total + v, total + v), jnp.zeros((), x.dtype), x)[1]


def broken(x):
    raise ValueError("this port does not trace")


@pytest.fixture(scope="module")
def race():
    x = np.random.default_rng(0).standard_normal(300).astype(np.float32)
    return jaxcompare.compare(np.cumsum, {"jnp": jnp.cumsum, "scan": scan_cumsum, "broken": broken}, x,
                              timing="quick", name="running_sum")


def test_each_port_runs_and_the_race_names_the_fastest_or_the_noise(race):
    assert isinstance(race, PortsResult) and len(race) == 3
    assert list(race.results) == ["jnp", "scan"] and all(isinstance(r, NotebookResult) for r in race.results.values())
    assert race["scan"].port == "scan" and race["jnp"].port == "jnp"
    assert race["scan"].case_info["jax_name"].endswith("scan_cumsum") and race["jnp"].shape == (300,)
    assert race.fastest in ("jnp", "scan") and race.verdict.runner_up in ("jnp", "scan")
    assert "broken" in race.verdict.left_out and "ValueError" in race.verdict.left_out["broken"]
    text = str(race)
    assert text.startswith("Ports of running_sum at 300 (x32):")
    assert "broken: did not run: " in text and "=== port scan ===" in text
    assert re.search(r"(jnp|scan) \d+\.\d\dx faster than|no difference within the noise", text)
    html = race._repr_html_()
    assert html.count("<details") == 2 and "did not run" in html
    assert repr(race).startswith("<jaxcompare Ports running_sum 300 x32: jnp, scan, broken; fastest ")
    # A port without a result names the ones that have one (a bare KeyError('nonsense') said nothing).
    for missing in ("nonsense", "broken"):
        with pytest.raises(KeyError, match="Ports with a result: jnp, scan; did not run: broken"):
            race[missing]


def test_the_race_writes_the_ports_json_and_saves_each_port_to_history(race, tmp_path):
    doc = json.loads(race.to_json(tmp_path / "ports.json"))
    assert doc["schema"] == "jaxcompare.ports/1" and [p["name"] for p in doc["ports"]] == ["jnp", "scan", "broken"]
    assert doc["ports"][2]["result"] is None and doc["ports"][1]["result"]["spec"]["port"] == "scan"
    assert doc["fastest"] == race.fastest
    db = tmp_path / "results.sqlite3"
    assert len(race.save(db)) == 2
    assert sorted(row["port"] for row in Store(db).list()) == ["jnp", "scan"]


def test_a_dict_needs_port_names_and_two_functions_still_give_one_result():
    x = np.ones(8, np.float32)
    with pytest.raises(BadInput, match="names each port by a string"):
        jaxcompare.compare(np.cumsum, {}, x)
    with pytest.raises(BadInput, match="port's name"):
        jaxcompare.compare(np.cumsum, {"jnp": jnp.cumsum, "a b": scan_cumsum}, x)
    with pytest.raises(BadInput, match=r"jax_fn\['scan'\] must be a function"):
        jaxcompare.compare(np.cumsum, {"jnp": jnp.cumsum, "scan": x}, x)
    single = jaxcompare.compare(np.cumsum, jnp.cumsum, x, timing="quick")
    assert isinstance(single, NotebookResult) and single.port == "jnp"


def test_a_sweep_of_ports_gives_each_port_its_own_sizes_and_crossover():
    """sweep() with a dict of ports: every port measured at each size, one SweepResult a port (each with
    its own crossover), a port that never ran left out rather than drawn with no points."""

    def make(shape, dtype, rng):
        return (rng.standard_normal(shape).astype(dtype),)

    swept = jaxcompare.sweep(np.cumsum, {"jnp": jnp.cumsum, "scan": scan_cumsum, "broken": broken}, make,
                             [100, 1000], ndim=1, timing="quick", name="running_sum")
    assert set(swept) == {"jnp", "scan"}
    for port, one in swept.items():
        assert [r.shape for r in one.results] == [(100,), (1000,)]
        assert {r.port for r in one.results} == {port}
        assert len(one.to_dict()["results"]) == 2
    # Each port's points are its own measurements, not one port's copied.
    assert {r.id for r in swept["jnp"].results}.isdisjoint(r.id for r in swept["scan"].results)
