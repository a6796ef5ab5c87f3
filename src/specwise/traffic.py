"""Traffic shapes shared by the simulator and the load generator: token-length distributions and arrival
processes (RNG passed in; pure)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from specwise.errors import SpecError

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class LengthDist:
    """Token counts: ``fixed`` (mean), ``uniform`` [min, max], ``lognormal`` (mean, cv), ``normal``
    (mean, cv); every draw is clipped to [min, max]."""

    kind: Literal["fixed", "uniform", "lognormal", "normal"] = "fixed"
    mean: float = 128.0
    cv: float = 0.0
    min: int = 1
    max: int = 1_000_000

    def __post_init__(self) -> None:
        if self.kind not in ("fixed", "uniform", "lognormal", "normal"):
            raise SpecError(
                f"length distribution: unknown kind {self.kind!r} (known: fixed, uniform, lognormal, normal)"
            )
        if self.min < 1 or self.max < self.min:
            raise SpecError(f"length distribution: need 1 <= min <= max, got min={self.min} max={self.max}")
        if self.kind != "uniform" and not self.min <= self.mean <= self.max:
            raise SpecError(f"length distribution: mean {self.mean} outside [min={self.min}, max={self.max}]")
        if self.cv < 0:
            raise SpecError(f"length distribution: cv must be >= 0, got {self.cv}")

    def sample(self, rng: np.random.Generator, n: int) -> IntArray:
        if self.kind == "fixed" or (self.cv == 0 and self.kind != "uniform"):
            values = np.full(n, self.mean)
        elif self.kind == "uniform":
            values = rng.uniform(self.min, self.max + 1, n)
        elif self.kind == "lognormal":
            sigma2 = math.log(1.0 + self.cv**2)
            values = rng.lognormal(math.log(self.mean) - sigma2 / 2, math.sqrt(sigma2), n)
        else:
            values = rng.normal(self.mean, self.cv * self.mean, n)
        clipped: IntArray = np.clip(np.floor(values), self.min, self.max).astype(np.int64)
        return clipped


@dataclass(frozen=True)
class Arrivals:
    """Request arrivals: ``poisson`` (exponential gaps), ``gamma`` (gaps with coefficient of variation
    ``cv``: cv > 1 is burstier than Poisson), ``constant``, or a replayed ``trace`` of times."""

    kind: Literal["poisson", "gamma", "constant", "trace"] = "poisson"
    rate_per_s: float = 1.0
    cv: float = 1.0
    trace_s: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in ("poisson", "gamma", "constant", "trace"):
            raise SpecError(f"arrivals: unknown kind {self.kind!r}")
        if self.kind != "trace" and not (math.isfinite(self.rate_per_s) and self.rate_per_s > 0):
            raise SpecError(f"arrivals: rate must be > 0 and finite, got {self.rate_per_s}")
        if self.kind == "gamma" and not (math.isfinite(self.cv) and self.cv > 0):
            raise SpecError(f"arrivals: gamma cv must be > 0 and finite, got {self.cv}")
        if self.kind == "trace":
            if not self.trace_s:
                raise SpecError("arrivals: empty trace")
            # written so that a NaN fails every test (a NaN compares False): one let through hangs the simulator,
            # whose clock would become NaN and never reach the next arrival
            if not all(math.isfinite(t) for t in self.trace_s):
                raise SpecError("arrivals: trace times must be finite numbers")
            rising = all(b >= a for a, b in zip(self.trace_s, self.trace_s[1:], strict=False))
            if not (self.trace_s[0] >= 0 and rising):
                raise SpecError("arrivals: trace times must be >= 0 and non-decreasing")

    def times(self, rng: np.random.Generator, n: int) -> FloatArray:
        """The first ``n`` arrival times (seconds from 0)."""
        if self.kind == "trace":
            return np.asarray(self.trace_s[:n], dtype=np.float64)
        mean_gap = 1.0 / self.rate_per_s
        if self.kind == "constant":
            gaps = np.full(n, mean_gap)
        elif self.kind == "poisson":
            gaps = rng.exponential(mean_gap, n)
        else:
            shape = 1.0 / self.cv**2
            gaps = rng.gamma(shape, mean_gap / shape, n)
        return np.cumsum(gaps)

    def with_rate(self, rate_per_s: float) -> Arrivals:
        """The same process at another mean rate (a trace is replayed time-scaled to that rate)."""
        if self.kind != "trace":
            return Arrivals(self.kind, rate_per_s, self.cv, self.trace_s)
        if len(self.trace_s) < 2 or not self.trace_s[-1] > self.trace_s[0]:
            raise SpecError("arrivals: a trace needs two or more distinct times to be rescaled")
        if not (math.isfinite(rate_per_s) and rate_per_s > 0):
            raise SpecError(f"arrivals: rate must be > 0 and finite, got {rate_per_s}")
        span = self.trace_s[-1] - self.trace_s[0]
        own_rate = (len(self.trace_s) - 1) / span
        scale = own_rate / rate_per_s
        if not math.isfinite(scale):  # 3 gaps in 5e-324 s: an infinite rate, and 0 * inf = NaN times
            raise SpecError(
                f"arrivals: the trace's {len(self.trace_s)} times span {span!r} s, too short to be rescaled to a "
                "request rate (its own rate overflows); give the times in seconds"
            )
        start = self.trace_s[0]
        return Arrivals("trace", rate_per_s, self.cv, tuple((t - start) * scale for t in self.trace_s))
