"""A tree record's draft runs its later passes on top-k tokens per sequence (SGLang's EAGLE worker); a chain's on
one: the replay builds the draft cost with the record's branching."""

from __future__ import annotations

from specwise.evidence.records import all_records
from specwise.perfmodel.drafting import ModelDraftCost
from specwise.perfmodel.profiles import published_fit
from specwise.validate.predict import Models
from specwise.validate.replay import setup_for


def _cost(record_id: str) -> ModelDraftCost:
    record = next(r for r in all_records() if r.id == record_id)
    cost = Models("v2").draft_cost(setup_for(record, published_fit().profiles[record.engine]))
    assert isinstance(cost, ModelDraftCost)
    return cost


def test_the_replay_drafts_a_tree_with_its_top_k_and_a_chain_with_one() -> None:
    assert _cost("sdb-fig2-qwen3-8b-sharegpt-eagle3-tree-k21-bs128").branching == 4
    assert _cost("sdb-fig2-qwen3-8b-sharegpt-eagle3-tree-k6-bs128").branching == 2
    assert _cost("sglang-specforge339-qwen3-30b-a3b-eagle3-s8-t8-d60-c1").branching == 8
    chain = next(r for r in all_records() if r.verification == "chain" and r.method == "eagle3")
    assert _cost(chain.id).branching == 1
