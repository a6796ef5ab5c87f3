"""Forward passes (torch): batched continuation sampling with a KV cache, and teacher-forced logits.

Our own sampling loop rather than ``generate()``: a model's ``generation_config.json`` may carry repetition
penalties or default top-k/top-p that would silently change the distribution being profiled. EOS is ignored
(as ``ignore_eos`` in a benchmark), so every continuation has exactly the requested length.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch

from specwise.profiler.sampling import probs

# transformers 5.2x renames past_key_values -> cache (removal in 5.40, above the pinned range); the old name
# works across the whole range, so keep it and keep the logs clean.
warnings.filterwarnings("ignore", message=".*past_key_values.*deprecated", category=FutureWarning)


def sample_continuations(
    model: Any,
    prompts: Sequence[Sequence[int]],
    n_tokens: int,
    temperature: float,
    seed: int,
    batch_size: int = 8,
    top_k: int = 0,
    top_p: float = 1.0,
    pad_id: int = 0,
    on_batch: Callable[[int], None] | None = None,
) -> list[list[int]]:
    """``n_tokens`` target tokens after each prompt; left-padded batches with explicit positions (so padding
    does not shift RoPE positions). Seeded per batch: results do not depend on what ran before."""
    out: list[list[int]] = []
    for _, tokens, _ in sample_batches(model, prompts, n_tokens, temperature, seed, batch_size, top_k, top_p, pad_id):
        out.extend(tokens)
        if on_batch:
            on_batch(len(tokens))
    return out


@torch.no_grad()
def sample_batches(
    model: Any,
    prompts: Sequence[Sequence[int]],
    n_tokens: int,
    temperature: float,
    seed: int,
    batch_size: int = 8,
    top_k: int = 0,
    top_p: float = 1.0,
    pad_id: int = 0,
    keep_logits: bool = False,
) -> Iterator[tuple[int, list[list[int]], torch.Tensor | None]]:
    """Per batch of prompts: (index of its first prompt, the sampled continuations, and with ``keep_logits`` the
    logits every token was sampled from, ``[batch, n_tokens, vocab]`` float32 -- row ``[b, t]`` is the model's
    prediction of ``continuations[b][t]`` given the prompt and ``continuations[b][:t]``, what
    :func:`continuation_logits` computes again in a teacher-forced pass, up to float rounding (the KV-cached steps
    sum in another order; tests/profiler/test_kept_logits.py)."""
    for b0 in range(0, len(prompts), batch_size):
        batch = [list(p) for p in prompts[b0 : b0 + batch_size]]
        gen = torch.Generator().manual_seed(seed * 1_000_003 + b0)
        width = max(len(p) for p in batch)
        ids = torch.tensor([[pad_id] * (width - len(p)) + p for p in batch])
        mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in batch])
        pos = (mask.cumsum(dim=1) - 1).clamp(min=0)
        res = model(input_ids=ids, attention_mask=mask, position_ids=pos, use_cache=True, logits_to_keep=1)
        cache, logits = res.past_key_values, res.logits[:, -1, :]
        next_pos = pos[:, -1:] + 1
        tokens: list[list[int]] = [[] for _ in batch]
        kept = torch.empty((len(batch), n_tokens, logits.shape[-1]), dtype=torch.float32) if keep_logits else None
        for step in range(n_tokens):
            if kept is not None:
                kept[:, step].copy_(logits)
            p = probs(logits, temperature, top_k, top_p)
            nxt = p.argmax(dim=-1) if temperature == 0 else torch.multinomial(p, 1, generator=gen).squeeze(-1)
            for row, t in enumerate(nxt.tolist()):
                tokens[row].append(int(t))
            if step == n_tokens - 1:
                break
            mask = torch.cat([mask, torch.ones(len(batch), 1, dtype=mask.dtype)], dim=1)
            res = model(
                input_ids=nxt[:, None],
                attention_mask=mask,
                position_ids=next_pos,
                past_key_values=cache,
                use_cache=True,
                logits_to_keep=1,
            )
            cache, logits = res.past_key_values, res.logits[:, -1, :]
            next_pos = next_pos + 1
        yield b0, tokens, kept


@torch.no_grad()
def continuation_logits(model: Any, prompt: Sequence[int], continuation: Sequence[int]) -> torch.Tensor:
    """[len(continuation), vocab] logits: row t is the model's prediction of ``continuation[t]`` given the prompt
    and ``continuation[:t]`` (one teacher-forced pass)."""
    ids = torch.tensor([list(prompt) + list(continuation)])
    res = model(input_ids=ids, use_cache=False, logits_to_keep=len(continuation) + 1)
    logits: torch.Tensor = res.logits[0, :-1, :].float()
    return logits


def shared_vocab(target_logits: torch.Tensor, draft_logits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Both models' logits cut to their common vocabulary (padding rows past it are never sampled)."""
    vocab = min(target_logits.shape[-1], draft_logits.shape[-1])
    return target_logits[:, :vocab], draft_logits[:, :vocab]
