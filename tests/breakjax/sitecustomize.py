"""Breaks JAX on purpose, in every process that puts this folder on PYTHONPATH (pytest and
the spawned workers alike): ``JAXCOMPARE_TEST_BREAK_JAX`` names the lie. tests/test_breakages.py
runs the honest-numbers tests under each and expects them to fail."""

import importlib.util
import os
import sys

BREAKAGES = ("block_until_ready", "x64_off", "clear_caches", "device_put")


def _break(jax, how: str) -> None:
    if how == "block_until_ready":  # runtimes would be dispatch times
        from jax._src.array import ArrayImpl

        jax.block_until_ready = lambda x: x
        ArrayImpl.block_until_ready = lambda self: self
    elif how == "x64_off":  # x64 would silently compare float32 with float64
        update = jax.config.update
        update("jax_enable_x64", False)
        jax.config.update = lambda name, value: None if name == "jax_enable_x64" else update(name, value)
    elif how == "clear_caches":  # every cold compile would be a cache hit
        jax.clear_caches = lambda: None
    elif how == "device_put":  # every runtime would include a host-to-device transfer
        jax.device_put = lambda x, *args, **kwargs: x
    else:
        raise SystemExit(f"JAXCOMPARE_TEST_BREAK_JAX={how!r}: expected one of {', '.join(BREAKAGES)}")


class _BreakAfterImport:
    """Lets ``import jax`` run as usual, then applies the breakage to the finished module."""

    def __init__(self, how: str) -> None:
        self.how = how

    def find_spec(self, name, path=None, target=None):
        if name != "jax":
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec("jax")
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return spec
        real_exec = spec.loader.exec_module

        def exec_module(module):
            real_exec(module)
            _break(module, self.how)

        spec.loader.exec_module = exec_module
        return spec


_how = os.environ.get("JAXCOMPARE_TEST_BREAK_JAX")
if _how:
    sys.meta_path.insert(0, _BreakAfterImport(_how))
