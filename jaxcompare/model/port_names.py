"""What a port's name may be: it travels in a Spec, a URL and a comma-separated ``--ports`` list, so
plain characters only. Here, below both Case and Spec, so each checks it the same way."""

from __future__ import annotations

import re

from ..i18n import N_
from .errors import BadInput

PORT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,39}")
# The name of a case's ``jax_fn`` when the case names it no other way.
DEFAULT_PORT = "jnp"


def check_port_name(name: object) -> str:
    """``name`` when it is a port's name; BadInput says what a name may hold otherwise."""
    if not isinstance(name, str) or not PORT_NAME.fullmatch(name):
        raise BadInput(N_("a port's name must be 1-40 letters, digits, '_', '.' or '-' (starting with a letter "
                          "or digit), got {name!r}").format(name=name))
    return name
