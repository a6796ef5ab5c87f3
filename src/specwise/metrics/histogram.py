"""Quantiles of a Prometheus histogram from bucket deltas (``histogram_quantile`` semantics).

Within the bucket holding the rank, the value is interpolated linearly between its bounds
(the first bucket's lower bound is 0). A rank in the +Inf bucket returns the largest finite bound.
Cumulative counts that decrease (a scrape with missing or inconsistent buckets) are made monotonic
first, as Prometheus does, and the snapshot says it had to.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from specwise.metrics.exposition import Labels, Scrape, bucket_bound


@dataclass(frozen=True)
class HistogramSnapshot:
    """Cumulative bucket counts by upper bound (``le``), plus ``_count`` and ``_sum``."""

    buckets: tuple[tuple[float, float], ...]
    count: float
    total: float

    @classmethod
    def from_scrape(cls, scrape: Scrape, name: str, match: Labels = ()) -> HistogramSnapshot | None:
        """The histogram ``name`` (e.g. ``vllm:time_to_first_token_seconds``), summed over series whose
        labels include ``match``."""
        want = dict(match)

        def ok(labels: Labels) -> bool:
            if not want:
                return True
            d = dict(labels)
            return all(d.get(k) == v for k, v in want.items())

        buckets: dict[float, float] = {}
        for s in scrape.named(f"{name}_bucket"):
            bound = bucket_bound(s.label("le"))
            if bound is None or not ok(s.labels):  # not a bucket (monitor's vet reports a malformed series)
                continue
            buckets[bound] = buckets.get(bound, 0.0) + s.value
        if not buckets:
            return None
        count = sum(s.value for s in scrape.named(f"{name}_count") if ok(s.labels))
        total = sum(s.value for s in scrape.named(f"{name}_sum") if ok(s.labels))
        return cls(tuple(sorted(buckets.items())), count, total)

    def minus(self, earlier: HistogramSnapshot) -> tuple[HistogramSnapshot, bool]:
        """Bucket deltas since ``earlier``; a drop in ``_count`` means a restart (use self as is)."""
        if self.count < earlier.count:
            return self, True
        before = dict(earlier.buckets)
        buckets = tuple((le, max(0.0, c - before.get(le, 0.0))) for le, c in self.buckets)
        return HistogramSnapshot(buckets, self.count - earlier.count, self.total - earlier.total), False


def histogram_quantile(q: float, hist: HistogramSnapshot) -> tuple[float | None, bool]:
    """The q-quantile and whether the buckets had to be repaired (non-monotonic cumulative counts)."""
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"quantile must be in [0, 1], got {q}")
    bounds = [b for b, _ in hist.buckets]
    counts = [c for _, c in hist.buckets]
    repaired = False
    for i in range(1, len(counts)):
        if counts[i] < counts[i - 1]:
            counts[i] = counts[i - 1]
            repaired = True
    if not counts or counts[-1] <= 0:
        return None, repaired
    if not math.isinf(bounds[-1]):
        repaired = True  # no +Inf bucket: treat the last bound as the top
    rank = q * counts[-1]
    for i, (bound, cum) in enumerate(zip(bounds, counts, strict=True)):
        if cum >= rank:
            if math.isinf(bound):
                finite = [b for b in bounds if not math.isinf(b)]
                return (finite[-1] if finite else None), repaired
            lower = bounds[i - 1] if i > 0 else 0.0
            below = counts[i - 1] if i > 0 else 0.0
            in_bucket = cum - below
            if in_bucket <= 0:
                return bound, repaired
            return lower + (bound - lower) * (rank - below) / in_bucket, repaired
    return bounds[-1], repaired
