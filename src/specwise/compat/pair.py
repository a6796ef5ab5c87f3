"""Is this draft usable with this target in vLLM, and how does its size compare? (pure)

Checks, each a :class:`Finding` with pass / warn / fail / info and its evidence:

* ``vocab``: vLLM's draft-model proposer indexes the target's vocabulary with the draft's token
  ids, so the vocabulary sizes must be equal: V1 raises in ``SpeculativeConfig.verify_equal_vocab_size_if_draft_model``
  (``vllm/config/speculative.py``), V0 asserted it (``spec_decode_worker.py``, issue #5203). Even a difference made
  only of padding rows (ids no tokenizer defines -- Qwen2.5-0.5B has 151,936 rows, Qwen2.5-7B 152,064, both
  tokenizers 151,665 tokens) fails; the finding then says how to pad the draft (PR #13849, which would have
  tolerated it, was closed unmerged).
* ``special_tokens``: BOS/EOS ids should agree, or the draft proposes ends the target does not.
* ``tokenizer``: the same id must mean the same token; from files (token tables, merges, sample
  encodings) when present, else from the catalog's tokenizer family.
* ``head``: EAGLE/EAGLE-3/MTP heads read the target's hidden states: hidden sizes must match, and a
  head is trained for one target.
* ``method`` (:func:`method_fit`, for a config that names a method): vLLM builds the draft from the ``method``
  (``vllm/config/speculative.py``: ``eagle``/``eagle3`` wrap the draft's config in ``EAGLEConfig`` and load an
  EAGLE head's architecture; ``draft_model`` loads it as a standalone causal LM), so a full LM under ``eagle3`` or an
  EAGLE head under ``draft_model`` does not load as the method needs.
* ``size_ratio``: target:draft parameters (active parameters for MoE) against the common 1:8-1:12
  practitioner advice (no measured source; the checks below say why it is only a starting point). Smaller drafts
  often win when acceptance holds: the draft's forward pass has fixed costs (Qwen3-0.6B costs ~37.5% of a
  Qwen3-8B step in vLLM, SpecDecode-Bench), so measure acceptance before settling on a size.
* ``max_length``: a draft with fewer positions than max_model_len (``--max-model-len``, else the target's
  ``max_position_embeddings``) cannot follow long requests. EAGLE heads too: both EAGLE-3 heads of the catalog
  were trained with 2,048 positions. SGLang indexes such a head's rotary cache out of bounds past them (SGLang issue
  #6783), as vLLM did until it raised the head's ``max_position_embeddings`` to the target's max_model_len
  (``vllm/config/speculative.py`` ``_maybe_override_draft_max_position_embeddings``, vLLM #48894; in 0.32): then it
  runs, but the head drafts at positions it never saw in training.

A model-free method (``ngram``, ``suffix``) has none of these to check: :func:`model_free_pair` calls it compatible
with any target, its ratios None. ``mtp`` on a target without MTP layers is an incompatible pair
(:func:`no_mtp_pair`), as ``check-pair`` documents exit 1, not bad input.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from specwise.compat.tokenizer_files import TokenizerEvidence
from specwise.memory.weights import weight_bytes
from specwise.methods import HEAD_METHODS, LOOKUP_METHODS
from specwise.specs.model import ModelSpec
from specwise.units import DTYPE_BYTES

Status = Literal["pass", "warn", "fail", "info"]
ADVICE_LOW, ADVICE_HIGH = 8.0, 12.0


@dataclass(frozen=True)
class Finding:
    check: str
    status: Status
    message: str
    evidence: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"check": self.check, "status": self.status, "message": self.message, "evidence": self.evidence}


@dataclass(frozen=True)
class PairReport:
    """The findings for a draft on a target. The ratios are None where there is no draft model to compare: a
    model-free method (:func:`model_free_pair`) or MTP layers the target does not have (:func:`no_mtp_pair`)."""

    target: str
    draft: str
    findings: tuple[Finding, ...]
    param_ratio: float | None
    active_param_ratio: float | None
    byte_ratio: float | None

    @property
    def compatible(self) -> bool:
        return all(f.status != "fail" for f in self.findings)

    @property
    def model_free(self) -> bool:
        """n-gram or suffix lookup: no draft model, so nothing of a model's checks applies."""
        return self.draft in LOOKUP_METHODS

    @property
    def failures(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.status == "fail")

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "draft": self.draft,
            "compatible": self.compatible,
            "param_ratio": self.param_ratio,
            "active_param_ratio": self.active_param_ratio,
            "byte_ratio": self.byte_ratio,
            "findings": [f.to_dict() for f in self.findings],
        }

    def to_json(self) -> dict[str, Any]:
        """What ``specwise check-pair --json`` prints (the name every typed document's JSON has)."""
        return self.to_dict()


