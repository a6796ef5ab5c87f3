"""``specwise plan-memory``: does the target (+ draft) fit, and what does the draft cost in KV/concurrency?"""

from __future__ import annotations

import argparse
from dataclasses import replace
from typing import Any

from specwise import methods
from specwise.catalog import resolve_gpu, resolve_model
from specwise.cli.common import (
    EXIT_NEGATIVE,
    EXIT_OK,
    add_json_flag,
    add_wide_flag,
    argparse_type,
    fraction,
    non_empty,
    non_negative_float,
    positive_int,
    print_json,
)
from specwise.compat.named import checked_draft
from specwise.errors import NegativeAnswer, SpecwiseError
from specwise.memory import MemoryPlanRequest, plan_memory
from specwise.memory.planner import dtype_refusal, reserve_refusal
from specwise.methods import MAX_K
from specwise.report.memory import render_memory_plan
from specwise.specs.quant import QUANT_CHOICES
from specwise.units import GIB, KV_CACHE_DTYPES

speculative_tokens = argparse_type(methods.speculative_tokens)
"""``--num-speculative-tokens``: the k a scenario's [speculation].k also allows (:data:`specwise.methods.MAX_K`)."""
DEFAULT_K = MemoryPlanRequest.num_speculative_tokens  # --num-speculative-tokens when a --draft is given without it


def register(sub: Any) -> None:
    p = sub.add_parser(
        "plan-memory",
        help="VRAM plan for a target and its draft on given GPUs",
        description="Plan GPU memory for a vLLM deployment of TARGET with an optional speculative DRAFT: weights, "
        "KV cache of both models, tensor parallelism, and what the draft costs in concurrency. "
        "Exit status: 0 fits, 1 does not fit (or the draft cannot serve the target), 2 bad input, 3 internal error.",
    )
    p.add_argument(
        "--target",
        required=True,
        type=non_empty,
        metavar="ID_OR_PATH",
        help="catalog id (see 'specwise models'), HF model directory, config.json or GGUF file",
    )
    p.add_argument(
        "--draft",
        type=non_empty,
        metavar="ID_OR_PATH",
        help="draft model / EAGLE head (id or path), or 'ngram', 'suffix', 'mtp' (the target's MTP layers)",
    )
    p.add_argument(
        "--gpu",
        required=True,
        type=non_empty,
        help="GPU name (see 'specwise gpus') or as nvidia-smi prints it, e.g. H100-SXM-80GB",
    )
    p.add_argument(
        "--num-gpus",
        type=positive_int,
        help="GPUs in total (default: --tp); more than --tp means data-parallel replicas",
    )
    p.add_argument("--tp", type=positive_int, help="tensor-parallel size of the target (default: --num-gpus or 1)")
    p.add_argument(
        "--draft-tp",
        type=positive_int,
        help="draft tensor-parallel size (default: --tp): --tp for a draft model (vLLM V1), 1 or --tp for a head",
    )
    p.add_argument(
        "--dtype",
        type=model_dtype,
        default="auto",
        help="weights/activations dtype: auto (the config's), bfloat16, float16, float32 (or bf16, fp16, fp32)",
    )
    p.add_argument(
        "--quantization",
        default="auto",
        choices=QUANT_CHOICES,
        help="target weight quantization (auto: as the checkpoint stores it)",
    )
    p.add_argument("--draft-quantization", default="auto", choices=QUANT_CHOICES, help="draft weight quantization")
    p.add_argument(
        "--kv-cache-dtype",
        default="auto",
        choices=KV_CACHE_DTYPES,
        help="vLLM's --kv-cache-dtype (auto: the model dtype; every fp8 variant is 1 byte)",
    )
    p.add_argument("--max-model-len", type=positive_int, help="context length to plan for (default: the model's)")
    p.add_argument("--gpu-memory-utilization", type=fraction, default=0.9, help="vLLM's fraction (default 0.9)")
    p.add_argument(
        "--max-num-batched-tokens",
        type=positive_int,
        default=8192,
        help="tokens per forward pass, sets the activation reserve (default 8192)",
    )
    p.add_argument("--max-num-seqs", type=positive_int, default=256, help="vLLM's max_num_seqs (default 256)")
    p.add_argument(
        "--num-speculative-tokens",
        type=speculative_tokens,
        help=f"with --draft: k, for the logits part of the reserve (default {DEFAULT_K}; at most {MAX_K}, as a "
        "scenario's k)",
    )
    p.add_argument(
        "--reserve-gib",
        type=non_negative_float,
        help="replace the estimated activation/CUDA-graph/non-torch reserve (GiB per GPU)",
    )
    add_json_flag(p)
    add_wide_flag(p)
    p.set_defaults(handler=run)


def model_dtype(text: str) -> str:
    """An argparse type for ``--dtype``: the planner's own rule (:func:`~specwise.memory.planner.dtype_refusal`)."""
    refusal = dtype_refusal(text)
    if refusal is not None:
        raise argparse.ArgumentTypeError(refusal)
    return text


def run(args: argparse.Namespace) -> int:
    if args.num_speculative_tokens is not None and args.draft is None:  # the reserve has draft rows only with a draft
        raise SpecwiseError(
            "--num-speculative-tokens: no --draft given; k sizes the reserve of a speculative plan only"
        )
    target = resolve_model(args.target, field="--target")
    gpu = resolve_gpu(args.gpu)
    reserve = None if args.reserve_gib is None else args.reserve_gib * GIB
    if (refusal := reserve_refusal(reserve, gpu)) is not None:  # before int(): 1e300 GiB is an infinite float
        raise SpecwiseError(f"--reserve-gib {args.reserve_gib:g} {refusal}")
    tp = args.tp if args.tp is not None else (args.num_gpus or 1)
    try:
        draft_choice, pair = checked_draft(
            target, args.draft, args.draft_tp, args.draft_quantization, tp=tp, max_model_len=args.max_model_len
        )
    except NegativeAnswer as exc:
        if args.json:  # the answer as a document too, as check-pair --json gives it for the same pair
            print_json({"target": target.name, "draft": args.draft, "gpu": gpu.name, "compatible": False,
                        "fits": False, "why": str(exc)})  # fmt: skip
        raise
    request = MemoryPlanRequest(
        target=target,
        gpu=gpu,
        tp=tp,
        num_gpus=args.num_gpus,
        draft=draft_choice,
        draft_tp=args.draft_tp,
        dtype=args.dtype,
        quantization=args.quantization,
        draft_quantization=args.draft_quantization,
        kv_cache_dtype=args.kv_cache_dtype,
        max_model_len=args.max_model_len,
        gpu_memory_utilization=args.gpu_memory_utilization,
        max_num_batched_tokens=args.max_num_batched_tokens,
        max_num_seqs=args.max_num_seqs,
        num_speculative_tokens=args.num_speculative_tokens or DEFAULT_K,
        reserve_bytes=None if reserve is None else int(reserve),
    )
    plan = replace(plan_memory(request), compatibility=pair)
    if args.json:
        print_json(plan.to_json())
    else:
        render_memory_plan(plan, pair, wide=args.wide)
        specs = [target, *([request.draft.spec] if request.draft is not None and request.draft.spec else [])]
        for note in dict.fromkeys(f"{spec.name}: {n}" for spec in specs for n in spec.notes):
            print(f"note: {note}")  # what inspect says of the models read (a config read a particular way)
    return EXIT_OK if plan.fits else EXIT_NEGATIVE
