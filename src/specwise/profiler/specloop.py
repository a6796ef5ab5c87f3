"""The proof: a real speculative sampling loop on the same pair (Leviathan et al. 2023, Algorithm 1; Chen et al.
2023; the step follows gpt-fast's ``speculative_decode``), with vLLM's counters kept as it runs.

Per step: the draft proposes k tokens (its argmax under greedy drafting, a sample from q under probabilistic
drafting); the target scores them in one pass; token i is accepted with probability min(1, p(x)/q(x)) (q one-hot
under greedy drafting, so p(x)); on the first rejection a token is drawn from norm(max(p - q, 0)); if all k are
accepted the bonus token comes from the target's next distribution. At T = 0 acceptance is an exact argmax match.
The output is distributed as the target's own samples, so its contexts are what the profiler's are. As in vLLM,
output token 0 comes from the prefill step and the first verification covers positions 1..k.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from transformers import DynamicCache

from specwise.acceptance.counts import SpecDecodeCounts
from specwise.profiler import ngram
from specwise.profiler.sampling import probs, sample

# transformers 5.2x renames past_key_values -> cache (removal in 5.40, above the pinned range); the old name
# works across the whole range, so keep it and keep the logs clean.
warnings.filterwarnings("ignore", message=".*past_key_values.*deprecated", category=FutureWarning)


@dataclass(frozen=True)
class LoopResult:
    counts: SpecDecodeCounts
    tokens: int
    wall_s: float
    output: tuple[int, ...] = ()  # the generated tokens (after the prompt)


def _pick(p_row: torch.Tensor, temperature: float, gen: torch.Generator) -> int:
    return int(p_row.argmax().item()) if temperature == 0 else sample(p_row, gen)


class _Runner:
    """A model with a KV cache that always holds every token of ``seq`` but the last few it has not seen."""

    def __init__(self, model: Any) -> None:
        self.model, self.cache, self.seen = model, DynamicCache(), 0

    @torch.no_grad()
    def feed(self, seq: Sequence[int]) -> torch.Tensor:
        """Run the unseen tail of ``seq``; return logits for every fed position."""
        ids = torch.tensor([list(seq[self.seen :])])
        out = self.model(input_ids=ids, past_key_values=self.cache, use_cache=True)
        self.seen = len(seq)
        logits: torch.Tensor = out.logits[0].float()
        return logits

    def rewind(self, length: int) -> None:
        if length < self.seen:
            self.cache.crop(length - self.seen)  # transformers 5: a negative count removes that many tokens
        self.seen = length


@dataclass(frozen=True)
class _Sampling:
    """How every distribution in one loop run is formed and sampled."""

    temperature: float
    drafting: str
    top_k: int
    top_p: float
    gen: torch.Generator


def _draft_proposal(dft: _Runner, seq: list[int], k: int, s: _Sampling) -> tuple[list[int], list[torch.Tensor | None]]:
    """k tokens from the draft model after ``seq``, each with the q it was drawn from (None: one-hot, its argmax)."""
    proposal: list[int] = []
    qs: list[torch.Tensor | None] = []
    ctx = list(seq)
    for _ in range(k):
        logits = dft.feed(ctx)[-1]
        if s.drafting == "greedy" or s.temperature == 0:
            x = int(logits.argmax().item())
            qs.append(None)  # one-hot
        else:
            q_draft = probs(logits[None], s.temperature, s.top_k, s.top_p)[0]
            x = sample(q_draft, s.gen)
            qs.append(q_draft)
        proposal.append(x)
        ctx.append(x)
    return proposal, qs


def _accepted(p: torch.Tensor, proposal: list[int], qs: list[torch.Tensor | None], s: _Sampling) -> int:
    """How many proposed tokens the target accepts: token i with probability min(1, p(x)/q(x)), in order, up to the
    first rejection; at T = 0 while they match the target's argmax."""
    n_acc = 0
    for i, x in enumerate(proposal):
        qi = qs[i]
        if s.temperature == 0:
            ok = int(p[i].argmax().item()) == x
        else:
            ratio = float(p[i, x]) if qi is None else min(1.0, float(p[i, x]) / max(float(qi[x]), 1e-30))
            ok = float(torch.rand(1, generator=s.gen)) < ratio
        if not ok:
            break
        n_acc += 1
    return n_acc


