"""The roofline prices a deployment's weights and KV cache as deployed (review s46a F6: ``--predictor roofline``
gave an FP8 deployment, whose memory plan held 2.25x the KV tokens, the BF16 step times to the microsecond)."""

from __future__ import annotations

import numpy as np

from specwise.perfmodel.batch import BatchShape
from specwise.perfmodel.factory import PredictorChoice
from specwise.scenario import parse_scenario


def _scenario(**deployment: object) -> dict[str, object]:
    return {
        "name": "fp8",
        "deployment": {"target": "meta-llama/Llama-3.1-8B-Instruct", "gpu": "H100-SXM-80GB", **deployment},
        "speculation": {"method": "draft_model", "draft": "meta-llama/Llama-3.2-1B-Instruct", "k": [0, 2]},
        "sweep": {"qps": [1.0], "num_requests": 100},
        "workload": [{"name": "w", "prompt_tokens": 500, "output_tokens": 100, "acceptance": 0.7}],
    }


def test_fp8_weights_and_kv_are_priced_as_fp8() -> None:
    roofline = PredictorChoice("roofline")
    bf16 = parse_scenario(_scenario(), predictor=roofline).models
    fp8 = parse_scenario(_scenario(quantization="fp8", kv_cache_dtype="fp8"), predictor=roofline).models
    assert bf16.predictor == fp8.predictor == "roofline"
    decode = BatchShape(np.ones(8, dtype=np.int64), np.full(8, 4000, dtype=np.int64))
    plain, quantized = bf16.target.step_time_s(decode), fp8.target.step_time_s(decode)
    # a memory-bound decode step reads the weights and the KV cache: half the bytes in FP8, not the same time
    assert quantized < 0.7 * plain
    kv_only = parse_scenario(_scenario(kv_cache_dtype="fp8"), predictor=roofline).models.target.step_time_s(decode)
    assert quantized < kv_only < plain
