"""``specwise models``: list the offline model catalog."""

from __future__ import annotations

import argparse
from typing import Any

from specwise.catalog import catalog_model_spec, catalog_models
from specwise.cli.common import EXIT_OK, add_json_flag, add_wide_flag, print_json
from specwise.report.models import CatalogRow, render_catalog


def register(sub: Any) -> None:
    p = sub.add_parser("models", help="list the catalog of models", description="List catalog models (offline).")
    p.add_argument("filter", nargs="?", default="", help="show ids containing this text (case-insensitive)")
    p.add_argument("--role", choices=("target", "draft"), help="only models usable in this role")
    add_json_flag(p)
    add_wide_flag(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    rows = []
    for entry in catalog_models().values():
        if args.filter.lower() not in entry.id.lower():
            continue
        if args.role and args.role not in entry.roles:
            continue
        rows.append(CatalogRow.of(entry.id, entry.family, entry.roles, catalog_model_spec(entry.id), entry.source))
    if args.json:
        print_json([r.to_json() for r in rows])
    else:
        render_catalog(rows, args.filter, wide=args.wide)
    return EXIT_OK
