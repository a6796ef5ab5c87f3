"""Step-time model v2: each term on its own, against the arithmetic it claims."""

from __future__ import annotations

import pytest

from specwise.catalog import catalog_model_spec, resolve_gpu
from specwise.memory.weights import weight_bytes
from specwise.perfmodel import BatchShape, RooflinePredictor
from specwise.perfmodel.v2 import GpuEfficiency, StepModelV2

H100 = resolve_gpu("H100")
LLAMA8 = catalog_model_spec("meta-llama/Llama-3.1-8B-Instruct")
LLAMA70 = catalog_model_spec("meta-llama/Llama-3.1-70B-Instruct")
EFF = GpuEfficiency(
    weights=0.8, kv=0.7, gemm=0.6, link=0.5, allreduce_latency_s=1e-5, pass_floor_s=2e-4, per_layer_s=1e-5
)


def test_weights_term_is_bytes_over_bandwidth() -> None:
    t = StepModelV2(LLAMA8, H100, EFF).terms_s(BatchShape.uniform(1, 1, 16))
    weights = weight_bytes(LLAMA8, 2.0, None) - LLAMA8.params.embedding * 2
    assert t["weights"] == pytest.approx(weights / (H100.memory_bandwidth_bytes_per_s * 0.8), rel=1e-9)


def test_gemm_term_charges_every_batched_token_from_the_first() -> None:
    m = StepModelV2(LLAMA8, H100, EFF)
    one = m.terms_s(BatchShape.uniform(16, 1, 200))["gemm"]
    five = m.terms_s(BatchShape.uniform(16, 5, 200))["gemm"]
    assert five == pytest.approx(5 * one, rel=1e-9)  # linear in batched tokens (logit rows too)
    per_token = 2 * (LLAMA8.params.attention + LLAMA8.params.mlp) / (H100.dense_bf16_flops_per_s * 0.6)
    assert (
        m.terms_s(
            BatchShape.uniform(
                1,
                1,
                0,
            )
        )["gemm"]
        > per_token
    )  # plus the LM head's logit row


def test_verification_costs_more_where_the_roofline_says_free() -> None:
    """At batch 16 a k=4 verification is ~free under max() (below the knee) but not in v2 (SpecDecode-Bench's
    measured law charges ~21 us per batched token on an H100)."""
    plain, verify = BatchShape.uniform(16, 1, 500), BatchShape.uniform(16, 5, 500)
    roof = RooflinePredictor(LLAMA8, H100)
    v2 = StepModelV2(LLAMA8, H100, EFF)
    assert roof.step_time_s(verify) / roof.step_time_s(plain) < 1.02
    assert v2.step_time_s(verify) / v2.step_time_s(plain) > 1.1


def test_kv_term_grows_with_context_and_attention_with_query_length() -> None:
    m = StepModelV2(LLAMA8, H100, EFF)
    short, long = m.terms_s(BatchShape.uniform(8, 1, 1000)), m.terms_s(BatchShape.uniform(8, 1, 8000))
    assert long["kv"] / short["kv"] == pytest.approx(8001 / 1001, rel=1e-6)
    assert (
        m.terms_s(BatchShape.uniform(1, 2000, 0))["attention"]
        > 100 * m.terms_s(BatchShape.uniform(1, 1, 0))["attention"]
    )


def test_allreduce_is_two_per_layer_under_tp_only() -> None:
    assert StepModelV2(LLAMA70, H100, EFF, tp=1).terms_s(BatchShape.uniform(1, 1, 10))["allreduce"] == 0.0
    t = StepModelV2(LLAMA70, H100, EFF, tp=4).terms_s(BatchShape.uniform(1, 1, 10))["allreduce"]
    ring = 2 * 3 / 4 * 1 * LLAMA70.hidden_size * 2
    expected = 2 * LLAMA70.num_layers * (1e-5 + ring / (H100.interconnect_bytes_per_s * 0.5))
    assert t == pytest.approx(expected, rel=1e-9)


def test_pass_floor_makes_a_small_draft_launch_bound() -> None:
    small = catalog_model_spec("Qwen/Qwen3-0.6B")
    terms = StepModelV2(small, H100, EFF).terms_s(BatchShape.uniform(1, 1, 100))
    assert terms["floor"] == pytest.approx(2e-4 + 1e-5 * small.num_layers)
    assert terms["floor"] > terms["weights"]  # a 0.6B pass costs its launches more than its bytes


def test_moe_touches_more_experts_with_more_tokens() -> None:
    moe = StepModelV2(catalog_model_spec("Qwen/Qwen3-30B-A3B"), H100, EFF)
    assert (
        moe.terms_s(BatchShape.uniform(256, 1, 10))["weights"]
        > 3 * moe.terms_s(BatchShape.uniform(1, 1, 10))["weights"]
    )


def test_bad_efficiency_is_refused() -> None:
    from specwise.errors import SpecError

    with pytest.raises(SpecError, match="gemm"):
        GpuEfficiency(gemm=0.0)


@pytest.mark.parametrize(
    ("model", "tp"),
    [
        ("meta-llama/Llama-3.1-8B-Instruct", 1),
        ("meta-llama/Llama-3.1-70B-Instruct", 4),
        ("Qwen/Qwen3-30B-A3B", 2),
        ("google/gemma-2-9b-it", 1),
    ],
)
def test_step_time_is_the_sum_of_its_terms(model: str, tp: int) -> None:
    import numpy as np

    m = StepModelV2(catalog_model_spec(model), H100, EFF, tp=tp)
    batch = BatchShape(np.array([1, 5, 300]), np.array([100, 7000, 0]), logit_rows=7)
    assert m.step_time_s(batch) == pytest.approx(sum(m.terms_s(batch).values()), rel=1e-12)
