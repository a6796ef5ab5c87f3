"""vLLM's speculative-decoding counters and the rates derived from them -- the one counter type for what a server
reports (``/metrics`` deltas, ``vllm bench serve`` results), what the profiler expects and what the speculative
sampling loop counts.

Definitions (``vllm/v1/spec_decode/metrics.py``):

* acceptance rate = accepted tokens / draft tokens
* mean acceptance length (AL) = 1 + accepted tokens / drafts (includes the bonus token; vLLM PR #17908)
* per-position rate i = accepted_per_pos[i] / drafts; consistency: AL = 1 + sum of per-position rates

A rate with nothing to divide by is None (printed as null), never NaN.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray


def acceptance_rate(accepted_tokens: float, draft_tokens: float) -> float | None:
    """accepted tokens / draft tokens; None without draft tokens."""
    return accepted_tokens / draft_tokens if draft_tokens > 0 else None


def mean_acceptance_length(accepted_tokens: float, drafts: float) -> float | None:
    """1 + accepted tokens / drafts (the bonus token included); None without drafts."""
    return 1.0 + accepted_tokens / drafts if drafts > 0 else None


@dataclass(frozen=True)
class SpecDecodeCounts:
    """Counts over an interval (or a sequence, or their expectation), and the rates derived from them."""

    drafts: float
    draft_tokens: float
    accepted_tokens: float
    accepted_per_position: tuple[float, ...]

    @property
    def k(self) -> int:
        """Draft positions counted (the k of a fixed-k run)."""
        return len(self.accepted_per_position)

    @property
    def acceptance_rate(self) -> float | None:
        return acceptance_rate(self.accepted_tokens, self.draft_tokens)

    @property
    def mean_acceptance_length(self) -> float | None:
        return mean_acceptance_length(self.accepted_tokens, self.drafts)

    @property
    def per_position_rates(self) -> tuple[float, ...]:
        """accepted_per_pos[i] / drafts (empty without drafts)."""
        if self.drafts <= 0:
            return ()
        return tuple(a / self.drafts for a in self.accepted_per_position)

    def per_position_or_none(self) -> tuple[float | None, ...]:
        """One rate per counted position; None for each when there were no drafts."""
        return self.per_position_rates or tuple(None for _ in self.accepted_per_position)

    @property
    def mean_draft_length(self) -> float | None:
        """Draft tokens per draft: k when it is fixed."""
        return self.draft_tokens / self.drafts if self.drafts > 0 else None

    def to_dict(self) -> dict[str, object]:
        """Field names as ``vllm bench serve`` writes them (``spec_decode_*``), rates as fractions."""
        return {
            "spec_decode_num_drafts": self.drafts,
            "spec_decode_draft_tokens": self.draft_tokens,
            "spec_decode_accepted_tokens": self.accepted_tokens,
            "spec_decode_acceptance_rate": self.acceptance_rate,
            "spec_decode_acceptance_length": self.mean_acceptance_length,
            "spec_decode_per_position_acceptance_rates": list(self.per_position_rates),
        }

    # -- array form, for summing many sequences at once (the profiler) ----------------------------------------
    def as_row(self) -> NDArray[np.float64]:
        return np.array([self.drafts, self.draft_tokens, self.accepted_tokens, *self.accepted_per_position])

    @classmethod
    def from_row(cls, k: int, row: NDArray[np.float64]) -> SpecDecodeCounts:
        return cls(float(row[0]), float(row[1]), float(row[2]), tuple(float(x) for x in row[3 : 3 + k]))

    @classmethod
    def total(cls, k: int, items: Sequence[SpecDecodeCounts]) -> SpecDecodeCounts:
        row = np.sum([c.as_row() for c in items], axis=0) if items else np.zeros(3 + k)
        return cls.from_row(k, row)
