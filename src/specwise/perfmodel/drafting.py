"""What proposing k draft tokens costs, per drafting method.

* Draft model / EAGLE / MTP head (``ModelDraftCost``): vLLM's proposer first runs the draft over
  the tokens the last verification accepted (to catch its KV cache up), then ``k - 1`` single-token
  passes (``vllm/v1/spec_decode/eagle.py``, ``draft_model.py``); new prompts are prefilled by the
  draft as well. EAGLE/MTP heads are the same with a one-layer "model".
* n-gram / suffix (``NgramDraftCost``): a CPU-side lookup, ~0.59% of the verification time in
  vLLM (SpecDecode-Bench; shared/reference).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from specwise.perfmodel.batch import BatchShape
from specwise.perfmodel.predictor import StepTimePredictor

NGRAM_PROPOSAL_FRACTION = 0.0059


class DraftCost(Protocol):
    def propose_time_s(self, decode: BatchShape, k: int, verify_time_s: float) -> float:
        """Time to propose ``k`` tokens for each decode sequence (``decode.query_tokens``: tokens the
        draft must catch up on, i.e. last step's accepted + bonus)."""
        ...

    def prefill_time_s(self, prefill: BatchShape) -> float:
        """The draft's share of prefilling new prompt chunks."""
        ...


@dataclass(frozen=True)
class ModelDraftCost:
    predictor: StepTimePredictor

    def propose_time_s(self, decode: BatchShape, k: int, verify_time_s: float) -> float:
        if k <= 0 or decode.num_seqs == 0:
            return 0.0
        first = self.predictor.step_time_s(decode)
        if k == 1:
            return first
        ctx_after = decode.context_tokens + decode.query_tokens
        single = BatchShape(np.ones_like(decode.query_tokens), ctx_after, logit_rows=decode.num_seqs)
        return first + (k - 1) * self.predictor.step_time_s(single)

    def prefill_time_s(self, prefill: BatchShape) -> float:
        return self.predictor.step_time_s(prefill) if prefill.num_seqs else 0.0


@dataclass(frozen=True)
class NgramDraftCost:
    fraction_of_verify: float = NGRAM_PROPOSAL_FRACTION

    def propose_time_s(self, decode: BatchShape, k: int, verify_time_s: float) -> float:
        return self.fraction_of_verify * verify_time_s if k > 0 else 0.0

    def prefill_time_s(self, prefill: BatchShape) -> float:
        return 0.0
