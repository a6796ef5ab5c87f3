"""``specwise inspect``: the derived spec of one model (catalog id, HF directory or GGUF file)."""

from __future__ import annotations

import argparse
from typing import Any

from specwise.catalog import catalog_source, resolve_model
from specwise.cli.common import EXIT_OK, add_json_flag, add_wide_flag, non_empty, print_json
from specwise.report.models import ModelSpecView, render_model_spec
from specwise.units import KV_CACHE_DTYPES, kv_cache_dtype


def register(sub: Any) -> None:
    p = sub.add_parser(
        "inspect",
        help="show a model's derived spec: parameters, layout, KV bytes per token",
        description="Read a model (catalog id, HF directory, config.json or GGUF) and show what "
        "specwise derives from it.",
    )
    p.add_argument("model", type=non_empty, metavar="ID_OR_PATH")
    p.add_argument(
        "--kv-cache-dtype",
        default="auto",
        choices=KV_CACHE_DTYPES,
        help="vLLM's --kv-cache-dtype, for the per-token figures (auto: the model dtype; every fp8 variant is 1 byte)",
    )
    add_json_flag(p)
    add_wide_flag(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    spec = resolve_model(args.model, field="ID_OR_PATH")
    view = ModelSpecView(spec, kv_cache_dtype(args.kv_cache_dtype, spec.dtype), catalog_source(spec))
    if args.json:
        print_json(view.to_json())
    else:
        render_model_spec(view, wide=args.wide)
    return EXIT_OK
