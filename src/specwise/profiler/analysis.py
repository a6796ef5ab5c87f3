"""From one prompt's target/draft distributions to vLLM's counters at every k (torch in, numpy out)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from numpy.typing import NDArray

from specwise.profiler import ngram
from specwise.profiler.counting import walk_with_steps
from specwise.profiler.suffix import SuffixIndex


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


def counts_by_k(proposals: Sequence[NDArray[np.float64]], k_values: Sequence[int]) -> NDArray[np.float64]:
    """(len(k_values), 3 + max k + 1) rows of [drafts, draft_tokens, accepted, accepted_per_pos..., steps]."""
    k_max = max(k_values)
    out = np.zeros((len(k_values), 3 + k_max + 1))
    for row, k in enumerate(k_values):
        c, steps = walk_with_steps(proposals, k)
        out[row, : 3 + k] = c.as_row()
        out[row, -1] = steps
    return out


def lookup_token_proposals(
    method: str,
    prompt: Sequence[int],
    continuation: Sequence[int],
    n_start: int,
    k_max: int,
    lookup_min: int,
    lookup_max: int,
    history: SuffixIndex | None = None,
    suffix_max_depth: int = 24,
    suffix_min_token_prob: float = 0.1,
) -> list[list[int]]:
    """Tokens the n-gram / suffix proposer drafts at each start position along the continuation."""
    seq = list(prompt) + list(continuation)
    p_len = len(prompt)
    out: list[list[int]] = []
    local = SuffixIndex(suffix_max_depth) if method == "suffix" else None
    indexed = 0
    for t in range(n_start):
        context = seq[: p_len + t]
        if method == "ngram":
            out.append(ngram.propose(context, k_max, lookup_min, lookup_max))
            continue
        assert local is not None
        local.add(context, start=indexed)
        indexed = len(context)
        proposal = local.propose(context, k_max, suffix_min_token_prob)
        if not proposal and history is not None:
            proposal = history.propose(context, k_max, suffix_min_token_prob)
        out.append(proposal)
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
