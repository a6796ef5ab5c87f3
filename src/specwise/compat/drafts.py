"""Which drafts could serve a target (``specwise drafts``): every catalog draft model and EAGLE head, the target's
own MTP layers and the model-free methods, each checked as ``check-pair`` checks one (vocabulary, special tokens,
tokenizer, head fit, size ratio, context) and, given a GPU, planned as ``plan-memory`` plans one; ranked, with the
reasons.

The order among drafts that fit (a heuristic, said so in the output): an EAGLE head trained for this very target,
then the target's MTP layers (both reuse its hidden states), then draft models inside the practitioners' 1:8-1:12
size advice (closest to 1:10 first), then other draft models and heads trained for another target, then n-gram
and suffix lookup (no weights; they pay only where outputs copy the prompt). Acceptance is what decides; this
order only says what to profile first (``specwise profile``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from specwise.catalog import catalog_model_spec, catalog_models
from specwise.compat.pair import ADVICE_HIGH, ADVICE_LOW, Finding, PairReport, check_pair
from specwise.errors import SpecwiseError
from specwise.memory import MemoryPlan, MemoryPlanRequest, check_draft_tp, check_target_alone, plan_memory
from specwise.methods import LOOKUP_METHODS
from specwise.specs.derived import mtp_draft_spec
from specwise.specs.draft import DraftChoice
from specwise.specs.gpu import GpuSpec
from specwise.specs.model import ModelSpec

# Order of the kinds among drafts that fit (lower first).
_HEAD_FOR_TARGET, _MTP, _IN_ADVICE, _OTHER_MODEL, _MODEL_FREE = range(5)
# A draft placed beside the target: its memory plan, or None when only its placement was checked (no GPU given);
# raises SpecwiseError when vLLM could not place it.
MemoryCheck = Callable[[DraftChoice], MemoryPlan | None]


@dataclass(frozen=True)
class DraftSuggestion:
    draft: str  # catalog id, or "mtp", "ngram", "suffix"
    method: str  # vLLM's method name: draft_model, eagle, eagle3, mtp, ngram, suffix
    fits: bool
    reasons: tuple[str, ...]  # the failures first, then warnings, then what passed
    summary: str = ""  # the warnings and failures in a few words each (the table's column)
    param_ratio: float | None = None  # target : draft parameters (active parameters for a MoE target)
    ratio_of: str = "params"  # what param_ratio counts: params | active params
    kv_cost: float | None = None  # share of the target's KV cache the draft takes (with a GPU)
    order: tuple[int, float] = (_MODEL_FREE, 0.0)

    @property
    def model_based(self) -> bool:
        return self.method not in LOOKUP_METHODS

    def to_json(self) -> dict[str, Any]:
        return {
            "draft": self.draft,
            "method": self.method,
            "fits": self.fits,
            "param_ratio": self.param_ratio,
            "param_ratio_of": self.ratio_of,
            "kv_cache_cost": self.kv_cost,
            "summary": self.summary,
            "reasons": list(self.reasons),
        }


def _reasons(report: PairReport) -> list[str]:
    rank = {"fail": 0, "warn": 1, "pass": 2, "info": 3}
    return [f"{f.status}: {f.message}" for f in sorted(report.findings, key=lambda f: rank[f.status])]


def _short(f: Finding) -> str:
    """A finding in a few words: the size-ratio verdict, else the message's first clause."""
    if f.check == "size_ratio":
        return f.message.rsplit(": ", 1)[-1].split("; ", 1)[0]
    if f.check == "tokenizer" and f.status == "warn":  # "same family; <what differs>": the difference
        return f.message.split("; ", 1)[-1]
    return f.message.split(": ", 1)[0].split("; ", 1)[0]


def _summary(report: PairReport, memory: str, fits: bool, plan_warnings: tuple[str, ...] = ()) -> str:
    parts = [_short(f) for f in report.findings if f.status in ("fail", "warn")]
    if memory and not fits:
        parts.append(memory)
    parts += [_without_figures(w) for w in plan_warnings]  # plan-memory's warnings, in a few words
    return "; ".join(parts) or "no warnings"


def _without_figures(warning: str) -> str:
    """A plan-memory warning without its parentheses (figures, versions) and after its first ``; ``: "the EAGLE
    head's input embedding is counted as the target's: vLLM V1 and SGLang share it" (cut at the first " (" it read
    "the EAGLE head's input embedding", which says nothing: review s59 F1)."""
    out, depth = [], 0
    for ch in warning:
        depth += ch == "("
        if depth == 0:
            out.append(ch)
        depth -= ch == ")" and depth > 0
    text = " ".join("".join(out).split())
    for mark in ";:,":
        text = text.replace(f" {mark}", mark)
    return text.split("; ", 1)[0] or warning  # all in parentheses: the warning as it is


