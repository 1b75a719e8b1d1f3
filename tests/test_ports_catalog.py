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


def test_the_pallas_elementwise_chain_runs_over_several_blocks():
    """At the small shape the kernel is one block; with 8-row blocks a 64x128 input takes a grid of 8."""
    script = textwrap.dedent("""
        import numpy as np, jax
        from jaxcompare.catalog import pallas_kernels as pk
        pk.ELEMENTWISE_ROWS = 8
        x = np.random.default_rng(1).standard_normal((64, 128))
        chain = np.sin(x) * np.exp(-x * x) + np.tanh(x)
        print(float(np.abs(np.asarray(jax.jit(pk.elementwise)(x)) - chain).max()))
    """)
    proc = subprocess.run([sys.executable, "-c", script], env=_cpu_env("x64"), capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert float(proc.stdout) < 1e-12


# (M, K, N): one block of 10; K over several steps with N = 200, which no power-of-two block from 128 divides
# (a TPU's kernel takes its whole 200, a GPU's pads it to 256); and every dimension a multiple of 8 alone.
MATMUL_SHAPES = [(10, 10, 10), (256, 384, 200), (136, 520, 72)]


def _pallas_calls(jaxpr: Any) -> list[Any]:
    """Every pallas_call in a traced program, nested ones (a platform_dependent's branches) included."""
    found = []
    for eqn in getattr(jaxpr, "jaxpr", jaxpr).eqns:
        if eqn.primitive.name == "pallas_call":
            found.append(eqn)
        for value in eqn.params.values():
            for sub in value if isinstance(value, (tuple, list)) else (value,):
                if hasattr(getattr(sub, "jaxpr", sub), "eqns"):
                    found.extend(_pallas_calls(sub))
    return found


@pytest.mark.parametrize("kernel", ["sequential_matmul", "parallel_matmul"])
@pytest.mark.parametrize(("m", "k", "n"), MATMUL_SHAPES, ids=lambda v: str(v))
def test_each_pallas_matmul_kernel_agrees_with_numpy_interpreted(kernel: str, m: int, k: int, n: int) -> None:
    """Both kernel bodies, interpreted: the TPU's (K's steps summed into the output block) with 128-blocks so
    K = 384 takes 3 steps, and the GPU's (each output block looping over K) with the table's GPU blocks, so
    K = 384 takes 12 steps of 32 and a dimension no power-of-two block divides is padded and cut back."""
    import functools

    import jax
    import numpy as np

    from jaxcompare.catalog import pallas_kernels as pk
    from jaxcompare.model.platforms import PLATFORMS

    parallel = next(found for found in PLATFORMS.values() if found.pallas_grid_parallel)
    blocks = parallel.pallas_matmul_blocks if kernel == "parallel_matmul" else (128, 128, 128)
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((m, k), np.float32), rng.standard_normal((k, n), np.float32)
    fn = functools.partial(getattr(pk, kernel), blocks=blocks, interpret=True)
    out = np.asarray(jax.jit(fn)(a, b))
    expected = a.astype(np.float64) @ b
    assert out.shape == (m, n) and out.dtype == np.float32
    assert np.abs(out - expected).max() <= 1e-5 * np.abs(expected).max()

    (call,) = _pallas_calls(jax.make_jaxpr(fn)(a, b))
    grid = call.params["grid_mapping"].grid
    if (m, k, n) == (256, 384, 200):  # the shape meant to run K's loop and the whole-dimension block
        if kernel == "sequential_matmul":
            assert pk.block(n, 128, smallest=128) == n and grid == (2, 1, 3)
        else:
            assert pk.triton_block(n, blocks[1]) == 128 and grid == (2, 2)  # N padded to 256
            assert k // pk.triton_block(k, blocks[2]) == 12


def test_the_platform_table_gives_every_platform_matmul_blocks_and_its_kernel():
    from jaxcompare.catalog import pallas_kernels as pk
    from jaxcompare.model.platforms import PLATFORMS

    assert any(found.pallas_grid_parallel for found in PLATFORMS.values())
    for found in PLATFORMS.values():
        blocks = found.pallas_matmul_blocks
        assert blocks is not None and len(blocks) == 3, found.name
        assert all(size >= 16 and size & (size - 1) == 0 for size in blocks), (found.name, blocks)
        branch = pk._matmul_branch(found)
        assert branch.func is (pk.parallel_matmul if found.pallas_grid_parallel else pk.sequential_matmul)
        assert branch.keywords == {"blocks": blocks, "interpret": not found.pallas_compiles}
        if found.pallas_compiles:
            assert f"{'x'.join(map(str, blocks))} on a {found.label}" in get_case("matmul").get_port("pallas").jax_name


def test_no_program_of_a_parallel_grid_adds_into_another_programs_output():
    """On a GPU the grid's programs run in parallel, so a kernel that summed K's steps into its output block
    across a grid axis (as a TPU's may, its grid running in sequence) would race: for each platform's kernel,
    where its grid is parallel every grid point writes its own output block. The TPU's kernel, which does
    revisit, shows the check can fail."""
    import functools
    import itertools

    import jax
    import jax.extend as jex
    import jax.numpy as jnp

    from jaxcompare.catalog import pallas_kernels as pk
    from jaxcompare.model.platforms import PLATFORMS

    a, b = jax.ShapeDtypeStruct((256, 384), jnp.float32), jax.ShapeDtypeStruct((384, 256), jnp.float32)
    for found in PLATFORMS.values():
        # Its kernel at 128-blocks, so the TPU's takes K in 3 steps.
        kernel = functools.partial(pk._matmul_branch(found).func, blocks=(128, 128, 128), interpret=True)
        (call,) = _pallas_calls(jax.make_jaxpr(kernel)(a, b))
        grid_mapping = call.params["grid_mapping"]
        out = grid_mapping.block_mappings[-1].index_map_jaxpr  # the output's, after the inputs'
        written = [tuple(int(i) for i in jex.core.jaxpr_as_fun(out)(*point))
                   for point in itertools.product(*map(range, grid_mapping.grid))]
        own_blocks = len(set(written)) == len(written)
        if found.pallas_grid_parallel:
            assert len(grid_mapping.grid) == 2 and own_blocks, (found.name, grid_mapping.grid, written)
        else:
            assert len(grid_mapping.grid) == 3 and not own_blocks  # K's steps revisit each output block


def test_the_pallas_matmul_lowers_for_each_platform_that_compiles_it():
    """Lowered here on the CPU, neither compiled nor run: a TPU's branch through Mosaic and a GPU's through
    Triton, whose loads take only power-of-two sizes, at the catalog's shapes (10 and 1000: no power-of-two
    block from 16 divides them, so the GPU's kernel pads them) and the measured 4096."""
    import re

    import jax
    import jax.numpy as jnp

    from jaxcompare.catalog import pallas_kernels as pk
    from jaxcompare.model.platforms import PLATFORMS

    case = get_case("matmul")
    for size in (case.small_shape[0], case.large_shape[0], 4096):
        a = jax.ShapeDtypeStruct((size, size), jnp.float32)
        for found in PLATFORMS.values():
            for name in found.lowering_names if found.pallas_compiles else ():
                text = jax.jit(pk.matmul).trace(a, a).lower(lowering_platforms=(name,)).as_text()
                assert re.search(r"custom_call @(tpu_custom_call|__gpu\$xla\.gpu\.triton)", text), (size, name)


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
