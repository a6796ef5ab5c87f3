from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specwise.catalog import catalog_model_spec, resolve_draft, resolve_gpu
from specwise.errors import SpecwiseError
from specwise.memory import MemoryPlanRequest, plan_memory
from specwise.memory.planner import BLOCK_SIZE_TOKENS
from specwise.specs.draft import DraftChoice
from specwise.units import GIB

LLAMA70 = catalog_model_spec("meta-llama/Llama-3.1-70B-Instruct")
H100 = resolve_gpu("H100-SXM-80GB")


def test_llama70b_fits_on_four_h100s() -> None:
    plan = plan_memory(MemoryPlanRequest(target=LLAMA70, gpu=H100, tp=4))
    d = plan.to_dict()
    assert d["fits"] is True
    assert d["target"]["weight_bytes"] == pytest.approx(141.1e9, rel=0.01)
    assert d["target"]["kv_bytes_per_token"] == 327_680
    assert d["draft"] is None
    for key in (
        "target",
        "draft",
        "gpu",
        "fits",
        "kv_cache_tokens",
        "kv_cache_tokens_without_draft",
        "max_concurrent_seqs",
    ):
        assert key in d
    for key in ("weight_bytes", "kv_bytes_per_token", "params"):
        assert key in d["target"]
    # KV budget / per-GPU bytes per token, rounded to whole blocks
    expected = plan.kv_budget_bytes_per_gpu // 81_920 // BLOCK_SIZE_TOKENS * BLOCK_SIZE_TOKENS
    assert plan.kv_cache_tokens == expected
    assert plan.max_concurrent_seqs == plan.kv_budget_bytes_per_gpu // (131_072 * 81_920)


def test_llama70b_does_not_fit_on_one_h100_and_says_by_how_much() -> None:
    plan = plan_memory(MemoryPlanRequest(target=LLAMA70, gpu=H100, tp=1))
    assert not plan.fits
    assert plan.kv_cache_tokens == 0 and plan.max_concurrent_seqs == 0
    message = plan.problems[0]
    miss_gib = -plan.kv_budget_bytes_per_gpu / GIB
    assert f"misses by {miss_gib:.2f} GiB" in message
    assert 55 < miss_gib < 70  # 131 GiB of weights + reserve vs 71.7 GiB usable


def test_draft_reduces_kv_and_concurrency() -> None:
    draft, _ = resolve_draft("meta-llama/Llama-3.2-1B-Instruct", LLAMA70)
    plan = plan_memory(MemoryPlanRequest(target=LLAMA70, gpu=H100, tp=4, draft=draft, max_model_len=8192))
    assert plan.fits
    assert plan.kv_cache_tokens < plan.kv_cache_tokens_without_draft
    assert plan.max_concurrent_seqs < plan.max_concurrent_seqs_without_draft
    assert plan.draft is not None and plan.draft.kv_bytes_per_token == 16 * 8 * 64 * 2 * 2
    assert 0 < (plan.draft_concurrency_cost or 0) < 0.5


def test_draft_tp1_puts_the_whole_draft_on_rank0() -> None:
    draft, _ = resolve_draft("meta-llama/Llama-3.2-1B-Instruct", LLAMA70)
    shared = plan_memory(MemoryPlanRequest(target=LLAMA70, gpu=H100, tp=4, draft=draft, max_model_len=8192))
    rank0 = plan_memory(MemoryPlanRequest(target=LLAMA70, gpu=H100, tp=4, draft=draft, draft_tp=1, max_model_len=8192))
    assert rank0.kv_cache_tokens < shared.kv_cache_tokens
    assert rank0.draft is not None and rank0.draft.kv_bytes_per_token_per_gpu == rank0.draft.kv_bytes_per_token


def test_ngram_draft_costs_no_kv() -> None:
    plan = plan_memory(MemoryPlanRequest(target=LLAMA70, gpu=H100, tp=4, draft=DraftChoice("ngram")))
    assert plan.draft is None and plan.draft_method == "ngram"
    assert plan.kv_cache_tokens == plan.kv_cache_tokens_without_draft


def test_mtp_draft_for_deepseek() -> None:
    ds = catalog_model_spec("deepseek-ai/DeepSeek-V3")
    draft, _ = resolve_draft("mtp", ds)
    plan = plan_memory(MemoryPlanRequest(target=ds, gpu=resolve_gpu("H200"), tp=8, draft=draft, max_model_len=32768))
    assert plan.fits
    assert plan.draft is not None and plan.draft.kv_bytes_per_token_per_gpu == 1152
    with pytest.raises(SpecwiseError, match="no MTP layers"):
        resolve_draft("mtp", LLAMA70)


