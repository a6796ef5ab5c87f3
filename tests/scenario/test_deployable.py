"""simulate refuses (exit 2) what vLLM would not start, instead of reporting a speedup with a warning beside it:
a draft that fails the pair checks, or a deployment that fits without the draft but not with it (review 5)."""

from __future__ import annotations

import pytest

from specwise.errors import SpecwiseError
from specwise.scenario import parse_scenario


def _scenario(tp: int, draft: str, max_model_len: int) -> dict[str, object]:
    return {
        "name": "deployable",
        "deployment": {"target": "meta-llama/Llama-3.1-70B-Instruct", "gpu": "H100-SXM-80GB", "tp": tp,
                       "max_model_len": max_model_len},
        "speculation": {"method": "draft_model", "draft": draft, "k": [0, 4], "acceptance": 0.7},
        "sweep": {"qps": [1.0], "num_requests": 20},
        "workload": [{"name": "chat", "prompt_tokens": 500, "output_tokens": 100}],
    }  # fmt: skip


def test_a_draft_whose_weights_do_not_fit_is_refused_naming_the_shortfall() -> None:
    # 70B at TP 2 fits alone; with an 8B draft the weights miss (before: "engine.kv_capacity_tokens: must be >= 1")
    with pytest.raises(SpecwiseError, match="with the draft the deployment does not fit, so vLLM would not start"):
        parse_scenario(_scenario(2, "meta-llama/Llama-3.1-8B-Instruct", 8192))


def test_a_draft_that_leaves_no_room_for_one_sequence_is_refused() -> None:
    # 70B at TP 2 with a 1B draft and 16k context: too little KV for one sequence (before: "speculation pays")
    with pytest.raises(SpecwiseError, match="does not fit"):
        parse_scenario(_scenario(2, "meta-llama/Llama-3.2-1B-Instruct", 16384))


def test_a_pair_vllm_refuses_is_refused() -> None:
    with pytest.raises(
        SpecwiseError, match=r"\[speculation\]\.draft: vLLM refuses this draft .*different vocabularies"
    ):
        parse_scenario(_scenario(4, "Qwen/Qwen3-0.6B", 8192))


def test_the_same_deployment_at_tp_4_is_simulated() -> None:
    assert parse_scenario(_scenario(4, "meta-llama/Llama-3.2-1B-Instruct", 16384)).memory_plan.fits


def test_a_target_that_does_not_fit_says_why_the_target_alone_misses() -> None:
    # review 5: "the target does not fit: target + draft weights and reserve need 77.07 GiB" -- the draft's figures;
    # alone, the 70B at TP 2 misses on one 32k sequence's KV
    with pytest.raises(SpecwiseError, match="the target does not fit: ") as err:
        parse_scenario(_scenario(2, "meta-llama/Llama-3.1-8B-Instruct", 32768))
    assert "draft" not in str(err.value).split("the target does not fit: ")[1]