def check_pair(
    target: ModelSpec,
    draft: ModelSpec,
    *,
    tokenizer_evidence: TokenizerEvidence | None = None,
    head_trained_for: tuple[str, ...] = (),
    max_model_len: int | None = None,
) -> PairReport:
    """The findings for ``draft`` on ``target``; ``max_model_len``: the deployment's context (default: all the
    target's positions)."""
    findings = [
        _vocab(target, draft, tokenizer_evidence),
        _special_tokens(target, draft),
        _tokenizer(target, draft, tokenizer_evidence),
    ]
    if draft.draft_head is not None:
        findings.append(_head(target, draft, head_trained_for))
    ratio, active_ratio, byte_ratio = _ratios(target, draft)
    findings.append(_size_ratio(target, draft, ratio, active_ratio, byte_ratio))
    context = max_model_len or target.max_position_embeddings
    if draft.max_position_embeddings < context:
        findings.append(_max_length(draft, context, max_model_len is not None))
    return PairReport(target.name, draft.name, tuple(findings), ratio, active_ratio, byte_ratio)


# The checks of a draft model or head; none applies to a model-free method (what model_free_pair's evidence lists).
MODEL_CHECKS = ("vocab", "special_tokens", "tokenizer", "head", "size_ratio", "max_length")


def model_free_pair(target: ModelSpec, method: str) -> PairReport:
    """``ngram`` / ``suffix`` on ``target``: compatible with any target. The proposer copies its drafts from the
    token ids of the prompt and the output so far (vLLM's ``NgramProposer``; Arctic Inference's suffix tree), so
    there is no vocabulary, tokenizer, head or context of its own to check, no weights and no KV cache: one
    ``method`` finding saying so, the checks that do not apply listed in its evidence, and no size ratios (None,
    not a number made up for a model that is not there)."""
    if method not in LOOKUP_METHODS:
        raise ValueError(f"{method!r} is not a model-free method ({', '.join(LOOKUP_METHODS)})")
    evidence: dict[str, Any] = {
        "method": method,
        "model_free": True,
        "weights_bytes": 0,
        "kv_cache_bytes_per_token": 0,
        "not_applicable": list(MODEL_CHECKS),
    }
    message = (
        f"{method} lookup is model-free: it drafts from the prompt and output so far, with no weights and no KV "
        "cache, so it works with any target (it pays only where outputs copy the prompt)"
    )
    return PairReport(target.name, method, (Finding("method", "pass", message, evidence),), None, None, None)


def no_mtp_pair(target: ModelSpec) -> PairReport:
    """``mtp`` on a target that has no multi-token-prediction layers: not compatible (vLLM's ``mtp`` method drafts
    with the target's own MTP layers; there is nothing to load), with no size ratios."""
    evidence: dict[str, Any] = {"head": "mtp", "target_mtp_layers": target.mtp_layers}
    message = (
        f"{target.name} has no MTP layers: vLLM's mtp method drafts with the target's own multi-token-prediction "
        "layers; use a draft model, EAGLE head or ngram instead"
    )
    return PairReport(target.name, "mtp", (Finding("head", "fail", message, evidence),), None, None, None)


def method_fit(method: str, draft: ModelSpec) -> Finding:
    """Does the draft checkpoint's kind suit the config's ``method`` (draft_model: a full LM; eagle/eagle3: a head
    of that kind)? A mismatch fails: vLLM builds the draft's architecture from the method (module docstring)."""
    head = draft.draft_head
    evidence: dict[str, Any] = {"method": method, "draft_kind": head or "language model"}
    if method == "draft_model" and head is not None:
        message = (
            f"{draft.name} is an {head} head, not a language model: vLLM's draft_model method cannot run it alone "
            f'(use method = "{head}" with the target it was trained for)'
        )
        return Finding("method", "fail", message, evidence)
    if method in HEAD_METHODS and head != method:
        kind = f"an {head} head" if head else "a full language model"
        fix = f'method = "{head}"' if head in HEAD_METHODS else 'method = "draft_model"'
        message = f"{draft.name} is {kind}, not an {method} head: vLLM's {method} method cannot load it (use {fix})"
        return Finding("method", "fail", message, evidence)
    return Finding(
        "method",
        "pass",
        f"{draft.name} is {'an ' + head + ' head' if head else 'a language model'}, as method {method} needs",
        evidence,
    )


