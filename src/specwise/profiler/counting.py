"""vLLM's spec-decode counters, in expectation, from per-position acceptance probabilities along a sequence.

For a step that starts at output position t and proposes m tokens whose acceptance probabilities (each given
the ones before were accepted) are b_1..b_m, P(accepted >= i) = b_1 * ... * b_i (rejection stops the step).
Accepting n tokens emits n + 1 (the bonus or the corrected token), so the next step starts at t + n + 1.
Walking this chain from t = 1 (:data:`FIRST_DRAFTED_POSITION`: output token 0 comes from the prefill step) with
the probability pi(t) that a step starts at t gives the expected counters vLLM would report for the sequence
(``vllm/v1/spec_decode/metrics.py``, ``SpecDecodingStats``):

    num_drafts = sum_t pi(t) [m_t > 0]      num_draft_tokens = sum_t pi(t) m_t
    num_accepted_tokens = sum_t pi(t) sum_i P(acc >= i | t)     accepted_per_pos[i] = sum_t pi(t) P(acc >= i | t)

A step that proposes nothing (n-gram lookup found no match) emits one token and counts no draft, as in
vLLM's scheduler (``make_spec_decoding_stats`` skips steps with no draft tokens). The walk follows the
observed continuation: after an accepted draft token the context is taken to be the continuation's, which is
exact at T = 0 (accepted tokens are the greedy path) and an approximation at T > 0 checked against the real
speculative sampling loop (:mod:`specwise.profiler.specloop`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from specwise.acceptance.counts import SpecDecodeCounts

FIRST_DRAFTED_POSITION = 1
"""The first output position a verification step covers. A request's prefill step samples output token 0 and
verifies nothing: vLLM V1 drafts from what a step sampled (``GpuModelRunner.propose_draft_token_ids``) and hands
the drafts to the request's next step (``Scheduler.update_draft_token_ids``, ``vllm/v1/core/sched/scheduler.py``),
so the first step with drafts verifies output positions 1..k."""


def walk(proposals: Sequence[NDArray[np.float64]], k: int, start: int = FIRST_DRAFTED_POSITION) -> SpecDecodeCounts:
    """Expected counters over one sequence of ``len(proposals)`` output positions.

    ``proposals[t]`` holds the conditional acceptance probabilities b_1..b_m (m <= k is used) of the tokens a
    step starting at position t would propose; an empty array means no proposal. The first step starts at
    ``start`` (positions before it were produced without verification: the prefill's token).
    """
    return walk_with_steps(proposals, k, start)[0]


def walk_with_steps(
    proposals: Sequence[NDArray[np.float64]], k: int, start: int = FIRST_DRAFTED_POSITION
) -> tuple[SpecDecodeCounts, float]:
    """:func:`walk`'s counters and the expected number of decode steps (sum_t pi(t), the prefill's not counted):
    with ``num_drafts`` it gives the share of steps that drafted -- a lookup's match rate, which vLLM's counters
    do not carry."""
    n_pos = len(proposals)
    pi = np.zeros(max(n_pos, start) + k + 2)
    pi[start] = 1.0
    drafts = draft_tokens = steps = 0.0
    per_pos = np.zeros(k)
    for t in range(n_pos):
        w = pi[t]
        if w <= 0.0:
            continue
        steps += w
        b = np.asarray(proposals[t][:k], dtype=np.float64)
        m = len(b)
        if m == 0:
            pi[t + 1] += w
            continue
        reach = np.cumprod(b)  # P(acc >= i), i = 1..m
        drafts += w
        draft_tokens += w * m
        per_pos[:m] += w * reach
        p_exact = np.empty(m + 1)  # P(acc = n), n = 0..m
        p_exact[0] = 1.0 - reach[0]
        p_exact[1:m] = reach[:-1] - reach[1:]
        p_exact[m] = reach[-1]
        pi[t + 1 : t + m + 2] += w * p_exact
    counts = SpecDecodeCounts(drafts, draft_tokens, float(per_pos.sum()), tuple(float(x) for x in per_pos))
    return counts, steps


def walk_model_draft(
    accept: NDArray[np.float64], n_start: int, k: int, start: int = FIRST_DRAFTED_POSITION
) -> SpecDecodeCounts:
    """A draft model always proposes k tokens: proposals at t are accept[t : t + k] (``accept`` must extend k
    positions past the ``n_start`` positions where steps may start)."""
    if len(accept) < n_start + k:
        raise ValueError(f"accept has {len(accept)} positions; {n_start + k} needed for k={k}")
    return walk(model_draft_proposals(accept, n_start, k), k, start)


def model_draft_proposals(accept: NDArray[np.float64], n_start: int, k: int) -> list[NDArray[np.float64]]:
    """A draft model's proposals: a step starting at t drafts k tokens with acceptance accept[t : t + k]."""
    return [accept[t : t + k] for t in range(n_start)]
