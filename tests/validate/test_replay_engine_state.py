"""Each record is replayed with the engine state its release ran: async scheduling by release and method (from the
release the record states or its family declares), and vLLM V0's whole-prompt prefills for plain decoding up to a
32K context, with the token budget vLLM gives such a server."""

from __future__ import annotations

from dataclasses import replace

import pytest

from specwise.engines.vllm_versions import unchunked_token_budget
from specwise.evidence.records import all_records
from specwise.perfmodel.profiles import published_fit
from specwise.validate.predict import Models, Predictor
from specwise.validate.replay import MAX_BATCHED_TOKENS, _max_model_len, engine_config


def _predictor() -> Predictor:
    fit = published_fit()
    return Predictor(fit.profiles, Models("v2"), fit.first_given_match)


def _first(family: str, method: str | None = None) -> object:
    return next(r for r in all_records() if r.family == family and (method is None or r.method == method))


@pytest.mark.parametrize(
    ("family", "method", "plain", "speculating"),
    [
        ("specdecode-bench", "eagle3", False, False),  # 0.10.1: before async scheduling
        ("adixg-specdecode-cost-model", "ngram", True, False),  # 0.28.0: the CPU n-gram proposer still serial
        ("adixg-specdecode-cost-model", "draft_model", True, True),  # 0.28.0: a draft model overlaps from 0.28
        ("vllm-blog-p-eagle-2026", "eagle3", True, True),  # declared 0.18.0
        ("llm-d-guides", "eagle3", True, True),  # declared 0.24.0
    ],
)
def test_a_record_replays_the_async_scheduling_of_its_release(
    family: str, method: str, plain: bool, speculating: bool
) -> None:
    record = _first(family, method)
    overhead = _predictor().profile_of(record).overhead  # type: ignore[arg-type]
    assert (overhead.overlapped_without_speculation, overhead.overlapped_with_speculation) == (plain, speculating)


def test_a_v0_baseline_prefills_whole_prompts_only_up_to_a_32k_context() -> None:
    p = _predictor()
    long_context = next(r for r in all_records() if r.id == "vllm-12101-llama33-70b-4xh100-tp4-c1")
    assert "chunked prefill on" in long_context.notes  # what the source says, and the replay now runs
    assert p.setup(long_context).baseline_chunked_prefill
    short = next(r for r in all_records() if r.family == "vllm-blog-2024")  # Llama-3-70B, an 8K context, V0
    s = p.setup(short)
    assert _max_model_len(s.target) <= 32768 and not s.baseline_chunked_prefill
    v1 = next(r for r in all_records() if r.family == "specdecode-bench")
    assert p.setup(v1).baseline_chunked_prefill
    # a whole-prompt prefill takes vLLM's budget for it (the context, 8,192 for Llama-3-70B); a chunked one 8,192
    plain = engine_config(s, speculating=False)
    assert not plain.chunked_prefill
    assert plain.max_num_batched_tokens == unchunked_token_budget(None, _max_model_len(s.target)) == 8192
    longer = replace(s, target=replace(s.target, max_position_embeddings=32768))  # Qwen2-7B's context
    assert engine_config(longer, speculating=False).max_num_batched_tokens == 32768
    assert engine_config(p.setup(long_context), speculating=False).max_num_batched_tokens == MAX_BATCHED_TOKENS
    assert engine_config(p.setup(v1), speculating=True).max_num_batched_tokens == MAX_BATCHED_TOKENS
