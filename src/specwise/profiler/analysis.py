"""From one prompt's target/draft distributions to vLLM's counters at every k (torch in, numpy out)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import torch
from numpy.typing import NDArray

from specwise.profiler import ngram
from specwise.profiler.counting import walk_with_steps
from specwise.profiler.suffix import MAX_DEPTH, MIN_TOKEN_PROB, SuffixTree, speculate


def draft_accept_probs(
    p: torch.Tensor, q: torch.Tensor, drafting: str, draft_logits: torch.Tensor
) -> NDArray[np.float64]:
    """Per position: greedy = p(argmax of the draft's logits); probabilistic = sum_x min(p(x), q(x))."""
    if drafting == "greedy":
        idx = draft_logits.argmax(dim=-1)
        return p.gather(-1, idx[:, None]).squeeze(-1).double().numpy()
    return torch.minimum(p, q).sum(dim=-1).double().clamp(max=1.0).numpy()


def realized_accept_probs(
    p: torch.Tensor,
    q: torch.Tensor,
    drafting: str,
    draft_logits: torch.Tensor,
    tokens: Sequence[int],
    expected: NDArray[np.float64] | None = None,
) -> NDArray[np.float64]:
    """Per position i of an output path x sampled from p: P(the draft token was accepted | x_i).

    In the speculative sampling loop P(x_i = x, accepted) = min(p, q)(x) and P(x_i = x, rejected) =
    max(p - q, 0)(x), so the output is distributed as p and, given the output, each drafted position is an
    independent coin with probability min(1, q(x_i) / p(x_i)) (greedy drafting: q one-hot on the draft's argmax,
    so the indicator x_i == argmax). Walking the counters over these coins along a path sampled from p gives the
    loop's expected counters exactly. Walking the per-context means sum_x min(p, q) instead (``draft_accept_probs``)
    has the same mean per token but drops the correlation between a rejected (surprising) token and a hard next
    context, and over-predicts acceptance at T > 0. Where the profiled p gives x_i no mass (a near-tie that the
    batched sampler broke the other way) the per-context mean is used (``expected``: ``draft_accept_probs``
    of the same rows when the caller has it already).
    """
    x = torch.as_tensor(list(tokens)[: p.shape[0]], dtype=torch.long)[:, None]
    px = p.gather(-1, x).squeeze(-1).double()
    if drafting == "greedy":
        coin = (draft_logits.argmax(dim=-1) == x.squeeze(-1)).double()
    else:
        qx = q.gather(-1, x).squeeze(-1).double()
        coin = (qx / px.clamp(min=1e-300)).clamp(max=1.0)
    if expected is None:
        expected = draft_accept_probs(p, q, drafting, draft_logits)
    return torch.where(px > 0, coin, torch.as_tensor(expected[: px.shape[0]])).numpy()


def counts_by_k(
    proposals: Sequence[NDArray[np.float64]] | Mapping[int, Sequence[NDArray[np.float64]]], k_values: Sequence[int]
) -> NDArray[np.float64]:
    """(len(k_values), 3 + max k + 1) rows of [drafts, draft_tokens, accepted, accepted_per_pos..., steps].
    ``proposals``: one list for every k (each step drafts its first k), or one per k (a suffix draft at k is not
    the first k tokens of the one at a larger k: :func:`specwise.profiler.suffix.best_draft`)."""
    k_max = max(k_values)
    out = np.zeros((len(k_values), 3 + k_max + 1))
    for row, k in enumerate(k_values):
        c, steps = walk_with_steps(proposals[k] if isinstance(proposals, Mapping) else proposals, k)
        out[row, : 3 + k] = c.as_row()
        out[row, -1] = steps
    return out


def lookup_token_proposals(
    method: str,
    prompt: Sequence[int],
    continuation: Sequence[int],
    n_start: int,
    k_values: Sequence[int],
    lookup_min: int,
    lookup_max: int,
    history: SuffixTree | None = None,
    suffix_max_depth: int = MAX_DEPTH,
    suffix_min_token_prob: float = MIN_TOKEN_PROB,
) -> dict[int, list[list[int]]]:
    """Per k: the tokens the n-gram / suffix proposer drafts at each start position along the continuation (vLLM's
    proposer with ``num_speculative_tokens = k``). ``history``: suffix decoding's global tree of earlier outputs;
    this continuation joins it as it is walked (vLLM adds each output as it is generated), all of it by the end."""
    seq = list(prompt) + list(continuation)
    p_len = len(prompt)
    k_max = max(k_values)
    if method == "ngram":
        same = [ngram.propose(seq[: p_len + t], k_max, lookup_min, lookup_max) for t in range(n_start)]
        return {k: same for k in k_values}
    out: dict[int, list[list[int]]] = {k: [] for k in k_values}
    local = SuffixTree(suffix_max_depth)
    local.extend(local.new_sequence(), prompt)
    own = history.new_sequence() if history is not None else 0
    for t in range(n_start):
        if t > 0:
            local.append(0, seq[p_len + t - 1])
            if history is not None:
                history.append(own, seq[p_len + t - 1])
        context = seq[max(0, p_len + t - suffix_max_depth) : p_len + t]
        mine = local.drafts(context, k_max, suffix_min_token_prob)
        others = history.drafts(context, k_max, suffix_min_token_prob) if history is not None else []
        for k in k_values:
            out[k].append(list(speculate(mine, others, k)))
    if history is not None:
        history.extend(own, continuation[max(0, n_start - 1) :])
    return out


def lookup_proposals(
    tokens: Sequence[Sequence[int]], p: torch.Tensor, n_start: int, path: Sequence[int] | None = None
) -> list[NDArray[np.float64]]:
    """b_j = p_{t+j}(d_j): the target's probability of each drafted token (one-hot q) along the continuation;
    proposals running past the profiled continuation are cut there. With ``path`` (the continuation, sampled
    from p) the realized coins 1[x_{t+j} == d_j] are used instead (see ``realized_accept_probs``)."""
    out = []
    rows = p.shape[0]
    for t in range(n_start):
        d = list(tokens[t])[: max(0, rows - t)]
        if not d:
            out.append(np.zeros(0))
            continue
        idx = torch.arange(t, t + len(d))
        expected = p[idx, torch.tensor(d)].double()
        if path is not None:
            x = torch.as_tensor(list(path[t : t + len(d)]), dtype=torch.long)
            hit = (x == torch.tensor(d)).double()
            expected = torch.where(p[idx, x] > 0, hit, expected)
        out.append(expected.numpy())
    return out
