"""A profiler trace file as the Chrome-trace dict the profile summary reads: the
``.trace.json.gz`` (or ``perfetto_trace.json.gz``, or plain ``.json``) that ``jax.profiler``
writes, or the ``.xplane.pb`` (an XSpace protobuf) beside it, which jaxlib itself converts.
Every failure is BadInput with one line."""

from __future__ import annotations

import glob
import gzip
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from ...i18n import N_
from ...model.errors import BadInput

XPLANE_SUFFIX = ".xplane.pb"


def read_trace(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The trace in ``path``: its Chrome-trace dict (with a ``traceEvents`` list)."""
    path = Path(path).expanduser()
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise BadInput(N_("the trace {trace_file} could not be read: {error}").format(
            trace_file=path, error=exc.strerror or exc)) from None
    if path.name.endswith(XPLANE_SUFFIX):
        return xplane_to_trace(data, path)
    try:
        text = gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data
        trace = json.loads(text)
    except (OSError, EOFError, ValueError) as exc:  # gzip.BadGzipFile is an OSError; bad JSON/UTF-8, ValueError
        raise BadInput(N_("{trace_file} is not a profiler trace (.xplane.pb, .trace.json.gz or .json): "
                          "{error}").format(trace_file=path, error=_first_line(exc))) from None
    if isinstance(trace, list):  # the Chrome trace format's other form: the bare event array
        trace = {"traceEvents": trace}
    if not isinstance(trace, dict) or not isinstance(trace.get("traceEvents"), list):
        raise BadInput(N_("{trace_file} is JSON but not a profiler trace: it has no traceEvents list").format(
            trace_file=path))
    return trace


def xplane_to_trace(data: bytes, source: str | os.PathLike[str] = "") -> dict[str, Any]:
    """An XSpace protobuf (``.xplane.pb``) as the Chrome-trace dict jax.profiler writes beside
    it, converted by jaxlib's own exporter (the same code that writes ``.trace.json.gz``)."""
    try:
        module = _profiler_module()
        options = module.ProfileOptions()  # what jax.profiler.ProfileOptions is
        options.python_tracer_level = 0  # the session only exports: it need not trace this process
        session = module.ProfilerSession(options)
    except (ImportError, AttributeError) as exc:  # a jaxlib without the exporter, or no JAX
        raise BadInput(N_("this JAX ({version}) cannot convert an .xplane.pb ({error}); open the .trace.json.gz "
                          "that jax.profiler wrote beside it").format(version=_jax_version(),
                                                                      error=_first_line(exc))) from None
    with tempfile.TemporaryDirectory(prefix="jaxcompare-xplane-") as out:
        try:
            session.export(data, out)
        except Exception as exc:  # jaxlib's own error type: one line whatever it is
            raise BadInput(N_("jaxlib could not convert {trace_file}: {error}").format(
                trace_file=source, error=_first_line(exc))) from None
        finally:
            _stop_quietly(session)
        found = glob.glob(os.path.join(out, "plugins", "profile", "*", "*.trace.json.gz"))
        if not found:
            raise BadInput(N_("jaxlib wrote no trace for {trace_file}").format(trace_file=source))
        with gzip.open(found[0], "rt", encoding="utf-8") as fh:
            return json.load(fh)


def _profiler_module() -> Any:
    """jaxlib's profiler bindings: ``jax._src.lib._profiler`` in recent releases (0.10.2),
    ``xla_client.profiler`` in older ones (0.4.35); AttributeError where neither can export."""
    try:
        from jax._src.lib import _profiler as module
    except ImportError:
        from jax._src.lib import xla_client

        module = xla_client.profiler
    if not hasattr(module.ProfilerSession, "export"):
        raise AttributeError("ProfilerSession has no export")
    return module


def _stop_quietly(session: Any) -> None:
    """End the session the exporter needed: while it lives, jax.profiler.start_trace in this
    process is refused. One made while another trace runs never started, and stop() says so."""
    try:
        session.stop()
    except Exception:
        pass


def _jax_version() -> str:
    try:
        import jax

        return jax.__version__
    except ImportError:
        return "-"


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0][:300] if lines else type(exc).__name__
