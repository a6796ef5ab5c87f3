"""simulate: a lookup's acceptance is per match (vLLM's count); the share of steps with a match is ``match_rate``
when given, else the prior's for the workload's task -- said in the scenario's warnings, never a match at every
step."""

from __future__ import annotations

import pytest

from specwise.errors import SpecwiseError
from specwise.scenario import parse_scenario


def _scenario(speculation: dict[str, object], workload: dict[str, object] | None = None) -> dict[str, object]:
    return {
        "name": "lookup",
        "deployment": {"target": "meta-llama/Llama-3.1-8B-Instruct", "gpu": "H100-SXM-80GB"},
        "speculation": {"k": [0, 4], **speculation},
        "sweep": {"qps": [1.0], "num_requests": 50},
        "workload": [
            {
                "name": "w",
                "prompt_tokens": {"dist": "fixed", "mean": 500},
                "output_tokens": {"dist": "fixed", "mean": 100},
                **(workload or {}),
            }
        ],
    }


def test_a_given_match_rate_is_the_share_of_steps_that_draft() -> None:
    sc = parse_scenario(_scenario({"method": "ngram", "per_position": [0.6, 0.4], "match_rate": 0.3}))
    (cls,) = sc.classes
    assert cls.proposal_rate == 0.3
    assert not any("match rate ASSUMED" in w for w in sc.warnings)


def test_without_one_the_task_prior_is_assumed_and_said() -> None:
    code = parse_scenario(_scenario({"method": "ngram", "per_position": [0.6, 0.4]}, {"task": "code"}))
    chat = parse_scenario(_scenario({"method": "ngram", "per_position": [0.6, 0.4]}))
    assert 0.0 < chat.classes[0].proposal_rate < code.classes[0].proposal_rate < 1.0
    assert any("match rate ASSUMED" in w and "InstructCoder" in w for w in code.warnings)
    assert any("match rate ASSUMED" in w and "ShareGPT" in w for w in chat.warnings)


def test_a_draft_model_drafts_every_step() -> None:
    sc = parse_scenario(
        _scenario({"method": "draft_model", "draft": "meta-llama/Llama-3.2-1B-Instruct", "acceptance": 0.7})
    )
    assert sc.classes[0].proposal_rate == 1.0
    with pytest.raises(SpecwiseError, match="drafts every step"):
        parse_scenario(
            _scenario(
                {
                    "method": "draft_model",
                    "draft": "meta-llama/Llama-3.2-1B-Instruct",
                    "acceptance": 0.7,
                    "match_rate": 0.5,
                }
            )
        )
