"""``specwise check-pair``: can this draft serve this target, and how do their sizes compare?"""

from __future__ import annotations

import argparse
from typing import Any

from specwise.cli.common import (
    EXIT_NEGATIVE,
    EXIT_OK,
    add_json_flag,
    add_wide_flag,
    non_empty,
    positive_int,
    print_json,
)
from specwise.compat.named import named_pair_report
from specwise.report.models import render_pair


def register(sub: Any) -> None:
    p = sub.add_parser(
        "check-pair",
        help="draft/target compatibility and size ratio",
        description="Check a draft against a target: vocabulary, special tokens, tokenizer agreement (from files "
        "when present), EAGLE/MTP head fit, and the size ratio against the 1:8-1:12 advice. "
        "Exit status: 0 compatible, 1 incompatible, 2 bad input, 3 internal error.",
    )
    p.add_argument("--target", required=True, type=non_empty, metavar="ID_OR_PATH")
    p.add_argument(
        "--draft",
        required=True,
        type=non_empty,
        metavar="ID_OR_PATH",
        help="draft model or EAGLE head (id or path), 'mtp' (the target's MTP layers), or 'ngram' / 'suffix' "
        "(model-free: compatible with any target)",
    )
    p.add_argument(
        "--max-model-len",
        type=positive_int,
        metavar="N",
        help="the deployment's context length, checked against the draft's positions (default: the target's)",
    )
    add_json_flag(p)
    add_wide_flag(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    report = named_pair_report(args.target, args.draft, args.max_model_len)
    if args.json:
        print_json(report.to_json())
    else:
        render_pair(report, wide=args.wide)
    return EXIT_OK if report.compatible else EXIT_NEGATIVE
