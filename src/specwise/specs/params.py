"""Parameter counts of the building blocks of decoder-only transformers.

Shapes follow the Hugging Face ``transformers`` modelling files of each family (``LlamaAttention``,
``Qwen2Attention`` with q/k/v bias, ``Qwen3Attention`` with q/k RMSNorm, ``Gemma2DecoderLayer``
with four norms, ``DeepseekV3Attention`` for MLA, ``GptOssExperts`` with biases and attention
sinks) and are checked against the published totals in the catalog (tests/specs/test_params_golden.py).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class BlockParams:
    """Parameters of one block, split into linear weights (quantizable) and small vectors."""

    linear: int = 0
    other: int = 0

    def __add__(self, other: BlockParams) -> BlockParams:
        return BlockParams(self.linear + other.linear, self.other + other.other)

    def times(self, n: int) -> BlockParams:
        return BlockParams(self.linear * n, self.other * n)


def gqa_attention(
    hidden_in: int,
    hidden_out: int,
    num_heads: int,
    num_kv_heads: int,
    head_dim: int,
    *,
    qkv_bias: bool = False,
    o_bias: bool = False,
    qk_norm: bool = False,
    sinks: bool = False,
) -> BlockParams:
    """q/k/v/o projections of multi-head or grouped-query attention."""
    q_out = num_heads * head_dim
    kv_out = num_kv_heads * head_dim
    linear = hidden_in * (q_out + 2 * kv_out) + q_out * hidden_out
    if qkv_bias:
        linear += q_out + 2 * kv_out
    if o_bias:
        linear += hidden_out
    other = (2 * head_dim if qk_norm else 0) + (num_heads if sinks else 0)
    return BlockParams(linear, other)


def mla_attention(
    hidden: int,
    num_heads: int,
    *,
    q_lora_rank: int | None,
    kv_lora_rank: int,
    qk_nope_head_dim: int,
    qk_rope_head_dim: int,
    v_head_dim: int,
) -> BlockParams:
    """Multi-head latent attention (DeepSeek-V2/V3, ``DeepseekV3Attention``)."""
    qk_head_dim = qk_nope_head_dim + qk_rope_head_dim
    other = kv_lora_rank  # kv_a_layernorm
    if q_lora_rank:
        q = hidden * q_lora_rank + q_lora_rank * num_heads * qk_head_dim
        other += q_lora_rank  # q_a_layernorm
    else:
        q = hidden * num_heads * qk_head_dim
    kv_a = hidden * (kv_lora_rank + qk_rope_head_dim)
    kv_b = kv_lora_rank * num_heads * (qk_nope_head_dim + v_head_dim)
    o = num_heads * v_head_dim * hidden
    return BlockParams(q + kv_a + kv_b + o, other)


def gated_mlp(hidden: int, intermediate: int, *, bias: bool = False) -> int:
    """gate, up and down projections (SwiGLU / GeGLU)."""
    params = 3 * hidden * intermediate
    if bias:
        params += 2 * intermediate + hidden
    return params


def vit_encoder(
    hidden: int, intermediate: int, layers: int, patch_size: int, image_size: int, channels: int = 3
) -> int:
    """A SigLIP-style vision tower: patch embedding, learned positions, pre-norm ViT layers."""
    per_layer = 4 * (hidden * hidden + hidden) + 2 * hidden * intermediate + intermediate + hidden + 4 * hidden
    patches = (image_size // patch_size) ** 2
    embeddings = channels * patch_size * patch_size * hidden + hidden + patches * hidden
    return layers * per_layer + embeddings + 2 * hidden
