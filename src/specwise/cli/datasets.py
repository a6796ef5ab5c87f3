"""The dataset flags ``bench`` and ``profile`` share: which categories and which turns of a prompt source."""

from __future__ import annotations

import argparse

from specwise.prompts.items import TURN_MODES
from specwise.prompts.sources import Selection, parse_categories


def add_dataset_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--category",
        metavar="NAME[,NAME...]",
        help="keep the prompts of these categories (a record's 'category' or 'class', e.g. Spec-Bench's mt_bench, "
        "translation, summarization, qa, math_reasoning, rag); results are reported per category",
    )
    p.add_argument(
        "--turns",
        choices=TURN_MODES,
        help="first (the default): each conversation's first user turn (as vllm bench serve's sharegpt); all: one "
        "request per user turn, carrying the earlier turns and the dataset's answers (multi-turn chat)",
    )


def dataset_selection(args: argparse.Namespace) -> Selection:
    return Selection(parse_categories(args.category), args.turns or "first")  # None: --turns not given
