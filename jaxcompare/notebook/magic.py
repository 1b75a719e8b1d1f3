"""``%jaxcompare`` and ``%%jaxcompare``: compare two calls written as they would be timed.

    %load_ext jaxcompare
    %jaxcompare -p x64 np.linalg.svd(x) jnp.linalg.svd(x)

    %%jaxcompare -t quick
    np.linalg.svd(x)
    jnp.linalg.svd(x)

The callee of each call is the function; its positional arguments, evaluated in the notebook,
are the inputs (the same for both calls); keyword arguments stay fixed parameters of the
function. Options come first: -p/--precision x32|x64, -d/--device, -t/--timing
quick|careful|thorough (-q/--quick: quick), -m/--matmul-precision default|high|highest (what
JAX's float32 products run at), -n/--name NAME, -s/--save (keep it in History).
Imports IPython.
"""

from __future__ import annotations

import ast
import functools
import re
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, magics_class

from ..model.errors import BadInput, JaxCompareError
from .api import Labelled, compare, describe

_VALUE_OPTIONS = {"-p": "precision", "--precision": "precision", "-d": "device", "--device": "device",
                  "-t": "timing", "--timing": "timing", "-n": "name", "--name": "name",
                  "-m": "matmul_precision", "--matmul-precision": "matmul_precision"}
_FLAG_OPTIONS = {"-s": "save", "--save": "save", "-q": "quick", "--quick": "quick"}
_OPTION = re.compile(r"\s*(--?[A-Za-z][A-Za-z-]*)(?:=|\s+|$)")
USAGE = ("usage: %jaxcompare [-p x32|x64] [-d DEVICE] [-t TIMING | -q] [-m MATMUL_PRECISION] [-n NAME] [-s] "
         "numpy_call(x) jax_call(x)")


@magics_class
class JaxCompareMagics(Magics):
    """The line and cell magic; errors are one UsageError line, not a traceback."""

    @line_cell_magic
    def jaxcompare(self, line: str, cell: str | None = None) -> Any:
        try:
            options, rest = parse_options(line)
            if cell is not None:
                if rest.strip():
                    raise BadInput("%%jaxcompare takes options on its first line and the two calls in the cell")
                rest = "\n".join(ln for ln in cell.splitlines() if not ln.lstrip().startswith("#"))
            save = options.pop("save", False)
            if options.pop("quick", False):
                if options.get("timing", "quick") != "quick":
                    raise BadInput(f"-q and -t {options['timing']} contradict each other: give one")
                options["timing"] = "quick"
            result = run_calls(rest, self.shell.user_ns, **options)
            if save:
                result.save()
            return result
        except JaxCompareError as exc:
            raise UsageError(str(exc)) from None


def parse_options(line: str) -> tuple[dict[str, Any], str]:
    """Leading options of the magic line, and the rest (the two calls)."""
    options: dict[str, Any] = {}
    rest = line
    while True:
        found = _OPTION.match(rest)
        if not found or not rest.lstrip().startswith("-"):
            return options, rest
        flag = found.group(1)
        rest = rest[found.end():]
        if flag in _FLAG_OPTIONS:
            options[_FLAG_OPTIONS[flag]] = True
        elif flag in _VALUE_OPTIONS:
            value, _, rest = rest.lstrip().partition(" ")
            if not value:
                raise BadInput(f"option {flag} needs a value; {USAGE}")
            options[_VALUE_OPTIONS[flag]] = value
        else:
            raise BadInput(f"unknown option {flag}; {USAGE}")


def split_calls(text: str) -> tuple[ast.Call, ast.Call]:
    """The two call expressions in ``text``: separated by whitespace, a newline, or a comma."""
    text = text.strip()
    if not text:
        raise BadInput(f"give two calls, the NumPy one then the JAX one; {USAGE}")
    whole = _parse(text)
    if isinstance(whole, ast.Tuple) and len(whole.elts) == 2 and all(isinstance(e, ast.Call) for e in whole.elts):
        return whole.elts[0], whole.elts[1]  # type: ignore[return-value]
    for i, ch in enumerate(text):
        if ch.isspace():
            left, right = _parse(text[:i]), _parse(text[i:].strip())
            if isinstance(left, ast.Call) and isinstance(right, ast.Call):
                return left, right
    raise BadInput(f"could not read two calls in {text!r}; write them like np.linalg.svd(x) jnp.linalg.svd(x)")


def _parse(text: str) -> ast.expr | None:
    try:
        return ast.parse(text, mode="eval").body
    except SyntaxError:
        return None


def run_calls(text: str, namespace: dict[str, Any], **options: Any) -> Any:
    """compare() the two calls in ``text``, evaluated in ``namespace`` (the notebook's)."""
    numpy_call, jax_call = split_calls(text)
    numpy_fn = _function(numpy_call, namespace)
    jax_fn = _function(jax_call, namespace)
    if _dump_args(numpy_call) != _dump_args(jax_call):
        raise BadInput(f"the two calls must take the same inputs: {ast.unparse(numpy_call)} and "
                       f"{ast.unparse(jax_call)} differ in their positional arguments")
    if any(isinstance(a, ast.Starred) for a in numpy_call.args):
        raise BadInput("write the inputs out one by one (no *args)")
    inputs = tuple(_evaluate(arg, namespace) for arg in numpy_call.args)
    for position, (arg, value) in enumerate(zip(numpy_call.args, inputs, strict=True), start=1):
        if not hasattr(value, "shape"):
            raise BadInput(f"argument {position} ({ast.unparse(arg)}) is {describe(value)}, not an array: fixed "
                           "parameters go as keywords, e.g. np.sum(x, axis=0)")
    return compare(Labelled(numpy_fn, ast.unparse(numpy_call)), Labelled(jax_fn, ast.unparse(jax_call)),
                   *inputs, **options)


def _dump_args(call: ast.Call) -> list[str]:
    return [ast.dump(a) for a in call.args]


def _evaluate(node: ast.expr, namespace: dict[str, Any]) -> Any:
    expression = ast.unparse(node)
    try:
        return eval(compile(ast.Expression(body=node), "<jaxcompare>", "eval"), namespace)  # noqa: S307
    except Exception as exc:
        raise BadInput(f"{expression} failed in the notebook: {type(exc).__name__}: {exc}") from None


def _function(call: ast.Call, namespace: dict[str, Any]) -> Any:
    """The callee, with the call's keyword arguments bound (they are parameters, not inputs)."""
    fn = _evaluate(call.func, namespace)
    if not callable(fn):
        raise BadInput(f"{ast.unparse(call.func)} is not a function")
    kwargs = {}
    for kw in call.keywords:
        if kw.arg is None:
            raise BadInput("write the keyword arguments out one by one (no **kwargs)")
        kwargs[kw.arg] = _evaluate(kw.value, namespace)
    return functools.partial(fn, **kwargs) if kwargs else fn


def load(ipython: Any) -> None:
    """Register the magics (``%load_ext jaxcompare`` calls this)."""
    ipython.register_magics(JaxCompareMagics)
