"""Build a :class:`ModelSpec` from a Hugging Face ``config.json`` (a dict, or a local directory).

Supported families: Llama (incl. Llama 3.x), Mistral, Mixtral, Qwen2/2.5, Qwen2-MoE, Qwen3,
Qwen3-MoE, Gemma 2, Gemma 3 (text and multimodal), Phi-3/3.5/4, DeepSeek-V2/V3 (MLA, MoE, MTP),
GLM-4.5 / GLM-4.5-Air (``glm4_moe``: GQA, MoE with a shared expert, MTP), gpt-oss, and EAGLE /
EAGLE-3 draft heads. Other ``model_type`` values with the standard Llama
fields are read as a Llama-style dense decoder, with a note saying so.

Nothing here imports model code or touches the network: ``config.json`` is plain JSON.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specwise.errors import SpecError, SpecwiseError
from specwise.specs import params as P
from specwise.specs.config_fields import ConfigFields
from specwise.specs.model import (
    AttentionSpec,
    ModelSpec,
    MoeSpec,
    ParamBreakdown,
    SpecialTokens,
    TokenizerRef,
)
from specwise.specs.quant import NO_QUANTIZATION, Quantization
from specwise.units import canonical_dtype

KNOWN_MODEL_TYPES = (
    "llama",
    "mistral",
    "mixtral",
    "qwen2",
    "qwen2_moe",
    "qwen3",
    "qwen3_moe",
    "gemma2",
    "gemma3",
    "gemma3_text",
    "phi3",
    "deepseek_v2",
    "deepseek_v3",
    "glm4_moe",
    "gpt_oss",
)
_QKV_BIAS_TYPES = {"qwen2", "qwen2_moe"}
_QK_NORM_TYPES = {"qwen3", "qwen3_moe", "gemma3", "gemma3_text"}
_FOUR_NORM_TYPES = {"gemma2", "gemma3", "gemma3_text"}
# DeepSeek-style routing fields (n_routed_experts, first_k_dense_replace, n_shared_experts) and
# an e_score_correction_bias per routed expert; num_nextn_predict_layers MTP modules.
_DEEPSEEK_STYLE_MOE_TYPES = {"deepseek_v2", "deepseek_v3", "glm4_moe"}


def load_hf_model_dir(path: Path, name: str | None = None) -> ModelSpec:
    """Read ``config.json`` (and note ``tokenizer.json``) from a local model directory or file."""
    config_path = path / "config.json" if path.is_dir() else path
    if not config_path.is_file():
        if path.exists() and not path.is_dir():  # /dev/null, a fifo (review s60: "no config.json found")
            raise SpecwiseError(f"{path}: not a regular file (expected a Hugging Face model directory or its config)")
        raise SpecwiseError(f"{path}: no config.json found (expected a Hugging Face model directory)")
    try:
        text = config_path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecwiseError(f"{config_path}: cannot read: {exc}") from None
    try:
        config = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SpecwiseError(
            f"{config_path}: malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from None
    if not isinstance(config, dict):
        raise SpecwiseError(f"{config_path}: expected a JSON object, got {type(config).__name__}")
    model_dir = config_path.parent
    tokenizer_json = model_dir / "tokenizer.json"
    tokenizer = TokenizerRef(tokenizer_json=str(tokenizer_json) if tokenizer_json.is_file() else None)
    return spec_from_hf_config(
        config,
        name=name or _model_name(path, config_path),
        source=f"hf-config:{config_path}",
        tokenizer=tokenizer,
        where=str(config_path),
    )


def _model_name(given: Path, config_path: Path) -> str:
    """The name a local model goes by: its directory, or the config file given (review s60: a ``mycfg.json`` in the
    working directory was called ".")."""
    if given.is_dir():
        return str(given)
    parent = config_path.parent
    return str(parent) if config_path.name == "config.json" and str(parent) != "." else str(given)


def spec_from_hf_config(
    config: Mapping[str, Any],
    *,
    name: str,
    source: str,
    tokenizer: TokenizerRef | None = None,
    where: str | None = None,
) -> ModelSpec:
    """Derive a :class:`ModelSpec` from the fields of a ``config.json``."""
    where = where or name
    top = ConfigFields(config, where)
    architectures = top.raw("architectures", [])
    if not isinstance(architectures, list):
        raise SpecwiseError(f"{where}: field 'architectures' must be a list")
    architecture = str(architectures[0]) if architectures else str(top.raw("model_type", "unknown"))

    text_cfg: Mapping[str, Any] = config
    vision_params = 0
    if isinstance(config.get("text_config"), Mapping):
        # Multimodal checkpoints (Gemma 3 4B+): the decoder lives in text_config.
        text_cfg = {**config["text_config"]}
        if "tie_word_embeddings" in config and "tie_word_embeddings" not in text_cfg:
            text_cfg["tie_word_embeddings"] = config["tie_word_embeddings"]
        if isinstance(config.get("vision_config"), Mapping):
            vision_params = _vision_params(
                ConfigFields(config["vision_config"], f"{where} vision_config"), ConfigFields(text_cfg, where)
            )
    f = ConfigFields(text_cfg, where)
    model_type = str(f.raw("model_type", top.raw("model_type", ""))).lower()
    try:
        if "Eagle3" in architecture or "eagle3" in model_type:
            return _eagle_head(f, name, source, architecture, model_type, "eagle3", tokenizer, top)
        if "Eagle" in architecture or model_type == "eagle":
            return _eagle_head(f, name, source, architecture, model_type, "eagle", tokenizer, top)
        return _decoder(f, top, name, source, architecture, model_type, vision_params, tokenizer)
    except SpecError as exc:  # a value the spec refuses (e.g. more experts per token than experts): name the file
        raise SpecwiseError(f"{where}: {exc}") from None


# ------------------------------------------------------------------------------------------------
def _dtype(top: ConfigFields, f: ConfigFields) -> str:
    raw = f.raw("torch_dtype", top.raw("torch_dtype", f.raw("dtype", top.raw("dtype", "bfloat16"))))
    try:
        dtype = canonical_dtype(str(raw))
    except ValueError:
        raise SpecwiseError(f"{f.where}: unsupported torch_dtype {raw!r}") from None
    # vLLM's dtype="auto" serves float32 checkpoints in bf16/fp16 (vllm/config/model.py, _get_and_verify_dtype).
    return "bf16" if dtype == "fp32" else dtype


def _native_quantization(top: ConfigFields, f: ConfigFields) -> Quantization:
    """How the checkpoint stores its weights, from ``quantization_config``: fp8 / fbgemm_fp8, mxfp4 (experts), GPTQ /
    AWQ at 4 bits, GPTQ at 8, compressed-tensors by its weights' ``num_bits`` and ``type`` (llm-compressor's FP8,
    W8A8 and W4A16 checkpoints: ``config_groups.*.weights``), bitsandbytes by ``load_in_4bit`` / ``load_in_8bit``
    (review s46d: these were refused, and the hint to pass --quantization could not help)."""
    qc = top.raw("quantization_config", f.raw("quantization_config"))
    if qc is None:
        return NO_QUANTIZATION
    fix = (
        "specwise cannot size this checkpoint's weights; to plan for it, give the unquantised model with "
        "--quantization fp8|int8|int4 (the API's quantization=)"
    )
    if not isinstance(qc, Mapping):  # transformers writes an object (QuantizationConfigMixin.to_dict)
        raise SpecwiseError(
            f"{f.where}: quantization_config must be an object with a quant_method, got {type(qc).__name__} "
            f"{qc!r:.40}; {fix}"
        )
    method = str(qc.get("quant_method", "")).lower()
    bits = qc.get("bits")
    if method == "mxfp4":
        return Quantization("mxfp4", scope="experts")
    if method in ("fp8", "fbgemm_fp8"):
        return Quantization("fp8")
    if method in _BITS_MODELLED and bits == 4:
        return Quantization("int4")
    if method in ("gptq", "compressed-tensors", "bitsandbytes") and bits == 8:
        return Quantization("int8")
    if method == "compressed-tensors" and (q := _compressed_tensors(qc)) is not None:
        return q
    if method == "bitsandbytes" and (qc.get("load_in_4bit") or qc.get("load_in_8bit")):
        return Quantization("int4" if qc.get("load_in_4bit") else "int8")
    raise SpecwiseError(f"{f.where}: {_not_modelled(method, qc)}; {fix}")


# The methods read by their ``bits`` alone, and the widths modelled for each (vLLM's GPTQ kernels take 8 bits too;
# AWQ's take 4 only)
_BITS_MODELLED = {"gptq": (4, 8), "awq": (4,), "gptq_marlin": (4,), "awq_marlin": (4,)}


def _not_modelled(method: str, qc: Mapping[str, object]) -> str:
    """What of ``quantization_config`` is not modelled: the ``bits`` of a method that is (GPTQ at 3 bits), else the
    method."""
    if method not in _BITS_MODELLED:
        return f"quantization_config.quant_method {method!r} is not modelled"
    widths = _BITS_MODELLED[method]
    modelled = " or ".join(str(b) for b in widths) + (" are" if len(widths) > 1 else " is")
    if "bits" not in qc:
        return f"quantization_config.bits is missing for {method} ({modelled} modelled)"
    shown = json.dumps(qc["bits"], default=str)  # as the file wrote it: 3, "four", null
    return f"quantization_config.bits {shown:.40} for {method} is not modelled ({modelled})"


def _compressed_tensors(qc: Mapping[str, object]) -> Quantization | None:
    """A compressed-tensors checkpoint whose every quantisation group stores its weights alike: 8-bit float (FP8),
    8-bit int (W8A8 / W8A16) or 4-bit int (W4A16); None for anything else (NVFP4, mixed groups)."""
    groups = qc.get("config_groups")
    if not isinstance(groups, Mapping) or not groups:
        return None
    kinds: set[tuple[object, str]] = set()
    for group in groups.values():
        weights = group.get("weights") if isinstance(group, Mapping) else None
        if not isinstance(weights, Mapping):
            return None
        kinds.add((weights.get("num_bits"), str(weights.get("type", "int")).lower()))
    if len(kinds) != 1:
        return None
    known: dict[tuple[object, str], str] = {(8, "float"): "fp8", (8, "int"): "int8", (4, "int"): "int4"}
    name = known.get(kinds.pop())
    return None if name is None else Quantization(name)


def _special_tokens(f: ConfigFields, top: ConfigFields) -> SpecialTokens:
    bos = f.optional_int("bos_token_id") if f.has("bos_token_id") else top.optional_int("bos_token_id")
    eos = f.int_list("eos_token_id") or top.int_list("eos_token_id")
    pad = f.optional_int("pad_token_id") if f.has("pad_token_id") else top.optional_int("pad_token_id")
    return SpecialTokens(bos_token_id=bos, eos_token_ids=tuple(eos), pad_token_id=pad)


def _window_notes(f: ConfigFields) -> list[str]:
    """A zero or negative ``sliding_window`` is not a window: said, and read as none (full attention everywhere)."""
    window = f.optional_int("sliding_window")
    if window is None or window > 0 or f.raw("use_sliding_window") is False:
        return []
    return [
        f"sliding_window {window} is not a window size; read as no sliding window "
        "(every layer keeps its whole context: the larger KV estimate)"
    ]


def _layer_windows(f: ConfigFields, model_type: str, num_layers: int, max_pos: int) -> tuple[int | None, ...]:
    window = f.optional_int("sliding_window")
    if f.raw("use_sliding_window") is False:
        window = None
    if window is not None and window <= 0:
        window = None
    layer_types = f.raw("layer_types")
    if isinstance(layer_types, list) and layer_types:
        if len(layer_types) != num_layers:
            raise SpecwiseError(
                f"{f.where}: 'layer_types' lists {len(layer_types)} layers but num_hidden_layers is {num_layers}"
            )
        return tuple(window if t == "sliding_attention" and window else None for t in layer_types)
    if window is None:
        return (None,) * num_layers
    if model_type == "gemma2":  # Gemma2DecoderLayer: even layers use the sliding window
        return tuple(window if i % 2 == 0 else None for i in range(num_layers))
    if model_type in ("gemma3", "gemma3_text"):  # five local layers, then one global
        pattern = f.positive_int("sliding_window_pattern", 6)
        return tuple(None if (i + 1) % pattern == 0 else window for i in range(num_layers))
    if window >= max_pos:
        return (None,) * num_layers
    return (window,) * num_layers


def _vision_params(v: ConfigFields, text: ConfigFields) -> int:
    hidden = v.positive_int("hidden_size")
    tower = P.vit_encoder(
        hidden,
        v.positive_int("intermediate_size"),
        v.positive_int("num_hidden_layers"),
        v.positive_int("patch_size"),
        v.positive_int("image_size"),
        v.positive_int("num_channels", 3),
    )
    projector = hidden * text.positive_int("hidden_size") + hidden  # Gemma3MultiModalProjector
    return tower + projector


def _moe_layout(f: ConfigFields, model_type: str, num_layers: int) -> tuple[list[bool], int, int, int, int]:
    """Which layers are MoE, and (num_experts, experts_per_token, expert_intermediate, shared)."""
    if model_type in _DEEPSEEK_STYLE_MOE_TYPES:
        experts = f.positive_int("n_routed_experts")
        first_dense = f.non_negative_int("first_k_dense_replace")
        freq = f.positive_int("moe_layer_freq", 1)
        is_moe = [i >= first_dense and i % freq == 0 for i in range(num_layers)]
        return (
            is_moe,
            experts,
            f.positive_int("num_experts_per_tok"),
            f.positive_int("moe_intermediate_size"),
            f.non_negative_int("n_shared_experts"),
        )
    if model_type in ("qwen2_moe", "qwen3_moe"):
        experts = f.positive_int("num_experts")
        step = f.positive_int("decoder_sparse_step", 1)
        dense_only = set(f.int_list("mlp_only_layers"))
        is_moe = [i not in dense_only and (i + 1) % step == 0 for i in range(num_layers)]
        return (is_moe, experts, f.positive_int("num_experts_per_tok"), f.positive_int("moe_intermediate_size"), 0)
    # Mixtral and gpt-oss: every layer routes; intermediate_size is the expert's.
    experts = f.positive_int("num_local_experts")
    per_token = f.positive_int("num_experts_per_tok", f.raw("experts_per_token"))
    return ([True] * num_layers, experts, per_token, f.positive_int("intermediate_size"), 0)


def _is_moe_config(f: ConfigFields, model_type: str) -> bool:
    if model_type in ("mixtral", "gpt_oss", "qwen2_moe", "qwen3_moe"):
        return True
    if model_type in _DEEPSEEK_STYLE_MOE_TYPES:
        return f.has("n_routed_experts")
    return f.has("num_local_experts") and f.positive_int("num_local_experts") > 1


@dataclass(frozen=True)
class _Shape:
    """A decoder's dimensions, as the config gives them."""

    hidden: int
    layers: int
    vocab: int
    heads: int
    kv_heads: int
    head_dim: int
    max_pos: int
    tied: bool


