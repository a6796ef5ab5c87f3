"""``specwise drafts``: which catalog drafts (and methods) could serve this target, ranked, with the reasons."""

from __future__ import annotations

import argparse
from typing import Any

from specwise.catalog import resolve_gpu, resolve_model
from specwise.cli.common import (
    EXIT_NEGATIVE,
    EXIT_OK,
    add_json_flag,
    add_wide_flag,
    non_empty,
    positive_int,
    print_json,
)
from specwise.compat.drafts import rank_drafts
from specwise.errors import NegativeAnswer
from specwise.report.drafts import render_drafts


def register(sub: Any) -> None:
    p = sub.add_parser(
        "drafts",
        help="rank the catalog drafts (and n-gram, suffix, MTP) that could serve a target",
        description="Every catalog draft model and EAGLE head, the target's MTP layers and the model-free methods, "
        "checked as check-pair checks one (vocabulary, special tokens, tokenizer, head fit, size ratio, context), "
        "placed at the target's --tp and, with --gpu, planned as plan-memory plans one; the ones that fit first, "
        "ranked (a heuristic: heads trained for the target, MTP, draft models near 1:10, others, then lookup "
        "methods), with the reasons. Exit status: 0 a draft model or head fits, 1 none does (only lookup methods), "
        "2 bad input, 3 internal error.",
    )
    p.add_argument(
        "--target", required=True, type=non_empty, metavar="ID_OR_PATH", help="catalog id, HF directory or GGUF file"
    )
    p.add_argument("--gpu", type=non_empty, help="check memory on this GPU (see 'specwise gpus')")
    p.add_argument("--tp", type=positive_int, default=1, help="tensor-parallel size of the target (default 1)")
    p.add_argument("--max-model-len", type=positive_int, metavar="N", help="context to plan for (default: the model's)")
    p.add_argument("--all", action="store_true", help="also list the drafts that do not fit")
    add_json_flag(p)
    add_wide_flag(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    target = resolve_model(args.target, field="--target")
    gpu = resolve_gpu(args.gpu) if args.gpu is not None else None
    report = rank_drafts(target, gpu=gpu, tp=args.tp, max_model_len=args.max_model_len)
    if args.json:
        print_json(report.to_json(all_drafts=args.all))
    if not report.target_fits:  # nothing to rank: the README's "no" (one line on stderr, exit 1), after --json's doc
        where = f"{report.tp} x {report.gpu}"
        raise NegativeAnswer(f"{report.target} itself does not fit on {where}: {report.why} (see specwise plan-memory)")
    if not args.json:
        shown = report.drafts if args.all else [s for s in report.drafts if s.fits]
        render_drafts(report.target, shown, memory_checked=report.memory_checked, wide=args.wide)
    return EXIT_OK if report.a_model_fits else EXIT_NEGATIVE
