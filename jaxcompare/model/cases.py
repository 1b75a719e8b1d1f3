"""What a benchmark case is: a NumPy/SciPy function, its JAX port (or several), inputs and checks.

A user adds cases without touching the package: a Python file defining ``CASES``, a list
of :class:`Case`, loaded with ``--cases-file``. Only ``name``, ``numpy_fn``, ``jax_fn`` and
``make_inputs`` are required; ``ports`` names other ways of writing the JAX side.
"""

from __future__ import annotations

import functools
import math
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..i18n import N_
from .errors import BadInput
from .port_names import DEFAULT_PORT, check_port_name

Shape = tuple[int, ...]
Arrays = tuple[np.ndarray, ...]
# Case.source of functions passed to jaxcompare.compare() (a notebook, a script).
NOTEBOOK = "notebook"


def square(shape: Shape) -> str | None:
    """Shape rule: one n x n matrix."""
    if len(shape) != 2 or shape[0] != shape[1]:
        return N_("needs a square matrix shape like 100x100, got {shape}").format(shape=format_shape(shape))
    return None


def matrix(shape: Shape) -> str | None:
    """Shape rule: any 2-D shape."""
    if len(shape) != 2:
        return N_("needs a 2-D shape like 100x50, got {shape}").format(shape=format_shape(shape))
    return None


def vector(shape: Shape) -> str | None:
    """Shape rule: a 1-D length."""
    if len(shape) != 1:
        return N_("needs a 1-D shape like 100000, got {shape}").format(shape=format_shape(shape))
    return None


def any_shape(shape: Shape) -> str | None:
    """Shape rule: any shape of one or more dimensions."""
    if len(shape) < 1:
        return N_("needs at least one dimension")
    return None


def format_shape(shape: Sequence[int]) -> str:
    """(1000, 1000) -> '1000x1000': how every page, table, file name and message writes a shape."""
    return "x".join(str(int(n)) for n in shape)


def as_tuple(out: Any) -> Arrays:
    """Normalise a function's output (array, tuple, namedtuple) to a tuple of host arrays."""
    if isinstance(out, tuple | list):
        return tuple(np.asarray(o) for o in out)
    return (np.asarray(out),)


def default_canonical(outputs: Arrays, inputs: Arrays) -> Arrays:
    """Most outputs are unique, so they are compared as they are."""
    return outputs


@dataclass(frozen=True)
class Port:
    """One way of writing a case's JAX side. ``why`` says in a line how it differs from the case's
    other ports. ``pallas``: a Pallas kernel, which compiles only for a GPU or TPU and runs on the
    CPU interpreted (``interpret=True``), where its time is no speed figure."""

    name: str
    fn: Callable[..., Any]
    jax_name: str = ""
    why: str = ""
    pallas: bool = False

    def __post_init__(self) -> None:
        check_port_name(self.name)
        if not callable(self.fn):
            raise BadInput(N_("port {name!r}: its function must be callable").format(name=self.name))
        if not self.jax_name:
            object.__setattr__(self, "jax_name", dotted_name(self.fn))
        object.__setattr__(self, "fn", jittable(self.fn))

    def summary(self) -> dict[str, Any]:
        return {"name": self.name, "jax_name": self.jax_name, "why": self.why, "pallas": self.pallas}


def _as_ports(ports: Sequence[Port] | Mapping[str, Any], case: str) -> tuple[Port, ...]:
    """``ports`` as given (Ports, or a mapping of name to function or Port) as a tuple of Ports."""
    if isinstance(ports, Mapping):
        items = [replace(p, name=n) if isinstance(p, Port) else Port(n, p) for n, p in ports.items()]
    elif isinstance(ports, Sequence) and not isinstance(ports, str):
        items = list(ports)
    else:
        raise BadInput(N_("case {name!r}: ports must be a list of Port or a dict of name to function").format(
            name=case))
    bad = [p for p in items if not isinstance(p, Port)]
    if bad:
        raise BadInput(N_("case {name!r}: ports holds {kind}, not Port").format(name=case, kind=type(bad[0]).__name__))
    return tuple(items)


