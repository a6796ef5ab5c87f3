"""What one engine step costs: the target's forward pass, the proposer, the engine's own work.

``t = verify(batch) + engine step [+ propose(decode sequences, k) + speculation bookkeeping] [+ the draft's prefill
of the step's prompt chunks]`` -- the expected ``max(GPU passes, engine work)`` where the engine overlaps its work
with them (:func:`~specwise.perfmodel.overlap.expected_max_s`):
SGLang's overlap scheduler with nothing speculating, vLLM's async scheduling by release and method, plain and
speculating steps apart (:class:`~specwise.perfmodel.profiles.EngineOverhead`; the draft's prefill stays in
series) -- each term from the predictors the caller built (:mod:`specwise.perfmodel`), so the
simulator knows no model, GPU or method, only these seconds.

Two entry points price the same step: :meth:`StepCost.decode_step_s` from :class:`BatchShape` arrays, and
:meth:`StepCost.decode_step_totals` from the batch's totals (plain ints, no numpy: the scalar step path). The
second exists only where every predictor involved has the exact totals path (``StepCost.totals``); it gives the
same seconds bit for bit.

*Batch-expansion scoring* (``batch_expansion``; vLLM V0's default): V0 verified proposals with
``BatchExpansionTop1Scorer`` (``vllm/spec_decode/batch_expansion.py``), which turns each sequence with k proposals
into k + 1 single-token sequences over the same context (``_create_target_seq_group_metadata``) and scores them as
an ordinary decode batch; the MQA scorer that verifies k + 1 query tokens in one sequence
(``vllm/spec_decode/mqa_scorer.py``) was switched off whenever the target ran with CUDA graphs, the default
(``SpecDecodeWorker.create_worker``: "Disabling MQA scorer as the target model is not running in eager mode").
So a verification step feeds as many sequences as query tokens, and each re-reads its whole context's KV: a
sequence of q query tokens over c context tokens costs q sequences and ``q (c + (q + 1) // 2)`` KV tokens (its
attention pairs) instead of one sequence and ``c + q``. V0 never mixes prompt chunks into a step that speculates,
so the expansion applies to decode steps only.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from specwise.perfmodel.batch import BatchShape
from specwise.perfmodel.drafting import DraftCost, TotalsDraftCost
from specwise.perfmodel.overlap import expected_max_s
from specwise.perfmodel.predictor import StepTimePredictor, TotalsPredictor
from specwise.perfmodel.profiles import LEGACY_OVERHEAD, EngineOverhead
from specwise.traffic import IntArray


@dataclass(frozen=True)
class StepCost:
    target: StepTimePredictor
    draft: DraftCost | None
    overhead: EngineOverhead = LEGACY_OVERHEAD
    batch_expansion: bool = False  # vLLM V0's batch-expansion scorer (module docstring)
    totals: bool = field(init=False)  # the scalar path is exact for this target and draft
    _target_totals: TotalsPredictor = field(init=False, repr=False)
    _draft_totals: TotalsDraftCost | None = field(init=False, repr=False)

    def __post_init__(self) -> None:
        t, d = self.target, self.draft
        exact = isinstance(t, TotalsPredictor) and t.totals_exact
        exact = exact and (d is None or (isinstance(d, TotalsDraftCost) and d.totals_exact))
        exact = exact and type(self.overhead) is EngineOverhead  # its plain/speculating step prices inlined below
        object.__setattr__(self, "totals", exact)
        if exact:
            object.__setattr__(self, "_target_totals", t)
            object.__setattr__(self, "_draft_totals", d)

    def decode_step_s(
        self, batch: BatchShape, draft_q: IntArray, draft_ctx: IntArray, k: int, draft_prefill_s: float = 0.0
    ) -> float:
        """Target pass + proposal for the decoding sequences (``draft_q`` tokens to catch up on, over
        ``draft_ctx``) + the draft's prefill of this step's prompt chunks (:meth:`draft_prefill_s`, GPU work the
        engine's overlap does not hide) + the engine's per-step, per-sequence and per-draft-token costs."""
        if self.batch_expansion and k > 0 and draft_q.size == batch.num_seqs:
            return self._expanded_step_s(batch, draft_q, draft_ctx, k, draft_prefill_s)
        verify = self.target.step_time_s(batch)
        if self.draft is None:  # nothing speculates: the engine may overlap its work (EngineOverhead)
            return self.overhead.plain_step_s(verify, batch.num_seqs)
        gpu = verify + draft_prefill_s
        if k > 0 and draft_q.size:
            gpu += self.draft.propose_time_s(BatchShape(draft_q, draft_ctx), k, verify)
            return self.overhead.speculating_step_s(gpu, batch.num_seqs, k * int(draft_q.size), verify)
        return self.overhead.speculating_step_s(gpu, batch.num_seqs, 0, 0.0)

    def _expanded_step_s(
        self, batch: BatchShape, draft_q: IntArray, draft_ctx: IntArray, k: int, draft_prefill_s: float
    ) -> float:
        """:meth:`decode_step_s` under batch-expansion scoring: each sequence of q query tokens over c context
        tokens scored as q one-token sequences over contexts c .. c + q - 1 (the totals path when the predictors
        have it, so both paths give the same seconds)."""
        if self.totals:
            q_sum, kv, pairs = batch_totals(batch.query_tokens, batch.context_tokens)
            dq, dkv, dpairs = batch_totals(draft_q, draft_ctx)
            n = batch.num_seqs
            totals = (n, q_sum, kv, pairs, batch.logit_rows, k, n, dq, dkv - dq, dpairs)
            return self.decode_step_totals(*totals, draft_prefill_s=draft_prefill_s)
        q, c = batch.query_tokens, batch.context_tokens
        offsets = np.arange(int(q.sum()), dtype=np.int64) - np.repeat(np.cumsum(q) - q, q)
        expanded = BatchShape(np.ones(int(q.sum()), dtype=np.int64), np.repeat(c, q) + offsets, batch.logit_rows)
        verify = self.target.step_time_s(expanded)
        gpu = verify + draft_prefill_s
        if self.draft is not None and draft_q.size:
            gpu += self.draft.propose_time_s(BatchShape(draft_q, draft_ctx), k, verify)
            return self.overhead.speculating_step_s(gpu, expanded.num_seqs, k * int(draft_q.size), verify)
        return self.overhead.speculating_step_s(gpu, expanded.num_seqs, 0, 0.0)

    def draft_prefill_s(self, chunks: BatchShape) -> float:
        """The draft's share of prefilling this step's prompt chunks (its KV must cover the prompt too)."""
        return self.draft.prefill_time_s(chunks) if self.draft is not None else 0.0

    # -- the scalar path (``totals`` only) ---------------------------------------------------------------------

    def decode_step_totals(
        self,
        num_seqs: int,
        batched_tokens: int,
        kv_tokens: int,
        pairs: int,
        logit_rows: int,
        k: int,
        decoding: int,
        draft_q: int,
        draft_ctx: int,
        draft_pairs: int,
        draft_prefill_s: float = 0.0,
    ) -> float:
        """:meth:`decode_step_s` from totals: the whole batch's (``num_seqs`` .. ``logit_rows``, as
        :mod:`specwise.perfmodel.predictor` defines them), the ``decoding`` sequences' draft catch-up (``draft_q``
        tokens over ``draft_ctx``, ``draft_pairs``) and the draft's prefill (:meth:`draft_prefill_totals`)."""
        if self.batch_expansion and k > 0 and decoding == num_seqs:  # a V0 decode step: scored expanded
            num_seqs, kv_tokens = batched_tokens, pairs
        verify = self._target_totals.step_time_totals(num_seqs, batched_tokens, kv_tokens, pairs, logit_rows)
        o = self.overhead
        draft = self._draft_totals
        if draft is None:  # o.plain_step_s
            engine = o.base_s + o.per_seq_s * num_seqs
            if o.overlapped_without_speculation:
                return expected_max_s(verify, engine, o.overlap_jitter)
            return verify + engine
        gpu, engine, rejection = verify + draft_prefill_s, o.base_s + o.per_seq_s * num_seqs, 0.0  # speculating_step_s
        if k > 0 and decoding:
            gpu += draft.propose_time_totals(decoding, draft_q, draft_ctx, draft_pairs, k, verify)
            engine += o.per_draft_token_s * (k * decoding)
            rejection = o.rejection_fraction * verify
        both = expected_max_s(gpu, engine, o.overlap_jitter) if o.overlapped_with_speculation else gpu + engine
        return both + rejection

    def draft_prefill_totals(self, chunks: int, query_tokens: int, context_tokens: int, pairs: int) -> float:
        draft = self._draft_totals
        return draft.prefill_time_totals(chunks, query_tokens, context_tokens, pairs) if draft is not None else 0.0

    def uniform_step_totals(
        self, num_seqs: int, query: int, context: int, k: int, draft_q: int, draft_pairs: int
    ) -> float:
        """A decode step of ``num_seqs`` sequences feeding ``query`` tokens each over ``context`` tokens in all
        (the fast-forward's steps), the draft catching up ``draft_q`` tokens in all."""
        per_seq_pairs = query * ((query + 1) // 2)
        batched = num_seqs * query
        return self.decode_step_totals(
            num_seqs,
            batched,
            context + batched,
            query * context + num_seqs * per_seq_pairs,
            batched,
            k,
            num_seqs,
            draft_q,
            context,
            draft_pairs,
        )


def batch_totals(query: IntArray, context: IntArray) -> tuple[int, int, int]:
    """(batched tokens, KV tokens, pairs) of a batch given as arrays (no sliding windows)."""
    q_sum = int(query.sum())
    return q_sum, int(context.sum()) + q_sum, int(np.dot(query, context + (query + 1) // 2))