def _max_length(draft: ModelSpec, context: int, given: bool) -> Finding:
    """A draft or head with fewer positions than the deployment's context (a warning: vLLM runs it)."""
    positions = draft.max_position_embeddings
    what = f"--max-model-len {context:,}" if given else f"the target's {context:,}"
    evidence = {"draft": positions, "context": context, "head": draft.draft_head}
    if draft.draft_head is None:
        message = (
            f"the draft handles {positions:,} positions, fewer than {what}: cap --max-model-len at {positions} "
            "or long requests get no speculation"
        )
    else:
        message = (
            f"this {draft.draft_head} head was trained with {positions:,} positions, fewer than {what}: SGLang (issue "
            f"#6783) and vLLM before #48894 fail past them; vLLM 0.32 runs, but the head drafts at positions it "
            f"never trained on, so measure acceptance on long requests or cap --max-model-len at {positions}"
        )
    return Finding("max_length", "warn", message, evidence)


def ratio_text(target_over_draft: float) -> str:
    """``1:12.3`` (draft:target); a draft larger than its target reads ``8.8:1``, not ``1:0.1``."""
    r = target_over_draft
    return f"1:{r:.1f}" if r >= 1 else (f"{1 / r:.1f}:1" if r > 0 else "1:inf")


def _ratios(target: ModelSpec, draft: ModelSpec) -> tuple[float, float, float]:
    t_bytes = weight_bytes(target, DTYPE_BYTES[target.dtype], None)
    d_bytes = weight_bytes(draft, DTYPE_BYTES[draft.dtype], None)
    return (
        target.total_params / draft.total_params,
        target.active_params / draft.active_params,
        t_bytes / d_bytes if d_bytes else float("inf"),
    )


def _defined_tokens(spec: ModelSpec, evidence_count: int | None) -> int | None:
    return evidence_count if evidence_count is not None else spec.tokenizer.num_tokens


# vLLM PR #38174 ("Universal speculative decoding for heterogeneous vocabularies"): the field is in vLLM 0.26.0 to
# 0.33.0's vllm/config/speculative.py, where SpeculativeConfig skips the equal-vocabulary check when it is set,
# refuses it for any method but draft_model, and refuses a draft_sample_method other than greedy; 0.34.0 removed it
# (specwise.engines.vllm_versions.heterogeneous_vocab_refusal).
HETEROGENEOUS_VOCAB = (
    'on vLLM 0.26 to 0.33 set "use_heterogeneous_vocab": true in the speculative config (method draft_model, greedy '
    "draft sampling only; 0.34 removed it)"
)


def padding_vocab(findings: Sequence[Finding]) -> bool:
    """The draft model's vocabulary differs from the target's by padding rows only (every defined token shared):
    what vLLM 0.26 to 0.33 serve with ``use_heterogeneous_vocab`` at no loss
    (:func:`served_with_heterogeneous_vocab`)."""
    return any(f.check == "vocab" and f.evidence.get("padding_only") and "vllm_option" in f.evidence for f in findings)


def served_with_heterogeneous_vocab(findings: Sequence[Finding]) -> tuple[Finding, ...]:
    """``findings`` on a vLLM that takes ``use_heterogeneous_vocab`` (0.26 to 0.33, draft_model, greedy drafting): a
    padding-only vocabulary difference is no refusal there -- the key is written into the config -- so its failure
    becomes a warning that says so (review s45c: advise called Qwen2.5-7B with a 0.5B draft unservable on the vLLM
    its own message said serves it)."""
    if not padding_vocab(findings):
        return tuple(findings)
    out = []
    for f in findings:
        if f.check == "vocab" and f.status == "fail":
            vt, vd = f.evidence["target_vocab_size"], f.evidence["draft_vocab_size"]
            message = (
                f"vocabulary sizes differ by {abs(vt - vd)} rows ({vt} vs {vd}), all of it padding beyond the tokens "
                'the tokenizers define: vLLM 0.26 to 0.33 serve the pair with "use_heterogeneous_vocab": true (vLLM PR '
                "#38174; written into the config, greedy draft sampling), every defined token shared, so it limits no "
                "proposal"
            )
            f = Finding("vocab", "warn", message, {**f.evidence, "use_heterogeneous_vocab": True})
        out.append(f)
    return tuple(out)


def served_vocab_finding(findings: Sequence[Finding]) -> Finding | None:
    """The padding-only vocabulary finding :func:`served_with_heterogeneous_vocab` made a warning: its config takes
    ``"use_heterogeneous_vocab": true`` (None: no such finding)."""
    return next((f for f in findings if f.check == "vocab" and f.evidence.get("use_heterogeneous_vocab")), None)


