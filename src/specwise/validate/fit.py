"""Fitting the step-time model's free coefficients to the declared training families (and nothing else).

The parameter vector holds, in log space, vLLM V1's GPU efficiencies and floors, its per-step, per-sequence and
per-draft-token costs, SGLang's own engine costs (its efficiencies are shared with vLLM: the same GPUs and
kernels), and the lookup proposers' per-match first-token acceptance. vLLM V0 takes V1's coefficients with V0's
scheduling (no record of V0 is in the training families). The residual of a record is log(predicted /
published) -- the speedup for speculative records, the value for plain decoding -- and anchors (records whose
acceptance was inferred from them) are not residuals.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from specwise.evidence.records import EvidenceRecord
from specwise.perfmodel.profiles import EngineOverhead, EngineProfile
from specwise.perfmodel.v2 import GpuEfficiency
from specwise.validate.predict import Models, Prediction, Predictor, predict_all


@dataclass(frozen=True)
class Param:
    name: str
    initial: float
    low: float
    high: float


PARAMS: tuple[Param, ...] = (
    Param("gpu.weights", 0.85, 0.4, 1.0),
    Param("gpu.kv", 0.7, 0.2, 1.0),
    Param("gpu.gemm", 0.75, 0.2, 1.0),
    Param("gpu.link", 0.7, 0.1, 1.0),
    Param("gpu.allreduce_latency_s", 1e-5, 1e-6, 1e-4),
    Param("gpu.pass_floor_s", 2e-4, 1e-6, 5e-3),
    Param("gpu.per_layer_s", 3e-5, 1e-7, 3e-4),
    Param("vllm.base_s", 1.2e-3, 1e-5, 1e-2),
    Param("vllm.per_seq_s", 1e-5, 1e-8, 5e-4),
    Param("vllm.per_draft_token_s", 5e-6, 1e-8, 5e-4),
    Param("sglang.base_s", 1.2e-3, 1e-5, 1e-2),
    Param("sglang.per_seq_s", 1e-5, 1e-8, 5e-4),
    Param("sglang.per_draft_token_s", 5e-6, 1e-8, 5e-4),
    Param("lookup.first_given_match", 0.6, 0.2, 0.99),
)


@dataclass(frozen=True)
class Coefficients:
    profiles: dict[str, EngineProfile]
    first_given_match: float
    values: dict[str, float]


def coefficients(x: Sequence[float]) -> Coefficients:
    """Profiles from a parameter vector (log space, ``PARAMS`` order)."""
    v = {p.name: float(math.exp(xi)) for p, xi in zip(PARAMS, x, strict=True)}
    gpu = GpuEfficiency(
        weights=v["gpu.weights"],
        kv=v["gpu.kv"],
        gemm=v["gpu.gemm"],
        link=v["gpu.link"],
        allreduce_latency_s=v["gpu.allreduce_latency_s"],
        pass_floor_s=v["gpu.pass_floor_s"],
        per_layer_s=v["gpu.per_layer_s"],
    )
    vllm = EngineOverhead(v["vllm.base_s"], v["vllm.per_seq_s"], v["vllm.per_draft_token_s"])
    sglang = EngineOverhead(  # its overlap scheduler hides a plain step's engine work (EngineOverhead)
        v["sglang.base_s"], v["sglang.per_seq_s"], v["sglang.per_draft_token_s"], overlapped_without_speculation=True
    )
    v1 = EngineProfile("vllm-v1", "vLLM V1 (>= 0.8): chunked prefill with speculation", gpu, vllm)
    profiles = {
        "vllm-v1": v1,
        "vllm-v0": replace(
            v1,
            name="vllm-v0",
            description="vLLM V0 (< 0.8): no chunked prefill with speculation, batch-expansion scoring",
            chunked_prefill_with_spec=False,
            batch_expansion_scorer=True,
        ),
        "sglang": EngineProfile("sglang", "SGLang", gpu, sglang),
    }
    return Coefficients(profiles, v["lookup.first_given_match"], v)


def initial() -> np.ndarray:
    return np.log([p.initial for p in PARAMS])


def bounds() -> tuple[np.ndarray, np.ndarray]:
    return np.log([p.low for p in PARAMS]), np.log([p.high for p in PARAMS])


def predictions(records: Sequence[EvidenceRecord], x: Sequence[float]) -> list[Prediction]:
    c = coefficients(x)
    return predict_all(records, Predictor(c.profiles, Models("v2"), c.first_given_match))


def residuals(records: Sequence[EvidenceRecord], x: Sequence[float]) -> np.ndarray:
    """log(predicted / published) of every predicted record (anchors, skips and unreplayables excluded)."""
    out = []
    for p in predictions(records, x):
        if p.status == "predicted":
            r = p.ratio
            out.append(math.log(r) if r is not None and r > 0 and math.isfinite(r) else math.log(10.0))
    return np.array(out, dtype=np.float64)
