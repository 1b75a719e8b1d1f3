"""Does every case's JAX port agree with its NumPy/SciPy original? Runs in a worker (the
app's and the CLI's selfcheck) or as its own process, one precision per process.

Run as ``python -m jaxcompare.engine.worker.selfcheck --precision x32|x64 [--cases a,b] [--size large]``;
it prints one JSON list of agreement records. JAX is imported inside functions only, and
``main`` sets ``JAX_ENABLE_X64`` from ``--precision`` unless the environment already says.
A case that needs an operation the device lacks at this precision (float64 LU on a TPU) is
recorded "unsupported", with the plain line that says what to choose instead, never a disagreement.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...model.cases import Case, Shape, as_tuple
from ...model.errors import JaxCompareError
from ...model.platforms import error_first_line, float64_line
from .agreement import compare_outputs, program_products
from .ceilings import matmul_precision

PRECISION_DTYPES = {"x32": np.dtype(np.float32), "x64": np.dtype(np.float64)}


def _require_precision(precision: str) -> np.dtype:
    """The x64 flag is process-wide, so a mismatch is a setup error, not a case failure."""
    import jax.numpy as jnp

    if precision not in PRECISION_DTYPES:
        raise ValueError(f"precision must be one of {sorted(PRECISION_DTYPES)}, got {precision!r}")
    dtype = PRECISION_DTYPES[precision]
    default = np.dtype(jnp.zeros(1, dtype=float).dtype)
    if default != dtype:
        raise RuntimeError(
            f"precision {precision} needs JAX's default float to be {dtype}, but this process "
            f"has {default}; set JAX_ENABLE_X64={'1' if precision == 'x64' else '0'} before "
            "importing jax"
        )
    return dtype


def _upcast(inputs: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(
        np.asarray(a, dtype=np.float64) if isinstance(a, np.ndarray) and a.dtype.kind == "f" else a
        for a in inputs
    )


def check_case(case: Case, shape: Shape | None = None, precision: str = "x32") -> dict[str, Any]:
    """Agreement record for one case: JAX vs NumPy at ``precision``, both vs float64 NumPy."""
    import jax

    dtype = _require_precision(precision)
    shape = tuple(int(n) for n in (shape or case.small_shape))
    case.check_shape(shape)
    inputs = tuple(case.make_inputs(shape, dtype, np.random.default_rng(0)))
    numpy_out = as_tuple(case.numpy_fn(*inputs))

    args = tuple(jax.device_put(a) for a in inputs)
    jitted = jax.jit(case.jax_fn)
    platform = jax.devices()[0].platform  # device_put's default device, where the call runs
    try:
        jax_out = as_tuple(jax.block_until_ready(jitted(*args)))
    except Exception as exc:
        record = error_record(case.name, shape, precision, platform, exc)
        if "unsupported" in record:
            return record
        raise
    products = program_products(case, dtype.name, platform, matmul_precision(), jitted, args)

    reference = as_tuple(case.numpy_fn(*_upcast(inputs)))
    record = compare_outputs(case, dtype.name, inputs, numpy_out, jax_out, reference, products=products)
    return {"case": case.name, "shape": list(shape), "precision": precision, **record}


def error_record(case: str, shape: Shape, precision: str, platform: str | None,
                 error: BaseException) -> dict[str, Any]:
    """A case whose check raised: the error's first line (no XLA stack addresses) for an operator, and
    ``unsupported``, the plain line, where the device lacks a float64 operation the case needs."""
    text = f"{type(error).__name__}: {error}"
    record = {"case": case, "shape": list(shape), "precision": precision, "ok": False, "error": error_first_line(text)}
    plain = float64_line(platform, precision, text)
    if plain is not None:
        record["unsupported"] = plain
    return record


def record_status(record: dict[str, Any]) -> str:
    """'agree', 'disagree', 'unsupported' (not on this device at this precision) or 'error'."""
    if record.get("unsupported"):
        return "unsupported"
    if "error" in record:
        return "error"
    return "agree" if record.get("ok") else "disagree"


def json_safe(value: Any) -> Any:
    """Strict JSON has no inf/nan: write them as strings, and NumPy scalars as Python ones."""
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def _platform() -> str:
    import jax

    return jax.devices()[0].platform


def run_checks(names: Sequence[str] | None, precision: str, size: str = "small",
               all_ports: bool = False) -> list[dict[str, Any]]:
    """Check the named built-in cases (all when ``names`` is empty), each at its default port, or at
    every port with ``all_ports`` (each record then names its ``port``); errors become records."""
    from ...catalog import builtin_cases, get_case

    _require_precision(precision)
    cases = [get_case(n) for n in names] if names else list(builtin_cases())
    records = []
    for whole in cases:
        for case in [whole.for_port(p) for p in whole.port_names] if all_ports else [whole]:
            shape = case.large_shape if size == "large" else case.small_shape
            port = {"port": case.default_port} if all_ports else {}
            try:
                records.append(check_case(case, shape, precision) | port)
            except Exception as exc:  # one broken case must not hide the others' results
                records.append(error_record(case.name, shape, precision, _platform(), exc) | port)
    return records


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry: print the records as one JSON list; exit 1 when any case disagrees or fails (a case
    the device cannot run at this precision is neither)."""
    parser = argparse.ArgumentParser(prog="python -m jaxcompare.engine.worker.selfcheck", description=__doc__)
    parser.add_argument("--precision", choices=sorted(PRECISION_DTYPES), default="x32")
    parser.add_argument("--cases", default="", help="comma-separated case names (default: all)")
    parser.add_argument("--size", choices=("small", "large"), default="small")
    parser.add_argument("--all-ports", action="store_true", help="check every JAX port of each case, not only "
                        "its default (a Pallas port runs interpreted on the CPU)")
    args = parser.parse_args(argv)
    if "jax" not in sys.modules:
        os.environ.setdefault("JAX_ENABLE_X64", "1" if args.precision == "x64" else "0")
    names = [n.strip() for n in args.cases.split(",") if n.strip()]
    try:
        records = run_checks(names, args.precision, args.size, args.all_ports)
    except JaxCompareError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(json_safe(records), allow_nan=False))
    return 0 if all(record_status(r) in ("agree", "unsupported") for r in records) else 1


if __name__ == "__main__":
    sys.exit(main())