@dataclass(frozen=True)
class Case:
    """One NumPy/SciPy function and its JAX port.

    ``make_inputs(shape, dtype, rng)`` returns a tuple of NumPy arrays of ``dtype``.
    ``canonical(outputs, inputs)`` maps outputs that legitimately differ (signs, order,
    pivots) to invariants that must agree. ``tolerance`` multiplies the default
    tolerance for cases whose rounding grows with size (cumsum, inv, expm).
    Every input is traced by ``jax.jit`` (no static arguments): fixed parameters such as an
    axis or a mode belong inside ``numpy_fn`` and ``jax_fn``.

    ``jax_fn`` is the default port, named ``default_port``; ``ports`` are the other ways of writing
    the JAX side (Port, or a dict of name to function), each measured with the whole protocol by a
    Spec that names it; ``ports_why`` says in a line why they differ. ``pallas``: ``jax_fn`` is a
    Pallas kernel (set by ``for_port`` on the case a Pallas port is measured as).
    """

    name: str
    numpy_fn: Callable[..., Any]
    jax_fn: Callable[..., Any]
    make_inputs: Callable[[Shape, np.dtype, np.random.Generator], Arrays]
    title: str = ""
    group: str = "custom"
    numpy_name: str = ""
    jax_name: str = ""
    description: str = ""
    shape_rule: Callable[[Shape], str | None] = any_shape
    small_shape: Shape = (10, 10)
    large_shape: Shape = (1000, 1000)
    flops: Callable[[Shape], float] | None = None
    canonical: Callable[[Arrays, Arrays], Arrays] = default_canonical
    tolerance: float = 1.0
    # The dtype NumPy really computes in when it differs from the inputs' (numpy.linalg
    # computes float32 inputs in float64 and rounds the result back).
    numpy_computes_in: str | None = None
    # Output-sized temporaries NumPy holds at once while computing (a chain of ufuncs makes one a
    # step); the memory guard counts them at float64, the reference's precision.
    numpy_temporaries: int = 0
    ports: Sequence[Port] | Mapping[str, Any] = ()
    default_port: str = DEFAULT_PORT
    ports_why: str = ""
    pallas: bool = False
    default_why: str = ""  # how the default port differs from the others (its Port's why)
    source: str = field(default="builtin", compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise BadInput(N_("a case needs a non-empty string name"))
        for attr in ("numpy_fn", "jax_fn", "make_inputs"):
            if not callable(getattr(self, attr)):
                raise BadInput(N_("case {name!r}: {attr} must be callable").format(name=self.name, attr=attr))
        if not self.title:
            object.__setattr__(self, "title", self.name)
        if not self.numpy_name:
            object.__setattr__(self, "numpy_name", dotted_name(self.numpy_fn))
        if not self.jax_name:
            object.__setattr__(self, "jax_name", dotted_name(self.jax_fn))
        object.__setattr__(self, "jax_fn", jittable(self.jax_fn))
        object.__setattr__(self, "small_shape", tuple(int(n) for n in self.small_shape))
        object.__setattr__(self, "large_shape", tuple(int(n) for n in self.large_shape))
        object.__setattr__(self, "ports", _as_ports(self.ports, self.name))
        names = [p.name for p in self.all_ports]  # checks default_port's name too
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise BadInput(N_("case {name!r}: two ports are called {port!r}").format(name=self.name, port=dupes[0]))

    @property
    def all_ports(self) -> tuple[Port, ...]:
        """Every port, the default (``jax_fn``) first."""
        return (Port(self.default_port, self.jax_fn, self.jax_name, why=self.default_why, pallas=self.pallas),
                *self.ports)

    @property
    def port_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.all_ports)

    def get_port(self, name: str | None) -> Port:
        """The port called ``name`` (None: the default); BadInput lists the case's ports when there is none."""
        for port in self.all_ports:
            if name is None or port.name == name:
                return port
        raise BadInput(N_("case {case!r} has no port {port!r}; its ports: {ports}").format(
            case=self.name, port=name, ports=", ".join(self.port_names)))

    def for_port(self, name: str | None) -> Case:
        """This case as a Spec naming port ``name`` measures it: that port's function is ``jax_fn``
        (and the default), the case's other ports beside it. The one place a port becomes the JAX side."""
        port = self.get_port(name)
        if port.name == self.default_port:
            return self
        others = tuple(p for p in self.all_ports if p.name != port.name)
        return replace(self, jax_fn=port.fn, jax_name=port.jax_name, default_port=port.name, pallas=port.pallas,
                       default_why=port.why, ports=others)

    @property
    def compared_by(self) -> str:
        """How its outputs are compared: "direct", or "invariants" where ``canonical`` maps them
        to what must agree (the agreement record's "method")."""
        return "direct" if self.canonical is default_canonical else "invariants"

    @property
    def cases_file(self) -> str | None:
        """The user file this case came from (what a Spec must carry); None for built-ins and
        for a notebook's functions (sent to the worker with the job, not loaded from a file)."""
        return None if self.source in ("builtin", NOTEBOOK) else self.source

    def check_shape(self, shape: Shape) -> None:
        """Raise BadInput with the case's own reason when it cannot take ``shape``."""
        problem = self.shape_rule(tuple(shape))
        if problem:
            # Translators: {problem} is the shape rule's reason, which reads on from the case's name:
            # "case 'svd' needs a square matrix shape like 100x100, got 3x4".
            raise BadInput(N_("case {name!r} {problem}").format(name=self.name, problem=problem))

    def flop_count(self, shape: Shape) -> float | None:
        if self.flops is None:
            return None
        try:
            value = float(self.flops(tuple(shape)))
        except Exception:  # a user's flop formula must not break a measurement
            return None
        return value if math.isfinite(value) and value > 0 else None

    def summary(self) -> dict[str, Any]:
        """Plain, JSON-ready description (for listings and results)."""
        return {
            "name": self.name,
            "title": self.title,
            "group": self.group,
            "numpy_name": self.numpy_name,
            "jax_name": self.jax_name,
            "description": self.description,
            "small_shape": list(self.small_shape),
            "large_shape": list(self.large_shape),
            "has_flops": self.flops is not None,
            "numpy_computes_in": self.numpy_computes_in,
            "source": self.source,
            # The port jax_fn is (in a Result's case_info: the port measured) and every port, it first.
            "port": self.default_port,
            "port_pallas": self.pallas,
            "ports": [p.summary() for p in self.all_ports],
            "ports_why": self.ports_why,
        }


