"""Results in and out of files: the JSON export, CSV, and validating what is imported.

No database here (see store.py): the app's download button and the CLI share these.
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import datetime as dt
import io
import json
import math
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..i18n import N_
from ..model.cases import format_shape
from ..model.errors import BadInput, json_reason
from ..model.formatting import cut, dumps
from ..model.phases import JAX_PHASES, PHASES
from ..model.port_names import check_port_name
from ..model.result import SCHEMA as RESULT_SCHEMA
from ..model.result import SCHEMAS as RESULT_SCHEMAS
from ..model.result import Result, finite_or_none
from ..model.roofline import ROOFLINE_SIDES

EXPORT_SCHEMA = "jaxcompare.export/1"
SUMMARY_FIELDS = (
    "id", "created", "case", "port", "shape", "precision", "dtype", "backend", "device", "device_kind",
    "host", "jax_version", "speedup", "numpy_median_s", "numpy_kept_median_s", "jax_median_s",
)
# The CSV: one row per result (a spreadsheet's natural unit, and a sweep's size per row), the
# summary, then each phase's statistics as <phase>_<stat> columns.
CSV_RESULT_FIELDS = (*SUMMARY_FIELDS, "compile_total_s", "break_even_calls", "agreement_ok", "max_abs_err",
                     "max_rel_err", "rtol")
CSV_STATS = ("median_s", "min_s", "mean_s", "std_s", "iqr_s", "ci_low_s", "ci_high_s", "n", "loops", "stable",
             "unstable_reason")
CSV_PREFIX = {"numpy": "numpy_runtime", "runtime": "jax_runtime"}  # column name prefix per phase
# The roofline: the call's counts, then each side's limit and share of its bound (empty where
# the result has none: saved before the roofline, or a side it did not run); JAX's share read from
# its device time has its blocked call's beside it.
CSV_ROOFLINE = ("flops", "bytes", "transcendentals",
                *(f"{side}_{field}" for side in ROOFLINE_SIDES for field in ("limit", "fraction")),
                "jax_blocked_fraction")
CSV_COLUMNS = (*CSV_RESULT_FIELDS, *CSV_ROOFLINE,
               *(f"{CSV_PREFIX.get(p, p)}_{s}" for p in PHASES for s in CSV_STATS))


# What a saved result tells about the server itself: left out of what a hosted demo shows visitors.
PRIVATE_ENV = ("hostname", "python_executable")


def redact(result: Result) -> Result:
    """The result without the host name, the interpreter path and the trace file's path (a
    folder of the server, a file named after the host) of the machine that measured it."""
    profile = result.profile
    if profile is not None and profile.trace_file:
        result = dataclasses.replace(result, profile=dataclasses.replace(profile, trace_file=None))
    if not any(key in result.env for key in PRIVATE_ENV):
        return result
    return dataclasses.replace(result, env={k: v for k, v in result.env.items() if k not in PRIVATE_ENV})


def summary(result: Result) -> dict[str, Any]:
    """The summary columns of one result (what ``list`` returns), computed from the Result."""
    return {
        "id": result.id,
        "created": normalise_created(result.created),
        "case": result.case,
        "port": result.port,  # None: saved before cases had ports (it measured today's default port)
        "shape": format_shape(result.shape),
        "precision": result.precision,
        "dtype": result.dtype,
        "backend": result.backend,
        "device": result.jax.device,
        "device_kind": result.jax.device_kind,
        "host": str(result.env.get("hostname") or ""),
        "jax_version": str((result.env.get("versions") or {}).get("jax") or ""),
        "speedup": finite_or_none(result.speedup),
        "numpy_median_s": result.numpy_runtime.median_s,  # as a plain process runs it (the speedup's)
        # The worker's, with freed memory kept; None where NumPy was timed once.
        "numpy_kept_median_s": result.numpy_kept.median_s if result.numpy_kept is not None else None,
        "jax_median_s": result.jax.runtime.median_s,
    }


def check(result: Result, *, names: bool = True) -> tuple[dict[str, Any], str]:
    """Validate a Result beyond from_dict (numbers are finite numbers, the time parses, strict
    JSON; with ``names``, fields that name things hold names); returns its summary and its JSON text."""
    if not isinstance(result, Result):
        raise BadInput(N_("expected a Result, got {kind}").format(kind=type(result).__name__))
    if not result.id or len(result.id) > 200 or not result.id.isprintable():
        raise BadInput(N_("result id {id!r} must be 1–200 printable characters").format(id=result.id))
    phases = [(name, result.phase(name)) for name in PHASES]
    if result.jax_cpu is not None:  # the third side's phases are checked the same way
        phases += [(f"jax_cpu.{name}", result.jax_cpu.phase(name)) for name in JAX_PHASES]
    # The figures measured beside the phases, where measured: NumPy with freed memory kept, JAX back to back.
    phases += [(name, stats) for name, stats in (("numpy.kept_memory", result.numpy_kept),
                                                 ("jax.back_to_back", result.jax.back_to_back)) if stats is not None]
    for name, stats in phases:
        for field in ("median_s", "min_s", "mean_s", "std_s", "iqr_s"):
            value = getattr(stats, field)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise BadInput(N_("phase {name}: {field} must be a number, got {value!r}").format(
                    name=name, field=field, value=value))
            if not math.isfinite(value):  # JSON's Infinity and NaN: stored as null, they break every reader
                raise BadInput(N_("phase {name}: {field} must be a finite number, got {value!r}").format(
                    name=name, field=field, value=value))
        if not all(math.isfinite(x) for x in stats.samples_s):
            raise BadInput(N_("phase {name}: samples_s must be finite numbers").format(name=name))
        if isinstance(stats.n, bool) or not isinstance(stats.n, int) or stats.n < 0:
            raise BadInput(N_("phase {name}: n must be a whole number, got {value!r}").format(name=name, value=stats.n))
    if names:
        _check_names(result)
    try:
        row = summary(result)
        doc = dumps(result.to_dict(), indent=None)
    except (TypeError, ValueError, AttributeError, ZeroDivisionError) as exc:
        raise BadInput(N_("malformed result: {kind}: {error}").format(kind=type(exc).__name__, error=exc)) from None
    return row, doc


# What a field that names something may hold: a device kind ('NVIDIA H200', 'TPU v5 lite'), a
# version ('0.4.35', '2.1.0rc1+cu12'); a case name (a user's own case may be 'softmax, axis=1') has
# no link, image, code or HTML marks. Pages show these to every visitor of a hosted demo.
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 _-.:/,+()@=")
_VERSION_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.+")
_NOT_IN_CASE_NAMES = frozenset("`<>[]\\")
NAME_MAX = 100


def _case_name(value: Any) -> bool:
    return isinstance(value, str) and value.isprintable() and not set(value) & _NOT_IN_CASE_NAMES


def _check_names(result: Result) -> None:
    """Fields that name things hold names: letters, digits and a few separators, no Markdown."""
    if not (_case_name(result.case) and result.case.strip() and len(result.case) <= NAME_MAX):
        raise BadInput(N_("case {value!r} is not a case name: at most {limit} printable characters, none of "
                          "`<>[]\\").format(value=cut(result.case, 40), limit=NAME_MAX))
    if result.port is not None:
        check_port_name(result.port)
    sides = [("jax", result.jax)] + ([("jax_cpu", result.jax_cpu)] if result.jax_cpu is not None else [])
    named = [(f"{key}.{field}", getattr(side, field), _NAME_CHARS, True)
             for key, side in sides for field in ("device_kind", "device")]
    if result.gpu_clocks is not None and result.gpu_clocks.device is not None:
        named.append(("gpu_clocks.device", result.gpu_clocks.device, _NAME_CHARS, False))
    named += [("backend", result.backend, _NAME_CHARS, True), ("dtype", result.dtype, _VERSION_CHARS, True),
              ("precision", result.precision, _VERSION_CHARS, False)]
    versions = result.env.get("versions") if isinstance(result.env, dict) else None
    if versions is not None and not isinstance(versions, dict):
        raise BadInput(N_("env.versions must be an object of package versions"))
    for package, version in (versions or {}).items():
        if not isinstance(package, str) or not package or not set(package) <= _VERSION_CHARS or len(package) > 64:
            raise BadInput(N_("env.versions: {package!r} is not a package name").format(package=cut(package)))
        if version is not None:
            named.append((f"env.versions.{package}", version, _VERSION_CHARS, True))
    for field, value, allowed, may_be_empty in named:
        ok = isinstance(value, str) and len(value) <= NAME_MAX and set(value) <= allowed and (may_be_empty or value)
        if not ok:
            raise BadInput(N_("{field} {value!r} is not a name: at most {limit} letters, digits, spaces and "
                              "_-.:/,+()@=").format(field=field, value=cut(value, 40), limit=NAME_MAX))


def read_results(doc: Any, source: str = "upload") -> list[Result]:
    """Every result in a parsed document, all validated; BadInput names the first bad one."""
    items = _extract_results(doc, source)
    out = []
    for i, item in enumerate(items, start=1):
        try:
            result = Result.from_dict(item)
            check(result)
        except BadInput as exc:
            if isinstance(item, dict) and isinstance(item.get("id"), str):
                raise BadInput(N_("{source}: result {index} of {count} (id {id}) is not valid: {reason}; nothing was "
                                  "imported").format(source=source, index=i, count=len(items), id=item["id"][:12],
                                                     reason=exc)) from None
            raise BadInput(N_("{source}: result {index} of {count} is not valid: {reason}; nothing was imported")
                           .format(source=source, index=i, count=len(items), reason=exc)) from None
        out.append(result)
    return out


def parse_json(data: bytes | str, source: str = "upload") -> Any:
    """Parse a file's text; not JSON, empty or truncated is one BadInput line naming ``source``."""
    if isinstance(data, bytes):
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise BadInput(N_("{source}: not a JSON file (not UTF-8 text)").format(source=source)) from None
    else:
        text = data
    if not text.strip():
        raise BadInput(N_("{source}: the file is empty").format(source=source))
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        if exc.pos >= len(text.rstrip()):
            raise BadInput(N_("{source}: JSON ends early (truncated file?): {reason} at line {line} column {column}")
                           .format(source=source, reason=json_reason(exc), line=exc.lineno, column=exc.colno)) from None
        raise BadInput(N_("{source}: not valid JSON: {reason} at line {line} column {column}").format(
            source=source, reason=json_reason(exc), line=exc.lineno, column=exc.colno)) from None
    except RecursionError:
        raise BadInput(N_("{source}: not valid JSON: nested too deeply").format(source=source)) from None


