"""CLI commands for saved results: ``history`` (and ``history copy --to``), ``export``, ``import``,
and ``run --save``. Where the database is named, a URL's password is hidden (Store.location).

cli.py registers these with ``add_commands`` and dispatches with ``handle``. Errors are
BadInput (one line, exit status 2 from cli.main). With ``--json -`` stdout carries one
JSON document and nothing else.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..analysis.text import clip, table_lines
from ..analysis.trust import WHY, set_aside_why
from ..history import postgres
from ..history.store import Store, shown_location
from ..i18n import N_, _, ngettext
from ..model.errors import BadInput
from ..model.formatting import format_factor, format_time
from ..model.result import Result
from ..model.spec import PRECISIONS
from .report import write_json

COMMANDS = ("history", "export", "import")
DB_HELP = ("results database: an SQLite file or a postgresql:// URL (default: $JAXCOMPARE_DB or "
           "~/.jaxcompare/results.sqlite3)")


def add_save_arguments(parser: argparse.ArgumentParser) -> None:
    """``--save`` and ``--db`` for commands that measure (run, sweep)."""
    parser.add_argument("--save", action="store_true", help="save the result(s) in the results database")
    parser.add_argument("--db", metavar="PATH", help=DB_HELP)


def _filters(p: argparse.ArgumentParser) -> None:
    p.add_argument("--case", help="only this case")
    p.add_argument("--precision", choices=PRECISIONS, help="only this precision")
    p.add_argument("--port", help="only this JAX port of the case (jnp, scan, pallas, ...)")
    p.add_argument("--device", help="only this backend (cpu, gpu), device (cuda:0) or device kind")
    p.add_argument("--host", help="only results measured on this host name")
    p.add_argument("--jax", metavar="VERSION", help="only results measured under this JAX version, e.g. 0.4.35")
    p.add_argument("--since", metavar="DATE", help="only results created on or after, e.g. 2025-01-31")
    p.add_argument("--until", metavar="DATE", help="only results created on or before")


def add_commands(subparsers: Any) -> None:
    """Register history, export and import on cli.py's subparsers."""
    p_hist = subparsers.add_parser("history", help="saved results, newest first; `history copy --to URL` copies them")
    p_hist.add_argument("action", nargs="?", choices=["copy"],
                        help="copy: every saved result into the database --to names, all or nothing")
    p_hist.add_argument("--to", metavar="URL|PATH", help="with copy: the target database (a postgresql:// URL)")
    _filters(p_hist)
    p_hist.add_argument("--limit", type=int, help="show at most this many")
    p_hist.add_argument("--json", metavar="PATH|-", help="write the rows as one JSON list ('-' = stdout)")
    p_hist.add_argument("--db", metavar="PATH", help=DB_HELP)

    p_exp = subparsers.add_parser("export", help="write saved results to PATH (.json or .csv)")
    p_exp.add_argument("path", metavar="PATH", help="output file; .json (re-importable) or .csv")
    _filters(p_exp)
    p_exp.add_argument("--ids", nargs="+", metavar="ID", help="only these results (ids or unique prefixes)")
    p_exp.add_argument("--db", metavar="PATH", help=DB_HELP)

    p_imp = subparsers.add_parser("import", help="add results from a JSON file (export, run/sweep --json)")
    p_imp.add_argument("path", metavar="PATH", help="JSON from `export`, `run --json` or `sweep --json`")
    p_imp.add_argument("--db", metavar="PATH", help=DB_HELP)


def handle(args: argparse.Namespace) -> int | None:
    """Run one of this module's commands; None when ``args.command`` is not one of them."""
    handlers = {"history": cmd_history, "export": cmd_export, "import": cmd_import}
    handler = handlers.get(getattr(args, "command", None) or "")
    return None if handler is None else handler(args)


def open_store(db: str | Store | None = None, *, existing: bool = False) -> Store:
    """The Store at ``db`` (a path or an open Store), else the default one. ``existing``: a command that only
    reads refuses a named SQLite file that is not there (a misspelt --db), rather than create it and say it is
    empty."""
    if isinstance(db, Store):
        return db
    if existing and db and not postgres.is_url(db) and not Path(db).expanduser().exists():
        raise BadInput(N_("no history at {path}: there is no such file (run --save with this --db makes one)").format(
            path=db))
    return Store(db) if db else Store()


def save_result(result: Result, db: str | Store | None = None, *, say: bool = True) -> str:
    """Save a measured result (``run --save``); prints where on stderr (``say``), returns the id.
    Open the store before measuring (``open_store``) so a bad --db fails before the wait."""
    store = open_store(db)
    store.save(result)
    if say:
        print(_("saved {id} to {path}").format(id=result.id[:8], path=store.location), file=sys.stderr)
    return result.id


def save_quietly(result: Result, db: str | Store | None = None) -> str:
    """save_result without its line: a sweep saves each size as measured and says so once, after its table
    (a line a size had come between the table's rows)."""
    return save_result(result, db, say=False)