@dataclass(frozen=True)
class _Mlp:
    """Parameters of the feed-forward blocks over all layers: dense MLPs, routed and shared experts, routers."""

    mlp: int = 0
    experts: int = 0
    shared: int = 0
    router: int = 0
    router_other: int = 0  # router biases (gpt-oss) / e_score_correction_bias (DeepSeek-V3)
    moe: MoeSpec | None = None


def _model_type_notes(f: ConfigFields, model_type: str) -> list[str]:
    """No note for a modelled type; an unknown one is read as a Llama-style decoder if it has the fields."""
    if model_type in KNOWN_MODEL_TYPES:
        return []
    if not f.has("hidden_size"):
        raise SpecwiseError(
            f"{f.where}: model_type {model_type or '(missing)'!r} is not supported and the config lacks "
            f"'hidden_size'; supported types: {', '.join(KNOWN_MODEL_TYPES)}"
        )
    return [f"model_type {model_type!r} is not specifically modelled; counted as a Llama-style decoder"]


def _shape(f: ConfigFields, model_type: str) -> _Shape:
    hidden = f.positive_int("hidden_size")
    layers = f.positive_int("num_hidden_layers")
    vocab = f.positive_int("vocab_size")
    heads = f.positive_int("num_attention_heads")
    kv_heads = f.positive_int("num_key_value_heads", heads)
    if heads % kv_heads != 0:
        raise SpecwiseError(
            f"{f.where}: num_attention_heads ({heads}) is not a multiple of num_key_value_heads ({kv_heads})"
        )
    head_dim = f.positive_int("head_dim") if f.has("head_dim") else _default_head_dim(f, hidden, heads)
    max_pos = f.positive_int("max_position_embeddings", 4096)
    tied = f.boolean("tie_word_embeddings", model_type in ("gemma2", "gemma3", "gemma3_text"))
    return _Shape(hidden, layers, vocab, heads, kv_heads, head_dim, max_pos, tied)


