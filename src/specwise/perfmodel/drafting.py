"""What proposing k draft tokens costs, per drafting method.

* Draft model / EAGLE / MTP head (``ModelDraftCost``): vLLM's proposer first runs the draft over
  the tokens the last verification accepted (to catch its KV cache up), then ``k - 1`` single-token
  passes (``vllm/v1/spec_decode/eagle.py``, ``draft_model.py``); new prompts are prefilled by the
  draft as well. EAGLE/MTP heads are the same with a one-layer "model".
* n-gram / suffix (``NgramDraftCost``): a CPU-side lookup, ~0.59% of the verification time in
  vLLM (SpecDecode-Bench: Liu et al. 2026, arXiv 2601.11580, ``simulator/predictor.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, cast, runtime_checkable

import numpy as np

from specwise.errors import SpecError
from specwise.perfmodel.batch import BatchShape
from specwise.perfmodel.predictor import StepTimePredictor, TotalsPredictor

NGRAM_PROPOSAL_FRACTION = 0.0059


class DraftCost(Protocol):
    def propose_time_s(self, decode: BatchShape, k: int, verify_time_s: float) -> float:
        """Time to propose ``k`` tokens for each decode sequence (``decode.query_tokens``: tokens the
        draft must catch up on, i.e. last step's accepted + bonus)."""
        ...

    def prefill_time_s(self, prefill: BatchShape) -> float:
        """The draft's share of prefilling new prompt chunks."""
        ...


@runtime_checkable
class TotalsDraftCost(Protocol):
    """A draft cost with the scalar fast path (:mod:`specwise.perfmodel.predictor`): the same seconds from the
    decode sequences' totals -- ``query_tokens`` and ``context_tokens`` summed, ``pairs`` as the predictors take
    it -- where ``totals_exact``."""

    @property
    def totals_exact(self) -> bool: ...

    def propose_time_totals(
        self, num_seqs: int, query_tokens: int, context_tokens: int, pairs: int, k: int, verify_time_s: float
    ) -> float: ...

    def prefill_time_totals(self, num_seqs: int, query_tokens: int, context_tokens: int, pairs: int) -> float: ...


@dataclass(frozen=True)
class ModelDraftCost:
    """A draft network's passes per step: one catching up on the tokens the last step accepted, then ``k - 1``
    passes of ``branching`` tokens per sequence over the context it left.

    ``branching`` is a draft tree's top-k (1 for a chain): SGLang's EAGLE worker expands every sequence into
    ``topk`` branches and runs each later draft step on ``batch_size * topk`` tokens, allocating
    ``num_seqs * speculative_num_steps * topk`` KV slots for them (``sglang/srt/speculative/eagle_worker.py``,
    ``_draft_preprocess_decode`` and ``draft_forward``)."""

    predictor: StepTimePredictor
    branching: int = 1

    def __post_init__(self) -> None:
        if self.branching < 1:
            raise SpecError(f"draft branching: must be >= 1, got {self.branching}")

    def propose_time_s(self, decode: BatchShape, k: int, verify_time_s: float) -> float:
        if k <= 0 or decode.num_seqs == 0:
            return 0.0
        first = self.predictor.step_time_s(decode)
        if k == 1:
            return first
        b = self.branching
        ctx_after = decode.context_tokens + decode.query_tokens
        later = BatchShape(np.full_like(decode.query_tokens, b), ctx_after, logit_rows=decode.num_seqs * b)
        return first + (k - 1) * self.predictor.step_time_s(later)

    def prefill_time_s(self, prefill: BatchShape) -> float:
        return self.predictor.step_time_s(prefill) if prefill.num_seqs else 0.0

    @property
    def totals_exact(self) -> bool:
        p = self.predictor
        return isinstance(p, TotalsPredictor) and p.totals_exact

    def propose_time_totals(
        self, num_seqs: int, query_tokens: int, context_tokens: int, pairs: int, k: int, verify_time_s: float
    ) -> float:
        """:meth:`propose_time_s` from totals: the catch-up pass, then ``k - 1`` passes of ``branching`` tokens per
        sequence over the context it left (each sequence's ``pairs`` term is then ``b * (context + (b + 1) // 2)``,
        :meth:`~specwise.perfmodel.roofline.PassGeometry.attention_sums`'s causal form)."""
        if k <= 0 or num_seqs == 0:
            return 0.0
        p = cast(TotalsPredictor, self.predictor)
        after = context_tokens + query_tokens
        first = p.step_time_totals(num_seqs, query_tokens, after, pairs, num_seqs)
        if k == 1:
            return first
        b = self.branching
        tokens = num_seqs * b
        later = p.step_time_totals(num_seqs, tokens, after + tokens, b * after + tokens * ((b + 1) // 2), tokens)
        return first + (k - 1) * later

    def prefill_time_totals(self, num_seqs: int, query_tokens: int, context_tokens: int, pairs: int) -> float:
        if not num_seqs:
            return 0.0
        p = cast(TotalsPredictor, self.predictor)
        return p.step_time_totals(num_seqs, query_tokens, context_tokens + query_tokens, pairs, num_seqs)


@dataclass(frozen=True)
class NgramDraftCost:
    fraction_of_verify: float = NGRAM_PROPOSAL_FRACTION

    def propose_time_s(self, decode: BatchShape, k: int, verify_time_s: float) -> float:
        return self.fraction_of_verify * verify_time_s if k > 0 else 0.0

    def prefill_time_s(self, prefill: BatchShape) -> float:
        return 0.0

    @property
    def totals_exact(self) -> bool:
        return True

    def propose_time_totals(
        self, num_seqs: int, query_tokens: int, context_tokens: int, pairs: int, k: int, verify_time_s: float
    ) -> float:
        return self.fraction_of_verify * verify_time_s if k > 0 else 0.0

    def prefill_time_totals(self, num_seqs: int, query_tokens: int, context_tokens: int, pairs: int) -> float:
        return 0.0
