"""The VRAM planner: does target (+ draft) fit, and how much KV cache / concurrency is left?

Per GPU, vLLM gives the KV cache ``memory_bytes * gpu_memory_utilization`` minus weights minus the
reserve (:mod:`specwise.memory.reserve`). The planner works on the most loaded GPU: with
``draft_tp == 1`` the whole draft (weights and KV) sits on rank 0 beside that rank's target shard,
and vLLM gives every rank the same number of KV blocks. The draft's KV cache grows with the same
tokens as the target's, so per cached token the engine pays both (SpecDecode-Bench measured the
Qwen3-8B + Qwen3-0.6B pair at 1.77x the target's per-token KV; Liu et al. 2026, arXiv 2601.11580).

vLLM refuses to start when one sequence of ``max_model_len`` tokens does not fit the KV cache
("To serve at least one request with the models's max seq len ..."); the planner reports that as
``fits: false`` too, with the largest length that would fit.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from specwise.contracts.memory import ModelMemory
from specwise.errors import CLI_FLAGS, FieldNames, SpecwiseError
from specwise.memory.reserve import ReserveBreakdown, estimate_reserve
from specwise.memory.vllm_rules import batched_tokens_refusal
from specwise.memory.weights import weight_bytes, weight_bytes_per_gpu
from specwise.methods import MAX_K
from specwise.specs.draft import DraftChoice
from specwise.specs.gpu import GpuSpec
from specwise.specs.model import ModelSpec
from specwise.specs.quant import Quantization, quantization_setting
from specwise.units import DTYPE_ALIASES, DTYPE_BYTES, KV_CACHE_DTYPES, canonical_dtype, fmt_bytes, kv_cache_dtype

if TYPE_CHECKING:
    from specwise.compat.pair import PairReport

BLOCK_SIZE_TOKENS = 16  # vLLM's default KV block size on GPUs


@dataclass(frozen=True)
class MemoryPlanRequest:
    target: ModelSpec
    gpu: GpuSpec
    tp: int = 1
    num_gpus: int | None = None
    draft: DraftChoice | None = None
    draft_tp: int | None = None
    dtype: str = "auto"
    quantization: str = "auto"
    draft_quantization: str = "auto"
    kv_cache_dtype: str = "auto"
    max_model_len: int | None = None
    gpu_memory_utilization: float = 0.9
    max_num_batched_tokens: int = 8192
    max_num_seqs: int = 256
    num_speculative_tokens: int = 4
    reserve_bytes: int | None = None
    names: FieldNames = CLI_FLAGS  # how the caller names these fields in its messages
    # an EAGLE-1 / MTP head uses the target's embedding (and MTP's LM head) instead of its own, as vLLM V1 and SGLang
    # load it (:func:`loaded_draft`); False for vLLM's V0 engine (0.8.3-0.8.5 EAGLE), which loads the head's copy
    draft_shares_target_weights: bool = True

    def __post_init__(self) -> None:
        for name in ("tp", "max_num_batched_tokens", "max_num_seqs", "num_gpus", "draft_tp", "max_model_len"):
            value = getattr(self, name)
            if value is None and name in ("num_gpus", "draft_tp", "max_model_len"):
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:  # True is no GPU count
                raise SpecwiseError(f"{name}: must be a positive integer, got {value!r}")
        n = self.names
        refusal = batched_tokens_refusal(self.max_num_seqs, self.max_num_batched_tokens, n.name("max_num_seqs"))
        if refusal is not None:
            raise SpecwiseError(f"{n.setting('max_num_batched_tokens', self.max_num_batched_tokens)}: {refusal}")
        k = self.num_speculative_tokens
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
            raise SpecwiseError(
                f"{self.names.name('num_speculative_tokens')}: expected an integer in 1..{MAX_K}, got {k!r}"
            )
        if not 0.0 < self.gpu_memory_utilization <= 1.0:
            raise SpecwiseError(f"gpu_memory_utilization: must be in (0, 1], got {self.gpu_memory_utilization}")
        reserve = self.reserve_bytes
        if reserve is not None and (isinstance(reserve, bool) or not isinstance(reserve, int) or reserve < 0):
            raise SpecwiseError(f"reserve: must be an integer number of bytes >= 0, got {reserve!r}")
        refusal = reserve_refusal(reserve, self.gpu)
        if refusal is not None:
            raise SpecwiseError(f"{n.setting('reserve_bytes', reserve)} {refusal}")


def reserve_refusal(reserve_bytes: float | None, gpu: GpuSpec) -> str | None:
    """Why a given reserve is bad input (None: it is not): more than the GPU holds is a typo or a unit slip
    (``--reserve-gib 1e30``), not a deployment that "does not fit"."""
    if reserve_bytes is not None and reserve_bytes > gpu.memory_bytes:
        return f"exceeds the GPU's {fmt_bytes(gpu.memory_bytes)}"
    return None


@dataclass(frozen=True)
class MemoryPlan:
    target: ModelMemory
    draft: ModelMemory | None
    draft_method: str | None
    gpu: GpuSpec
    tp: int
    num_gpus: int
    replicas: int
    kv_cache_dtype: str
    max_model_len: int
    gpu_memory_utilization: float
    budget_bytes_per_gpu: int
    reserve: ReserveBreakdown
    reserve_without_draft: ReserveBreakdown
    kv_budget_bytes_per_gpu: int
    kv_budget_bytes_per_gpu_without_draft: int
    kv_cache_tokens: int
    kv_cache_tokens_without_draft: int
    max_concurrent_seqs: int
    max_concurrent_seqs_without_draft: int
    fits: bool
    fits_without_draft: bool
    shortfall_bytes_per_gpu: int
    max_model_len_that_fits: int
    problems: tuple[str, ...]
    warnings: tuple[str, ...]
    compatibility: PairReport | None = None  # the draft/target pair check, where the caller ran one

    @property
    def draft_concurrency_cost(self) -> float | None:
        """Fraction of max concurrent sequences lost to the draft (weights + KV), 0..1."""
        if self.draft_method is None or self.max_concurrent_seqs_without_draft <= 0:
            return None
        return 1.0 - self.max_concurrent_seqs / self.max_concurrent_seqs_without_draft

    def to_dict(self) -> dict[str, Any]:
        """The JSON contract (``specwise plan-memory --json``); later tools read these keys."""
        return {
            "target": self.target.to_dict(),
            "draft": self.draft.to_dict() if self.draft else None,
            "draft_method": self.draft_method,
            "gpu": {"name": self.gpu.name, "memory_bytes": self.gpu.memory_bytes, "count": self.num_gpus},
            "fits": self.fits,
            "fits_without_draft": self.fits_without_draft,
            "kv_cache_tokens": self.kv_cache_tokens,
            "kv_cache_tokens_without_draft": self.kv_cache_tokens_without_draft,
            "max_concurrent_seqs": self.max_concurrent_seqs,
            "max_concurrent_seqs_without_draft": self.max_concurrent_seqs_without_draft,
            "draft_concurrency_cost": self.draft_concurrency_cost,
            "max_model_len": self.max_model_len,
            "max_model_len_that_fits": self.max_model_len_that_fits,
            "tp": self.tp,
            "replicas": self.replicas,
            "kv_cache_dtype": self.kv_cache_dtype,
            "gpu_memory_utilization": self.gpu_memory_utilization,
            "per_gpu": {
                "budget_bytes": self.budget_bytes_per_gpu,
                "target_weight_bytes": self.target.weight_bytes_per_gpu,
                "draft_weight_bytes": self.draft.weight_bytes_per_gpu if self.draft else 0,
                "reserve_bytes": self.reserve.total_bytes,
                "reserve": {
                    "activation_bytes": self.reserve.activation_bytes,
                    "cuda_graph_bytes": self.reserve.cuda_graph_bytes,
                    "non_torch_bytes": self.reserve.non_torch_bytes,
                    "overridden": self.reserve.overridden,
                },
                "kv_budget_bytes": self.kv_budget_bytes_per_gpu,
                "kv_budget_bytes_without_draft": self.kv_budget_bytes_per_gpu_without_draft,
                "shortfall_bytes": self.shortfall_bytes_per_gpu,
            },
            "problems": list(self.problems),
            "warnings": list(self.warnings),
        }

    def to_json(self) -> dict[str, Any]:
        """What ``specwise plan-memory --json`` prints: :meth:`to_dict` and the pair check (null without one)."""
        return {**self.to_dict(), "compatibility": self.compatibility.to_dict() if self.compatibility else None}


# ------------------------------------------------------------------------------------------------
def _check_tp(spec: ModelSpec, tp: int, role: str, field: str, names: FieldNames, flag: str | None = None) -> None:
    flag = flag or names.setting(field, tp)
    heads = spec.attention.num_heads
    if heads % tp:
        raise SpecwiseError(
            f"{flag} is impossible for the {role} {spec.name}: its {heads} attention heads "
            f"do not divide evenly over {tp} GPUs (vLLM requires it)"
        )
    kv = spec.attention.num_kv_heads
    if spec.attention.kind == "gqa" and kv % tp and tp % kv:
        raise SpecwiseError(
            f"{flag} is impossible for the {role} {spec.name}: {kv} KV heads and {tp} GPUs (one must divide the other)"
        )


def _resolve_quant(choice: str, spec: ModelSpec, role: str, field: str) -> Quantization | None:
    try:
        return quantization_setting(choice)
    except SpecwiseError:
        raise SpecwiseError(f"{field} {choice!r} ({role}): expected auto, none, fp8, int8, int4 or mxfp4") from None


MODEL_DTYPES = ("bf16", "fp16", "fp32")  # vLLM's --dtype (vllm/config/model.py: auto, half, bfloat16, float)
DTYPE_CHOICES: tuple[str, ...] = (
    "auto",
    *(name for name, dtype in DTYPE_ALIASES.items() if dtype in MODEL_DTYPES),  # vLLM's names: float32, bfloat16...
    *MODEL_DTYPES,
)
"""Every ``--dtype`` (``dtype``) the planner takes: ``auto`` (the config's) and each name of a model dtype."""


def dtype_refusal(choice: str, names: FieldNames = CLI_FLAGS) -> str | None:
    """Why ``choice`` is no model dtype (None: it is one of :data:`DTYPE_CHOICES`): the message lists exactly what
    ``--dtype`` takes; fp8 is said to be a quantization or a KV cache format, which ``names`` name."""
    if choice == "auto":
        return None
    try:
        dtype: str | None = canonical_dtype(choice)
    except ValueError:
        dtype = None
    if dtype in MODEL_DTYPES:
        return None
    refusal = f"{choice!r} is not a model dtype; expected one of {', '.join(DTYPE_CHOICES)}"
    if dtype is None:
        return refusal
    return (
        f"{refusal} ({dtype} weights are a quantization: {names.setting('quantization', dtype)}; an fp8 KV cache is "
        f"{names.setting('kv_cache_dtype', 'fp8')})"
    )


def _resolve_dtype(choice: str, spec: ModelSpec, names: FieldNames) -> str:
    refusal = dtype_refusal(choice, names)
    if refusal is not None:
        raise SpecwiseError(f"{names.name('dtype')}: {refusal}")
    return spec.dtype if choice == "auto" else canonical_dtype(choice)


def _model_memory(
    spec: ModelSpec, *, dtype: str, quant: Quantization | None, tp: int, kv_bytes: float, max_model_len: int
) -> ModelMemory:
    dtype_bytes = DTYPE_BYTES[dtype]
    total = weight_bytes(spec, dtype_bytes, quant)
    if quant is None:
        label = "gguf (as stored)" if spec.file_weight_bytes is not None else spec.native_quantization.label()
    else:
        label = quant.label()
    return ModelMemory(
        name=spec.name,
        params=spec.total_params,
        active_params=spec.active_params,
        dtype=dtype,
        quantization=label,
        tp=tp,
        weight_bytes=total,
        weight_bytes_per_gpu=weight_bytes_per_gpu(spec, total, dtype_bytes, tp),
        kv_bytes_per_token=spec.kv_bytes_per_token(kv_bytes),
        kv_bytes_per_token_per_gpu=spec.kv_bytes_per_token(kv_bytes, tp),
        kv_bytes_per_max_len_seq_per_gpu=spec.kv_bytes_for_sequence(whole_blocks(max_model_len), kv_bytes, tp),
    )


def whole_blocks(tokens: int) -> int:
    """``tokens`` rounded up to whole KV blocks: vLLM's start-up check holds ``cdiv(max_model_len, block_size)``
    blocks of a sequence (``FullAttentionSpec.max_memory_usage_bytes``, ``vllm/v1/kv_cache_interface.py``)."""
    return -(-tokens // BLOCK_SIZE_TOKENS) * BLOCK_SIZE_TOKENS


def kv_tokens_that_fit(kv_budget_bytes: int, bytes_per_token: int) -> int:
    """Whole KV blocks of ``BLOCK_SIZE_TOKENS`` that fit the budget, in tokens (vLLM's "KV cache size")."""
    if kv_budget_bytes <= 0 or bytes_per_token <= 0:
        return 0
    return kv_budget_bytes // (bytes_per_token * BLOCK_SIZE_TOKENS) * BLOCK_SIZE_TOKENS


def _max_len_that_fits(budget: int, models: list[tuple[ModelSpec, int]], kv_bytes: float, limit: int) -> int:
    """Largest sequence length whose KV (all models, per GPU) fits ``budget``; bisection on length."""

    def need(length: int) -> int:
        return sum(spec.kv_bytes_for_sequence(whole_blocks(length), kv_bytes, tp) for spec, tp in models)

    if budget <= 0 or need(1) > budget:
        return 0
    lo, hi = 1, limit
    if need(hi) <= budget:
        return hi
    while lo < hi - 1:
        mid = (lo + hi) // 2
        if need(mid) <= budget:
            lo = mid
        else:
            hi = mid
    return lo


def plan_memory(req: MemoryPlanRequest) -> MemoryPlan:
    n = req.names
    num_gpus, draft_tp, max_len = _check_parallelism(req)
    dtype = _resolve_dtype(req.dtype, req.target, n)
    kv_dtype = _kv_dtype(req.kv_cache_dtype, dtype, n)
    kv_bytes = DTYPE_BYTES[kv_dtype]
    target = req.target
    target_mem, draft_mem, warnings = _memories(req, dtype, kv_bytes, max_len, draft_tp)
    budget = int(req.gpu.memory_bytes * req.gpu_memory_utilization)
    reserve, reserve_base = _reserve(req, dtype, draft_tp, True), _reserve(req, dtype, draft_tp, False)
    draft_weights = (draft_mem.weight_bytes if draft_tp == 1 else draft_mem.weight_bytes_per_gpu) if draft_mem else 0
    kv_budget_base = budget - target_mem.weight_bytes_per_gpu - reserve_base.total_bytes
    kv_budget = budget - target_mem.weight_bytes_per_gpu - draft_weights - reserve.total_bytes
    kv_models: list[tuple[ModelSpec, int]] = [(target, req.tp)]
    per_token = target_mem.kv_bytes_per_token_per_gpu
    per_seq = target_mem.kv_bytes_per_max_len_seq_per_gpu
    if req.draft is not None and req.draft.spec is not None and draft_mem is not None:
        kv_models.append((req.draft.spec, draft_tp))
        per_token += draft_mem.kv_bytes_per_token_per_gpu
        per_seq += draft_mem.kv_bytes_per_max_len_seq_per_gpu
    tokens, seqs = _capacity(kv_budget, per_token, per_seq)
    tokens_base, seqs_base = _capacity(
        kv_budget_base, target_mem.kv_bytes_per_token_per_gpu, target_mem.kv_bytes_per_max_len_seq_per_gpu
    )
    problems, shortfall = _problems(
        req, kv_budget, per_seq, seqs, target_mem, draft_mem, draft_weights, reserve, budget, max_len
    )
    if problems:  # the activations of a max_num_batched_tokens pass may be what breaks it: said first
        problems[:0] = _batched_tokens_problem(req, dtype, draft_tp, reserve, kv_budget - per_seq)
    max_len_fit = _max_len_that_fits(kv_budget, kv_models, kv_bytes, max_len)
    if problems and 0 < max_len_fit < max_len:
        problems.append(f"{n.setting('max_model_len', max_len_fit)} or less would fit")
    fits_base = kv_budget_base > 0 and seqs_base >= 1
    if draft_mem is not None and fits_base and seqs_base > 0:
        cost = 1.0 - seqs / seqs_base
        if cost >= 0.25:
            warnings.append(
                f"the draft costs {cost:.0%} of max concurrency ({seqs_base} -> {seqs} sequences of {max_len} tokens)"
            )
    return MemoryPlan(
        target=target_mem,
        draft=draft_mem,
        draft_method=req.draft.label if req.draft else None,
        gpu=req.gpu,
        tp=req.tp,
        num_gpus=num_gpus,
        replicas=num_gpus // req.tp,
        kv_cache_dtype=kv_dtype,
        max_model_len=max_len,
        gpu_memory_utilization=req.gpu_memory_utilization,
        budget_bytes_per_gpu=budget,
        reserve=reserve,
        reserve_without_draft=reserve_base,
        kv_budget_bytes_per_gpu=kv_budget,
        kv_budget_bytes_per_gpu_without_draft=kv_budget_base,
        kv_cache_tokens=tokens,
        kv_cache_tokens_without_draft=tokens_base,
        max_concurrent_seqs=seqs,
        max_concurrent_seqs_without_draft=seqs_base,
        fits=not problems,
        fits_without_draft=fits_base,
        shortfall_bytes_per_gpu=max(0, shortfall),
        max_model_len_that_fits=max_len_fit,
        problems=tuple(problems),
        warnings=tuple(warnings),
    )


def check_target_alone(target: ModelSpec, tp: int, max_model_len: int | None, names: FieldNames = CLI_FLAGS) -> int:
    """What vLLM refuses of the target before any memory is counted -- a TP its heads do not divide, a draft head
    given as the target, a ``max_model_len`` past its positions (vLLM's ``ModelConfig`` checks at start-up) -- raised as
    :class:`SpecwiseError`; the ``max_model_len`` to plan for (the model's own when none is given)."""
    _check_tp(target, tp, "target", "tp", names)
    if target.draft_head is not None:
        raise SpecwiseError(
            f"{target.name} is an {target.draft_head} head, a draft: it serves beside the target it was trained "
            "for, not alone (give it as the draft)"
        )
    max_len = max_model_len if max_model_len is not None else target.max_position_embeddings
    if max_len > target.max_position_embeddings:
        raise SpecwiseError(
            f"{names.setting('max_model_len', max_len)} exceeds {target.name}'s max_position_embeddings "
            f"({target.max_position_embeddings}); vLLM refuses it"
        )
    return max_len


def check_draft_tp(tp: int, draft: DraftChoice, draft_tp: int | None = None, names: FieldNames = CLI_FLAGS) -> int:
    """The draft's TP (``draft_tp``, else the target's ``tp``) after checking it against vLLM's choices (1 or the
    target's, ``vllm/config/speculative.py``; MTP layers only the target's) and the draft's heads."""
    n = names
    resolved = draft_tp if draft_tp is not None else tp
    if draft.spec is None:  # n-gram, suffix: nothing to place
        return resolved
    if resolved not in (1, tp):
        raise SpecwiseError(f"{n.setting('draft_tp', resolved)}: vLLM allows 1 or the target's {n.name('tp')} ({tp})")
    if draft.kind == "mtp" and resolved != tp:
        raise SpecwiseError(f"{n.name('draft_tp')}: MTP layers run with the target's tensor parallelism")
    implied = None if draft_tp is not None else f"the target's {n.setting('tp', tp)} (the default draft TP)"
    _check_tp(draft.spec, resolved, "draft", "draft_tp", n, implied)
    return resolved


def _check_parallelism(req: MemoryPlanRequest) -> tuple[int, int, int]:
    """(GPUs, the draft's TP, the max_model_len) after checking both TPs against the GPUs and the models' heads, and
    the target alone (:func:`check_target_alone`)."""
    n = req.names
    num_gpus = req.num_gpus if req.num_gpus is not None else req.tp
    if req.tp > num_gpus:
        raise SpecwiseError(
            f"{n.setting('tp', req.tp)} needs at least {req.tp} GPUs, but {n.name('num_gpus')} is {num_gpus}"
        )
    if num_gpus % req.tp:
        raise SpecwiseError(f"{n.setting('num_gpus', num_gpus)} is not a multiple of {n.setting('tp', req.tp)}")
    max_len = check_target_alone(req.target, req.tp, req.max_model_len, n)
    if req.draft is None or req.draft.spec is None:
        return num_gpus, req.draft_tp if req.draft_tp is not None else req.tp, max_len
    return num_gpus, check_draft_tp(req.tp, req.draft, req.draft_tp, n), max_len


def _kv_dtype(choice: str, dtype: str, n: FieldNames) -> str:
    if choice not in KV_CACHE_DTYPES:
        raise SpecwiseError(f"{n.name('kv_cache_dtype')} {choice!r}: expected one of {', '.join(KV_CACHE_DTYPES)}")
    return kv_cache_dtype(choice, dtype)


def _memories(
    req: MemoryPlanRequest, dtype: str, kv_bytes: float, max_len: int, draft_tp: int
) -> tuple[ModelMemory, ModelMemory | None, list[str]]:
    """The target's and the draft's weights and KV as deployed, and what the operator should know about them."""
    n = req.names
    warnings: list[str] = []
    target_mem = _model_memory(
        req.target,
        dtype=dtype,
        quant=_resolve_quant(req.quantization, req.target, "target", n.name("quantization")),
        tp=req.tp,
        kv_bytes=kv_bytes,
        max_model_len=max_len,
    )
    draft_spec = req.draft.spec if req.draft else None
    draft_mem = None
    if draft_spec is not None:
        draft_spec, shared = (
            loaded_draft(draft_spec, req.target) if req.draft_shares_target_weights else (draft_spec, None)
        )
        if shared is not None:
            warnings.append(shared)
        draft_mem = _model_memory(
            draft_spec,
            dtype=dtype,
            quant=_resolve_quant(req.draft_quantization, draft_spec, "draft", n.name("draft_quantization")),
            tp=draft_tp,
            kv_bytes=kv_bytes,
            max_model_len=max_len,
        )
        head = draft_spec.draft_head is not None and draft_spec.draft_head != "mtp"
        if head and draft_tp != req.tp and req.draft_shares_target_weights:
            warnings.append(
                f"{n.name('draft_tp')} {draft_tp}: vLLM V1 runs an EAGLE head at the target's tensor parallelism "
                f"({req.tp}) whatever draft_tensor_parallel_size says; this placement is its V0 engine's "
                "(0.8.3-0.8.5), which also loads the head's own embedding"
            )
        if draft_spec.draft_head is None and draft_spec.max_position_embeddings < max_len:
            warnings.append(
                f"the draft supports {draft_spec.max_position_embeddings} positions, less than max_model_len "
                f"{max_len}: lower {n.name('max_model_len')} or expect vLLM to refuse or skip speculation on long "
                "requests"
            )
    if target_mem.quantization.startswith("fp8") and not req.gpu.supports_fp8:
        warnings.append(f"{req.gpu.name} has no FP8 tensor cores: vLLM runs FP8 weights weight-only (slower matmuls)")
    return target_mem, draft_mem, warnings


def loaded_draft(draft: ModelSpec, target: ModelSpec) -> tuple[ModelSpec, str | None]:
    """The draft's weights as vLLM V1 (and SGLang, whose EAGLE worker takes the target's embedding and head:
    ``set_embed_and_head``) holds them beside ``target``'s, and a note when some are the target's (review s46b: an
    8B target with its EAGLE head on a 24 GB GPU was planned 32% short of its KV tokens):

    * an EAGLE-1 head's input embedding, when it has the target's shape: V1's proposer deletes the head's copy and
      points it at the target's (vllm/v1/spec_decode/eagle.py ``load_model``, 0.9.2 to 0.11.0); from 0.12 only when
      the two are equal (``torch.equal``; ``llm_base_proposer.py`` later), as a head trained on this target's frozen
      embedding has them -- a head trained for another model keeps its own, which this does not know. vLLM 0.8.3 to
      0.8.5 run EAGLE on V0, which loads the head's own copy.
    * an MTP module's embedding (0.9+) and LM head (``shared_head.head``, 0.16+; 0.11 to 0.15 load their own, ~0.2%
      of DeepSeek-V3's weights): "Detected MTP model. Sharing target model embedding weights" (same files).

    (An EAGLE-3 head's embedding is not counted to begin with: :mod:`specwise.specs.hf_config`.)"""
    p = draft.params
    same_shape = draft.hidden_size == target.hidden_size and draft.vocab_size == target.vocab_size
    if draft.draft_head == "eagle" and p.embedding and same_shape:
        note = (
            f"the EAGLE head's input embedding ({p.embedding / 1e6:.0f}M parameters) is counted as the target's: vLLM "
            "V1 and SGLang share it (vLLM 0.12+ when the two are equal, as for a head trained on this target; vLLM's "
            "V0 engine, 0.8.3-0.8.5, loads the head's own copy)"
        )
        return replace(draft, params=replace(p, embedding=0)), note
    if draft.draft_head == "mtp" and (p.embedding or p.lm_head):
        note = (
            "the MTP module's embedding and LM head are counted as the target's: vLLM shares them (the embedding "
            "from 0.9, the LM head from 0.16)"
        )
        return replace(draft, params=replace(p, embedding=0, lm_head=0)), note
    return draft, None


def _reserve(req: MemoryPlanRequest, dtype: str, draft_tp: int, with_draft: bool) -> ReserveBreakdown:
    if req.reserve_bytes is not None:
        return ReserveBreakdown(req.reserve_bytes, 0, 0, overridden=True)
    return estimate_reserve(
        req.target,
        req.draft.spec if (with_draft and req.draft) else None,
        tp=req.tp,
        draft_tp=draft_tp,
        act_dtype_bytes=DTYPE_BYTES[dtype],
        max_num_batched_tokens=req.max_num_batched_tokens,
        max_num_seqs=req.max_num_seqs,
        num_speculative_tokens=req.num_speculative_tokens,
    )


def _capacity(kv_budget_bytes: int, token_bytes: int, seq_bytes: int) -> tuple[int, int]:
    """(KV tokens, whole max-length sequences) that fit the KV budget."""
    if kv_budget_bytes <= 0:
        return 0, 0
    tokens = kv_tokens_that_fit(kv_budget_bytes, token_bytes)
    seqs = int(kv_budget_bytes // seq_bytes) if seq_bytes else 0
    return tokens, seqs


def _problems(
    req: MemoryPlanRequest,
    kv_budget: int,
    per_seq: int,
    seqs: int,
    target_mem: ModelMemory,
    draft_mem: ModelMemory | None,
    draft_weights: int,
    reserve: ReserveBreakdown,
    budget: int,
    max_len: int,
) -> tuple[list[str], int]:
    """Why it does not fit (empty when it does), and the shortfall per GPU in bytes."""
    if kv_budget <= 0:
        used = target_mem.weight_bytes_per_gpu + draft_weights + reserve.total_bytes
        what = "target + draft weights" if draft_mem else "the weights"
        hint = _tp_hint(req, target_mem.weight_bytes, draft_weights + reserve.total_bytes, budget)
        return [
            f"{what} and reserve need {fmt_bytes(used)} per GPU but only {fmt_bytes(budget)} is usable "
            f"({req.gpu.name}, {fmt_bytes(req.gpu.memory_bytes)} x {req.gpu_memory_utilization}): "
            f"misses by {fmt_bytes(-kv_budget)} before any KV cache, {fmt_bytes(-kv_budget + per_seq)} with one "
            f"{max_len}-token sequence's" + hint
        ], -kv_budget + per_seq
    if seqs < 1:
        shortfall = per_seq - kv_budget
        return [
            f"one {max_len}-token sequence needs {fmt_bytes(per_seq)} of KV cache per GPU but only "
            f"{fmt_bytes(kv_budget)} is left: misses by {fmt_bytes(shortfall)}"
        ], shortfall
    return [], 0


def _batched_tokens_problem(
    req: MemoryPlanRequest, dtype: str, draft_tp: int, reserve: ReserveBreakdown, room_bytes: int
) -> list[str]:
    """The problem to state when the activation reserve of one ``max_num_batched_tokens`` pass is what breaks the
    fit -- at the least vLLM takes (``max_num_seqs``) one max-length sequence would fit -- naming the setting and
    the largest value that fits (empty otherwise). ``room_bytes``: the KV budget left after one max-length
    sequence (negative: what is missing)."""
    n, tokens = req.names, req.max_num_batched_tokens
    if reserve.overridden or room_bytes >= 0 or tokens <= req.max_num_seqs:
        return []

    def room(batched_tokens: int) -> int:  # the activations grow with the tokens of one forward pass
        smaller = _reserve(replace(req, max_num_batched_tokens=batched_tokens), dtype, draft_tp, True)
        return room_bytes + reserve.total_bytes - smaller.total_bytes

    fits, misses = req.max_num_seqs, tokens
    if room(fits) < 0:
        return []  # the weights (or the sequence's KV) miss even at the smallest token budget
    while misses - fits > 1:
        mid = (fits + misses) // 2
        fits, misses = (mid, misses) if room(mid) >= 0 else (fits, mid)
    return [
        f"{n.setting('max_num_batched_tokens', tokens)} breaks the fit: activations for a forward pass of that many "
        f"tokens take {fmt_bytes(reserve.activation_bytes)} of the reserve per GPU; "
        f"{n.setting('max_num_batched_tokens', fits)} or less would fit"
    ]


def _tp_hint(req: MemoryPlanRequest, target_weight_bytes: int, other_bytes: int, budget: int) -> str:
    """Suggest the smallest larger TP (that vLLM accepts for this model) whose shard leaves KV room."""
    for candidate in (2, 4, 8, 16):
        if candidate <= req.tp:
            continue
        try:
            _check_tp(req.target, candidate, "target", "tp", req.names)
        except SpecwiseError:
            continue
        if target_weight_bytes / candidate + other_bytes < budget * 0.9:
            return f"; {req.names.setting('tp', candidate)} would leave room for KV cache"
    return ""


def kv_tokens_at_length(
    plan: MemoryPlan, target: ModelSpec, draft: ModelSpec | None, draft_tp: int, tokens: int
) -> tuple[int, int]:
    """The KV cache's capacity in tokens (with the draft, without) when the sequences in it are ``tokens`` long.

    :attr:`MemoryPlan.kv_cache_tokens` prices every token at every layer. A sliding-window layer holds at most its
    window of a sequence (vLLM frees the blocks that fall out of it: ``SlidingWindowManager.remove_skipped_blocks``
    in ``vllm/v1/core/single_type_kv_cache_manager.py``), so sequences longer than the window cost less per token
    than that; the simulator, which charges every cached token alike, gets the capacity at the traffic's typical
    length. Without sliding windows this is the plan's own count."""
    models = [(target, plan.tp)] + ([(draft, draft_tp)] if draft is not None and plan.draft is not None else [])
    if not any(m.attention.sliding_layers for m, _ in models):
        return plan.kv_cache_tokens, plan.kv_cache_tokens_without_draft
    n = max(1, min(tokens, plan.max_model_len))
    dtype_bytes = DTYPE_BYTES[plan.kv_cache_dtype]
    with_draft = sum(m.kv_bytes_for_sequence(n, dtype_bytes, tp) for m, tp in models)
    alone = target.kv_bytes_for_sequence(n, dtype_bytes, plan.tp)
    budget, budget_alone = plan.kv_budget_bytes_per_gpu, plan.kv_budget_bytes_per_gpu_without_draft
    return max(0, budget * n // with_draft) if with_draft else 0, max(0, budget_alone * n // alone) if alone else 0
