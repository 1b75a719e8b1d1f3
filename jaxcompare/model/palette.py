"""The sides' colours, one place for every picture: the app's Altair charts and the notebook's
inline SVG draw NumPy, JAX and JAX on the CPU alike."""

from __future__ import annotations

NUMPY_COLOR = "#4C78A8"
JAX_COLOR = "#E4572E"
# The third side, JAX on the CPU beside JAX on a GPU/TPU: green, apart from both.
JAX_CPU_COLOR = "#3B9A3B"
# A figure set aside (its speedup not quoted): the atlas's cells, the ports' bars.
DOUBT_GREY = "#bdbdbd"
