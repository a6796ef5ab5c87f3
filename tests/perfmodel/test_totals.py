"""The predictors' scalar path (``step_time_totals``, ``propose_time_totals``, ``prefill_time_totals``) gives the
same seconds as their BatchShape path bit for bit, wherever it claims to be exact (``totals_exact``)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specwise.catalog import resolve_gpu, resolve_model
from specwise.errors import SpecError
from specwise.perfmodel import BatchShape, CalibratedPredictor, ModelDraftCost, NgramDraftCost, RooflinePredictor
from specwise.perfmodel.drafting import TotalsDraftCost
from specwise.perfmodel.predictor import TotalsPredictor, pairs_of
from specwise.perfmodel.profiles import profile_for
from specwise.perfmodel.v2 import StepModelV2

H100, H200 = resolve_gpu("H100-SXM-80GB"), resolve_gpu("H200-SXM-141GB")
EFF = profile_for("vllm").gpu


def _predictors() -> dict[str, TotalsPredictor]:
    llama70, llama8 = (
        resolve_model("meta-llama/Llama-3.1-70B-Instruct"),
        resolve_model("meta-llama/Llama-3.1-8B-Instruct"),
    )
    mixtral, deepseek = resolve_model("mistralai/Mixtral-8x7B-Instruct-v0.1"), resolve_model("deepseek-ai/DeepSeek-V3")
    return {
        "v2-dense-tp4": StepModelV2(llama70, H100, EFF, tp=4),
        "v2-dense-tp1": StepModelV2(llama8, H100, EFF),
        "v2-moe-tp2": StepModelV2(mixtral, H100, EFF, tp=2),
        "v2-mla-moe-tp8": StepModelV2(deepseek, H200, EFF, tp=8),
        "roofline-dense-tp4": RooflinePredictor(llama70, H100, tp=4),
        "roofline-dense-tp1": RooflinePredictor(llama8, H100),
        "roofline-moe-tp2": RooflinePredictor(mixtral, H100, tp=2),
        "calibrated": CalibratedPredictor(3.926e-8, 2.101e-5, 5.886e-3),
        "calibrated-knee": CalibratedPredictor(1e-8, 2e-5, 4e-3, free_batched_tokens=48.0),
    }


PREDICTORS = _predictors()
BATCHES = st.lists(st.tuples(st.integers(1, 3000), st.integers(0, 40_000)), min_size=0, max_size=40)


def _totals(batch: BatchShape) -> tuple[int, int, int, int, int]:
    pairs = sum(pairs_of(int(q), int(c)) for q, c in zip(batch.query_tokens, batch.context_tokens, strict=True))
    return batch.num_seqs, batch.batched_tokens, batch.kv_tokens, pairs, batch.logit_rows


@pytest.mark.parametrize("name", sorted(PREDICTORS))
@settings(max_examples=60, deadline=None)
@given(seqs=BATCHES, extra_rows=st.integers(0, 5))
def test_totals_path_is_the_batch_path(name: str, seqs: list[tuple[int, int]], extra_rows: int) -> None:
    p = PREDICTORS[name]
    assert isinstance(p, TotalsPredictor) and p.totals_exact
    q = np.array([s[0] for s in seqs], dtype=np.int64)
    c = np.array([s[1] for s in seqs], dtype=np.int64)
    batch = BatchShape(q, c, logit_rows=min(int(q.sum()), len(seqs) + extra_rows))
    assert p.step_time_totals(*_totals(batch)) == p.step_time_s(batch)


@pytest.mark.parametrize("model", ["google/gemma-2-9b-it", "openai/gpt-oss-20b", "google/gemma-3-12b-it"])
def test_sliding_windows_are_not_totals_exact(model: str) -> None:
    spec = resolve_model(model)
    assert not StepModelV2(spec, H100, EFF).totals_exact
    assert not RooflinePredictor(spec, H100).totals_exact
    assert not ModelDraftCost(StepModelV2(spec, H100, EFF)).totals_exact


@pytest.mark.parametrize("name", ["v2-dense-tp1", "roofline-dense-tp1", "calibrated"])
@settings(max_examples=40, deadline=None)
@given(
    seqs=st.lists(st.tuples(st.integers(1, 9), st.integers(0, 20_000)), min_size=0, max_size=30),
    k=st.integers(0, 8),
    branching=st.integers(1, 10),
)
def test_draft_costs_totals_are_their_batch_path(
    name: str, seqs: list[tuple[int, int]], k: int, branching: int
) -> None:
    q = np.array([s[0] for s in seqs], dtype=np.int64)
    c = np.array([s[1] for s in seqs], dtype=np.int64)
    batch = BatchShape(q, c)
    n, batched, kv, pairs, _ = _totals(batch)
    verify = 0.0123
    for cost in (ModelDraftCost(PREDICTORS[name]), ModelDraftCost(PREDICTORS[name], branching), NgramDraftCost()):
        assert isinstance(cost, TotalsDraftCost) and cost.totals_exact
        assert cost.propose_time_totals(n, batched, kv - batched, pairs, k, verify) == cost.propose_time_s(
            batch, k, verify
        )
        assert cost.prefill_time_totals(n, batched, kv - batched, pairs) == cost.prefill_time_s(batch)


def test_a_draft_tree_runs_its_later_passes_on_topk_tokens_per_sequence() -> None:
    """SGLang's EAGLE worker drafts ``batch * topk`` tokens per later step: at batch 128 a top-4 tree's later passes
    carry 512 tokens, and cost more than a chain's 128; the catch-up pass (k = 1) is the same."""
    head = PREDICTORS["v2-dense-tp1"]
    batch = BatchShape(np.full(128, 3, dtype=np.int64), np.full(128, 1000, dtype=np.int64))
    chain, tree = ModelDraftCost(head), ModelDraftCost(head, branching=4)
    assert tree.propose_time_s(batch, 1, 0.0) == chain.propose_time_s(batch, 1, 0.0)
    later_chain = chain.propose_time_s(batch, 3, 0.0) - chain.propose_time_s(batch, 1, 0.0)
    later_tree = tree.propose_time_s(batch, 3, 0.0) - tree.propose_time_s(batch, 1, 0.0)
    assert later_tree > later_chain
    with pytest.raises(SpecError):
        ModelDraftCost(head, branching=0)
