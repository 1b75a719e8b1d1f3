"""How much memory a job will need, known before anything big is allocated: inputs only in the
server/CLI process (settings.preflight), inputs and outputs again in the worker (worker/memory.py
counts the outputs). No JAX here: both halves size a job.

Input shapes are found by probing ``make_inputs`` at a tiny shape whose sizes are distinct
primes, then mapping each probe size back to the requested size; output shapes come from
``jax.eval_shape`` on those input shapes (in the worker, no allocation).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ...i18n import N_
from ...model.cases import Case, format_shape
from ...model.errors import TooLarge
from ...model.formatting import format_bytes
from ...model.platforms import is_host

PROBE_SIZES = (13, 17, 19, 23)
# Leave room for the interpreter, XLA's workspace and the other worker.
HOST_FRACTION = 0.7
DEVICE_FRACTION = 0.8
# glibc serves a block below this from the heap and keeps it when freed, whatever the settings: a
# call whose arrays are all smaller runs alike in a plain process and in the worker (worker/plain_numpy.py).
GLIBC_MMAP_THRESHOLD = 128 << 10

@dataclass(frozen=True)
class MemoryEstimate:
    input_shapes: tuple[tuple[int, ...], ...]
    input_bytes: int
    output_bytes: int | None
    host_bytes: int
    device_bytes: int
    method: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _probe(case: Case, probe: tuple[int, ...], dtype: np.dtype) -> list[tuple[int, ...]] | None:
    if case.shape_rule(probe):
        return None
    try:
        arrays = case.make_inputs(probe, dtype, np.random.default_rng(0))
    except Exception:
        return None
    arrays = arrays if isinstance(arrays, tuple | list) else (arrays,)
    return [tuple(np.shape(a)) for a in arrays]


def input_shapes(case: Case, shape: tuple[int, ...], dtype: str) -> tuple[tuple[tuple[int, ...], ...], str]:
    """The input shapes ``make_inputs`` would build for ``shape``, without building them."""
    dt = np.dtype(dtype)
    # One distinct prime per distinct size, so equal sizes (square matrices) stay equal and
    # every probe size maps back to exactly one requested size.
    distinct = list(dict.fromkeys(shape))
    if len(distinct) <= len(PROBE_SIZES):
        size_map = dict(zip(PROBE_SIZES, distinct, strict=False))
        probe = tuple(PROBE_SIZES[distinct.index(n)] for n in shape)
        probed = _probe(case, probe, dt)
        if probed is not None:
            mapped = tuple(tuple(size_map.get(d, d) for d in arr_shape) for arr_shape in probed)
            return mapped, "probe"
    # Unknown layout: assume one input of the requested shape.
    return (tuple(shape),), "assumed"


OutputsOf = Callable[[Case, tuple[tuple[int, ...], ...], str], "int | None"]


def estimate(case: Case, shape: tuple[int, ...], dtype: str, backend: str = "cpu",
             outputs_of: OutputsOf | None = None) -> MemoryEstimate:
    """Peak host and device bytes for one comparison (inputs, outputs, float64 reference).
    ``outputs_of(case, input_shapes, dtype)``: the outputs' bytes (worker/memory.output_bytes, which
    asks JAX); without it, the outputs are taken as large as the inputs."""
    shapes, method = input_shapes(case, shape, dtype)
    itemsize = np.dtype(dtype).itemsize
    inputs = sum(math.prod(s) for s in shapes) * itemsize
    outputs = outputs_of(case, shapes, dtype) if outputs_of is not None else None
    out = outputs if outputs is not None else inputs
    widen = 8 / itemsize  # the float64 reference copies
    host = inputs + out + (inputs + out) * widen + case.numpy_temporaries * out * widen
    device = 2 * (inputs + out)
    if is_host(backend):  # the CPU "device" is host memory
        host += device
    return MemoryEstimate(shapes, int(inputs), outputs, int(host), int(device), method)


def host_available() -> int | None:
    try:
        import psutil

        return int(psutil.virtual_memory().available)
    except Exception:
        return None


def check_fits(est: MemoryEstimate, case_name: str, shape: tuple[int, ...], *,
               host_free: int | None, device_free_bytes: int | None,
               device_total_bytes: int | None = None) -> None:
    """Refuse, naming the limit, when the estimate does not fit; allocate nothing."""
    where = {"case": case_name, "shape": format_shape(shape)}
    if host_free is not None and est.host_bytes > HOST_FRACTION * host_free:
        raise TooLarge(N_("{case} at {shape} needs about {needed} of host memory; the limit here is {limit} "
                          "({fraction:.0%} of {available} available)").format(
            **where, needed=format_bytes(est.host_bytes), limit=format_bytes(HOST_FRACTION * host_free),
            fraction=HOST_FRACTION, available=format_bytes(host_free)))
    if device_free_bytes is not None and est.device_bytes > DEVICE_FRACTION * device_free_bytes:
        values = {**where, "needed": format_bytes(est.device_bytes),
                  "limit": format_bytes(DEVICE_FRACTION * device_free_bytes), "fraction": DEVICE_FRACTION,
                  "free": format_bytes(device_free_bytes)}
        if device_total_bytes:
            raise TooLarge(N_("{case} at {shape} needs about {needed} of device memory; the limit here is {limit} "
                              "({fraction:.0%} of {free} free of {total})").format(
                **values, total=format_bytes(device_total_bytes)))
        raise TooLarge(N_("{case} at {shape} needs about {needed} of device memory; the limit here is {limit} "
                          "({fraction:.0%} of {free} free)").format(**values))