def _mla_attention(f: ConfigFields, d: _Shape) -> tuple[P.BlockParams, AttentionSpec]:
    """DeepSeek's multi-head latent attention: the KV cache holds the compressed latent and the rope key."""
    attn = P.mla_attention(
        d.hidden,
        d.heads,
        q_lora_rank=f.optional_int("q_lora_rank"),
        kv_lora_rank=f.positive_int("kv_lora_rank"),
        qk_nope_head_dim=f.positive_int("qk_nope_head_dim"),
        qk_rope_head_dim=f.positive_int("qk_rope_head_dim"),
        v_head_dim=f.positive_int("v_head_dim"),
    )
    attention = AttentionSpec(
        kind="mla",
        num_heads=d.heads,
        num_kv_heads=d.heads,
        head_dim=f.positive_int("qk_nope_head_dim") + f.positive_int("qk_rope_head_dim"),
        layer_windows=(None,) * d.layers,
        kv_lora_rank=f.positive_int("kv_lora_rank"),
        qk_rope_head_dim=f.positive_int("qk_rope_head_dim"),
    )
    return attn, attention


def _gqa_attention(f: ConfigFields, model_type: str, d: _Shape) -> tuple[P.BlockParams, AttentionSpec]:
    """Multi-head / grouped-query attention, with the family's biases, q/k norms, sinks and sliding windows."""
    attention_bias = f.boolean("attention_bias", False)
    # Glm4MoeAttention: attention_bias applies to q/k/v only (o_proj has no bias) and the
    # q/k RMSNorms exist only with use_qk_norm (GLM-4.5: true, GLM-4.5-Air: false).
    glm = model_type == "glm4_moe"
    attn = P.gqa_attention(
        d.hidden,
        d.hidden,
        d.heads,
        d.kv_heads,
        d.head_dim,
        qkv_bias=attention_bias or model_type in _QKV_BIAS_TYPES,
        o_bias=attention_bias and not glm,
        qk_norm=model_type in _QK_NORM_TYPES or (glm and f.boolean("use_qk_norm", False)),
        sinks=model_type == "gpt_oss",
    )
    attention = AttentionSpec(
        kind="gqa",
        num_heads=d.heads,
        num_kv_heads=d.kv_heads,
        head_dim=d.head_dim,
        layer_windows=_layer_windows(f, model_type, d.layers, d.max_pos),
    )
    return attn, attention


