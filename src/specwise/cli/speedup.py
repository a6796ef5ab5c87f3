"""``specwise speedup``: the analytic batch-1 speedup (Leviathan et al. 2023, Theorem 3.8)."""

from __future__ import annotations

import argparse
from typing import Any

from specwise.acceptance.leviathan import batch_one_speedup
from specwise.cli.common import (
    EXIT_OK,
    add_json_flag,
    bounded,
    non_negative_float,
    print_json,
    probability,
)
from specwise.methods import MAX_K
from specwise.report.sim import render_speedup


def register(sub: Any) -> None:
    p = sub.add_parser(
        "speedup",
        help="analytic batch-1 speedup from alpha, k and the draft cost ratio",
        description="Expected walltime improvement at batch 1 with i.i.d. acceptance alpha, k draft "
        "tokens and draft/target step-cost ratio c: (1 - a^(k+1)) / ((1 - a)(k c + 1)).",
    )
    p.add_argument("--alpha", required=True, type=probability, help="acceptance rate in [0, 1]")
    k_type = bounded(
        int, f"an integer in 0..{MAX_K} (specwise models up to {MAX_K} draft tokens per step)", low=0, high=MAX_K
    )
    p.add_argument("--k", required=True, type=k_type, help=f"draft tokens per step, 0 to {MAX_K}")
    p.add_argument(
        "--cost-ratio", required=True, type=non_negative_float, help="draft step time / target step time (c)"
    )
    add_json_flag(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    result = batch_one_speedup(args.alpha, args.k, args.cost_ratio)
    if args.json:
        print_json(result.to_json())
    else:
        render_speedup(result)
    return EXIT_OK
