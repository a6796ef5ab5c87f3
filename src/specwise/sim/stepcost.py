"""What one engine step costs: the target's forward pass, the proposer, the engine's own work.

``t = verify(batch) + engine step [+ propose(decode sequences, k) + speculation bookkeeping] [+ the draft's prefill
of the step's prompt chunks]`` -- each term from the predictors the caller built (:mod:`specwise.perfmodel`), so the
simulator knows no model, GPU or method, only these seconds.
"""

from __future__ import annotations

from dataclasses import dataclass

from specwise.perfmodel.batch import BatchShape
from specwise.perfmodel.drafting import DraftCost
from specwise.perfmodel.predictor import StepTimePredictor
from specwise.perfmodel.profiles import LEGACY_OVERHEAD, EngineOverhead
from specwise.traffic import IntArray


@dataclass(frozen=True)
class StepCost:
    target: StepTimePredictor
    draft: DraftCost | None
    overhead: EngineOverhead = LEGACY_OVERHEAD

    def decode_step_s(self, batch: BatchShape, draft_q: IntArray, draft_ctx: IntArray, k: int) -> float:
        """Target pass + proposal for the decoding sequences (``draft_q`` tokens to catch up on, over
        ``draft_ctx``) + the engine's per-step, per-sequence and per-draft-token costs; the draft's prefill apart."""
        verify = self.target.step_time_s(batch)
        step = verify + self.overhead.step_s(batch.num_seqs)
        if self.draft is not None and k > 0 and draft_q.size:
            step += self.draft.propose_time_s(BatchShape(draft_q, draft_ctx), k, verify)
            step += self.overhead.speculation_s(k * int(draft_q.size), verify)
        return step

    def draft_prefill_s(self, chunks: BatchShape) -> float:
        """The draft's share of prefilling this step's prompt chunks (its KV must cover the prompt too)."""
        return self.draft.prefill_time_s(chunks) if self.draft is not None else 0.0