def _at_target_tp(tp: int, place: Callable[[DraftChoice], MemoryPlan | None]) -> MemoryCheck:
    """``place`` with its refusal saying why the target's TP is the only one: vLLM V1 runs a draft only there
    (``vllm/v1/spec_decode/draft_model.py`` refuses another ``draft_tensor_parallel_size``; EAGLE/MTP heads share
    the target's ranks). A draft whose heads do not split that way cannot be placed (V0, before vLLM 0.10, also ran
    a draft on one GPU)."""

    def placed(choice: DraftChoice) -> MemoryPlan | None:
        try:
            return place(choice)
        except SpecwiseError as exc:
            if tp == 1:
                raise
            raise SpecwiseError(
                f"{exc}; vLLM V1 runs a draft only at the target's tensor parallelism ({tp}) -- vLLM before "
                "0.10 (V0) also ran one on a single GPU"
            ) from None

    return placed


def memory_check(request: MemoryPlanRequest) -> MemoryCheck:
    """Plan each draft as ``request`` (its ``draft`` replaced), at the target's TP (:func:`_at_target_tp`)."""
    return _at_target_tp(request.tp, lambda choice: plan_memory(replace(request, draft=choice)))


def placement_check(tp: int) -> MemoryCheck:
    """Without a GPU: only whether each draft can be placed at the target's TP ``tp`` (its heads split over it, as
    :func:`memory_check` checks them), no memory plan."""

    def heads_only(choice: DraftChoice) -> None:
        check_draft_tp(tp, choice)
        return None

    return _at_target_tp(tp, heads_only)


@dataclass(frozen=True)
class _Placed:
    """A draft's memory plan, as a row says it: whether it fits, the KV share it takes, the plan in words, and the
    plan's warnings (what ``plan-memory`` prints for the same pair)."""

    fits: bool
    kv_cost: float | None
    memory: str
    warnings: tuple[str, ...] = ()


def _memory(choice: DraftChoice, plan_for: MemoryCheck) -> _Placed:
    try:
        plan = plan_for(choice)
    except SpecwiseError as exc:
        return _Placed(False, None, f"cannot be placed: {exc}")
    if plan is None:
        return _Placed(True, None, "memory not checked (give --gpu)")
    if not plan.fits:
        return _Placed(False, None, "does not fit: " + "; ".join(plan.problems or ("no room for one sequence",)))
    base = plan.kv_cache_tokens_without_draft
    cost = 1.0 - plan.kv_cache_tokens / base if base else 0.0
    return _Placed(True, cost, f"fits: the draft takes {cost:.0%} of the KV cache", tuple(plan.warnings))


_NOT_PAIRED = _Placed(False, None, "")


def _memory_reasons(placed: _Placed) -> tuple[str, ...]:
    return ((placed.memory,) if placed.memory else ()) + tuple(f"warn: {w}" for w in placed.warnings)


def _shown_ratio(report: PairReport, target: ModelSpec) -> tuple[float | None, str]:
    """The target:draft ratio a row shows, from the pair check's ratios (what ``check-pair`` reports), and what it
    counts: active parameters for a MoE target (what the 1:8-1:12 advice is about), else all parameters."""
    if target.is_moe:
        return report.active_param_ratio, "active params"
    return report.param_ratio, "params"


def _model_order(report: PairReport, spec: ModelSpec, trained_for: tuple[str, ...], target: str) -> tuple[int, float]:
    if spec.draft_head is not None:
        return (_HEAD_FOR_TARGET if target in trained_for else _OTHER_MODEL, 0.0)
    active, total = report.active_param_ratio, report.param_ratio
    assert active is not None and total is not None  # check_pair of a draft model always sizes it
    basis = active if math.isfinite(active) else total
    distance = abs(math.log(basis / 10.0))
    return (_IN_ADVICE if ADVICE_LOW <= basis <= ADVICE_HIGH else _OTHER_MODEL, distance)


def _catalog_candidates(target: ModelSpec) -> list[tuple[ModelSpec, tuple[str, ...]]]:
    out = []
    for model in catalog_models().values():
        if model.id == target.name:
            continue
        spec = catalog_model_spec(model.id)
        if spec.draft_head is not None or spec.total_params < target.total_params:
            out.append((spec, model.draft_for))
    return out


