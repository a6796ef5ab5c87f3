"""A step-time predictor fitted to measured forward-pass times.

The form is SpecDecode-Bench's linear predictor (Liu et al. 2026, ``simulator/predictor.py``;
shared/reference): ``t = a * kv_tokens + b * batched_tokens + c``. Llama-3.1-8B on an H100 gave
``a = 3.926e-8 s``, ``b = 2.101e-5 s``, ``c = 5.886 ms``. Coefficients are fitted by least squares on
(num_seqs, query tokens, context tokens, seconds) points, e.g. from ``specwise bench``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from specwise.errors import SpecwiseError
from specwise.perfmodel.batch import BatchShape


@dataclass(frozen=True)
class StepTimePoint:
    """One measured forward pass: ``num_seqs`` sequences of ``query_tokens`` each over ``context_tokens``."""

    num_seqs: int
    query_tokens: int
    context_tokens: int
    time_s: float

    @property
    def kv_tokens(self) -> int:
        return self.num_seqs * (self.context_tokens + self.query_tokens)

    @property
    def batched_tokens(self) -> int:
        return self.num_seqs * self.query_tokens


@dataclass(frozen=True)
class CalibratedPredictor:
    per_kv_token_s: float
    per_batched_token_s: float
    constant_s: float
    rms_error_s: float = 0.0
    points: int = 0

    def step_time_s(self, batch: BatchShape) -> float:
        return self.per_kv_token_s * batch.kv_tokens + self.per_batched_token_s * batch.batched_tokens + self.constant_s


def fit_linear_predictor(points: Sequence[StepTimePoint]) -> CalibratedPredictor:
    """Least-squares fit of ``t = a kv + b batched + c``; needs 3+ points that vary both features."""
    if len(points) < 3:
        raise SpecwiseError(f"calibration: need at least 3 step-time points, got {len(points)}")
    for p in points:
        if p.time_s <= 0 or p.num_seqs < 1 or p.query_tokens < 1 or p.context_tokens < 0:
            raise SpecwiseError(f"calibration: invalid point {p}")
    x = np.array([[p.kv_tokens, p.batched_tokens, 1.0] for p in points], dtype=np.float64)
    y = np.array([p.time_s for p in points], dtype=np.float64)
    if np.linalg.matrix_rank(x) < 3:
        raise SpecwiseError("calibration: points do not vary both KV tokens and batched tokens independently")
    coef, *_ = np.linalg.lstsq(x, y, rcond=None)
    rms = float(np.sqrt(np.mean((x @ coef - y) ** 2)))
    return CalibratedPredictor(float(coef[0]), float(coef[1]), float(coef[2]), rms_error_s=rms, points=len(points))