def saved_line(n: int, store: Store) -> str:
    return ngettext("saved {n} result to {path}", "saved {n} results to {path}", n).format(n=n, path=store.location)


# --- commands ------------------------------------------------------------------------------
def _selected(store: Store, args: argparse.Namespace, limit: int | None = None) -> list[dict[str, Any]]:
    return store.list(case=args.case, precision=args.precision, port=getattr(args, "port", None), device=args.device,
                      host=args.host, jax=args.jax, since=args.since, until=args.until, limit=limit)


def cmd_history(args: argparse.Namespace) -> int:
    if getattr(args, "action", None) == "copy":
        return cmd_copy(args)
    if getattr(args, "to", None):
        raise BadInput(N_("--to goes with `history copy`: jaxcompare history copy --to URL"))
    if args.limit is not None and args.limit <= 0:
        raise BadInput(N_("--limit must be a positive whole number, got {limit}").format(limit=args.limit))
    store = open_store(args.db, existing=True)
    rows = _selected(store, args, args.limit)
    total = store.count()
    missed = _nothing_matched(store, args, total) if not rows else None
    doubts = set_aside(store, [r["id"] for r in rows])
    if args.json:  # each row says whether its speedup may be quoted, as `run --json` does
        write_json(args.json, [r | {"trusted": r["id"] not in doubts, "set_aside": doubts.get(r["id"])}
                               for r in rows])
    if args.json != "-":
        print(history_table(rows, store.location, doubts, total=total) if missed is None else missed)
    elif missed is not None:
        print(missed, file=sys.stderr)  # stdout keeps its one JSON document
    # As grep: 1 when filters matched nothing (2 stays bad input); an empty history is no error.
    return 1 if missed is not None and total else 0


FILTERS = ("case", "precision", "port", "device", "host", "jax", "since", "until")


def _nothing_matched(store: Store, args: argparse.Namespace, total: int) -> str | None:
    """What to say when filters matched no saved result: the filters, and the cases that are
    saved (with a close name for a misspelt --case); None without filters."""
    given = [f"--{name} {getattr(args, name)}" for name in FILTERS if getattr(args, name, None)]
    if not given:
        return None
    if not total:
        return _("no saved results in {path} yet, so none match {filters}").format(path=store.location,
                                                                                    filters=" ".join(given))
    text = _("no saved results match {filters} in {path} ({total} saved)").format(
        filters=" ".join(given), path=store.location, total=total)
    facets = store.facets()  # one query for the saved cases, JAX versions and ports
    cases = facets["case"]
    if args.case and args.case not in cases:
        import difflib

        close = difflib.get_close_matches(args.case, cases, n=3)
        text += (_("; did you mean {names}?").format(names=", ".join(close)) if close else
                 _("; the saved cases are {names}").format(
                     names=", ".join(cases[:12]) + (" …" if len(cases) > 12 else "")))
    saved_jax = [v for v in facets["jax_version"] if v]
    if args.jax and args.jax.strip() not in saved_jax and saved_jax:
        text += _("; the saved JAX versions are {versions}").format(versions=", ".join(saved_jax[:12]))
    saved_ports = [p for p in facets["port"] if p]
    if getattr(args, "port", None) and args.port.strip() not in saved_ports and saved_ports:
        text += _("; the saved ports are {ports}").format(ports=", ".join(saved_ports[:12]))
    return text


def cmd_export(args: argparse.Namespace) -> int:
    store = open_store(args.db, existing=True)
    if args.ids:
        ids = [store.resolve(i) for i in args.ids]
        filtered = {r["id"] for r in _selected(store, args)}
        ids = [i for i in ids if i in filtered]
    else:
        ids = [r["id"] for r in _selected(store, args)]
    if not ids:
        raise BadInput(N_("no saved results match in {path}; nothing was exported").format(path=store.location))
    n, unreadable = store.export_report(args.path, ids)
    print(ngettext("exported {n} result to {path}", "exported {n} results to {path}", n).format(n=n, path=args.path))
    if unreadable:  # rows written by hand or damaged: named, and the rest still exported
        print(_("left out {n} saved result(s) that cannot be read back: {ids}").format(
            n=len(unreadable), ids=", ".join(unreadable[:8]) + (" ..." if len(unreadable) > 8 else "")),
            file=sys.stderr)
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    store = open_store(args.db)
    added, skipped = store.import_file(args.path)
    print(ngettext("imported {n} result ({skipped} already present) into {path}",
                   "imported {n} results ({skipped} already present) into {path}", added).format(
        n=added, skipped=skipped, path=store.location))
    return 0


