"""``specwise gpus``: list the GPU catalog."""

from __future__ import annotations

import argparse
from dataclasses import asdict
from typing import Any

from specwise.catalog import catalog_gpus
from specwise.cli.common import EXIT_OK, add_json_flag, add_wide_flag, print_json
from specwise.report.models import render_gpus


def register(sub: Any) -> None:
    p = sub.add_parser(
        "gpus", help="list the catalog of GPUs", description="List catalog GPUs (their sources in --json)."
    )
    add_json_flag(p)
    add_wide_flag(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    gpus = list(catalog_gpus().values())
    if args.json:
        print_json([asdict(g) for g in gpus])
    else:
        render_gpus(gpus, wide=args.wide)
    return EXIT_OK
