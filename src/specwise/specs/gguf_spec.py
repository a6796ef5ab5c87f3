"""Build a :class:`ModelSpec` from a GGUF file's metadata and tensor table.

The GGUF keys (``{arch}.block_count``, ``{arch}.attention.head_count_kv``...; llama.cpp's
``gguf-py/gguf/constants.py``) are mapped onto the Hugging Face config fields, so both sources go
through one parser (:func:`spec_from_hf_config`). Parameter counts then come from the tensor
shapes themselves (exact), and the stored weight bytes from the tensor data section.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from specwise.errors import SpecwiseError
from specwise.specs.gguf import GgufFile, GgufTensorInfo, read_gguf
from specwise.specs.hf_config import spec_from_hf_config
from specwise.specs.model import ModelSpec, ParamBreakdown, TokenizerRef

# llama.cpp architecture name -> Hugging Face model_type.
GGUF_ARCHES: dict[str, str] = {
    "llama": "llama",
    "mistral": "mistral",
    "qwen2": "qwen2",
    "qwen3": "qwen3",
    "qwen2moe": "qwen2_moe",
    "qwen3moe": "qwen3_moe",
    "gemma2": "gemma2",
    "gemma3": "gemma3_text",
    "phi3": "phi3",
    "deepseek2": "deepseek_v3",
    "gpt-oss": "gpt_oss",
}
_ATTN = re.compile(r"\.attn_(q|k|v|output|qkv|q_a|q_b|kv_a_mqa|kv_b|k_b|v_b)\.(weight|bias)$")
_SPLIT = re.compile(r"^(?P<base>.*)-(?P<idx>\d{5})-of-(?P<count>\d{5})\.gguf$")


MAX_SPLITS = 10_000


def load_gguf_model(path: Path) -> ModelSpec:
    gguf = read_gguf(path)
    tensors = list(gguf.tensors)
    weight_bytes = gguf.tensor_data_bytes
    split_count = gguf.metadata.get("split.count", 1)
    if isinstance(split_count, int) and split_count > MAX_SPLITS:
        raise SpecwiseError(
            f"{path}: split.count = {split_count:,} shards is beyond any real GGUF (limit {MAX_SPLITS})"
        )
    if isinstance(split_count, int) and split_count > 1:
        for shard in _sibling_shards(path, split_count):
            other = read_gguf(shard)
            tensors.extend(other.tensors)
            weight_bytes += other.tensor_data_bytes
    return spec_from_gguf(gguf, tensors, weight_bytes)


def _sibling_shards(path: Path, count: int) -> list[Path]:
    m = _SPLIT.match(path.name)
    if not m:
        raise SpecwiseError(
            f"{path}: split GGUF ({count} parts) but the name is not '<base>-00001-of-{count:05d}.gguf'"
        )
    shards = [path.with_name(f"{m['base']}-{i:05d}-of-{count:05d}.gguf") for i in range(1, count + 1)]
    missing = [s.name for s in shards if not s.exists()]
    if missing:
        raise SpecwiseError(f"{path}: split GGUF is missing part(s): {', '.join(missing)}")
    return [s for s in shards if s != path]


def spec_from_gguf(gguf: GgufFile, tensors: list[GgufTensorInfo], weight_bytes: int) -> ModelSpec:
    md = gguf.metadata
    arch = md.get("general.architecture")
    if not isinstance(arch, str):
        raise SpecwiseError(f"{gguf.path}: GGUF metadata lacks 'general.architecture'")
    config = _hf_config_from_gguf(gguf, arch, {t.name for t in tensors})
    tokens = md.get("tokenizer.ggml.tokens")
    tokenizer = TokenizerRef(num_tokens=len(tokens) if isinstance(tokens, list) else None, gguf_path=gguf.path)
    name = md.get("general.name") if isinstance(md.get("general.name"), str) else Path(gguf.path).stem
    spec = spec_from_hf_config(
        config, name=str(name), source=f"gguf:{gguf.path}", tokenizer=tokenizer, where=f"{gguf.path} (GGUF metadata)"
    )
    params = _params_from_tensors(tensors, spec.params.expert_active_fraction)
    types = sorted({t.type_name for t in tensors if len(t.shape) >= 2})
    return replace(
        spec,
        params=params,
        file_weight_bytes=weight_bytes,
        stored_format=gguf_stored_format(md.get("general.file_type"), tensors),
        notes=(*spec.notes, f"GGUF weight types: {', '.join(types)}"),
    )


# llama.cpp's llama_ftype (general.file_type) -> its name; gguf-py's LlamaFileType without the MOSTLY_ prefix.
GGUF_FILE_TYPES: dict[int, str] = {
    0: "F32",
    1: "F16",
    2: "Q4_0",
    3: "Q4_1",
    7: "Q8_0",
    8: "Q5_0",
    9: "Q5_1",
    10: "Q2_K",
    11: "Q3_K_S",
    12: "Q3_K_M",
    13: "Q3_K_L",
    14: "Q4_K_S",
    15: "Q4_K_M",
    16: "Q5_K_S",
    17: "Q5_K_M",
    18: "Q6_K",
    19: "IQ2_XXS",
    20: "IQ2_XS",
    21: "Q2_K_S",
    22: "IQ3_XS",
    23: "IQ3_XXS",
    24: "IQ1_S",
    25: "IQ4_NL",
    26: "IQ3_S",
    27: "IQ3_M",
    28: "IQ2_S",
    29: "IQ2_M",
    30: "IQ4_XS",
    31: "IQ1_M",
    32: "BF16",
    36: "TQ1_0",
    37: "TQ2_0",
    38: "MXFP4_MOE",
    39: "NVFP4",
    40: "Q1_0",
}


def main_tensor_type(tensors: list[GgufTensorInfo]) -> str | None:
    """The ggml type holding the most elements among the weight matrices (tensors of two or more dimensions)."""
    elements: dict[str, int] = {}
    for t in tensors:
        if len(t.shape) >= 2:
            elements[t.type_name] = elements.get(t.type_name, 0) + t.n_elements
    return max(elements, key=lambda name: elements[name]) if elements else None


def gguf_stored_format(file_type: object, tensors: list[GgufTensorInfo]) -> str:
    """``GGUF <file type>`` from ``general.file_type`` (with the main tensor type when it names another), else
    ``GGUF <main tensor type>``: what the file holds, not the dtype it would be served in."""
    main = main_tensor_type(tensors)
    named = GGUF_FILE_TYPES.get(file_type) if isinstance(file_type, int) and not isinstance(file_type, bool) else None
    if named is None:
        return f"GGUF {main}" if main else "GGUF"
    return f"GGUF {named}" if main in (None, named) else f"GGUF {named} (mostly {main})"


def _get(md: dict[str, Any], gguf: GgufFile, key: str, required: bool = True) -> Any:
    value = md.get(key)
    if isinstance(value, list) and value and all(isinstance(v, int) for v in value):
        value = max(value)  # per-layer arrays (head_count_kv, feed_forward_length): the largest
    if value is None and required:
        raise SpecwiseError(f"{gguf.path}: GGUF metadata lacks required key {key!r}")
    return value


def _hf_config_from_gguf(gguf: GgufFile, arch: str, tensor_names: set[str]) -> dict[str, Any]:
    md = gguf.metadata
    a = f"{arch}."
    model_type = GGUF_ARCHES.get(arch, arch)
    heads = _get(md, gguf, a + "attention.head_count")
    hidden = _get(md, gguf, a + "embedding_length")
    tokens = md.get("tokenizer.ggml.tokens")
    vocab = md.get(a + "vocab_size") or (len(tokens) if isinstance(tokens, list) else None)
    if vocab is None:
        raise SpecwiseError(f"{gguf.path}: GGUF metadata has neither {a}vocab_size nor tokenizer.ggml.tokens")
    cfg: dict[str, Any] = {
        "architectures": [f"gguf:{arch}"],
        "model_type": model_type,
        "hidden_size": hidden,
        "num_hidden_layers": _get(md, gguf, a + "block_count"),
        "num_attention_heads": heads,
        "num_key_value_heads": _get(md, gguf, a + "attention.head_count_kv", required=False) or heads,
        "vocab_size": vocab,
        "tie_word_embeddings": "output.weight" not in tensor_names,
        "max_position_embeddings": _get(md, gguf, a + "context_length", required=False) or 4096,
        "intermediate_size": _get(md, gguf, a + "feed_forward_length", required=False)
        or _get(md, gguf, a + "expert_feed_forward_length"),
        "torch_dtype": "bfloat16",
        "bos_token_id": md.get("tokenizer.ggml.bos_token_id"),
        "eos_token_id": md.get("tokenizer.ggml.eos_token_id"),
        "pad_token_id": md.get("tokenizer.ggml.padding_token_id"),
    }
    key_length = md.get(a + "attention.key_length")
    if isinstance(key_length, int) and model_type != "deepseek_v3":
        cfg["head_dim"] = key_length
    window = md.get(a + "attention.sliding_window")
    if isinstance(window, int) and window > 0:
        cfg["sliding_window"] = window
        pattern = md.get(a + "attention.sliding_window_pattern")
        if model_type == "gpt_oss":
            cfg["layer_types"] = [
                "sliding_attention" if i % 2 == 0 else "full_attention" for i in range(cfg["num_hidden_layers"])
            ]
        elif isinstance(pattern, int) and pattern > 0:
            cfg["sliding_window_pattern"] = pattern
    experts = md.get(a + "expert_count")
    if isinstance(experts, int) and experts > 1:
        used = _get(md, gguf, a + "expert_used_count")
        expert_ff = md.get(a + "expert_feed_forward_length") or cfg["intermediate_size"]
        if model_type in ("qwen2_moe", "qwen3_moe"):
            cfg.update(num_experts=experts, num_experts_per_tok=used, moe_intermediate_size=expert_ff)
            shared_ff = md.get(a + "expert_shared_feed_forward_length")
            if shared_ff:
                cfg["shared_expert_intermediate_size"] = shared_ff
        elif model_type == "deepseek_v3":
            cfg.update(
                n_routed_experts=experts,
                num_experts_per_tok=used,
                moe_intermediate_size=expert_ff,
                n_shared_experts=md.get(a + "expert_shared_count", 0),
                first_k_dense_replace=md.get(a + "leading_dense_block_count", 0),
            )
        else:
            cfg.update(num_local_experts=experts, num_experts_per_tok=used, intermediate_size=expert_ff)
    if model_type == "deepseek_v3":
        rope = _get(md, gguf, a + "rope.dimension_count")
        cfg.update(
            kv_lora_rank=_get(md, gguf, a + "attention.kv_lora_rank"),
            q_lora_rank=md.get(a + "attention.q_lora_rank") or None,
            qk_rope_head_dim=rope,
            qk_nope_head_dim=_get(md, gguf, a + "attention.key_length") - rope,
            v_head_dim=_get(md, gguf, a + "attention.value_length"),
            num_nextn_predict_layers=md.get(a + "nextn_predict_layers", 0),
        )
    return cfg


def _params_from_tensors(tensors: list[GgufTensorInfo], active_fraction: float) -> ParamBreakdown:
    groups = dict.fromkeys(
        ("embedding", "lm_head", "attention", "mlp", "experts", "shared_experts", "router", "norms_and_other"), 0
    )
    for t in tensors:
        n = t.n_elements
        name = t.name
        if name.startswith("token_embd."):
            groups["embedding"] += n
        elif name.startswith("output.") and len(t.shape) >= 2:
            groups["lm_head"] += n
        elif "_exps." in name:
            groups["experts"] += n
        elif "_shexp." in name:
            groups["shared_experts"] += n
        elif ".ffn_gate_inp." in name:
            groups["router"] += n
        elif _ATTN.search(name) and len(t.shape) >= 2:
            groups["attention"] += n
        elif ".ffn_" in name and len(t.shape) >= 2:
            groups["mlp"] += n
        else:
            groups["norms_and_other"] += n
    return ParamBreakdown(**groups, expert_active_fraction=active_fraction)
