"""The one interface every step-time predictor implements (vidur's predictor split), and its scalar fast path.

``step_time_s(BatchShape)`` prices any pass. A predictor whose pass depends on the batch only through five totals
also implements :class:`TotalsPredictor`: ``step_time_totals(num_seqs, batched_tokens, kv_tokens, pairs,
logit_rows)`` returns the same seconds, bit for bit, without building a :class:`BatchShape` or touching numpy -- what
a simulator stepping a handful of sequences a few hundred thousand times needs. ``pairs`` is the per-layer sum
``sum_i q_i * (context_i + (q_i + 1) // 2)`` (a query token of a chunk sees its context and, causally, on average
half the chunk); ``kv_tokens`` is ``sum_i (context_i + q_i)``. ``totals_exact`` is False where the totals do not
determine the pass (sliding-window layers cap each sequence's context on its own): callers then use
``step_time_s``.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from specwise.perfmodel.batch import BatchShape


@runtime_checkable
class StepTimePredictor(Protocol):
    """Seconds for one forward pass of one model over ``batch`` on its GPUs."""

    def step_time_s(self, batch: BatchShape) -> float: ...


@runtime_checkable
class TotalsPredictor(Protocol):
    """A predictor with the scalar fast path (see the module docstring)."""

    @property
    def totals_exact(self) -> bool: ...

    def step_time_s(self, batch: BatchShape) -> float: ...

    def step_time_totals(
        self, num_seqs: int, batched_tokens: int, kv_tokens: int, pairs: int, logit_rows: int
    ) -> float: ...


def pairs_of(query: int, context: int) -> int:
    """One sequence's term of ``pairs``."""
    return query * (context + (query + 1) // 2)
