"""The proof loop's output must be distributed as the target's own samples (Leviathan et al. 2023, Theorem 1):
tiny random Qwen2 models (real transformers code and KV caches, 48-token vocabulary), the loop's token at each of
6 positions against plain target sampling, two-sample chi-square."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from specwise.profiler.sampling import probs
from specwise.profiler.specloop import speculative_generate
from tests.profiler.tiny_qwen2 import tiny_qwen2

VOCAB, TOKENS, PROMPT = 48, 6, [3, 7, 11, 2]


def _chi2(a: np.ndarray, b: np.ndarray) -> tuple[float, int]:
    keep = (a + b) > 0
    table = np.stack([a[keep], b[keep]]).astype(np.float64)
    expected = table.sum(axis=1, keepdims=True) * table.sum(axis=0, keepdims=True) / table.sum()
    return float(((table - expected) ** 2 / expected).sum()), int(keep.sum()) - 1


@pytest.mark.slow  # ~1 min: 2 x 1,500 generations
@pytest.mark.parametrize("drafting", ["probabilistic", "greedy"])
@torch.no_grad()
def test_loop_output_is_distributed_as_target_samples(drafting: str) -> None:
    # peaked distributions, so draft and target disagree where it matters
    target, draft = tiny_qwen2(0, 2, VOCAB, lm_head_scale=8.0), tiny_qwen2(1, 1, VOCAB, lm_head_scale=8.0)
    n = 1500
    loop = np.array(
        [
            list(speculative_generate(target, draft, PROMPT, TOKENS, 3, 1.0, drafting, seed=s).output[:TOKENS])
            for s in range(n)
        ]
    )
    base = np.zeros((n, TOKENS), dtype=np.int64)
    for s in range(n):
        gen, seq = torch.Generator().manual_seed(10**6 + s), list(PROMPT)
        for j in range(TOKENS):
            p = probs(target(input_ids=torch.tensor([seq])).logits[0, -1:], 1.0)[0]
            seq.append(int(torch.multinomial(p, 1, generator=gen)))
            base[s, j] = seq[-1]
    for j in range(TOKENS):
        stat, dof = _chi2(np.bincount(loop[:, j], minlength=VOCAB), np.bincount(base[:, j], minlength=VOCAB))
        assert stat < dof + 4 * np.sqrt(2 * dof), (j, stat, dof)  # ~p < 1e-4 for the dof here
