"""The vLLM command for a decision: ``--speculative-config`` JSON (vLLM's SpeculativeConfig fields,
``vllm/config/speculative.py``; shared/reference) plus engine flags consistent with the memory plan."""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from typing import Any

# Quantisation vLLM applies to an unquantised checkpoint at load time. INT8/INT4 need a quantised checkpoint
# (AWQ, GPTQ, compressed-tensors W8A8...), which vLLM detects from its config: no flag to emit for those.
VLLM_ONLINE_QUANTIZATION = ("fp8",)


def speculative_config(
    method: str,
    k: int,
    draft: str | None = None,
    tp: int = 1,
    draft_tp: int | None = None,
    prompt_lookup: tuple[int, int] | None = None,
    schedule: Sequence[tuple[int, int, int]] = (),
    drafting: str = "greedy",
    draft_quantization: str | None = None,
) -> dict[str, Any]:
    """k is ``num_speculative_tokens``; with a schedule it is the largest k the schedule uses."""
    cfg: dict[str, Any] = {"method": method}
    if method in ("draft_model", "eagle", "eagle3") and draft:
        cfg["model"] = draft
    cfg["num_speculative_tokens"] = max([k, *(band[2] for band in schedule)])
    if method == "ngram" and prompt_lookup:
        cfg["prompt_lookup_min"], cfg["prompt_lookup_max"] = prompt_lookup
    if method in ("draft_model", "eagle", "eagle3", "mtp") and tp > 1:
        cfg["draft_tensor_parallel_size"] = draft_tp or tp
    if schedule:
        cfg["num_speculative_tokens_per_batch_size"] = [list(b) for b in schedule]
    if drafting == "probabilistic" and method != "ngram":
        cfg["draft_sample_method"] = "probabilistic"
    if draft_quantization in VLLM_ONLINE_QUANTIZATION:
        cfg["quantization"] = draft_quantization
    return cfg


def serve_command(
    target: str,
    tp: int,
    gpu_memory_utilization: float,
    max_model_len: int,
    max_num_seqs: int,
    spec: dict[str, Any] | None,
    target_quantization: str | None = None,
) -> list[str]:
    """``vllm serve`` argv with the memory plan's TP, memory utilisation and max model length; loopback bind."""
    argv = [
        "vllm",
        "serve",
        target,
        "--host",
        "127.0.0.1",
        "--tensor-parallel-size",
        str(tp),
        "--gpu-memory-utilization",
        f"{gpu_memory_utilization:g}",
        "--max-model-len",
        str(max_model_len),
        "--max-num-seqs",
        str(max_num_seqs),
    ]
    if target_quantization in VLLM_ONLINE_QUANTIZATION:
        argv += ["--quantization", target_quantization]
    if spec is not None:
        argv += ["--speculative-config", json.dumps(spec, separators=(",", ":"))]
    return argv


def shell(argv: Sequence[str]) -> str:
    return " ".join(shlex.quote(a) for a in argv)