def _extract_results(doc: Any, source: str) -> list[Any]:
    """The list of result dicts inside an export, a sweep, a single result, or a bare list."""
    if isinstance(doc, list):
        items = doc
    elif isinstance(doc, dict):
        schema = doc.get("schema")
        if schema in RESULT_SCHEMAS:
            items = [doc]
        elif schema == EXPORT_SCHEMA or (schema is None and "results" in doc):
            items = doc.get("results")
            if not isinstance(items, list):
                raise BadInput(N_("{source}: 'results' must be a list of results").format(source=source))
        elif isinstance(schema, str) and schema.startswith("jaxcompare."):
            raise BadInput(N_("{source}: unsupported format {schema!r} (this jaxcompare reads {export!r} and "
                              "{result!r}); is it from a newer version?").format(
                source=source, schema=schema, export=EXPORT_SCHEMA, result=RESULT_SCHEMA))
        else:
            raise BadInput(N_("{source}: not a jaxcompare export or result (no jaxcompare 'schema' and no 'results' "
                              "list)").format(source=source))
    else:
        raise BadInput(N_("{source}: not a jaxcompare export or result (a JSON {kind}, expected an object)").format(
            source=source, kind=type(doc).__name__))
    if not items:
        raise BadInput(N_("{source}: contains no results; nothing was imported").format(source=source))
    return items


