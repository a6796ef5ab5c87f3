"""``specwise validate``: replay every published measurement in the evidence set through the simulator and show,
per source, how far the predictions are from what was measured -- fit sources and held-back sources apart."""

from __future__ import annotations

import argparse
from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, TextColumn

from specwise.cli.common import (
    EXIT_NEGATIVE,
    EXIT_OK,
    add_executor_flags,
    add_json_flag,
    add_wide_flag,
    print_json,
    progress_bar,
)
from specwise.errors import SpecwiseError
from specwise.evidence.records import all_records
from specwise.executors import open_executor


def register(sub: Any) -> None:
    p = sub.add_parser(
        "validate",
        help="replay the published GPU measurements through the simulator: predicted vs published, per source",
        description="Replay every record of the shipped evidence set (published vLLM/SGLang measurements of "
        "speculative decoding under load, with provenance) through the simulator and compare. Sources the step-time "
        "model was fitted to and held-back sources are reported apart.",
    )
    p.add_argument("--predictor", choices=("published-fit", "roofline"), default="published-fit")
    p.add_argument("--family", action="append", default=[], metavar="NAME", help="only these source families")
    p.add_argument("--all", action="store_true", help="list every record, not only slowdowns and misses")
    p.add_argument("--check", action="store_true", help="exit 1 when an acceptance criterion is not met")
    add_executor_flags(p, "replay")
    add_json_flag(p)
    add_wide_flag(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from specwise.validate.run import to_json, validate

    records = all_records()
    if args.family:
        known = sorted({r.family for r in records})
        unknown = [f for f in args.family if f not in known]
        if unknown:
            raise SpecwiseError(f"--family {unknown[0]!r}: unknown (known: {', '.join(known)})")
        records = tuple(r for r in records if r.family in args.family)
    columns = (TextColumn("replaying"), BarColumn(), MofNCompleteColumn())
    with open_executor(args.executor, args.processes) as executor, progress_bar(*columns, disable=args.json) as bar:
        task = bar.add_task("replay", total=len(records))
        v = validate(args.predictor, records, lambda done, total: bar.update(task, completed=done), executor)
    if args.json:
        print_json(to_json(v))
    else:
        from specwise.report.validate import render_validation

        render_validation(v, args.all, wide=args.wide)
    return EXIT_NEGATIVE if args.check and not all(v.criteria.values()) else EXIT_OK