def _moe_mlp(f: ConfigFields, model_type: str, d: _Shape, intermediate: int) -> _Mlp:
    """Routed experts (and shared ones) in the MoE layers, dense MLPs in the rest."""
    is_moe, n_exp, per_tok, exp_inter, n_shared = _moe_layout(f, model_type, d.layers)
    moe_layers = sum(is_moe)
    bias = model_type == "gpt_oss"
    router_other = moe_layers * n_exp if bias or model_type in ("deepseek_v3", "glm4_moe") else 0
    shared = moe_layers * P.gated_mlp(d.hidden, exp_inter * n_shared) if n_shared else 0
    if model_type == "qwen2_moe" and f.has("shared_expert_intermediate_size"):
        shared = moe_layers * (P.gated_mlp(d.hidden, f.positive_int("shared_expert_intermediate_size")) + d.hidden)
        n_shared = 1
    moe = None
    if moe_layers:
        moe = MoeSpec(
            num_experts=n_exp,
            experts_per_token=per_tok,
            expert_intermediate_size=exp_inter,
            moe_layers=moe_layers,
            num_shared_experts=n_shared,
        )
    return _Mlp(
        mlp=(d.layers - moe_layers) * P.gated_mlp(d.hidden, intermediate),
        experts=moe_layers * n_exp * P.gated_mlp(d.hidden, exp_inter, bias=bias),
        shared=shared,
        router=moe_layers * d.hidden * n_exp,
        router_other=router_other,
        moe=moe,
    )