def export_json(results: Sequence[Result]) -> str:
    """The JSON export document (also what the app offers for download)."""
    return dumps({
        "schema": EXPORT_SCHEMA,
        "exported": now(),
        "count": len(results),
        "results": [r.to_dict() for r in results],
    }) + "\n"


def csv_row(result: Result) -> dict[str, Any]:
    """One result as the CSV's row (CSV_COLUMNS), values as they are."""
    agreement = result.jax.agreement
    row = summary(result) | {
        "compile_total_s": result.jax.compile_total_s, "break_even_calls": result.break_even_calls,
        "agreement_ok": agreement.get("ok"), "max_abs_err": agreement.get("max_abs_err"),
        "max_rel_err": agreement.get("max_rel_err"), "rtol": agreement.get("rtol"),
    } | dict.fromkeys(CSV_ROOFLINE)
    roofline = result.roofline
    if roofline is not None:
        row |= {"flops": roofline.flops, "bytes": roofline.bytes, "transcendentals": roofline.transcendentals}
        for side in ROOFLINE_SIDES:
            if roofline.side(side) is not None:
                row |= {f"{side}_limit": roofline.limit(side), f"{side}_fraction": roofline.fraction(side)}
        row["jax_blocked_fraction"] = roofline.blocked_fraction("jax") if roofline.jax is not None else None
    for p in PHASES:
        stats = result.phase(p)
        for s in CSV_STATS:
            row[f"{CSV_PREFIX.get(p, p)}_{s}"] = getattr(stats, s)
    return row


def export_csv(results: Sequence[Result]) -> str:
    """The one CSV format: the Compare and Size sweep downloads, History's and the CLI's export."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for result in results:
        row = csv_row(result)
        writer.writerow(["" if row[c] is None else _csv_value(row[c]) for c in CSV_COLUMNS])
    return buf.getvalue()


# A spreadsheet runs a cell that starts with one of these as a formula (=HYPERLINK(...), +cmd|...);
# a quote in front makes it text, as OWASP's CSV-injection advice says. Numbers stay numbers.
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _csv_value(value: Any) -> Any:
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else ""
    if isinstance(value, str) and value.startswith(_FORMULA_STARTS) and not _is_number(value):
        return "'" + value
    return value


def _is_number(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


# --- helpers -------------------------------------------------------------------------------
def now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="microseconds")


def normalise_created(created: str) -> str:
    """ISO 8601 in UTC so text order is time order across machines; naive times are UTC."""
    try:
        when = dt.datetime.fromisoformat(created)
    except (TypeError, ValueError):
        raise BadInput(N_("created {value!r} is not an ISO 8601 time").format(value=created)) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return when.astimezone(dt.UTC).isoformat(timespec="seconds")


def write_atomically(target: Path, text: str) -> None:
    """Write beside the target, then rename: readers never see half a file."""
    tmp = target.with_name(f".{target.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            with open(tmp, "x", encoding="utf-8", newline="") as fh:
                fh.write(text)
            os.replace(tmp, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    except OSError as exc:
        raise BadInput(N_("cannot write {path}: {reason}").format(path=target, reason=exc.strerror or exc)) from None
