"""``specwise prompts``: what a prompt source yields for bench and profile, before a long run."""

from __future__ import annotations

import argparse
from typing import Any

from specwise.cli.common import EXIT_OK, add_json_flag, add_wide_flag, path_text, print_json
from specwise.cli.datasets import add_dataset_flags, dataset_selection
from specwise.prompts.summary import summarize_source
from specwise.report.prompts import render_prompt_summary


def register(sub: Any) -> None:
    p = sub.add_parser(
        "prompts",
        help="show what a prompt file or dataset yields (requests per category, turns, lengths)",
        description="Read a prompt source as bench and profile do (JSON/JSONL: specwise, chat messages, ShareGPT, "
        "Spec-Bench question.jsonl; hf:PATH; builtin:NAME) and print its requests per category, how many carry "
        "earlier turns, and their length in words (or tokens, with --tokenizer).",
    )
    p.add_argument("source", type=path_text, metavar="FILE|hf:PATH|builtin:NAME")
    add_dataset_flags(p)
    p.add_argument(
        "--tokenizer", type=path_text, metavar="DIR|FILE|ORG/NAME", help="count tokens of this tokenizer, not words"
    )
    add_json_flag(p)
    add_wide_flag(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    summary = summarize_source(args.source, dataset_selection(args), args.tokenizer)
    if args.json:
        print_json(summary.to_json())
    else:
        render_prompt_summary(summary, wide=args.wide)
    return EXIT_OK
