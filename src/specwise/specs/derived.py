"""Specs derived from another spec: a DeepSeek-style MTP module used as a speculative draft."""

from __future__ import annotations

from dataclasses import replace

from specwise.errors import SpecwiseError
from specwise.specs.model import AttentionSpec, ModelSpec, ParamBreakdown


def mtp_draft_spec(target: ModelSpec) -> ModelSpec:
    """The target's multi-token-prediction layers as a draft (vLLM ``method: "mtp"``).

    Each MTP module (``vllm/model_executor/models/deepseek_mtp.py``) is one decoder layer of the
    target's kind (MoE for DeepSeek-V3) plus ``enorm``/``hnorm``, an ``eh_proj`` (2H -> H), and its
    own embedding and LM head (``shared_head``), as the checkpoint stores them. Per-layer counts are
    taken from the target's own breakdown, so the MTP draft is exactly one of its layers.
    """
    if target.mtp_layers <= 0:
        raise SpecwiseError(f"{target.name} has no MTP layers; use a draft model, EAGLE head or ngram instead")
    n = target.mtp_layers
    layers = target.num_layers
    p = target.params
    moe_layers = target.moe.moe_layers if target.moe else 0
    per_moe = (lambda x: x // moe_layers) if moe_layers else (lambda x: 0)
    hidden = target.hidden_size
    attention_per_layer = p.attention // layers
    other_per_layer = (p.norms_and_other - hidden) // layers
    embedding = target.vocab_size * hidden
    params = ParamBreakdown(
        embedding=n * embedding,
        lm_head=n * embedding,
        attention=n * attention_per_layer,
        mlp=n * 2 * hidden * hidden if moe_layers else n * (p.mlp // layers + 2 * hidden * hidden),
        experts=n * per_moe(p.experts),
        shared_experts=n * per_moe(p.shared_experts),
        router=n * per_moe(p.router),
        norms_and_other=n * (other_per_layer + 3 * hidden),
        expert_active_fraction=p.expert_active_fraction,
    )
    attention = AttentionSpec(
        kind=target.attention.kind,
        num_heads=target.attention.num_heads,
        num_kv_heads=target.attention.num_kv_heads,
        head_dim=target.attention.head_dim,
        layer_windows=(None,) * n,
        kv_lora_rank=target.attention.kv_lora_rank,
        qk_rope_head_dim=target.attention.qk_rope_head_dim,
    )
    moe = replace(target.moe, moe_layers=n) if target.moe else None
    return replace(
        target,
        name=f"{target.name} (MTP)",
        source=f"mtp-of:{target.name}",
        attention=attention,
        params=params,
        moe=moe,
        mtp_layers=0,
        draft_head="mtp",
        file_weight_bytes=None,
        notes=("the target's own MTP layers (vLLM method 'mtp')",),
    )


def derived_eagle_head(target: ModelSpec, kind: str = "eagle3") -> ModelSpec:
    """An EAGLE / EAGLE-3 head *shaped like* one trained for ``target``, for when its checkpoint's config is not at
    hand (``vllm/model_executor/models/llama_eagle3.py``): one Llama decoder layer at the target's hidden size and
    attention layout, a 32,000-token draft vocabulary (EAGLE-3) and, as an ASSUMPTION, an MLP as wide as the target's
    active MLP (for an MoE target: expert width x experts per token). Its cost is dominated by the per-pass floor,
    not by these sizes; every use says the head was derived."""
    from specwise.specs.hf_config import spec_from_hf_config

    a = target.attention
    if a.kind != "gqa":
        raise SpecwiseError(f"{target.name}: no derived EAGLE head for {a.kind} attention")
    moe = target.moe
    width = (
        moe.expert_intermediate_size * moe.experts_per_token
        if moe
        else target.params.mlp // (3 * target.num_layers * target.hidden_size)
    )
    config = {
        "architectures": ["LlamaForCausalLMEagle3" if kind == "eagle3" else "EagleLlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": target.hidden_size,
        "intermediate_size": max(1, width),
        "num_hidden_layers": 1,
        "num_attention_heads": a.num_heads,
        "num_key_value_heads": a.num_kv_heads,
        "head_dim": a.head_dim,
        "vocab_size": target.vocab_size,
        "max_position_embeddings": target.max_position_embeddings,
        "torch_dtype": "bfloat16",
    }
    if kind == "eagle3":
        config["draft_vocab_size"] = min(32000, target.vocab_size)
    spec = spec_from_hf_config(config, name=f"{kind} head derived for {target.name}", source=f"derived:{target.name}")
    return replace(spec, notes=(*spec.notes, "derived EAGLE head shape (its checkpoint's config was not available)"))