def cmd_copy(args: argparse.Namespace) -> int:
    """``history copy --to URL``: the whole history (--db, else the default) into another database,
    in one transaction there; a failure says so in one line and leaves the target as it was."""
    if not args.to:
        raise BadInput(N_("history copy needs --to: the target database, e.g. --to postgresql://host/jaxcompare"))
    given = [f"--{name}" for name in (*FILTERS, "limit", "json") if getattr(args, name, None) is not None]
    if given:
        raise BadInput(N_("history copy moves the whole history; drop {options}").format(options=" ".join(given)))
    source = open_store(args.db, existing=True)
    try:
        target = Store(args.to)
        if target.location == source.location:
            raise BadInput(N_("history copy: --to names the history it copies from ({path})").format(
                path=source.location))
        added, present = source.copy_to(target)
    except BadInput as exc:
        raise BadInput(N_("nothing was copied: {reason}").format(reason=str(exc))) from None
    print(ngettext("copied {n} result ({skipped} already present) from {source} to {path}",
                   "copied {n} results ({skipped} already present) from {source} to {path}", added).format(
        n=added, skipped=present, source=source.location, path=target.location))
    return 0


# --- rendering -----------------------------------------------------------------------------
# Each column's header, its least width and its alignment; a cell wider than its column is cut.
HISTORY_COLUMNS = (
    (N_("id"), 8, "<"), (N_("created"), 16, "<"), (N_("case"), 18, "<"), (N_("shape"), 11, "<"),
    (N_("prec"), 4, "<"), (N_("device"), 14, "<"), (N_("host"), 14, "<"), (N_("NumPy plain"), 9, ">"),
    (N_("NumPy kept"), 9, ">"), (N_("JAX"), 9, ">"), (N_("speedup"), 8, ">"),
)


def set_aside(store: Store, ids: list[str]) -> dict[str, str]:
    """The results among ``ids`` whose speedup is not trusted, each with why (trust.WHY's English words, as
    stored and as JSON gives them); a row that cannot be read is left as it is listed."""
    results = store.load_readable(ids)[0]  # a row that cannot be read back is listed unjudged
    return {r.id: WHY[why] for r in results if (why := set_aside_why(r)) is not None}


def history_table(rows: list[dict[str, Any]], path: Path | str | None = None,
                  doubts: dict[str, str] | None = None, total: int | None = None) -> str:
    """The readable table ``history`` prints, newest first; ``path``: Store.location; ``doubts``: set_aside's,
    each such speedup marked ? and its reason said under the table, never a bare figure; ``total``: how many
    the store holds, said beside the rows' count where filters or --limit showed fewer."""
    doubts = doubts or {}
    where = path if path is not None else shown_location()
    if not rows:
        return _("no saved results match in {path}").format(path=where)
    body = []
    # A case's port is named where the rows hold more than one port of it ("cumsum:scan"), as History's labels do.
    ports: dict[str, set[str | None]] = {}
    for r in rows:
        ports.setdefault(r["case"], set()).add(r.get("port"))
    for r in rows:
        device = r["backend"] if r["device"] in ("", r["backend"]) else f"{r['backend']}/{r['device']}"
        case = f"{r['case']}:{r.get('port') or '-'}" if len(ports[r["case"]]) > 1 else r["case"]
        cells = [
            r["id"][:8], r["created"][:16].replace("T", " "), case, r["shape"], r["precision"],
            # No kept figure (NumPy timed once) is "—", not blank: a blank would put the JAX time under
            # "NumPy kept" for a reader (or a script) splitting the row on spaces.
            device, r["host"], format_time(r["numpy_median_s"]), format_time(r.get("numpy_kept_median_s")),
            format_time(r["jax_median_s"]), format_factor(r["speedup"]) + ("?" if r["id"] in doubts else ""),
        ]
        body.append([clip(str(cell), w) for (_name, w, _a), cell in zip(HISTORY_COLUMNS, cells, strict=True)])
    header = [_(name) for name, _w, _a in HISTORY_COLUMNS]
    # Two spaces between columns: after a left-aligned one, before a right-aligned one after another.
    columns = [(a, w + 2 if a == "<" or HISTORY_COLUMNS[i - 1][2] == ">" else w)
               for i, (_name, w, a) in enumerate(HISTORY_COLUMNS)]
    lines = table_lines(header, body, columns, indent="")
    if any(r.get("numpy_kept_median_s") is not None for r in rows):  # say what the two NumPy columns are
        lines.append(_("NumPy plain: as a plain process runs it (the speedup's numerator); NumPy kept: in the worker "
                       "with freed memory kept (— where NumPy was timed once)"))
    by_why: dict[str, list[str]] = {}
    for r in rows:
        if r["id"] in doubts:
            by_why.setdefault(doubts[r["id"]], []).append(r["id"][:8])
    if by_why:  # one reason a group: "the machine was busy (a6b9e6a3, cd1909ae)"
        lines.append(_("?: set aside, not to be quoted: {which}").format(which=_("; ").join(
            _("{why} ({ids})").format(why=_(why), ids=_(", ").join(ids)) for why, ids in by_why.items())))
    if total is not None and total > len(rows):
        lines.append(ngettext("{n} of {total} result in {path}", "{n} of {total} results in {path}", total).format(
            n=len(rows), total=total, path=where))
    else:
        lines.append(ngettext("{n} result in {path}", "{n} results in {path}", len(rows)).format(n=len(rows),
                                                                                               path=where))
    return "\n".join(lines)
