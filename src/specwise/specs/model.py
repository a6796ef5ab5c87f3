"""``ModelSpec``: what specwise needs to know about a model, derived once from its config.

KV-cache sizes follow vLLM's cache layout:

* Standard / grouped-query attention: K and V per layer, ``2 * num_kv_heads * head_dim`` elements
  per token (``vllm/v1/kv_cache_interface.py``, ``FullAttentionSpec.page_size_bytes``).
  Under tensor parallelism each GPU keeps ``max(1, num_kv_heads // tp)`` heads: KV heads are
  replicated when there are fewer of them than GPUs (``vllm/config/model.py``,
  ``get_num_kv_heads``).
* MLA (DeepSeek-V2/V3): one compressed latent of ``kv_lora_rank + qk_rope_head_dim`` elements per
  token and layer, the same on every TP rank (``MLAAttentionSpec``; vLLM does not shard it).
* Sliding-window layers keep at most ``window`` tokens per sequence (``SlidingWindowSpec``), so a
  sequence's KV is ``sum over layers of min(tokens, window_or_inf) * per_token_layer_bytes``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Literal

from specwise.errors import SpecError
from specwise.specs.quant import NO_QUANTIZATION, Quantization


def _require_positive(obj: object, *names: str) -> None:
    for name in names:
        value = getattr(obj, name)
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise SpecError(f"{type(obj).__name__}.{name}: expected a positive integer, got {value!r}")


@dataclass(frozen=True)
class AttentionSpec:
    """Attention geometry. ``layer_windows[i]`` is layer i's sliding window (None: full attention)."""

    kind: Literal["gqa", "mla"]
    num_heads: int
    num_kv_heads: int
    head_dim: int
    layer_windows: tuple[int | None, ...]
    kv_lora_rank: int = 0
    qk_rope_head_dim: int = 0

    def __post_init__(self) -> None:
        _require_positive(self, "num_heads", "num_kv_heads", "head_dim")
        if self.kind not in ("gqa", "mla"):
            raise SpecError(f"AttentionSpec.kind: expected 'gqa' or 'mla', got {self.kind!r}")
        if self.kind == "mla":
            _require_positive(self, "kv_lora_rank", "qk_rope_head_dim")
        if not self.layer_windows:
            raise SpecError("AttentionSpec.layer_windows: at least one layer is needed")
        for window in self.layer_windows:
            if window is not None and window <= 0:
                raise SpecError(f"AttentionSpec.layer_windows: windows must be positive, got {window}")

    @property
    def num_layers(self) -> int:
        return len(self.layer_windows)

    @property
    def sliding_layers(self) -> int:
        return sum(1 for w in self.layer_windows if w is not None)

    def kv_elements_per_token_layer(self, tp: int = 1) -> int:
        """Cached elements per token in one layer on one of ``tp`` GPUs."""
        if self.kind == "mla":
            return self.kv_lora_rank + self.qk_rope_head_dim
        kv_heads_per_gpu = max(1, self.num_kv_heads // tp)
        return 2 * kv_heads_per_gpu * self.head_dim


@dataclass(frozen=True)
class MoeSpec:
    """Mixture-of-experts layout. ``moe_layers`` of the model's layers route over ``num_experts``."""

    num_experts: int
    experts_per_token: int
    expert_intermediate_size: int
    moe_layers: int
    num_shared_experts: int = 0

    def __post_init__(self) -> None:
        _require_positive(self, "num_experts", "experts_per_token", "expert_intermediate_size", "moe_layers")
        if self.experts_per_token > self.num_experts:
            raise SpecError(
                f"experts_per_token (num_experts_per_tok): {self.experts_per_token} routed experts per token "
                f"but only {self.num_experts} experts"
            )


@dataclass(frozen=True)
class ParamBreakdown:
    """Parameter counts by role. Linear-layer groups are what weight quantization applies to."""

    embedding: int
    lm_head: int
    attention: int
    mlp: int
    experts: int = 0
    shared_experts: int = 0
    router: int = 0
    norms_and_other: int = 0
    vision: int = 0
    expert_active_fraction: float = 1.0

    COUNT_FIELDS = (
        "embedding",
        "lm_head",
        "attention",
        "mlp",
        "experts",
        "shared_experts",
        "router",
        "norms_and_other",
        "vision",
    )

    def __post_init__(self) -> None:
        for name in self.COUNT_FIELDS:
            if getattr(self, name) < 0:
                raise SpecError(f"ParamBreakdown.{name}: must be >= 0")
        if not 0.0 < self.expert_active_fraction <= 1.0:
            raise SpecError("ParamBreakdown.expert_active_fraction: must be in (0, 1]")

    def counts(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in self.COUNT_FIELDS}

    @property
    def total(self) -> int:
        return (
            self.embedding
            + self.lm_head
            + self.attention
            + self.mlp
            + self.experts
            + self.shared_experts
            + self.router
            + self.norms_and_other
            + self.vision
        )

    @property
    def active(self) -> int:
        """Parameters used per token: all but the routed experts a token does not visit.

        Counts the input embedding (Mixtral's 12.9B and DeepSeek-V3's 37B "active" do; OpenAI's
        5.1B for gpt-oss-120b does not).
        """
        inactive = self.experts * (1.0 - self.expert_active_fraction)
        return round(self.total - inactive)

    def quantizable(self, scope: str) -> int:
        """Parameters a weight-quantization scheme of ``scope`` converts."""
        if scope == "experts":
            return self.experts
        return self.attention + self.mlp + self.experts + self.shared_experts


@dataclass(frozen=True)
class SpecialTokens:
    bos_token_id: int | None = None
    eos_token_ids: tuple[int, ...] = ()
    pad_token_id: int | None = None


@dataclass(frozen=True)
class TokenizerRef:
    """Where a model's tokenizer can be found, for the draft/target compatibility check.

    ``family`` and ``num_tokens`` come from the catalog (models sharing a family share token ids
    for their first ``min(num_tokens)`` ids); ``tokenizer_json`` / ``gguf_path`` point at files.
    """

    family: str | None = None
    num_tokens: int | None = None
    tokenizer_json: str | None = None
    gguf_path: str | None = None


@dataclass(frozen=True)
class ModelSpec:
    """A model as specwise sees it. Build with :mod:`specwise.specs.hf_config` or ``gguf_spec``."""

    name: str
    source: str
    architecture: str
    model_type: str
    hidden_size: int
    intermediate_size: int
    vocab_size: int
    tie_word_embeddings: bool
    max_position_embeddings: int
    attention: AttentionSpec
    params: ParamBreakdown
    dtype: str = "bf16"
    moe: MoeSpec | None = None
    native_quantization: Quantization = NO_QUANTIZATION
    mtp_layers: int = 0
    draft_head: Literal["eagle", "eagle3", "mtp"] | None = None
    draft_vocab_size: int | None = None
    special_tokens: SpecialTokens = field(default_factory=SpecialTokens)
    tokenizer: TokenizerRef = field(default_factory=TokenizerRef)
    file_weight_bytes: int | None = None
    # How a GGUF file stores its weights, e.g. "GGUF Q4_1" or "GGUF Q4_K_M (mostly Q4_K)"; None for other sources,
    # whose storage is ``dtype`` and ``native_quantization``.
    stored_format: str | None = None
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _require_positive(self, "hidden_size", "intermediate_size", "vocab_size", "max_position_embeddings")
        if self.mtp_layers < 0:
            raise SpecError("ModelSpec.mtp_layers: must be >= 0")
        if self.file_weight_bytes is not None and self.file_weight_bytes < 0:
            raise SpecError("ModelSpec.file_weight_bytes: must be >= 0")

    # -- geometry -------------------------------------------------------------------------------
    @property
    def num_layers(self) -> int:
        return self.attention.num_layers

    @property
    def total_params(self) -> int:
        return self.params.total

    @property
    def active_params(self) -> int:
        return self.params.active

    @property
    def is_moe(self) -> bool:
        return self.moe is not None

    # -- KV cache -------------------------------------------------------------------------------
    def kv_bytes_per_token(self, kv_dtype_bytes: float, tp: int = 1) -> int:
        """KV bytes one token adds across all layers (sliding windows not yet full), per GPU of ``tp``."""
        per_layer = self.attention.kv_elements_per_token_layer(tp) * kv_dtype_bytes
        return math.ceil(per_layer * self.num_layers)

    def kv_bytes_for_sequence(self, tokens: int, kv_dtype_bytes: float, tp: int = 1) -> int:
        """KV bytes held for one sequence of ``tokens`` tokens, sliding windows applied, per GPU."""
        if tokens < 0:
            raise SpecError(f"tokens: must be >= 0, got {tokens}")
        per_layer = self.attention.kv_elements_per_token_layer(tp) * kv_dtype_bytes
        held = sum(tokens if w is None else min(tokens, w) for w in self.attention.layer_windows)
        return math.ceil(per_layer * held)


def checkpoint_name(name: str) -> str:
    """The last part of a hub id or path, lower-cased: ``/models/SmolLM2-135M/`` and ``HuggingFaceTB/SmolLM2-135M``
    -> ``smollm2-135m`` (how specwise tells one checkpoint named two ways)."""
    return PurePath(name.rstrip("/")).name.lower()


# Name parts that say how a checkpoint is stored, not what it was trained into: quantisation and file formats
# (``-FP8``, ``-FP8-dynamic``, ``-AWQ``, ``-GPTQ-Int4``, ``-GPTQ-4bit-128g``, ``-quantized.w4a16``, ``-W4A16-G128``,
# ``-bnb-4bit``, ``-NF4``, ``-SpinQuant_INT4_EO8``, a GGUF's ``.Q4_K_M`` / ``-IQ4_XS``).
_STORAGE_PART = re.compile(
    r"fp\d+|nvfp4|mxfp4|int\d+|w\d+a\d+|g\d+|\d+g|awq|gptq|gguf|ggml|mlx|exl2|bnb|nf4|\d+bit|dynamic|static"
    r"|quantized|quant|bf16|f16|f32|float16|bfloat16|kv|marlin|spinquant|eo\d+|qat|i?q\d+"
)
_GGUF_SUFFIX = re.compile(r"k|m|s|l|xs|xxs|\d")  # after a GGUF type: Q4_K_M, IQ4_XS, Q4_0, Q8_0


def _weights_name(name: str) -> str:
    """``checkpoint_name`` with a ``.gguf`` extension dropped and '.' / '_' read as '-' (``NAME.Q4_K_M.gguf``)."""
    base = checkpoint_name(name).removesuffix(".gguf")
    return re.sub(r"[._]", "-", base)


def same_weights(a: str, b: str) -> bool:
    """One draft's weights named two ways: the same last name part (case, '_', '.' and a ``.gguf`` extension aside:
    a local directory and its hub id), or one extended only by how it is stored (:data:`_STORAGE_PART`: a quantised
    or converted copy) -- never by another fine-tune, before or after the name (``-Instruct``, ``-draft4``,
    ``Hermes-3-``). Stricter than :func:`same_model`: a draft's acceptance belongs to its weights."""
    x, y = _weights_name(a), _weights_name(b)
    if x == y:
        return True
    short, long = sorted((x, y), key=len)
    if len(short) < 3 or not any(c.isdigit() for c in short) or not long.startswith(short + "-"):
        return False
    in_gguf_type = False  # past a GGUF type's q4 / iq4: its k, m, s, xs, 0, 1 parts follow
    for part in long[len(short) + 1 :].split("-"):
        if in_gguf_type and _GGUF_SUFFIX.fullmatch(part):
            continue
        if not _STORAGE_PART.fullmatch(part):
            return False
        in_gguf_type = re.fullmatch(r"i?q\d+", part) is not None
    return True


def same_model(a: str, b: str) -> bool:
    """One checkpoint named two ways: a local directory and its hub id (``/models/SmolLM2-135M/`` and
    ``HuggingFaceTB/SmolLM2-135M``), by the last part of the name or path, case and '_' vs '-' ignored. A variant
    whose name extends the other's at a '-' (``Llama-3.1-8B-Instruct`` / ``Llama-3.1-8B-Instruct-FP8``, or a
    directory named ``org-Llama-3.1-8B-Instruct``) counts as the same; a name under 3 characters, or one without a
    digit (a family, ``llama``, or a served alias, not a checkpoint: no size or version), extends nothing. The one
    rule for profiles, benches, calibrations, scenarios and the monitor."""
    x, y = (checkpoint_name(name).replace("_", "-") for name in (a, b))
    short, long = sorted((x, y), key=len)
    extends = len(short) >= 3 and any(c.isdigit() for c in short)
    return x == y or (extends and (long.startswith(short + "-") or long.endswith("-" + short)))
