"""``specwise check-pair``: can this draft serve this target, and how do their sizes compare?"""

from __future__ import annotations

import argparse
from typing import Any

from specwise.catalog import resolve_draft, resolve_model
from specwise.cli.common import (
    EXIT_NEGATIVE,
    EXIT_OK,
    add_json_flag,
    add_wide_flag,
    non_empty,
    positive_int,
    print_json,
)
from specwise.compat.pair import PairReport, check_pair, model_free_pair, no_mtp_pair
from specwise.compat.tokenizer_files import gather_tokenizer_evidence
from specwise.errors import CLI_FLAGS, FieldNames, SpecwiseError
from specwise.report.models import render_pair


def register(sub: Any) -> None:
    p = sub.add_parser(
        "check-pair",
        help="draft/target compatibility and size ratio",
        description="Check a draft against a target: vocabulary, special tokens, tokenizer agreement (from files "
        "when present), EAGLE/MTP head fit, and the size ratio against the 1:8-1:12 advice. "
        "Exit status: 0 compatible, 1 incompatible, 2 bad input.",
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


def named_pair_report(
    target_name: str, draft_name: str, max_model_len: int | None = None, names: FieldNames = CLI_FLAGS
) -> PairReport:
    """The pair check of a target and a draft given by catalog id or path (the draft also an EAGLE head, ``mtp``,
    ``ngram`` or ``suffix``), with the tokenizer files' evidence; ``names`` says how the messages name ``target``,
    ``draft`` and ``max_model_len`` (flags, or the API's arguments). A model-free method is compatible with any
    target; ``mtp`` on a target without MTP layers is an incompatible pair, not bad input."""
    target = resolve_model(target_name, field=names.name("target"))
    if max_model_len is not None and max_model_len > target.max_position_embeddings:
        raise SpecwiseError(
            f"{names.setting('max_model_len', max_model_len)} exceeds {target.name}'s max_position_embeddings "
            f"({target.max_position_embeddings}); vLLM refuses it"
        )
    if draft_name.strip().lower() == "mtp" and target.mtp_layers <= 0:
        return no_mtp_pair(target)
    choice, trained_for = resolve_draft(draft_name, target, field=names.name("draft"))
    if choice.spec is None:
        return model_free_pair(target, choice.kind)
    evidence = gather_tokenizer_evidence(target.tokenizer, choice.spec.tokenizer)
    return check_pair(
        target,
        choice.spec,
        tokenizer_evidence=evidence,
        head_trained_for=trained_for,
        max_model_len=max_model_len,
    )
