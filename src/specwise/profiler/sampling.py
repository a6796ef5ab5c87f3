"""Logits -> sampling distributions in torch: temperature, then top-k and top-p (vLLM's order), per row.

Temperature only rescales logits, so every (T, top-k, top-p) setting is computed from one forward pass.
"""

from __future__ import annotations

from typing import Any

import torch


def probs(logits: torch.Tensor, temperature: float, top_k: int = 0, top_p: float = 1.0) -> torch.Tensor:
    """Rows of float32 probabilities. T = 0 -> one-hot argmax (greedy)."""
    x = logits.float()
    if temperature == 0:
        out = torch.zeros_like(x)
        out.scatter_(-1, x.argmax(dim=-1, keepdim=True), 1.0)
        return out
    x = x / temperature
    if top_k > 0 and top_k < x.shape[-1]:
        kth = torch.topk(x, top_k, dim=-1).values[..., -1:]
        x = x.masked_fill(x < kth, float("-inf"))
    p = torch.softmax(x, dim=-1)
    if top_p < 1.0:
        sorted_p, idx = torch.sort(p, dim=-1, descending=True)
        cum = sorted_p.cumsum(dim=-1)
        drop_sorted = (cum - sorted_p) > top_p  # keep the smallest prefix whose mass reaches top_p
        drop = torch.zeros_like(drop_sorted).scatter(-1, idx, drop_sorted)
        p = p.masked_fill(drop, 0.0)
        p = p / p.sum(dim=-1, keepdim=True)
    return p


def sample(p: torch.Tensor, generator: Any) -> int:
    return int(torch.multinomial(p, 1, generator=generator).item())
