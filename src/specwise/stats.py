"""Statistics shared by the simulator, the load generator and advise (pure): latency percentiles, and the 90%
interval of a mean of a few runs."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]


# Student's t distribution's 0.95 quantile for 1-30 degrees of freedom (the two-sided 90% interval of a mean):
# Student (1908), "The probable error of a mean", Biometrika 6(1); the values as NIST/SEMATECH e-Handbook of
# Statistical Methods, section 1.3.6.7.2 tabulates them (tests/contracts/test_sampling_noise.py checks them against
# scipy.stats.t.ppf)
T95_BY_DF: tuple[float, ...] = (
    *(6.314, 2.920, 2.353, 2.132, 2.015, 1.943, 1.895, 1.860, 1.833, 1.812, 1.796, 1.782, 1.771, 1.761, 1.753),
    *(1.746, 1.740, 1.734, 1.729, 1.725, 1.721, 1.717, 1.714, 1.711, 1.708, 1.706, 1.703, 1.701, 1.699, 1.697),
)
MAX_REPLICATES = len(T95_BY_DF) + 1  # [advise].replicates: runs at the operating load, at most this many


def mean_half_width(values: Sequence[float]) -> tuple[float, float]:
    """(mean, half the two-sided 90% interval of the mean: t(0.95, n - 1) * sd / sqrt(n), sd with n - 1) of 2 to
    :data:`MAX_REPLICATES` values."""
    n = len(values)
    if not 2 <= n <= MAX_REPLICATES:
        raise ValueError(f"a 90% interval needs 2-{MAX_REPLICATES} values, got {n}")
    mean = sum(values) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    return mean, T95_BY_DF[n - 2] * sd / math.sqrt(n)


def interval_90(values: Sequence[float]) -> tuple[float, float]:
    """The two-sided 90% interval of the mean of 2 to :data:`MAX_REPLICATES` values (Student's t:
    :func:`mean_half_width`)."""
    mean, half = mean_half_width(values)
    return mean - half, mean + half


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
