"""A case's JAX ports in the model: named beside its jax_fn (the default port), chosen by a Spec's
port, recorded in the Result (schema 4), and read back from results saved before ports existed."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from jaxcompare.catalog import case_from_summary
from jaxcompare.model.cases import Case, Port
from jaxcompare.model.errors import BadInput
from jaxcompare.model.result import SCHEMA, SCHEMA_V3, Result
from jaxcompare.model.spec import Spec

DATA = Path(__file__).parent / "data"


def _inputs(shape, dtype, rng):
    return (rng.standard_normal(shape).astype(dtype),)


def _scan(x):
    return np.cumsum(x)


def _case(**kw) -> Case:
    return Case("running", np.cumsum, np.cumsum, _inputs, **kw)


def test_a_dict_of_ports_becomes_named_ports_after_the_default():
    case = _case(ports={"scan": _scan, "fused": Port("ignored", np.add, why="adds")})
    assert case.port_names == ("jnp", "scan", "fused")
    assert case.get_port("fused").why == "adds"  # a Port keeps its fields under the dict's name
    assert case.get_port(None).fn is case.jax_fn  # the default port is the case's own JAX side


def test_for_port_makes_that_port_the_jax_side_and_keeps_the_others():
    case = _case(ports=[Port("scan", _scan, why="a loop")], default_port="cumsum", default_why="XLA's own")
    scan = case.for_port("scan")
    assert scan.jax_fn is _scan and scan.default_port == "scan"
    assert sorted(scan.port_names) == sorted(case.port_names)
    assert scan.summary()["port"] == "scan" and case.for_port(None) is case
    assert {p["name"]: p["why"] for p in scan.summary()["ports"]} == {"scan": "a loop", "cumsum": "XLA's own"}


def test_unknown_duplicate_and_odd_port_names_are_refused_in_words():
    with pytest.raises(BadInput, match="has no port 'pallas'; its ports: jnp, scan"):
        _case(ports={"scan": _scan}).for_port("pallas")
    with pytest.raises(BadInput, match="two ports are called 'jnp'"):
        _case(ports={"jnp": _scan})
    with pytest.raises(BadInput, match="a port's name"):
        _case(ports={"a,b": _scan})
    with pytest.raises(BadInput, match="a port's name"):
        Spec("matmul", (4, 4), port="")


def test_a_spec_names_its_port_and_round_trips():
    spec = Spec("cumsum", (100,), port="scan")
    assert Spec.from_dict(spec.to_dict()) == spec
    assert Spec.from_dict({"case": "cumsum", "shape": [100]}).port is None


def test_a_cases_files_stand_in_lists_the_same_ports():
    case = _case(ports=[Port("scan", _scan, why="a loop", pallas=True)], ports_why="three orders of adds")
    stand_in = case_from_summary(case.summary() | {"source": "my_cases.py"})
    assert stand_in.port_names == case.port_names and stand_in.get_port("scan").pallas
    assert stand_in.ports_why == "three orders of adds"


@pytest.mark.parametrize("path", sorted((DATA / "tpu" / "hand-protocol").glob("*.json")), ids=lambda p: p.stem)
def test_a_schema_3_result_loads_as_its_cases_default_port(path):
    old = json.loads(path.read_text())
    assert old["schema"] == SCHEMA_V3
    result = Result.from_dict(old)
    assert result.spec.port is None and result.port is None and not result.interpreted
    new = result.to_dict()
    assert new["schema"] == SCHEMA and new["spec"]["port"] is None
    assert new["port"] == {"name": None, "pallas": False, "interpreted": False}
    assert Result.from_dict(new) == result


def test_a_pallas_port_on_the_cpu_is_flagged_interpreted():
    old = Result.from_dict(json.loads((DATA / "tpu" / "hand-protocol" / "matmul-2048x2048-x32.json").read_text()))
    info = old.case_info | {"port": "pallas", "port_pallas": True}
    on_tpu = Result.from_dict(old.to_dict() | {"case_info": info})
    assert on_tpu.port == "pallas" and not on_tpu.interpreted  # compiled with Mosaic: a speed figure
    on_cpu = Result.from_dict(on_tpu.to_dict() | {"backend": "cpu"})
    assert on_cpu.interpreted and on_cpu.to_dict()["port"]["interpreted"] is True
