"""``specwise validate``: replay every published measurement in the evidence set through the simulator and show,
per source, how far the predictions are from what was measured -- fit sources and held-back sources apart."""

from __future__ import annotations

import argparse
import shlex
from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, TextColumn

from specwise.advisor.band_rule import DEFAULT_MIN_SPEEDUP
from specwise.cli.common import (
    EXIT_NEGATIVE,
    EXIT_OK,
    add_executor_flags,
    add_json_flag,
    add_wide_flag,
    bounded,
    path_arg,
    positive_int,
    print_json,
    progress_bar,
    scenario_file,
)
from specwise.errors import SpecwiseError
from specwise.evidence.records import all_records
from specwise.executors import open_executor
from specwise.validate.nearest import DEFAULT_NEAREST, Nearest


def register(sub: Any) -> None:
    p = sub.add_parser(
        "validate",
        help="replay the published GPU measurements through the simulator: predicted vs published, per source",
        description="Replay every record of the shipped evidence set (published vLLM/SGLang measurements of "
        "speculative decoding under load, with provenance) through the simulator and compare. Sources the step-time "
        "model was fitted to and held-back sources are reported apart.",
    )
    p.add_argument(
        "--predictor",
        choices=("published-fit", "roofline"),
        default="published-fit",
        help="the step-time model replayed: published-fit (default; the law whose constants were fitted to the fit "
        "families) or roofline (the analytic model, nothing fitted; optimistic under load)",
    )
    p.add_argument(
        "--family",
        action="append",
        default=[],
        metavar="NAME[,NAME...]",
        help="only these source families: a comma list, or the flag repeated",
    )
    p.add_argument("--all", action="store_true", help="list every record, not only slowdowns and misses")
    p.add_argument(
        "--check",
        action="store_true",
        help="exit 1 when an acceptance criterion is not met (one no selected record can judge is n/a: not a failure)",
    )
    p.add_argument(
        "--like",
        metavar="SCENARIO",
        type=scenario_file,
        help="show the published measurements nearest this deployment (an advise or simulate scenario: its engine, "
        "GPU, target, TP and methods; a FILE or example:NAME), published vs predicted, and the error on the held-back "
        "ones among them",
    )
    p.add_argument(
        "--nearest",
        type=positive_int,
        metavar="N",
        help=f"with --like: how many records (default {DEFAULT_NEAREST})",
    )
    p.add_argument(
        "--min-speedup",
        type=bounded(float, "a speedup from 1 to 100, as [advise].min_speedup", low=1.0, high=100.0),
        metavar="X",
        help=f"the minimum speedup advise's verdicts are scored at, record by record (default {DEFAULT_MIN_SPEEDUP:g}, "
        "advise's): enable, measure first or disable against the published speedup",
    )
    p.add_argument(
        "--report",
        type=path_arg,
        metavar="OUT.html",
        help="also write a self-contained HTML report: the tables, every predicted speedup against its published one, "
        "and each series' speedups against its load",
    )
    add_executor_flags(p, "replay")
    add_json_flag(p)
    add_wide_flag(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from specwise.validate.nearest import nearest, query_from_scenario
    from specwise.validate.run import check_fails, select_families, to_json, validate

    if args.nearest is not None and args.like is None:
        raise SpecwiseError("--nearest: goes with --like SCENARIO")
    if args.min_speedup is not None and args.like is not None:
        raise SpecwiseError("--min-speedup: not with --like (it scores the verdicts of the whole replay)")
    if args.like is not None and (args.check or args.all):
        raise SpecwiseError(f"{'--check' if args.check else '--all'}: not with --like (it lists the nearest records)")
    if args.report is not None:
        _check_report(args)
    query = query_from_scenario(args.like) if args.like is not None else None  # input errors before the replay
    records = select_families(all_records(), args.family)
    columns = (TextColumn("replaying"), BarColumn(), MofNCompleteColumn())
    with open_executor(args.executor, args.processes) as executor, progress_bar(*columns, disable=args.json) as bar:
        task = bar.add_task("replay", total=len(records))
        v = validate(
            args.predictor,
            records,
            lambda done, total: bar.update(task, completed=done),
            executor,
            family_selected=bool(args.family),
            min_speedup=DEFAULT_MIN_SPEEDUP if args.min_speedup is None else args.min_speedup,
        )
    if query is not None:
        near = nearest(v.predictions, query, v.fit_families, args.nearest or DEFAULT_NEAREST)
        return _render_nearest(args, near, v.predictor)
    if args.report is not None:
        from specwise.report.validate_html import write_report

        write_report(v, args.report, _command(args))
    if args.json:
        print_json(to_json(v))
    else:
        from specwise.report.validate import render_validation

        render_validation(v, args.all, wide=args.wide)
        if args.report is not None:
            print(f"report: {args.report}")
    return EXIT_NEGATIVE if args.check and check_fails(v) else EXIT_OK


def _render_nearest(args: argparse.Namespace, n: Nearest, predictor: str) -> int:
    if args.json:
        from specwise.validate.nearest import to_json as nearest_json

        print_json(nearest_json(n, predictor) | {"families_selected": list(args.family) or None})
    else:
        from specwise.report.validate import render_nearest

        render_nearest(n, predictor, wide=args.wide, family_selected=bool(args.family))
    return EXIT_OK


def _check_report(args: argparse.Namespace) -> None:
    """``--report``'s errors before the replay: HTML only, not with --like, a writable file, matplotlib there."""
    from specwise.extras import require
    from specwise.fileio import check_output_file

    if args.like is not None:
        raise SpecwiseError("--report: not with --like (the report is of the whole replay)")
    check_output_file(args.report, flag="--report")
    if args.report.suffix.lower() not in (".html", ".htm"):
        raise SpecwiseError(f"--report {args.report}: the report is HTML; give a .html file name")
    require("matplotlib", "--report")


def _command(args: argparse.Namespace) -> str:
    """The command that writes the same report (the flags that change its content), quoted for a shell."""
    words = ["specwise", "validate", "--predictor", args.predictor]
    for f in args.family:
        words += ["--family", f]
    if args.min_speedup is not None:
        words += ["--min-speedup", str(args.min_speedup)]
    return shlex.join([*words, "--report", str(args.report)])