def _other_vocab_option(draft: ModelSpec, cost: str) -> str:
    """vLLM's option for a draft model whose vocabulary differs; an EAGLE/MTP head has none (vLLM takes it with
    method draft_model only), so for a head nothing is added."""
    return "" if draft.draft_head is not None else f"; or {HETEROGENEOUS_VOCAB} -- {cost}"


def _vocab(target: ModelSpec, draft: ModelSpec, ev: TokenizerEvidence | None) -> Finding:
    vt, vd = target.vocab_size, draft.vocab_size
    evidence: dict[str, Any] = {"target_vocab_size": vt, "draft_vocab_size": vd, "difference": abs(vt - vd)}
    if vt == vd:
        return Finding("vocab", "pass", f"same vocabulary size ({vt})", evidence)
    if draft.draft_head is None:
        evidence["vllm_option"] = "use_heterogeneous_vocab"
    t_defined = _defined_tokens(target, ev.target_tokens if ev else None)
    d_defined = _defined_tokens(draft, ev.draft_tokens if ev else None)
    same_family = target.tokenizer.family is not None and target.tokenizer.family == draft.tokenizer.family
    files_agree = ev is not None and ev.mismatched_ids == 0
    if (
        (same_family or files_agree)
        and t_defined is not None
        and d_defined is not None
        and t_defined <= min(vt, vd)
        and d_defined <= min(vt, vd)
    ):
        evidence.update(target_tokens_defined=t_defined, draft_tokens_defined=d_defined, padding_only=True)
        return Finding(
            "vocab",
            "fail",
            f"vocabulary sizes differ by {abs(vt - vd)} rows ({vt} vs {vd}), all of it padding beyond the "
            f"{max(t_defined, d_defined)} tokens the tokenizers define, but vLLM refuses any difference by default "
            "(V1: SpeculativeConfig.verify_equal_vocab_size_if_draft_model; V0 asserted it, issue #5203; the padding "
            f"tolerance of PR #13849 was never merged): pad the draft's embedding and lm_head to {max(vt, vd)} rows "
            f"and set its config's vocab_size to match"
            + _other_vocab_option(draft, "here every defined token is shared, so it limits no proposal"),
            evidence,
        )
    return Finding(
        "vocab",
        "fail",
        f"different vocabularies: target {target.name} has {vt} token ids, draft {draft.name} has {vd}; "
        "vLLM needs the draft to share the target's tokenizer by default"
        + _other_vocab_option(
            draft,
            "proposals are then limited to the tokens both vocabularies share (TLI, Timor et al., ICML 2025, "
            "arXiv 2502.05202), which lowers acceptance: measure it (specwise bench --launch)",
        ),
        evidence,
    )


def _special_tokens(target: ModelSpec, draft: ModelSpec) -> Finding:
    t, d = target.special_tokens, draft.special_tokens
    evidence = {
        "target_bos": t.bos_token_id,
        "draft_bos": d.bos_token_id,
        "target_eos": list(t.eos_token_ids),
        "draft_eos": list(d.eos_token_ids),
    }
    if not t.eos_token_ids or not d.eos_token_ids:
        return Finding("special_tokens", "info", "special token ids not known for both models", evidence)
    problems = []
    if t.bos_token_id is not None and d.bos_token_id is not None and t.bos_token_id != d.bos_token_id:
        problems.append(f"BOS differs ({t.bos_token_id} vs {d.bos_token_id})")
    if not set(t.eos_token_ids) & set(d.eos_token_ids):
        problems.append(f"no EOS id in common ({list(t.eos_token_ids)} vs {list(d.eos_token_ids)})")
    if problems:
        return Finding(
            "special_tokens", "warn", "; ".join(problems) + ": the draft may propose ends the target rejects", evidence
        )
    return Finding("special_tokens", "pass", "BOS/EOS ids agree", evidence)


