"""Bootstrap confidence intervals over prompts (resample prompts with replacement; ratio of summed counters)."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray


def ratio_ci(
    numerators: NDArray[np.float64],
    denominators: NDArray[np.float64],
    rng: np.random.Generator,
    resamples: int = 1000,
    level: float = 0.95,
) -> tuple[float, float]:
    """Percentile CI of sum(num)/sum(den) when whole prompts are resampled. One prompt -> (nan, nan)."""
    n = len(numerators)
    if n < 2:
        return (float("nan"), float("nan"))
    idx = rng.integers(0, n, size=(resamples, n))
    num = numerators[idx].sum(axis=1)
    den = denominators[idx].sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        vals = num / den
    vals = vals[np.isfinite(vals)]
    if len(vals) == 0:
        return (float("nan"), float("nan"))
    lo, hi = np.quantile(vals, [(1 - level) / 2, 1 - (1 - level) / 2])
    return (float(lo), float(hi))
