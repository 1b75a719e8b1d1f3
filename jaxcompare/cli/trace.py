"""``jaxcompare trace FILE``: the profile summary of any trace file, one a user captured with
``jax.profiler`` (.trace.json.gz) or its .xplane.pb: top device ops with their shares, each
device's busy time, copies."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .. import i18n
from ..analysis.text import trace_lines
from ..engine import TOP_OPS, summarize_file
from ..i18n import N_
from ..model.errors import BadInput
from .report import write_json


def add_command(sub: Any) -> None:
    p = sub.add_parser("trace", help="summarise a profiler trace file (.xplane.pb, .trace.json.gz): top device ops, "
                       "busy time per device, copies")
    p.add_argument("file", metavar="FILE", help="a jax.profiler trace: .xplane.pb (converted by this jaxlib), "
                   ".trace.json.gz, perfetto_trace.json.gz or .json")
    p.add_argument("--top", type=int, default=TOP_OPS, help=f"how many ops to list (default {TOP_OPS})")
    p.add_argument("--json", metavar="PATH|-", help="write the summary as JSON ('-' = stdout)")


def handle(args: argparse.Namespace) -> int:
    if args.top < 1:
        raise BadInput(N_("--top must be at least 1, got {top}").format(top=args.top))
    profile = summarize_file(args.file, top=args.top)
    if not profile.ok:  # nothing to summarise: one line, exit 2, as for a file that cannot be read
        raise BadInput(profile.error or N_("the trace holds no device ops"))
    if args.json:
        with i18n.using(i18n.SOURCE_LANGUAGE):  # JSON is English whatever the reader's language
            write_json(args.json, profile.to_dict())
    if args.json != "-":
        print("\n".join(trace_lines(profile)), file=sys.stdout)
    return 0
