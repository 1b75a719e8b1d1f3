"""Lazy module proxies, so the parent process (app, CLI) never imports JAX itself.

The stdlib LazyLoader cannot defer a submodule such as ``jax.numpy`` (finding its spec
imports ``jax``), so a proxy that imports on first attribute access is used instead.
"""

from __future__ import annotations

import importlib
from typing import Any


class LazyModule:
    """Stands in for a module; imports it on first attribute access."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        return getattr(importlib.import_module(self._name), attr)

    def __repr__(self) -> str:
        return f"<lazy module {self._name!r}>"


jax = LazyModule("jax")
jnp = LazyModule("jax.numpy")