def _param_breakdown(model_type: str, d: _Shape, attn: P.BlockParams, m: _Mlp, vision_params: int) -> ParamBreakdown:
    norms_per_layer = 4 if model_type in _FOUR_NORM_TYPES else 2
    embedding = d.vocab * d.hidden
    return ParamBreakdown(
        embedding=embedding,
        lm_head=0 if d.tied else embedding,
        attention=d.layers * attn.linear,
        mlp=m.mlp,
        experts=m.experts,
        shared_experts=m.shared,
        router=m.router,
        norms_and_other=d.layers * (attn.other + norms_per_layer * d.hidden) + d.hidden + m.router_other,
        vision=vision_params,
        expert_active_fraction=(m.moe.experts_per_token / m.moe.num_experts) if m.moe else 1.0,
    )


def _decoder(
    f: ConfigFields,
    top: ConfigFields,
    name: str,
    source: str,
    architecture: str,
    model_type: str,
    vision_params: int,
    tokenizer: TokenizerRef | None,
) -> ModelSpec:
    notes = _model_type_notes(f, model_type) + _window_notes(f)
    d = _shape(f, model_type)
    if model_type in ("deepseek_v2", "deepseek_v3") and f.has("kv_lora_rank"):
        attn, attention = _mla_attention(f, d)
    else:
        attn, attention = _gqa_attention(f, model_type, d)
    intermediate = f.positive_int("intermediate_size")
    if _is_moe_config(f, model_type):
        mlp = _moe_mlp(f, model_type, d, intermediate)
    else:
        mlp = _Mlp(mlp=d.layers * P.gated_mlp(d.hidden, intermediate, bias=f.boolean("mlp_bias", False)))
    params = _param_breakdown(model_type, d, attn, mlp, vision_params)
    mtp = f.non_negative_int("num_nextn_predict_layers") if model_type in _DEEPSEEK_STYLE_MOE_TYPES else 0
    return ModelSpec(
        name=name,
        source=source,
        architecture=architecture,
        model_type=model_type,
        hidden_size=d.hidden,
        intermediate_size=intermediate,
        vocab_size=d.vocab,
        tie_word_embeddings=d.tied,
        max_position_embeddings=d.max_pos,
        attention=attention,
        params=params,
        dtype=_dtype(top, f),
        moe=mlp.moe,
        native_quantization=_native_quantization(top, f),
        mtp_layers=mtp,
        special_tokens=_special_tokens(f, top),
        tokenizer=tokenizer or TokenizerRef(),
        notes=tuple(notes),
    )