def _next_token(p: torch.Tensor, proposal: list[int], qs: list[torch.Tensor | None], n_acc: int, s: _Sampling) -> int:
    """The token after the accepted ones: from norm(max(p - q, 0)) at a rejection, else the target's bonus token."""
    if n_acc == len(proposal):
        return _pick(p[len(proposal)], s.temperature, s.gen)
    if s.temperature == 0:
        return int(p[n_acc].argmax().item())
    q_rej = qs[n_acc]
    residual = p[n_acc].clone()
    if q_rej is None:
        residual[proposal[n_acc]] = 0.0
    else:
        residual = (residual - q_rej).clamp(min=0.0)
    return sample(residual / residual.sum(), s.gen) if residual.sum() > 0 else _pick(p[n_acc], s.temperature, s.gen)


@torch.no_grad()
def speculative_generate(
    target: Any,
    draft: Any | None,
    prompt: Sequence[int],
    n_tokens: int,
    k: int,
    temperature: float,
    drafting: str,
    seed: int,
    lookup: tuple[int, int] = (5, 5),
    top_k: int = 0,
    top_p: float = 1.0,
) -> LoopResult:
    """Generate at least ``n_tokens`` after ``prompt``; ``draft=None`` drafts by n-gram lookup (vLLM semantics)."""
    s = _Sampling(temperature, drafting, top_k, top_p, torch.Generator().manual_seed(seed))
    t0 = time.perf_counter()
    seq = list(prompt)
    tgt = _Runner(target)
    # The prefill step: output token 0, no draft verified (vLLM drafts from a step's sampled token;
    # specwise.profiler.counting.FIRST_DRAFTED_POSITION).
    seq.append(_pick(probs(tgt.feed(seq)[-1:], temperature, top_k, top_p)[0], temperature, s.gen))
    dft = _Runner(draft) if draft is not None else None
    if dft is not None:
        dft.feed(seq[:-1])
    drafts = draft_tokens = accepted = 0
    per_pos = np.zeros(k)
    generated = 1
    while generated < n_tokens:
        base = len(seq)
        if dft is not None:
            proposal, qs = _draft_proposal(dft, seq, k, s)
        else:
            proposal = ngram.propose(seq, k, lookup[0], lookup[1])
            qs = [None] * len(proposal)
        p = probs(tgt.feed(seq + proposal)[-(len(proposal) + 1) :], temperature, top_k, top_p)
        n_acc = _accepted(p, proposal, qs, s)
        nxt = _next_token(p, proposal, qs, n_acc, s)
        if proposal:
            drafts += 1
            draft_tokens += len(proposal)
            accepted += n_acc
            per_pos[:n_acc] += 1
        seq.extend([*proposal[:n_acc], nxt])
        generated += n_acc + 1
        tgt.rewind(base + n_acc)
        if dft is not None:
            dft.rewind(min(dft.seen, base + n_acc))
    counts = SpecDecodeCounts(float(drafts), float(draft_tokens), float(accepted), tuple(float(x) for x in per_pos))
    return LoopResult(counts, generated, time.perf_counter() - t0, tuple(seq[len(prompt) :]))


@torch.no_grad()
def autoregressive_sample(
    target: Any, prompt: Sequence[int], n_tokens: int, temperature: float, seed: int
) -> tuple[int, ...]:
    """Plain decoding, one token per forward with a KV cache: ``n_tokens`` target samples after ``prompt``."""
    gen = torch.Generator().manual_seed(seed)
    runner = _Runner(target)
    seq = list(prompt)
    for _ in range(n_tokens):
        p = probs(runner.feed(seq)[-1:], temperature)[0]
        seq.append(_pick(p, temperature, gen))
    return tuple(seq[len(prompt) :])


def autoregressive_generate(target: Any, prompt: Sequence[int], n_tokens: int, temperature: float, seed: int) -> float:
    """Wall seconds for plain decoding of ``n_tokens`` (the baseline the loop's speedup is measured against)."""
    t0 = time.perf_counter()
    autoregressive_sample(target, prompt, n_tokens, temperature, seed)
    return time.perf_counter() - t0
