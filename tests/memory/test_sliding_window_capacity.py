"""KV capacity at a sequence length: sliding-window layers hold at most their window of a sequence, so a long
sequence costs a hybrid model (Gemma 3: five sliding-window layers per full one) far less than every token at
every layer -- the simulator gets the capacity at the traffic's length, not the all-layers count."""

from __future__ import annotations

from specwise.catalog import resolve_gpu, resolve_model
from specwise.memory import MemoryPlan, MemoryPlanRequest, plan_memory
from specwise.memory.planner import kv_tokens_at_length
from specwise.specs.draft import DraftChoice
from specwise.specs.model import ModelSpec


def _plan(target: str, draft: str | None = None) -> tuple[ModelSpec, ModelSpec | None, MemoryPlan]:
    t = resolve_model(target)
    choice = DraftChoice("model", resolve_model(draft)) if draft else None
    req = MemoryPlanRequest(target=t, gpu=resolve_gpu("H100-SXM-80GB"), draft=choice, max_model_len=32768)
    return t, choice.spec if choice else None, plan_memory(req)


def test_gemma3_holds_more_long_sequences_than_its_all_layer_count() -> None:
    target, _, plan = _plan("google/gemma-3-27b-it")
    short, _ = kv_tokens_at_length(plan, target, None, 1, 512)  # within the 1,024-token window: every layer holds it
    long, _ = kv_tokens_at_length(plan, target, None, 1, 8192)
    assert abs(short - plan.kv_cache_tokens) <= plan.kv_cache_tokens * 0.001  # the plan rounds to whole blocks
    assert long > 3 * plan.kv_cache_tokens
    # the plan's own max-length sequences agree: capacity at max_model_len = whole sequences x their length
    at_max, _ = kv_tokens_at_length(plan, target, None, 1, plan.max_model_len)
    assert at_max // plan.max_model_len == plan.max_concurrent_seqs


def test_without_sliding_windows_the_count_is_the_plans() -> None:
    target, draft, plan = _plan("meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Llama-3.2-1B-Instruct")
    assert kv_tokens_at_length(plan, target, draft, 1, 8192) == (
        plan.kv_cache_tokens,
        plan.kv_cache_tokens_without_draft,
    )
