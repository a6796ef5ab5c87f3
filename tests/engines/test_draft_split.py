"""Each engine adapter says whether it can split a draft's attention heads over the GPUs it runs the draft on."""

from __future__ import annotations

import pytest

from specwise.engines import get_engine
from specwise.engines.base import Speculation
from specwise.methods import get_method


def _spec(target_tp: int, draft_tp: int | None = None, method: str = "draft_model") -> Speculation:
    return Speculation(get_method(method), 4, "org/draft-1b", draft_tp, target_tp)


def test_vllm_v1_splits_the_draft_at_the_targets_tp_and_offers_v0() -> None:
    said = get_engine("vllm").draft_split_refusal(_spec(4, draft_tp=1), heads=6)
    assert said == (
        "vLLM V1 (0.15+, this config's) runs a draft at the target's tensor parallelism (4), and org/draft-1b's 6 "
        "attention heads do not divide over 4 GPUs: choose a draft whose heads do, or a vLLM before 0.10 (V0 runs a "
        "draft on one GPU; specwise writes its command for --vllm-version 0.8.2 to 0.9)"
    )
    assert get_engine("vllm").draft_split_refusal(_spec(4), heads=8) is None  # 8 heads divide over 4


def test_vllm_v0_runs_the_draft_on_the_gpus_it_is_given() -> None:
    v0 = get_engine("vllm", "0.8.5")
    assert v0.draft_split_refusal(_spec(4, draft_tp=1), heads=6) is None
    assert v0.draft_split_refusal(_spec(4, draft_tp=4), heads=6) is not None


@pytest.mark.parametrize("engine", ["vllm", "sglang", "llama.cpp"])
def test_an_unsplit_target_or_a_model_free_method_is_never_refused(engine: str) -> None:
    e = get_engine(engine)
    assert e.draft_split_refusal(_spec(1), heads=7) is None
    if engine != "llama.cpp":
        assert e.draft_split_refusal(_spec(4, method="ngram"), heads=7) is None


def test_sglang_runs_the_draft_in_the_targets_tp_group_with_no_v0_remedy() -> None:
    said = get_engine("sglang").draft_split_refusal(_spec(4, draft_tp=1), heads=6)
    assert said is not None and said.startswith("SGLang runs a draft at the target's tensor parallelism (4)")
    assert "vLLM" not in said


def test_llama_cpp_splits_by_layers_not_heads() -> None:
    assert get_engine("llama.cpp").draft_split_refusal(_spec(4), heads=6) is None
