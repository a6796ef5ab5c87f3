"""The speculative methods specwise knows: one row per method, read by every package that needs to know one.

Names are vLLM's ``--speculative-config`` ``method`` values (``vllm/config/speculative.py``). What a row says:

* ``proposer``: what makes the draft tokens --
  ``draft_model`` (a separate small LM with its own weights and KV cache), ``head`` (an EAGLE/EAGLE-3 head: one
  or a few layers fed the target's hidden states), ``target_layers`` (MTP: the target's own multi-token-prediction
  layers) or ``lookup`` (n-gram / suffix matching on the CPU: no weights, no KV cache);
* ``needs_draft_checkpoint``: the config must name a draft model (``model`` in vLLM's config);
* ``profile_as``: the ``specwise profile --method`` whose documents describe it (a head's or MTP's acceptance is
  taken from a ``draft_model`` profile of the same draft checkpoint, matched by name);
* ``settings``: the method's own config keys (e.g. n-gram's prompt lookup bounds), accepted only with it;
* ``shape``: ``chain`` (k tokens, one path, each accepted only if all before it were) or ``tree`` (several
  candidate paths verified together); the simulator's acceptance sampling dispatches on it;
* ``prior_alpha_t0``: the method's own assumed per-token acceptance at T = 0 (None: it depends on the task; see
  :mod:`specwise.advisor.priors`, which cites the sources);
* ``cross_request_history``: the proposer learns from earlier requests (suffix decoding, Oliaro et al. 2024);
* ``needs_package``: a Python package vLLM imports for the method and does not install itself (suffix decoding:
  ``arctic-inference``; ``vllm/config/speculative.py`` ``_validate_suffix_decoding`` raises ImportError without it).

Adding a method: a row here, its prior (``advisor/priors.py``) if it has none here, and the engine's config
fields (``engines/<engine>.py``) if they differ from the defaults. See ARCHITECTURE.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from specwise.errors import SpecwiseError
from specwise.values import bounded

if TYPE_CHECKING:
    from specwise.perfmodel.drafting import DraftCost
    from specwise.perfmodel.predictor import StepTimePredictor

MAX_K = 16  # the most draft tokens per step specwise simulates or profiles
speculative_tokens = bounded(int, f"an integer in 1..{MAX_K}", low=1, high=MAX_K)
"""The check of a num_speculative_tokens (``plan-memory --num-speculative-tokens``, the API's): the k a scenario's
[speculation].k also allows."""

Proposer = Literal["draft_model", "head", "target_layers", "lookup"]
Shape = Literal["chain", "tree"]


@dataclass(frozen=True)
class Method:
    name: str
    proposer: Proposer
    summary: str
    profile_as: str | None = None
    settings: tuple[str, ...] = ()
    shape: Shape = "chain"
    prior_alpha_t0: float | None = None
    cross_request_history: bool = False
    needs_package: str | None = None

    @property
    def needs_draft_checkpoint(self) -> bool:
        return self.proposer in ("draft_model", "head")

    @property
    def has_weights(self) -> bool:
        """Runs a network (weights, a KV cache, forward passes) rather than a lookup."""
        return self.proposer != "lookup"

    @property
    def is_lookup(self) -> bool:
        return self.proposer == "lookup"

    @property
    def samples_from_a_distribution(self) -> bool:
        """Can draft probabilistically (vLLM's ``draft_sample_method``); a lookup proposes fixed tokens."""
        return self.proposer != "lookup"

    def draft_cost(self, draft: StepTimePredictor | None, branching: int = 1) -> DraftCost:
        """What proposing costs per step: the draft network's passes (``branching`` tokens per sequence after the
        first pass, a draft tree's top-k), or a fraction of verification."""
        from specwise.perfmodel.drafting import ModelDraftCost, NgramDraftCost

        if self.is_lookup:
            return NgramDraftCost()
        if draft is None:
            raise SpecwiseError(f"method {self.name}: needs the draft's step-time model")
        return ModelDraftCost(draft, branching)


_TABLE = (
    Method("draft_model", "draft_model", "a separate small LM proposes k tokens", profile_as="draft_model"),
    Method("eagle", "head", "an EAGLE head on the target's hidden states", "draft_model", prior_alpha_t0=0.70),
    Method("eagle3", "head", "an EAGLE-3 head on the target's hidden states", "draft_model", prior_alpha_t0=0.745),
    Method(
        "mtp", "target_layers", "the target's own multi-token-prediction layers", "draft_model", prior_alpha_t0=0.85
    ),
    Method(
        "ngram",
        "lookup",
        "prompt lookup: copy what followed the last n-gram in the context",
        profile_as="ngram",
        settings=("prompt_lookup_min", "prompt_lookup_max"),
    ),
    Method(
        "suffix",
        "lookup",
        "suffix decoding: a suffix tree over this and earlier outputs",
        profile_as="suffix",
        cross_request_history=True,
        needs_package="arctic-inference",
    ),
)

METHODS: dict[str, Method] = {m.name: m for m in _TABLE}
METHOD_NAMES: tuple[str, ...] = tuple(METHODS)
PROFILABLE: tuple[str, ...] = tuple(m.name for m in _TABLE if m.profile_as == m.name)
LOOKUP_METHODS: tuple[str, ...] = tuple(m.name for m in _TABLE if m.is_lookup)
HEAD_METHODS: tuple[str, ...] = tuple(m.name for m in _TABLE if m.proposer == "head")


# vLLM's model-specific MTP names (``MTPModelTypes`` in vllm/config/speculative.py, as of its 2026 releases), each
# run as "mtp": ``SpeculativeConfig.__post_init__`` replaces them ("method `%s` is deprecated and replaced with mtp");
# before 0.11, deepseek_mtp was MTP's only name.
VLLM_MTP_NAMES = frozenset(
    {"deepseek_mtp", "dots3_note_mtp", "mimo_mtp", "mimo_v2_mtp", "glm4_moe_mtp", "glm4_moe_lite_mtp", "glm_ocr_mtp"}
    | {"ernie_mtp", "nemotron_h_mtp", "exaone_moe_mtp", "exaone4_5_mtp", "qwen3_next_mtp", "qwen3_5_mtp"}
    | {"longcat_flash_mtp", "bailing_hybrid_v3_mtp", "minimax_m3_mtp", "bailing_hybrid_mtp", "kimi_k3_mtp"}
    | {"pangu_ultra_moe_mtp", "step3p5_mtp", "hy_v3_mtp", "hy_v4_mtp", "gemma4_mtp", "inkling_mtp", "glm5_next_mtp"}
)


def row_name(vllm_method: str) -> str:
    """The row a vLLM ``--speculative-config`` method name runs as: its own name, or ``mtp`` for one of
    :data:`VLLM_MTP_NAMES`. Any other name is returned as given (an unknown one is refused by :func:`get_method`)."""
    return "mtp" if vllm_method in VLLM_MTP_NAMES else vllm_method


def get_method(name: str) -> Method:
    """The row for ``name``; an unknown name is one line listing the known ones."""
    try:
        return METHODS[name]
    except (KeyError, TypeError):
        raise SpecwiseError(f"unknown speculative method {name!r} (known: {', '.join(METHOD_NAMES)})") from None
