"""SGLang: ``python -m sglang.launch_server`` with ``--speculative-algorithm`` (EAGLE, EAGLE3, STANDALONE, NGRAM;
docs.sglang.io advanced_features/speculative_decoding), chain drafting as ``--speculative-eagle-topk 1`` with
``num_draft_tokens = num_steps + 1``; acceptance exported as gauges ``sglang:spec_accept_length`` and
``sglang:spec_accept_rate``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from specwise.engines.base import (
    DRAFTING_REFUSAL,
    LOOPBACK,
    ONLINE_QUANTIZATION,
    Deployment,
    SpecMetricNames,
    Speculation,
    cli_flags,
    heads_split_refusal,
)
from specwise.errors import SpecwiseError
from specwise.methods import Method

ALGORITHMS = {"eagle": "EAGLE", "eagle3": "EAGLE3", "draft_model": "STANDALONE", "ngram": "NGRAM", "mtp": "EAGLE"}
# A scenario's kv_cache_dtype (vLLM's ``--kv-cache-dtype`` choices, vllm/config/cache.py ``CacheDType``, where "fp8" is
# e4m3) as SGLang's (``ServerArgs.kv_cache_dtype``: auto, fp8_e5m2, fp8_e4m3, bf16/bfloat16, ...). SGLang has no float16
# KV cache: None, no flag -- auto keeps the model's dtype, 2 bytes per element for an fp16 or bf16 checkpoint, the
# token count the plan sized (an explicit bfloat16 would run an fp16 model's attention in bf16).
KV_CACHE_DTYPES: dict[str, str | None] = {"bfloat16": "bfloat16", "float16": None, "fp8": "fp8_e4m3"}
KV_CACHE_DTYPES |= {"fp8_e4m3": "fp8_e4m3", "fp8_e5m2": "fp8_e5m2"}
# SGLang refuses a chunked_prefill_size that is not a multiple of its KV page size (ServerArgs.check_server_args:
# "chunked_prefill_size must be divisible by page_size"), and some attention backends raise the page size from 1 to
# 16, 32 or 64 (FlashMLA sets 64). A multiple of this is accepted by all of them.
CHUNK_ALIGNMENT_TOKENS = 64


def chunked_prefill_size(max_num_batched_tokens: int) -> int:
    """The plan's token budget as SGLang's ``--chunked-prefill-size``: rounded down to a multiple of
    :data:`CHUNK_ALIGNMENT_TOKENS`, so the server starts whatever page size its backend picks and a chunk stays within
    the budget the memory plan sized; a budget under 64 tokens becomes 64."""
    return max(CHUNK_ALIGNMENT_TOKENS, max_num_batched_tokens // CHUNK_ALIGNMENT_TOKENS * CHUNK_ALIGNMENT_TOKENS)


class SglangEngine:
    name = "sglang"
    spec_metrics = SpecMetricNames(
        accept_rate_gauge="sglang:spec_accept_rate", accept_length_gauge="sglang:spec_accept_length"
    )

    def refusal(self, method: Method, draft: str | None = None, drafting: str = "greedy") -> str | None:
        """A method SGLang has no algorithm for; probabilistic drafting, which SGLang does not do: its drafter takes
        the draft's top-k tokens (``select_top_k_tokens``, sglang/srt/speculative/spec_utils.py) and its sampled
        verification reads the target's probabilities only (``tree_speculative_sampling_target_only``, sgl-kernel),
        which is what specwise prices as greedy drafting."""
        if method.name not in ALGORITHMS:
            return f"SGLang has no {method.name} speculation (it has: {', '.join(ALGORITHMS)})"
        if drafting == "probabilistic" and method.samples_from_a_distribution:
            return DRAFTING_REFUSAL.format(engine="SGLang", how="its top-k tokens")
        return None

    def speculative_config(self, s: Speculation) -> dict[str, Any]:
        if (refused := self.refusal(s.method, s.draft, s.drafting)) is not None:
            raise SpecwiseError(refused)
        if s.schedule:
            raise SpecwiseError("SGLang takes no k-by-batch-size schedule; use its adaptive speculation instead")
        cfg: dict[str, Any] = {"speculative_algorithm": ALGORITHMS[s.method.name]}
        if s.method.needs_draft_checkpoint and s.draft:
            cfg["speculative_draft_model_path"] = s.draft
        cfg.update(speculative_num_steps=s.k, speculative_eagle_topk=1, speculative_num_draft_tokens=s.k + 1)
        return cfg

    def draft_split_refusal(self, s: Speculation, heads: int) -> str | None:
        """SGLang's draft worker runs in the target's tensor-parallel group (``sglang/srt/speculative``): its heads
        split over the target's GPUs."""
        if not s.method.has_weights:
            return None
        return heads_split_refusal("SGLang", s.target_tp, s.draft or "the draft", heads)

    def schedule_notes(
        self, schedule: Sequence[tuple[int, int, int]], k: int, method: str | None = None
    ) -> tuple[str, ...]:
        return (f"{self.name} takes one k; the advised k-by-batch-size schedule is not applied",) if schedule else ()

    def serve_argv(self, d: Deployment, speculative_config: Mapping[str, Any] | None) -> list[str]:
        argv = ["python", "-m", "sglang.launch_server", "--model-path", d.model, "--host", d.host]
        argv += self.deployment_args(d)
        if speculative_config is not None:
            argv += cli_flags(speculative_config)
        return argv

    def deployment_args(self, d: Deployment, method: str | None = None) -> list[str]:
        """TP, memory fraction, context length and running requests; the plan's token budget as SGLang's nearest
        knob, ``--chunked-prefill-size`` (a cap on the tokens of one prefill chunk, ``ServerArgs.chunked_prefill_size``;
        decode tokens do not count against it, and its default depends on the GPU's memory; aligned by
        :func:`chunked_prefill_size`), and the KV cache dtype
        (:data:`KV_CACHE_DTYPES`) when it is not auto."""
        extra = ["--tp-size", str(d.tp), "--mem-fraction-static", f"{d.gpu_memory_utilization:g}"]
        if d.max_model_len is not None:
            extra += ["--context-length", str(d.max_model_len)]
        # always given: with speculation and no --max-running-requests SGLang sets it to 48 ("Max running requests
        # is reset to 48 for speculative decoding", ServerArgs._handle_speculative_decoding), whatever the scenario
        extra += ["--max-running-requests", str(d.max_num_seqs)]
        if d.max_num_batched_tokens is not None:
            extra += ["--chunked-prefill-size", str(chunked_prefill_size(d.max_num_batched_tokens))]
        if d.quantization in ONLINE_QUANTIZATION:
            extra += ["--quantization", d.quantization]
        if (kv := KV_CACHE_DTYPES.get(d.kv_cache_dtype)) is not None:
            extra += ["--kv-cache-dtype", kv]
        return extra

    def launch_argv(
        self,
        python: str,
        model: str,
        served_name: str,
        port: int,
        extra_args: Sequence[str],
        speculative_config: dict[str, Any] | None,
        host: str = LOOPBACK,
    ) -> list[str]:
        argv = [python, "-m", "sglang.launch_server", "--model-path", model, "--served-model-name", served_name]
        argv += ["--host", host, "--port", str(port), "--enable-metrics", *extra_args]
        return argv + cli_flags(speculative_config or {})