def test_max_model_len_too_long_for_kv_reports_what_fits() -> None:
    plan = plan_memory(
        MemoryPlanRequest(
            target=catalog_model_spec("Qwen/Qwen3-8B"),
            gpu=resolve_gpu("L4"),
            max_model_len=40960,
            gpu_memory_utilization=0.85,
        )
    )
    assert not plan.fits
    assert "misses by" in plan.problems[0]
    assert 0 < plan.max_model_len_that_fits < 40960
    ok = plan_memory(
        MemoryPlanRequest(
            target=catalog_model_spec("Qwen/Qwen3-8B"),
            gpu=resolve_gpu("L4"),
            max_model_len=plan.max_model_len_that_fits,
            gpu_memory_utilization=0.85,
        )
    )
    assert ok.fits and ok.max_concurrent_seqs >= 1


def test_quantization_shrinks_weights() -> None:
    sizes = {
        q: plan_memory(MemoryPlanRequest(target=LLAMA70, gpu=H100, tp=4, quantization=q)).target.weight_bytes
        for q in ("none", "fp8", "int8", "int4")
    }
    assert sizes["none"] > sizes["fp8"] >= sizes["int8"] > sizes["int4"]
    assert sizes["int4"] == pytest.approx(70.55e9 * 0.52 + 2.1e9 * 2 * 0.48, rel=0.05)


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"tp": 3}, "64 attention heads"),
        ({"tp": 4, "num_gpus": 2}, "needs at least 4 GPUs"),
        ({"tp": 4, "num_gpus": 6}, "not a multiple of --tp 4"),
        ({"tp": 0}, "tp: must be a positive integer"),
        ({"gpu_memory_utilization": 1.5}, "gpu_memory_utilization"),
        ({"max_model_len": 10**7}, "exceeds"),
        ({"kv_cache_dtype": "int2"}, "kv-cache-dtype"),
        ({"dtype": "int3"}, "'int3' is not a model dtype; expected one of auto, "),
    ],
)
def test_impossible_settings(kwargs: dict[str, object], fragment: str) -> None:
    with pytest.raises(SpecwiseError, match=fragment):
        plan_memory(MemoryPlanRequest(target=LLAMA70, gpu=H100, **kwargs))  # type: ignore[arg-type]


def test_draft_tp_must_be_one_or_target_tp() -> None:
    draft, _ = resolve_draft("meta-llama/Llama-3.2-1B-Instruct", LLAMA70)
    with pytest.raises(SpecwiseError, match="1 or the target's --tp"):
        plan_memory(MemoryPlanRequest(target=LLAMA70, gpu=H100, tp=4, draft=draft, draft_tp=2))


def test_draft_heads_must_divide_draft_tp() -> None:
    target = catalog_model_spec("Qwen/Qwen2.5-72B-Instruct")
    draft, _ = resolve_draft("Qwen/Qwen2.5-0.5B-Instruct", target)  # 14 heads
    with pytest.raises(SpecwiseError, match="14 attention heads"):
        plan_memory(MemoryPlanRequest(target=target, gpu=H100, tp=4, draft=draft))
    assert plan_memory(
        MemoryPlanRequest(target=target, gpu=H100, tp=4, draft=draft, draft_tp=1, max_model_len=8192)
    ).fits


MODELS = ["meta-llama/Llama-3.1-8B-Instruct", "Qwen/Qwen3-30B-A3B", "google/gemma-2-9b-it", "openai/gpt-oss-20b"]


@settings(max_examples=60, deadline=None)
@given(
    model=st.sampled_from(MODELS),
    util=st.floats(0.3, 0.95),
    extra=st.floats(0.01, 0.05),
    length=st.integers(256, 8192),
    gpu=st.sampled_from(["H100", "A100-40GB", "L40S", "H200"]),
)
def test_planner_invariants(model: str, util: float, extra: float, length: int, gpu: str) -> None:
    spec = catalog_model_spec(model)
    g = resolve_gpu(gpu)
    base = plan_memory(MemoryPlanRequest(target=spec, gpu=g, gpu_memory_utilization=util, max_model_len=length))
    more = plan_memory(
        MemoryPlanRequest(target=spec, gpu=g, gpu_memory_utilization=min(1.0, util + extra), max_model_len=length)
    )
    assert base.kv_cache_tokens % BLOCK_SIZE_TOKENS == 0
    assert more.kv_cache_tokens >= base.kv_cache_tokens  # more memory never means less KV
    assert more.max_concurrent_seqs >= base.max_concurrent_seqs
    assert base.fits == (base.max_concurrent_seqs >= 1)
    draft, _ = resolve_draft("meta-llama/Llama-3.2-1B-Instruct", spec)
    with_draft = plan_memory(
        MemoryPlanRequest(target=spec, gpu=g, gpu_memory_utilization=util, max_model_len=length, draft=draft)
    )
    assert with_draft.kv_cache_tokens <= base.kv_cache_tokens  # a draft never adds KV room
    assert with_draft.kv_cache_tokens_without_draft == base.kv_cache_tokens