def _mtp_row(target: ModelSpec, max_model_len: int | None, plan_for: MemoryCheck) -> DraftSuggestion:
    """The target's own MTP layers, checked as ``check-pair --draft mtp`` checks them (its ratio included)."""
    spec = mtp_draft_spec(target)
    report = check_pair(target, spec, max_model_len=max_model_len)
    placed = _memory(DraftChoice("mtp", spec), plan_for) if report.compatible else _NOT_PAIRED
    layers = f"the target's own {target.mtp_layers} multi-token-prediction layer(s)"
    summary = _summary(report, placed.memory, placed.fits, placed.warnings)
    summary = layers if placed.fits and summary == "no warnings" else summary
    reasons = (f"pass: {layers}", *_reasons(report), *_memory_reasons(placed))
    ratio, of = _shown_ratio(report, target)
    return DraftSuggestion("mtp", "mtp", placed.fits, reasons, summary, ratio, of, placed.kv_cost, order=(_MTP, 0.0))


def suggest_drafts(
    target: ModelSpec, *, max_model_len: int | None = None, plan_for: MemoryCheck | None = None, tp: int = 1
) -> list[DraftSuggestion]:
    """Every candidate draft for ``target``, the ones that fit first, in the order the module docstring gives;
    ``plan_for`` (:func:`memory_check`) plans each on a GPU, else each is only placed at the target's ``tp``."""
    plan_for = plan_for if plan_for is not None else placement_check(tp)
    out: list[DraftSuggestion] = []
    for spec, trained_for in _catalog_candidates(target):
        report = check_pair(target, spec, head_trained_for=trained_for, max_model_len=max_model_len)
        reasons = _reasons(report)
        placed = _memory(DraftChoice("model", spec), plan_for) if report.compatible else _NOT_PAIRED
        method: str = spec.draft_head or "draft_model"
        order = _model_order(report, spec, trained_for, target.name)
        summary = _summary(report, placed.memory, placed.fits, placed.warnings)
        ratio, of = _shown_ratio(report, target)
        reasons = [*reasons, *_memory_reasons(placed)]
        row = DraftSuggestion(spec.name, method, placed.fits, tuple(reasons), summary, ratio, of, placed.kv_cost, order)
        out.append(row)
    if target.mtp_layers > 0:
        out.append(_mtp_row(target, max_model_len, plan_for))
    for method in LOOKUP_METHODS:  # no KV cache to take, GPU or not: 0, never "not checked"
        why = "no weights, no KV cache; pays only where outputs copy the prompt (code edits, summaries)"
        out.append(DraftSuggestion(method, method, True, (f"pass: {why}",), why, kv_cost=0.0))
    return sorted(out, key=lambda s: (not s.fits, s.order, s.draft))


@dataclass(frozen=True)
class DraftsReport:
    """``specwise drafts``' answer: the target alone first (on ``gpu``, when given), then its drafts."""

    target: str
    gpu: str | None  # the catalog name of the GPU planned on; None: memory not checked
    tp: int
    target_fits: bool
    why: str  # why the target alone does not fit ("" when it does)
    drafts: tuple[DraftSuggestion, ...]

    @property
    def memory_checked(self) -> bool:
        return self.gpu is not None

    @property
    def a_model_fits(self) -> bool:
        """A draft model, head or MTP fits (not only the lookup methods)."""
        return any(s.fits and s.model_based for s in self.drafts)

    def to_json(self, *, all_drafts: bool = False) -> dict[str, Any]:
        # a row's "fits" is "vLLM can serve the pair", and "fits in memory" only when memory_checked (a --gpu)
        doc: dict[str, Any] = {
            "target": self.target,
            "gpu": self.gpu,
            "tp": self.tp,
            "memory_checked": self.memory_checked,
        }
        if not self.target_fits:
            return {**doc, "target_fits": False, "why": self.why}
        return {**doc, "drafts": [s.to_json() for s in self.drafts if all_drafts or s.fits]}


def rank_drafts(
    target: ModelSpec, *, gpu: GpuSpec | None = None, tp: int = 1, max_model_len: int | None = None
) -> DraftsReport:
    """The target alone first -- what vLLM refuses of it (a TP its heads do not divide, a context past its
    positions) raises :class:`SpecwiseError` with or without a GPU; on ``gpu``, a target that does not fit leaves
    nothing to draft for -- then :func:`suggest_drafts` at its TP."""
    check_target_alone(target, tp, max_model_len)
    if gpu is None:
        found = suggest_drafts(target, max_model_len=max_model_len, tp=tp)
        return DraftsReport(target.name, None, tp, True, "", tuple(found))
    request = MemoryPlanRequest(target=target, gpu=gpu, tp=tp, max_model_len=max_model_len)
    alone = plan_memory(request)
    if not alone.fits_without_draft:
        return DraftsReport(target.name, gpu.name, tp, False, "; ".join(alone.problems), ())
    found = suggest_drafts(target, max_model_len=max_model_len, plan_for=memory_check(request))
    return DraftsReport(target.name, gpu.name, tp, True, "", tuple(found))
