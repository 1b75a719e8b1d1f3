"""The built-in cases with several JAX ports: each port says why it differs, and every port agrees
with NumPy at both precisions (real JAX on the CPU, in a subprocess: this process never imports JAX;
a Pallas kernel runs there interpreted, which checks agreement, not speed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from typing import Any

import pytest

from jaxcompare.catalog import builtin_cases, get_case

# The issue's five: a Pallas kernel beside jnp, three orders of adds, three ways to write distances.
WITH_PORTS = {
    "matmul": {"jnp", "pallas"},
    "elementwise": {"jnp", "pallas"},
    "logsumexp": {"jax.scipy", "jnp", "pallas"},
    "cumsum": {"jnp", "associative_scan", "scan"},
    "cdist": {"broadcast", "vmap", "matmul"},
}
PALLAS = {("matmul", "pallas"), ("elementwise", "pallas"), ("logsumexp", "pallas")}
PORTS = [(case, port) for case, ports in WITH_PORTS.items() for port in sorted(ports)]


def _cpu_env(precision: str) -> dict[str, str]:
    return {**os.environ, "JAX_ENABLE_X64": "1" if precision == "x64" else "0", "JAX_PLATFORMS": "cpu"}


def test_the_cases_with_ports_are_the_issues_five_and_say_why():
    found = {c.name: set(c.port_names) for c in builtin_cases() if len(c.all_ports) > 1}
    assert found == WITH_PORTS
    for name in WITH_PORTS:
        case = get_case(name)
        assert case.ports_why, f"{name} does not say why its ports differ"
        assert all(p.why for p in case.ports), f"{name}: a port without its line"
        assert {(name, p.name) for p in case.all_ports if p.pallas} == {k for k in PALLAS if k[0] == name}


@pytest.fixture(scope="module", params=["x32", "x64"])
def port_checks(request: pytest.FixtureRequest) -> tuple[str, dict[tuple[str, str], dict[str, Any]]]:
    """One selfcheck subprocess per precision, every port of the five cases at their small shapes."""
    precision = request.param
    proc = subprocess.run(
        [sys.executable, "-m", "jaxcompare.engine.worker.selfcheck", "--precision", precision, "--all-ports",
         "--cases", ",".join(WITH_PORTS)], env=_cpu_env(precision), capture_output=True, text=True, timeout=300)
    assert proc.returncode in (0, 1), f"selfcheck crashed:\n{proc.stderr[-3000:]}"
    return precision, {(r["case"], r["port"]): r for r in json.loads(proc.stdout)}


@pytest.mark.parametrize(("case", "port"), PORTS, ids=lambda v: str(v))
def test_every_port_agrees_with_numpy(port_checks, case: str, port: str) -> None:
    precision, records = port_checks
    record = records[(case, port)]
    assert "error" not in record, f"{case}/{port} ({precision}) raised: {record['error']}"
    assert record["ok"], f"{case}/{port} ({precision}): max_rel_err {record['max_rel_err']:.3g} > {record['rtol']:.3g}"
    assert record["jax_dtype"] == {"x32": "float32", "x64": "float64"}[precision]


def test_the_pallas_matmul_sums_over_several_blocks_of_k():
    """At the small shapes each kernel is one block; with 128-blocks a 256x384 @ 384x256 product takes a
    2x2x3 grid, so the zeroing at K's first step and the sum over K's steps are what agreement checks."""
    script = textwrap.dedent("""
        import numpy as np, jax
        from jaxcompare.catalog import pallas_kernels as pk
        pk.MATMUL_BLOCKS = (128, 128, 128)
        pk.ELEMENTWISE_ROWS = 8
        rng = np.random.default_rng(1)
        a, b = rng.standard_normal((256, 384)), rng.standard_normal((384, 256))
        x = rng.standard_normal((64, 128))
        chain = np.sin(x) * np.exp(-x * x) + np.tanh(x)
        print(float(np.abs(np.asarray(jax.jit(pk.matmul)(a, b)) - a @ b).max()),
              float(np.abs(np.asarray(jax.jit(pk.elementwise)(x)) - chain).max()))
    """)
    proc = subprocess.run([sys.executable, "-c", script], env=_cpu_env("x64"), capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    matmul_err, chain_err = map(float, proc.stdout.split())
    assert matmul_err < 1e-9 and chain_err < 1e-12


def test_a_pallas_kernels_products_are_read_from_its_traced_program():
    """On a TPU the lowered program shows a Pallas kernel as one custom call, so only the traced kernel
    says it multiplies matrices; recorded there, the matmul kernel's float32 products ran at one bfloat16
    pass (relative error 2.4e-3) and the port was judged at float32's tolerance and failed."""
    import gzip

    import jax
    import jax.numpy as jnp

    from jaxcompare.catalog import pallas_kernels as pk
    from jaxcompare.engine.worker.agreement import kernel_has_dot, reduced_products, tolerance, traced

    a = jnp.ones((128, 128), jnp.float32)
    assert kernel_has_dot(traced(jax.jit(pk.matmul), (a, a))())
    assert not kernel_has_dot(traced(jax.jit(pk.elementwise), (a.reshape(-1),))())
    # A product outside any kernel is the lowered program's to judge (it may carry a precision setting).
    assert not kernel_has_dot(traced(jax.jit(jnp.matmul), (a, a))())

    from jax.experimental import pallas as pl

    def exact_kernel(x_ref, o_ref):  # a kernel whose products keep float32
        o_ref[...] = jnp.dot(x_ref[...], x_ref[...], precision="highest")

    def exact(x):
        return pl.pallas_call(exact_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), interpret=True)(x)

    assert not kernel_has_dot(traced(jax.jit(exact), (a,))())
    assert kernel_has_dot(traced(jax.jit(lambda x: exact(x) + pk.matmul(x, x)), (a,))())

    tpu_lowered = "stablehlo.custom_call @tpu_custom_call(%arg0, %arg1)"  # a kernel's whole lowered trace
    kernels = traced(jax.jit(pk.matmul), (a, a))
    assert reduced_products("float32", "tpu", "default", lambda: tpu_lowered) is None
    assert reduced_products("float32", "tpu", "default", lambda: tpu_lowered, kernels) == "bfloat16"
    assert reduced_products("float32", "tpu", "highest", lambda: tpu_lowered, kernels) is None

    with gzip.open(os.path.join(os.path.dirname(__file__), "data", "tpu", "ports", "ports-matmul.json.gz")) as f:
        recorded = {p["name"]: p for p in json.load(f)["ports"]}
    agreement = recorded["pallas"]["result"]["jax"]["agreement"]
    assert agreement["products"] is None and not agreement["ok"]  # as judged then
    rtol, _ = tolerance(get_case("matmul"), "float32", products="bfloat16")
    assert agreement["max_rel_err"] <= rtol  # as judged now: within the bfloat16 products' tolerance
    assert recorded["jnp"]["result"]["jax"]["agreement"]["products"] == "bfloat16"