def test_a_draft_head_as_target_and_a_quantization_as_dtype_are_refused() -> None:
    # review 5: an EAGLE-3 head planned as a served target ("fits: 18,085,520 KV tokens"); --dtype fp8 accepted
    head = catalog_model_spec("yuhuili/EAGLE3-LLaMA3.1-Instruct-8B")
    gpu = resolve_gpu("H100")
    with pytest.raises(SpecwiseError, match="is an eagle3 head, a draft"):
        plan_memory(MemoryPlanRequest(target=head, gpu=gpu))
    target = catalog_model_spec("meta-llama/Llama-3.1-8B-Instruct")
    with pytest.raises(SpecwiseError, match=r"dtype: 'fp8' is not a model dtype; .*a quantization"):
        plan_memory(MemoryPlanRequest(target=target, gpu=gpu, dtype="fp8"))
    assert plan_memory(MemoryPlanRequest(target=target, gpu=gpu, dtype="float16")).fits


def test_the_suggested_max_model_len_passes_vllms_whole_block_check() -> None:
    # review 5: "84328 or less would fit", then "fits: 84,320 KV tokens, 1 concurrent 84,328-token sequences" --
    # vLLM's start-up check holds cdiv(max_model_len, 16) blocks per sequence, which 84,328 tokens overflow
    target = catalog_model_spec("meta-llama/Llama-3.1-70B-Instruct")
    draft, _ = resolve_draft("meta-llama/Llama-3.2-1B-Instruct", target)
    gpu = resolve_gpu("H100")
    req = MemoryPlanRequest(target=target, gpu=gpu, draft=draft, quantization="int4")
    suggested = plan_memory(req).max_model_len_that_fits
    assert suggested % BLOCK_SIZE_TOKENS == 0
    at = plan_memory(replace(req, max_model_len=suggested))
    assert at.fits and at.max_concurrent_seqs == 1 and at.kv_cache_tokens >= suggested
    assert not plan_memory(replace(req, max_model_len=suggested + 1)).fits


def test_an_eagle_head_and_mtp_use_the_target_s_embedding_on_v1() -> None:
    """Review s46b F6: vLLM V1 points an EAGLE-1 head's embedding (and MTP's embedding and LM head) at the target's,
    so they take no memory of their own; V0 (0.8.3-0.8.5 EAGLE) loads the head's copy. Hand calculation for the
    8B target with its EAGLE head on an RTX 3090 at 4,096 tokens: the 1.05 GB embedding back in the KV budget gives
    24,176 KV tokens, not 16,400."""
    from specwise.catalog import resolve_model

    target, head = (
        resolve_model("meta-llama/Llama-3.1-8B-Instruct"),
        resolve_model("yuhuili/EAGLE-LLaMA3.1-Instruct-8B"),
    )
    request = MemoryPlanRequest(
        target=target, gpu=resolve_gpu("RTX-3090"), draft=DraftChoice("model", head), max_model_len=4096
    )
    v1, v0 = plan_memory(request), plan_memory(replace(request, draft_shares_target_weights=False))
    assert (v1.kv_cache_tokens, v0.kv_cache_tokens) == (24_176, 16_400)
    assert v0.draft is not None and v1.draft is not None
    assert v0.draft.weight_bytes - v1.draft.weight_bytes == head.params.embedding * 2  # bf16
    assert any("input embedding (525M parameters) is counted as the target's" in w for w in v1.warnings)
    assert not any("embedding" in w for w in v0.warnings)
    ds = resolve_model("deepseek-ai/DeepSeek-V3")
    mtp_draft, _ = resolve_draft("mtp", ds)
    mtp = plan_memory(MemoryPlanRequest(target=ds, gpu=resolve_gpu("H200-SXM-141GB"), tp=8, draft=mtp_draft))
    assert any("MTP module's embedding and LM head are counted as the target's" in w for w in mtp.warnings)


def test_a_head_split_apart_from_its_target_is_said_to_be_v0s_placement() -> None:
    """Review s46c F7: plan-memory --draft-tp 1 for an EAGLE head planned a placement V1 never runs (V1 builds the head
    with the target's TP); the plan says so, and the V0 plan (own weights) does not."""
    from specwise.catalog import resolve_model

    target = resolve_model("meta-llama/Llama-3.1-8B-Instruct")
    head = resolve_model("yuhuili/EAGLE-LLaMA3.1-Instruct-8B")
    request = MemoryPlanRequest(
        target=target, gpu=resolve_gpu("H100-SXM-80GB"), tp=2, draft=DraftChoice("model", head), draft_tp=1
    )
    said = [w for w in plan_memory(request).warnings if "runs an EAGLE head at the target's tensor parallelism" in w]
    assert len(said) == 1 and "V0 engine" in said[0]
    assert not any("tensor parallelism" in w for w in plan_memory(replace(request, draft_tp=2)).warnings)
    v0 = plan_memory(replace(request, draft_shares_target_weights=False))
    assert not any("tensor parallelism" in w for w in v0.warnings)
