from __future__ import annotations

import numpy as np
import pytest

from specwise.catalog import catalog_model_spec, resolve_gpu
from specwise.errors import SpecwiseError
from specwise.memory.weights import weight_bytes
from specwise.perfmodel import (
    BatchShape,
    CalibratedPredictor,
    Efficiency,
    ModelDraftCost,
    NgramDraftCost,
    RooflinePredictor,
    StepTimePoint,
    StepTimePredictor,
    fit_linear_predictor,
)

H100 = resolve_gpu("H100")
LLAMA8 = catalog_model_spec("meta-llama/Llama-3.1-8B-Instruct")


def test_batch1_decode_is_weight_streaming() -> None:
    eff = Efficiency(pass_overhead_s=0.0)
    p = RooflinePredictor(LLAMA8, H100, efficiency=eff)
    t = p.step_time_s(BatchShape.uniform(1, 1, 16))
    weights = weight_bytes(LLAMA8, 2.0, None) - LLAMA8.params.embedding * 2
    assert t == pytest.approx(weights / (H100.memory_bandwidth_bytes_per_s * eff.memory), rel=0.01)


def test_verification_turns_compute_bound_with_batch() -> None:
    p = RooflinePredictor(LLAMA8, H100)
    small = p.step_time_s(BatchShape.uniform(1, 5, 200)) / p.step_time_s(BatchShape.uniform(1, 1, 200))
    large = p.step_time_s(BatchShape.uniform(256, 5, 200)) / p.step_time_s(BatchShape.uniform(256, 1, 200))
    assert small < 1.05  # k+1 tokens nearly free at batch 1
    assert large > 2.0  # but not at batch 256


def test_long_context_kv_reads_dominate() -> None:
    p = RooflinePredictor(LLAMA8, H100)
    short = p.step_time_s(BatchShape.uniform(32, 1, 512))
    long = p.step_time_s(BatchShape.uniform(32, 1, 32768))
    assert long > 2 * short
    # With long contexts, verifying 5 tokens costs relatively less than with short ones.
    ratio_long = p.step_time_s(BatchShape.uniform(32, 5, 32768)) / long
    ratio_short = p.step_time_s(BatchShape.uniform(32, 5, 512)) / short
    assert ratio_long < ratio_short


def test_tp_and_moe() -> None:
    llama70 = catalog_model_spec("meta-llama/Llama-3.1-70B-Instruct")
    t1 = RooflinePredictor(llama70, resolve_gpu("H200"), tp=1).step_time_s(BatchShape.uniform(1, 1, 100))
    t4 = RooflinePredictor(llama70, resolve_gpu("H200"), tp=4).step_time_s(BatchShape.uniform(1, 1, 100))
    assert t4 < t1 / 2
    moe = RooflinePredictor(catalog_model_spec("Qwen/Qwen3-30B-A3B"), H100)
    few = moe.memory_bytes(BatchShape.uniform(1, 1, 10))
    many = moe.memory_bytes(BatchShape.uniform(512, 1, 10))
    assert many > 3 * few  # more tokens touch more experts


def test_predictors_share_one_interface() -> None:
    assert isinstance(RooflinePredictor(LLAMA8, H100), StepTimePredictor)
    assert isinstance(CalibratedPredictor(1e-8, 1e-5, 1e-3), StepTimePredictor)


def test_specdecode_bench_coefficients_reproduce() -> None:
    a, b, c = 3.926e-8, 2.101e-5, 5.886e-3  # Llama-3.1-8B on H100 (SpecDecode-Bench simulator/predictor.py)
    points = [
        StepTimePoint(n, q, ctx, a * n * (ctx + q) + b * n * q + c)
        for n in (1, 4, 16, 64)
        for q in (1, 3, 5)
        for ctx in (128, 1024, 4096)
    ]
    fitted = fit_linear_predictor(points)
    assert fitted.per_kv_token_s == pytest.approx(a, rel=1e-6)
    assert fitted.per_batched_token_s == pytest.approx(b, rel=1e-6)
    assert fitted.constant_s == pytest.approx(c, rel=1e-6)
    assert fitted.step_time_s(BatchShape.uniform(8, 2, 100)) == pytest.approx(a * 8 * 102 + b * 16 + c)


def test_calibration_with_noise_and_bad_input() -> None:
    rng = np.random.default_rng(0)
    points = [
        StepTimePoint(n, q, ctx, (4e-8 * n * (ctx + q) + 2e-5 * n * q + 6e-3) * (1 + rng.normal(0, 0.01)))
        for n in (1, 8, 32)
        for q in (1, 4)
        for ctx in (256, 2048)
    ]
    fitted = fit_linear_predictor(points)
    assert fitted.per_kv_token_s == pytest.approx(4e-8, rel=0.15) and fitted.constant_s == pytest.approx(6e-3, rel=0.1)
    with pytest.raises(SpecwiseError, match="at least 3"):
        fit_linear_predictor(points[:2])
    with pytest.raises(SpecwiseError, match="independently"):
        fit_linear_predictor([StepTimePoint(1, 1, 100, 0.01)] * 5)


def test_roofline_knee_and_non_negative_fit() -> None:
    # flat up to 48 batched tokens (weight-read bound), then linear: the shape the vLLM CPU build showed
    a, b, c, knee = 2e-5, 6e-3, 0.35, 48.0
    points = [
        StepTimePoint(n, q, ctx, a * n * (ctx + q) + b * max(n * q - knee, 0.0) + c)
        for n in (1, 2, 4, 8)
        for q in (1, 5, 130)
        for ctx in (100, 400)
    ]
    plain = fit_linear_predictor(points)
    kneed = fit_linear_predictor(points, knees=(0.0, 16.0, 48.0, 96.0))
    assert kneed.free_batched_tokens == 48.0 and kneed.per_batched_token_s == pytest.approx(b, rel=1e-6)
    assert kneed.rms_error_s < 1e-9 < plain.rms_error_s
    assert kneed.step_time_s(BatchShape.uniform(8, 5, 200)) == pytest.approx(a * 8 * 205 + c)  # 40 tokens: free
    assert kneed.scaled(0.5).free_batched_tokens == 48.0
    # a fit that wants a negative coefficient gets the best non-negative one instead
    anti = [StepTimePoint(n, 1, ctx, 0.5 - 1e-5 * n * ctx) for n in (1, 2, 4) for ctx in (10, 100, 1000)]
    fitted = fit_linear_predictor(anti)
    assert min(fitted.per_kv_token_s, fitted.per_batched_token_s, fitted.constant_s) >= 0
    assert fit_linear_predictor(anti, non_negative=False).per_kv_token_s < 0


def test_draft_costs() -> None:
    draft = ModelDraftCost(RooflinePredictor(catalog_model_spec("meta-llama/Llama-3.2-1B-Instruct"), H100))
    decode = BatchShape.uniform(8, 2, 1000)
    one = draft.propose_time_s(decode, 1, 0.02)
    four = draft.propose_time_s(decode, 4, 0.02)
    assert 0 < one < four < 4.5 * one
    assert draft.propose_time_s(decode, 0, 0.02) == 0.0
    assert NgramDraftCost().propose_time_s(decode, 4, 0.02) == pytest.approx(0.02 * 0.0059)
