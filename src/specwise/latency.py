"""One latency summary for the simulator and the load generator (guidellm-style token-normalised metrics).

* TTFT = first token - arrival (or request start); E2E = finish - arrival.
* TPOT = (last token - first token) / (output tokens - 1), per request (requests with one token excluded).
* ITL: a step (or a streamed chunk) that brings m tokens after a gap g contributes m samples of g / m, so a
  verification accepting several tokens is not counted as one long gap.
* Output tokens/s and requests/s over the span the summarised requests cover; goodput: requests/s meeting their
  TTFT and TPOT SLOs (vLLM bench's definition).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from specwise.stats import FloatArray, Percentiles


@dataclass(frozen=True)
class LatencySummary:
    requests: int
    ttft_s: Percentiles
    tpot_s: Percentiles
    itl_s: Percentiles
    e2e_s: Percentiles
    output_tokens_per_s: float
    request_rate_per_s: float
    goodput_per_s: float | None

    @staticmethod
    def fields(
        *,
        requests: int,
        ttft_s: FloatArray,
        tpot_s: FloatArray,
        itl_s: FloatArray,
        itl_weights: np.ndarray | None,
        e2e_s: FloatArray,
        output_tokens: float,
        completed: int,
        span_s: float,
        met_slo: int | None,
    ) -> dict[str, Any]:
        """The summary's fields from samples (keyword arguments for this class or a subclass)."""
        return {
            "requests": requests,
            "ttft_s": Percentiles.of(ttft_s),
            "tpot_s": Percentiles.of(tpot_s),
            "itl_s": Percentiles.of(itl_s, itl_weights),
            "e2e_s": Percentiles.of(e2e_s),
            "output_tokens_per_s": output_tokens / span_s if span_s > 0 else 0.0,
            "request_rate_per_s": completed / span_s if span_s > 0 else 0.0,
            "goodput_per_s": None if met_slo is None else (met_slo / span_s if span_s > 0 else None),
        }

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class LevelSummary(LatencySummary):
    """The shared summary (:mod:`specwise.latency`) of one bench level, plus what only a load test knows."""

    level: int = 0
    target_rate_per_s: float | None = None
    failed: int = 0
    duration_s: float = 0.0
    errors: dict[str, int] = field(default_factory=dict)
    sessions: int = 1  # bench processes that sent the level: 2 or more after a --resume (duration_s sums their spans)
    # vLLM bench's ITL: one sample per streamed chunk, the gap since the one before whatever it carries (a
    # speculative step's chunk of several tokens is one gap; ``itl_s`` is token-normalised)
    itl_per_chunk_s: Percentiles = field(default_factory=Percentiles.of_nothing)