def _tokenizer(target: ModelSpec, draft: ModelSpec, ev: TokenizerEvidence | None) -> Finding:
    if ev is not None:
        evidence: dict[str, Any] = {
            "target_file": ev.target_source,
            "draft_file": ev.draft_source,
            "common_ids": ev.common_ids,
            "mismatched_ids": ev.mismatched_ids,
            "merges_equal": ev.merges_equal,
            "samples_compared": ev.samples_compared,
            "samples_agreeing": ev.samples_agreeing,
        }
        if ev.mismatched_ids:
            i, a, b = ev.first_mismatch or (-1, None, None)
            return Finding(
                "tokenizer",
                "fail",
                f"tokenizers disagree on {ev.mismatched_ids} of {ev.common_ids} ids (first: id {i} is {a!r} "
                f"for the target, {b!r} for the draft)",
                evidence,
            )
        if ev.samples_compared and ev.samples_agreeing < ev.samples_compared:
            return Finding(
                "tokenizer",
                "fail",
                f"same token table but {ev.samples_compared - ev.samples_agreeing} of {ev.samples_compared} sample "
                "strings encode differently (pre-tokenizer or normalizer differ)",
                evidence,
            )
        if ev.merges_equal is False:
            return Finding(
                "tokenizer",
                "warn",
                "same token table but different BPE merges: some strings may split differently",
                evidence,
            )
        extra = ev.target_tokens - ev.draft_tokens
        note = f"; the target defines {extra} more tokens the draft never proposes" if extra > 0 else ""
        samples = (
            f", {ev.samples_agreeing}/{ev.samples_compared} sample strings encode identically"
            if ev.samples_compared
            else ""
        )
        return Finding(
            "tokenizer", "pass", f"token tables agree on all {ev.common_ids} shared ids{samples}{note}", evidence
        )
    tf, df = target.tokenizer.family, draft.tokenizer.family
    evidence = {
        "target_family": tf,
        "draft_family": df,
        "target_tokens": target.tokenizer.num_tokens,
        "draft_tokens": draft.tokenizer.num_tokens,
    }
    if tf is None or df is None:
        return Finding("tokenizer", "info", "no tokenizer files or catalog family to compare", evidence)
    if tf != df:
        return Finding("tokenizer", "fail", f"different tokenizers ({tf} vs {df})", evidence)
    nt, nd = target.tokenizer.num_tokens, draft.tokenizer.num_tokens
    if nt is not None and nd is not None and nt > nd:
        return Finding(
            "tokenizer",
            "warn",
            f"same tokenizer family ({tf}); the target defines {nt - nd} tokens beyond the draft's {nd} "
            "(ids the draft never proposes, e.g. newer special tokens)",
            evidence,
        )
    return Finding("tokenizer", "pass", f"same tokenizer family ({tf}, per the catalog)", evidence)


def _head(target: ModelSpec, draft: ModelSpec, trained_for: tuple[str, ...]) -> Finding:
    evidence: dict[str, Any] = {
        "head": draft.draft_head,
        "draft_hidden_size": draft.hidden_size,
        "target_hidden_size": target.hidden_size,
        "trained_for": list(trained_for),
    }
    if draft.hidden_size != target.hidden_size:
        return Finding(
            "head",
            "fail",
            f"{draft.draft_head} head with hidden size {draft.hidden_size} cannot read the target's "
            f"hidden states (size {target.hidden_size})",
            evidence,
        )
    if trained_for and target.name not in trained_for:
        return Finding(
            "head",
            "warn",
            f"this {draft.draft_head} head was trained for {', '.join(trained_for)}; on {target.name} "
            "expect low acceptance",
            evidence,
        )
    return Finding("head", "pass", f"{draft.draft_head} head matches the target's hidden size", evidence)


def _size_ratio(target: ModelSpec, draft: ModelSpec, ratio: float, active_ratio: float, byte_ratio: float) -> Finding:
    evidence = {
        "param_ratio": ratio,
        "active_param_ratio": active_ratio,
        "byte_ratio": byte_ratio,
        "advice": [ADVICE_LOW, ADVICE_HIGH],
        "target_params": target.total_params,
        "draft_params": draft.total_params,
    }
    basis = active_ratio if target.is_moe else ratio
    text = f"draft:target = {ratio_text(ratio)} by parameters"
    if target.is_moe:
        text += f" ({ratio_text(active_ratio)} by active parameters, which set the per-token cost)"
    text += f", {ratio_text(byte_ratio)} by weight bytes"
    if draft.draft_head is not None:
        return Finding(
            "size_ratio",
            "info",
            text + f"; the 1:8-1:12 advice is for draft models, not {draft.draft_head} heads",
            evidence,
        )
    if basis < 1.0:
        return Finding("size_ratio", "fail", text + ": the draft is larger than the target", evidence)
    if basis < ADVICE_LOW:
        return Finding(
            "size_ratio",
            "warn",
            text + ": larger than the common 1:8-1:12 advice; the draft's k "
            "sequential passes may cost more than the accepted tokens save",
            evidence,
        )
    if basis <= ADVICE_HIGH:
        return Finding("size_ratio", "pass", text + ": within the common 1:8-1:12 advice", evidence)
    return Finding(
        "size_ratio",
        "pass",
        text + ": smaller than the 1:8-1:12 advice, which often wins if "
        "acceptance holds; measure acceptance before settling on it",
        evidence,
    )
