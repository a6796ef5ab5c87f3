"""A step-time predictor fitted to measured forward-pass times.

The form is SpecDecode-Bench's linear predictor (Liu et al. 2026, arXiv 2601.11580,
``github.com/SpecDecode-Bench/simulator`` ``predictor.py``): ``t = a * kv_tokens + b * batched_tokens + c``.
Llama-3.1-8B on an H100 gave ``a = 3.926e-8 s``, ``b = 2.101e-5 s``, ``c = 5.886 ms``. Coefficients are fitted by
least squares on
(num_seqs, query tokens, context tokens, seconds) points, e.g. from ``specwise bench``.

One optional extension, the roofline's knee: ``t = a * kv + b * max(batched - m, 0) + c``. Below m batched tokens
a pass is bound by reading the weights (the constant), above it by compute -- the shape of the roofline
(Williams et al. 2009). SpecDecode-Bench's form is m = 0. On the vLLM CPU build (bf16 Qwen2.5-Coder-1.5B, 2
cores) decode steps cost the same ~0.4 s from 1 to 40 batched tokens while a 130-token prefill adds ~0.7 s: only
a knee describes both, and without it verification tokens are charged a prefill token's price.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

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


class StepSample(Protocol):
    """Anything with a forward pass's KV tokens, batched tokens and measured seconds."""

    @property
    def kv_tokens(self) -> float: ...

    @property
    def batched_tokens(self) -> float: ...

    @property
    def time_s(self) -> float: ...


@dataclass(frozen=True)
class CalibratedPredictor:
    per_kv_token_s: float
    per_batched_token_s: float
    constant_s: float
    rms_error_s: float = 0.0
    points: int = 0
    free_batched_tokens: float = 0.0  # the knee m: batched tokens that ride on the weight read

    def time_s(self, kv_tokens: float, batched_tokens: float) -> float:
        compute = max(batched_tokens - self.free_batched_tokens, 0.0)
        return self.per_kv_token_s * kv_tokens + self.per_batched_token_s * compute + self.constant_s

    @property
    def totals_exact(self) -> bool:
        return True  # a function of KV and batched tokens only

    def step_time_s(self, batch: BatchShape) -> float:
        return self.time_s(batch.kv_tokens, batch.batched_tokens)

    def step_time_totals(
        self, num_seqs: int, batched_tokens: int, kv_tokens: int, pairs: int, logit_rows: int
    ) -> float:
        compute = max(batched_tokens - self.free_batched_tokens, 0.0)  # time_s, inlined
        return self.per_kv_token_s * kv_tokens + self.per_batched_token_s * compute + self.constant_s

    def scaled(self, factor: float) -> CalibratedPredictor:
        """Every coefficient times ``factor`` (a draft model modelled as a fraction of the target's cost)."""
        return CalibratedPredictor(
            self.per_kv_token_s * factor,
            self.per_batched_token_s * factor,
            self.constant_s * factor,
            free_batched_tokens=self.free_batched_tokens,
        )


def fit_linear_predictor(
    points: Sequence[StepSample],
    weights: Sequence[float] | None = None,
    non_negative: bool = True,
    knees: Sequence[float] = (0.0,),
) -> CalibratedPredictor:
    """Least-squares fit of ``t = a kv + b max(batched - m, 0) + c``; needs 3+ points that vary both features.

    ``weights`` (e.g. how many steps each point averages) weight the squared errors. With ``non_negative`` the
    coefficients are constrained to >= 0 (a negative cost per token is an artefact of correlated features and
    extrapolates badly): exact NNLS for three unknowns, by fitting every subset of the features and keeping the
    best fit whose coefficients are all non-negative. Each knee m in ``knees`` is tried; the best fit wins.
    """
    if len(points) < 3:
        raise SpecwiseError(f"calibration: need at least 3 step-time points, got {len(points)}")
    for p in points:
        if not p.time_s > 0 or not p.batched_tokens >= 1 or not p.kv_tokens >= p.batched_tokens:
            raise SpecwiseError(f"calibration: invalid point {p}")
    kv = np.array([p.kv_tokens for p in points], dtype=np.float64)
    batched = np.array([p.batched_tokens for p in points], dtype=np.float64)
    y = np.array([p.time_s for p in points], dtype=np.float64)
    if np.linalg.matrix_rank(np.stack([kv, batched, np.ones_like(kv)], axis=1)) < 3:
        raise SpecwiseError("calibration: points do not vary both KV tokens and batched tokens independently")
    w = np.sqrt(np.asarray(weights, dtype=np.float64)) if weights is not None else np.ones(len(points))
    best: tuple[float, np.ndarray, float] | None = None
    for knee in knees:
        x = np.stack([kv, np.maximum(batched - knee, 0.0), np.ones_like(kv)], axis=1)
        coef = _nnls3(x * w[:, None], y * w) if non_negative else np.linalg.lstsq(x * w[:, None], y * w)[0]
        rss = float(np.sum(((x @ coef - y) * w) ** 2))
        if best is None or rss < best[0] - 1e-15:
            best = (rss, coef, float(knee))
    assert best is not None
    _, coef, knee = best
    x = np.stack([kv, np.maximum(batched - knee, 0.0), np.ones_like(kv)], axis=1)
    rms = float(np.sqrt(np.mean((x @ coef - y) ** 2)))
    return CalibratedPredictor(
        float(coef[0]), float(coef[1]), float(coef[2]), rms_error_s=rms, points=len(points), free_batched_tokens=knee
    )


def _nnls3(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Non-negative least squares for three columns: the best all-non-negative fit over column subsets."""
    coef: np.ndarray = np.asarray(np.linalg.lstsq(x, y, rcond=None)[0], dtype=np.float64)
    if (coef >= 0).all():
        return coef
    best: tuple[float, np.ndarray] | None = None
    for cols in ([0, 1], [0, 2], [1, 2], [0], [1], [2]):
        sub = np.linalg.lstsq(x[:, cols], y, rcond=None)[0]
        if (sub < 0).any():
            continue
        full = np.zeros(3)
        full[cols] = sub
        rss = float(np.sum((x @ full - y) ** 2))
        if best is None or rss < best[0]:
            best = (rss, full)
    return best[1] if best is not None else np.zeros(3)