class GivenInputs:
    """``make_inputs`` for arrays given as they are (jaxcompare.compare(f, g, x)): it returns
    them at their one shape, and its ``shape_rule`` refuses any other."""

    def __init__(self, arrays: Arrays) -> None:
        self.arrays = tuple(arrays)
        self.shape = max((a.shape for a in self.arrays), key=math.prod)

    def __call__(self, shape: Shape, dtype: np.dtype, rng: np.random.Generator) -> Arrays:
        return tuple(a.astype(dtype, copy=False) for a in self.arrays)

    def shape_rule(self, shape: Shape) -> str | None:
        if tuple(shape) != self.shape:
            return N_("takes only the shape of the arrays given ({expected}), got {shape}").format(
                expected=format_shape(self.shape), shape=format_shape(shape))
        return None


def jittable(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` as jax.jit can take it: a callable that cannot be weakly referenced (a NumPy ufunc such as np.sin)
    inside a plain function. Given one, JAX 0.10.2's jit crashed the process (a segfault) instead of raising, so
    NumPy's function in the JAX slot killed the worker where JAX's own error says what is wrong."""
    try:
        weakref.ref(fn)
    except TypeError:
        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            return fn(*args, **kwargs)

        return call
    return fn


def dotted_name(fn: Callable[..., Any]) -> str:
    module = getattr(fn, "__module__", None) or ""
    qual = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)
    return f"{module}.{qual}" if module else qual
