"""The proof loop's arithmetic on fixed, peaked, large-vocabulary distributions: stand-in models whose logits at
each position do not depend on the tokens (so every position's law is known exactly), 8,192 tokens. The loop's
acceptance must match the counter walk over sum_x min(p, q) per position, its tokens must have the target's
marginals (also on the tokens the draft over-proposes), and a surprising token must not make the next one more
surprising (the draws are independent)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import torch

import specwise.profiler.specloop as specloop
from specwise.profiler.counting import model_draft_proposals, walk
from specwise.profiler.sampling import probs

VOCAB, POSITIONS, K, RUNS = 8192, 40, 3, 200
PROMPT = [1, 2, 3]


class _Cache:
    def __init__(self) -> None:
        self.length = 0

    def crop(self, count: int) -> None:
        assert count < 0  # the loop only ever drops a tail
        self.length += count


class _FixedModel:
    """Logits for sequence index s: row s - len(PROMPT) + 1 of ``logits`` (clamped), whatever the tokens."""

    def __init__(self, logits: torch.Tensor) -> None:
        self.logits = logits

    def __call__(self, input_ids: torch.Tensor, past_key_values: _Cache, use_cache: bool) -> Any:
        start, n = past_key_values.length, input_ids.shape[1]
        past_key_values.length += n
        rows = [min(max(s - len(PROMPT) + 1, 0), self.logits.shape[0] - 1) for s in range(start, start + n)]
        return SimpleNamespace(logits=self.logits[rows][None])


@pytest.mark.slow  # 200 runs of the loop over an 8,192-token vocabulary: ~1 min each; make test's slow tier
@pytest.mark.parametrize("drafting", ["probabilistic", "greedy"])
def test_loop_on_fixed_peaked_distributions(drafting: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(specloop, "DynamicCache", _Cache)
    g = torch.Generator().manual_seed(0)
    rows = POSITIONS + K + 2
    target_logits = 3.0 * torch.randn(rows, VOCAB, generator=g)  # peaked: top token ~0.3-0.9 of the mass
    draft_logits = target_logits + 1.5 * torch.randn(rows, VOCAB, generator=g)
    p, q = probs(target_logits, 1.0).double(), probs(draft_logits, 1.0).double()
    if drafting == "probabilistic":
        accept = torch.minimum(p, q).sum(-1).numpy()
    else:
        accept = p.gather(-1, draft_logits.argmax(-1)[:, None]).squeeze(-1).numpy()
    expected = walk(model_draft_proposals(accept, POSITIONS, K), K)

    tokens = np.zeros((RUNS, POSITIONS), dtype=np.int64)
    rates = np.zeros(RUNS)
    acc = tok = 0.0
    for r in range(RUNS):
        res = specloop.speculative_generate(
            _FixedModel(target_logits), _FixedModel(draft_logits), PROMPT, POSITIONS, K, 1.0, drafting, seed=r
        )
        tokens[r] = res.output[:POSITIONS]
        acc, tok = acc + res.counts.accepted_tokens, tok + res.counts.draft_tokens
        rates[r] = res.counts.accepted_tokens / res.counts.draft_tokens
    # acceptance: the loop's counters against the walk (the loop drafts past POSITIONS in its last step: a little
    # extra, so 4 standard errors plus that)
    assert acc / tok == pytest.approx(
        expected.accepted_tokens / expected.draft_tokens, abs=4 * rates.std() / RUNS**0.5 + 0.01
    )
    # marginals: how often each position's output is the target's top token, summed over positions
    top = p[:POSITIONS].argmax(-1).numpy()
    p_top = p[:POSITIONS].max(-1).values.numpy()
    hit = tokens == top[None, :]
    z = (hit.mean(axis=0) - p_top).sum() / np.sqrt((p_top * (1 - p_top) / RUNS).sum())
    assert abs(z) < 4, z
    # where the draft over-proposes (q > p) the output must still follow p there (a loop that resamples
    # rejections from p instead of the residual max(p - q, 0) lands there (2 - beta) times too often)
    over = (q[:POSITIONS] > p[:POSITIONS]).numpy()
    p_over = (p[:POSITIONS].numpy() * over).sum(-1)
    in_over = over[np.arange(POSITIONS)[None, :], tokens]
    z_over = (in_over.mean(axis=0) - p_over).sum() / np.sqrt((p_over * (1 - p_over) / RUNS).sum())
    assert abs(z_over) < 4, z_over
    # independence: a miss at t and a miss at t + 1 together as often as the product says
    miss = ~hit
    both = (miss[:, :-1] & miss[:, 1:]).mean(axis=0)
    product = (1 - p_top[:-1]) * (1 - p_top[1:])
    var = product * (1 - product) / RUNS
    z_pair = (both - product).sum() / np.sqrt(var.sum())
    assert abs(z_pair) < 4, z_pair