def _default_head_dim(f: ConfigFields, hidden: int, heads: int) -> int:
    if hidden % heads != 0:
        raise SpecwiseError(
            f"{f.where}: hidden_size ({hidden}) is not divisible by num_attention_heads ({heads}) "
            "and no head_dim is given"
        )
    return hidden // heads


def _eagle_head(
    f: ConfigFields,
    name: str,
    source: str,
    architecture: str,
    model_type: str,
    kind: str,
    tokenizer: TokenizerRef | None,
    top: ConfigFields,
) -> ModelSpec:
    """EAGLE (one decoder layer fed [embedding; target hidden]) and EAGLE-3 draft heads.

    EAGLE-3 (``vllm/model_executor/models/llama_eagle3.py``): ``fc`` fuses three target hidden
    states (3H -> H); the layer's q/k/v read [embedding; hidden] (2H); its own LM head over
    ``draft_vocab_size`` tokens; the input embedding is shared with the target when the checkpoint
    has none (counted as 0 here). EAGLE-1 (``llama_eagle.py``): ``fc`` maps 2H -> H, the checkpoint
    carries its own embedding, the LM head is the target's (counted as 0).
    """
    hidden = f.positive_int("hidden_size")
    layers = f.positive_int("num_hidden_layers", 1)
    heads = f.positive_int("num_attention_heads")
    kv_heads = f.positive_int("num_key_value_heads", heads)
    head_dim = f.positive_int("head_dim") if f.has("head_dim") else _default_head_dim(f, hidden, heads)
    intermediate = f.positive_int("intermediate_size")
    vocab = f.positive_int("vocab_size")
    target_hidden = f.positive_int("target_hidden_size", hidden)
    if kind == "eagle3":
        draft_vocab = f.positive_int("draft_vocab_size", vocab)
        fc = 3 * target_hidden * hidden
        attn = P.gqa_attention(2 * hidden, hidden, heads, kv_heads, head_dim)
        norms = layers * 3 * hidden + hidden
        embedding, lm_head = 0, draft_vocab * hidden
        notes = ("input embedding shared with the target (not counted)",)
    else:
        draft_vocab = vocab
        fc = 2 * hidden * hidden + hidden
        attn = P.gqa_attention(hidden, hidden, heads, kv_heads, head_dim)
        norms = layers * 2 * hidden + hidden
        embedding, lm_head = vocab * hidden, 0
        notes = ("LM head shared with the target (not counted)",)
    params = ParamBreakdown(
        embedding=embedding,
        lm_head=lm_head,
        attention=layers * attn.linear,
        mlp=layers * P.gated_mlp(hidden, intermediate) + fc,
        norms_and_other=norms + layers * attn.other,
    )
    return ModelSpec(
        name=name,
        source=source,
        architecture=architecture,
        model_type=model_type or "llama",
        hidden_size=hidden,
        intermediate_size=intermediate,
        vocab_size=vocab,
        tie_word_embeddings=False,
        max_position_embeddings=f.positive_int("max_position_embeddings", 2048),
        attention=AttentionSpec(
            kind="gqa", num_heads=heads, num_kv_heads=kv_heads, head_dim=head_dim, layer_windows=(None,) * layers
        ),
        params=params,
        dtype=_dtype(top, f),
        draft_head="eagle3" if kind == "eagle3" else "eagle",
        draft_vocab_size=draft_vocab,
        special_tokens=_special_tokens(f, top),
        tokenizer=tokenizer or TokenizerRef(),
        notes=notes,
    )
