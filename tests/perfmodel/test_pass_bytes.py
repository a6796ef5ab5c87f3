"""What one forward pass streams from memory: every part at its own bytes, the LM head always read.

Each of these was priced wrong before (review 9): an averaged bytes-per-parameter for expert-only quantization, no
LM head for tied-embedding models, and no LM head at all for EAGLE-1 heads, which borrow the target's."""

from __future__ import annotations

from dataclasses import replace

import pytest

from specwise.catalog import resolve_gpu, resolve_model
from specwise.memory.weights import weight_bytes
from specwise.perfmodel.batch import BatchShape
from specwise.perfmodel.roofline import PassGeometry
from specwise.perfmodel.v2 import GpuEfficiency, StepModelV2

H100 = "H100-SXM-80GB"


def _geometry(name: str, tp: int = 1) -> PassGeometry:
    return PassGeometry(resolve_model(name), resolve_gpu(H100), tp=tp)


def test_tied_embedding_table_is_read_by_the_lm_head_every_pass() -> None:
    spec = resolve_model("Qwen/Qwen3-0.6B")
    assert spec.tie_word_embeddings and spec.params.lm_head == 0
    streamed = _geometry("Qwen/Qwen3-0.6B").weight_bytes(1)
    assert streamed == pytest.approx(2.0 * spec.params.total)  # bf16: the whole checkpoint, its one table included
    untied = replace(spec, tie_word_embeddings=False, params=replace(spec.params, lm_head=spec.params.embedding))
    # the same pass once the table is split in two: the input half is a gather and is not streamed
    assert PassGeometry(untied, resolve_gpu(H100)).weight_bytes(1) == pytest.approx(streamed)


@pytest.mark.parametrize("name", ["openai/gpt-oss-20b", "openai/gpt-oss-120b"])
def test_expert_only_quantization_prices_each_part_at_its_own_bytes(name: str) -> None:
    """gpt-oss: MXFP4 experts (4.25 bits), bf16 attention, router and LM head. With every expert touched, a pass
    streams exactly what the checkpoint stores, less the input embedding table."""
    spec = resolve_model(name)
    stored = weight_bytes(spec, 2.0, None)
    all_experts = _geometry(name).weight_bytes(10**9)
    assert all_experts == pytest.approx(stored - 2.0 * spec.params.embedding, rel=1e-6)
    dense = _geometry(name).weight_bytes(0)  # no token touches an expert
    p = spec.params
    assert dense == pytest.approx(2.0 * (p.total - p.embedding - p.experts))  # bf16, not the ~0.6 B average


def test_eagle1_head_pays_for_the_targets_lm_head() -> None:
    """vLLM's EAGLE proposer computes each draft step's logits with the target's ``lm_head``: vocab x hidden bf16
    weights read and 2 x vocab x hidden FLOPs per logit row, on top of the head's own layer."""
    head = resolve_model("yuhuili/EAGLE-LLaMA3.1-Instruct-8B")
    assert head.draft_head == "eagle" and head.params.lm_head == 0
    vh = head.vocab_size * head.hidden_size
    p = head.params
    own = 2.0 * (p.total - p.embedding)
    g = _geometry("yuhuili/EAGLE-LLaMA3.1-Instruct-8B")
    assert g.weight_bytes(1) == pytest.approx(own + 2.0 * vh)
    assert g.linear_flops(1, 1) - g.linear_flops(1, 0) == pytest.approx(2.0 * vh)
    # a pass of the head costs the target's LM-head read: more than half a GB over the head's own ~0.5 GB
    v2 = StepModelV2(head, resolve_gpu(H100), GpuEfficiency(pass_floor_s=0.0, per_layer_s=0.0))
    batch = BatchShape.uniform(1, 1, 1000)
    without = StepModelV2(
        replace(head, draft_head=None), resolve_gpu(H100), GpuEfficiency(pass_floor_s=0.0, per_layer_s=0.0)
    )
    assert v2.step_time_s(batch) > 1.9 * without.step_time_s(batch)


def test_lm_head_is_sharded_over_tensor_parallel_gpus() -> None:
    one, four = _geometry("meta-llama/Llama-3.1-8B-Instruct"), _geometry("meta-llama/Llama-3.1-8B-Instruct", tp=4)
    assert four.weight_bytes(1) == pytest.approx(one.weight_bytes(1) / 4)
    assert four.linear_flops(1, 1) == pytest.approx(one.linear_flops(1, 1) / 4)
