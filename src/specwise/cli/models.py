"""``specwise models``: list the offline model catalog."""

from __future__ import annotations

import argparse
from typing import Any

from specwise.catalog import catalog_model_spec, catalog_models
from specwise.cli.common import EXIT_OK, add_json_flag, print_json
from specwise.report.models import render_catalog


def register(sub: Any) -> None:
    p = sub.add_parser("models", help="list the catalog of models", description="List catalog models (offline).")
    p.add_argument("filter", nargs="?", default="", help="show ids containing this text (case-insensitive)")
    p.add_argument("--role", choices=("target", "draft"), help="only models usable in this role")
    add_json_flag(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    rows = []
    for entry in catalog_models().values():
        if args.filter.lower() not in entry.id.lower():
            continue
        if args.role and args.role not in entry.roles:
            continue
        spec = catalog_model_spec(entry.id)
        rows.append(
            {
                "id": entry.id,
                "family": entry.family,
                "roles": list(entry.roles),
                "params": spec.total_params,
                "active_params": spec.active_params,
                "layers": spec.num_layers,
                "vocab_size": spec.vocab_size,
                "kv_bytes_per_token": spec.kv_bytes_per_token(2.0),
                "max_position_embeddings": spec.max_position_embeddings,
                "kind": spec.draft_head or ("moe" if spec.is_moe else "dense"),
            }
        )
    if args.json:
        print_json(rows)
    else:
        render_catalog(rows, args.filter)
    return EXIT_OK
