"""Tiny random Qwen2 models (real transformers code and KV caches) for the loop's tests."""

from __future__ import annotations

import torch
from transformers import Qwen2Config, Qwen2ForCausalLM


def tiny_qwen2(seed: int, layers: int, vocab: int, lm_head_scale: float = 1.0) -> Qwen2ForCausalLM:
    """``lm_head_scale`` > 1 makes the next-token distributions peaked."""
    torch.manual_seed(seed)
    cfg = Qwen2Config(
        vocab_size=vocab,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=256,
        tie_word_embeddings=False,
    )
    model = Qwen2ForCausalLM(cfg).eval()
    if lm_head_scale != 1.0:
        with torch.no_grad():
            model.lm_head.weight.mul_(lm_head_scale)
    return model
