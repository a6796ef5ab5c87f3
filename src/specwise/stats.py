"""Latency statistics shared by the simulator and the load generator (pure)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Percentiles:
    """Mean and p50/p90/p99 of samples; with ``weights``, a sample of weight w counts w times
    (token-normalised inter-token latencies). Percentiles interpolate linearly, as ``np.percentile`` (what vLLM's
    ``benchmarks/serve.py`` uses), weighted or not: integer weights give the percentiles of the samples repeated
    (review s47a F4: nearest rank before). No samples: NaN (printed as null in JSON)."""

    mean: float
    p50: float
    p90: float
    p99: float

    @classmethod
    def of_nothing(cls) -> Percentiles:
        nan = float("nan")
        return cls(nan, nan, nan, nan)

    @classmethod
    def of(cls, values: FloatArray, weights: np.ndarray | None = None) -> Percentiles:
        if values.size == 0:
            return cls(float("nan"), float("nan"), float("nan"), float("nan"))
        if weights is None:
            p50, p90, p99 = np.percentile(values, [50, 90, 99])
            return cls(float(values.mean()), float(p50), float(p90), float(p99))
        order = np.argsort(values, kind="stable")
        v, w = values[order], weights[order].astype(np.float64)
        cum = np.cumsum(w)
        pick = [_repeated_percentile(v, cum, q) for q in (0.5, 0.9, 0.99)]
        return cls(float(np.average(values, weights=weights)), *pick)


def _repeated_percentile(v: FloatArray, cum: FloatArray, q: float) -> float:
    """``np.percentile(np.repeat(v, w), 100 q)`` (linear) without repeating: ``v`` sorted, ``cum`` its weights'
    running sum; item i of the repeated sample is ``v[j]`` for the first j with ``cum[j] > i``."""
    h = max(float(cum[-1]) - 1.0, 0.0) * q

    def item(i: float) -> float:
        return float(v[min(int(np.searchsorted(cum, i, side="right")), v.size - 1)])

    lo = math.floor(h)
    return item(lo) + (item(lo + 1) - item(lo)) * (h - lo) if h > lo else item(lo)


def ratio(a: float | None, b: float | None) -> float | None:
    """a / b as a speedup; None when either is missing or not finite, or b is not positive."""
    if a is None or b is None or not (math.isfinite(a) and math.isfinite(b)) or b <= 0:
        return None
    return a / b
