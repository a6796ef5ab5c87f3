"""What one engine step costs: the target's forward pass, the proposer, rejection sampling, engine overhead.

``t = verify(batch) + overhead [+ propose(decode sequences, k) + rejection sampling] [+ the draft's prefill of the
step's prompt chunks]`` -- each term from the predictors the caller built (:mod:`specwise.perfmodel`), so the
simulator knows no model, GPU or method, only these seconds.
"""

from __future__ import annotations

from dataclasses import dataclass

from specwise.perfmodel.batch import BatchShape
from specwise.perfmodel.drafting import DraftCost
from specwise.perfmodel.predictor import StepTimePredictor
from specwise.traffic import IntArray

STEP_OVERHEAD_S = 1.207e-3  # SpecDecode-Bench's fitted per-step engine overhead (Liu et al. 2026, predictor.py)
REJECTION_SAMPLING_FRACTION = 0.015  # "< 1.7%" of runtime (Liu et al. 2026, "Speculative Decoding: Performance
# or Illusion?", arXiv 2601.11580)


@dataclass(frozen=True)
class StepCost:
    target: StepTimePredictor
    draft: DraftCost | None
    overhead_s: float = STEP_OVERHEAD_S

    def decode_step_s(self, batch: BatchShape, draft_q: IntArray, draft_ctx: IntArray, k: int) -> float:
        """Target pass + proposal for the decoding sequences (``draft_q`` tokens to catch up on, over
        ``draft_ctx``) + rejection sampling + engine overhead; the draft's prefill apart."""
        verify = self.target.step_time_s(batch)
        step = verify + self.overhead_s
        if self.draft is not None and k > 0 and draft_q.size:
            step += self.draft.propose_time_s(BatchShape(draft_q, draft_ctx), k, verify)
            step += REJECTION_SAMPLING_FRACTION * verify
        return step

    def draft_prefill_s(self, chunks: BatchShape) -> float:
        """The draft's share of prefilling this step's prompt chunks (its KV must cover the prompt too)."""
        return self.draft.prefill_time_s(chunks) if self.draft is not None else 0.0
