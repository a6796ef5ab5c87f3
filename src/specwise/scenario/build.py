"""ScenarioSpec -> Scenario: resolve the catalog names, check the draft against the target, plan memory, build
the step-time models. Errors are phrased for the file the spec came from (``file: [deployment].gpu: ...``)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from typing import TypeVar

import numpy as np

from specwise.catalog import resolve_draft, resolve_gpu, resolve_model
from specwise.compat.pair import Finding, check_pair, method_fit
from specwise.engines import get_engine
from specwise.engines.vllm_kv_cache import kv_cache_engine, kv_cache_refusal
from specwise.engines.vllm_versions import (
    VllmVersion,
    baseline_chunked_prefill,
    drafting_refusal,
    eagle3_target_refusal,
    head_tp_refusal,
    method_refusal,
    served_draft_tp,
    speculation_engine,
    v0_chunked_prefill,
)
from specwise.errors import FieldNames, NegativeAnswer, SpecwiseError
from specwise.memory import MemoryPlan, MemoryPlanRequest, plan_memory
from specwise.memory.planner import kv_tokens_at_length
from specwise.memory.vllm_rules import draft_model_tp_refusal, draft_slots_refusal, scheduled_tokens
from specwise.perfmodel.calibration_match import StepRange
from specwise.perfmodel.factory import Deployed, serving_models
from specwise.scenario.model import Scenario, ScenarioSpec
from specwise.specs.draft import DraftChoice
from specwise.specs.gpu import GpuSpec
from specwise.specs.model import ModelSpec
from specwise.specs.quant import quantization_setting
from specwise.traffic import Arrivals

T = TypeVar("T")


def named(file: str, field: str | None, resolve: Callable[[], T]) -> T:
    """``resolve()``, its input error prefixed with the scenario file and field (``FILE: [deployment].gpu: ...``)."""
    try:
        return resolve()
    except SpecwiseError as exc:  # a message that already names the field (an empty name) is not named twice
        named = field and not str(exc).startswith(f"{field}:")
        raise SpecwiseError(f"{file}: {field}: {exc}" if named else f"{file}: {exc}") from None


def _vllm_version(spec: ScenarioSpec) -> VllmVersion | None:
    """The vLLM release the scenario names (``[deployment].engine_version``), parsed once; None on another engine or
    where it names none (the current vLLM). A version that is not one is refused with the file and field."""
    dep = spec.deployment
    if dep.engine != "vllm" or dep.engine_version is None:
        return None
    try:
        return VllmVersion.parse(dep.engine_version)
    except SpecwiseError:
        raise SpecwiseError(
            f"{spec.file}: [deployment].engine_version: {dep.engine_version!r}: expected a vLLM version like 0.15 or "
            "0.10.1"
        ) from None


def _checked_version(spec: ScenarioSpec, draft_tp: int, target_model_type: str, gpu: GpuSpec) -> VllmVersion | None:
    """The vLLM release the scenario names (:func:`_vllm_version`), once what the engine cannot run is refused.
    SGLang: a method it has no algorithm for, and probabilistic drafting
    (:meth:`~specwise.engines.sglang.SglangEngine.refusal`). The vLLM the scenario names
    (``[deployment].engine_version``; none: the current one): a method before the release that named it (``suffix``
    before 0.11.1, ``mtp`` before 0.11), probabilistic drafting where the release has no setting for it
    (:func:`~specwise.engines.vllm_versions.drafting_refusal`), and a separate draft model as that version runs it
    (:func:`~specwise.engines.vllm_versions.draft_model_engine`): 0.10 to 0.14 refuse it; V1 (0.15 on) runs it only
    at the target's tensor parallelism (``vllm/v1/spec_decode/draft_model.py``, ``_raise_if_draft_tp_mismatch``: the
    ranks would share one torch.compile cache); V0 (before 0.10) on any."""
    dep, sp = spec.deployment, spec.speculation
    version = _vllm_version(spec)
    if sp.method.name == "none" or not spec.engine_checks:
        return version
    if dep.engine != "vllm":  # as advise refuses the candidate (SglangEngine.refusal): a method or drafting it lacks
        engine = get_engine(dep.engine)
        if (refused := engine.refusal(sp.method, sp.draft)) is not None:
            raise SpecwiseError(f"{spec.file}: [deployment].engine: {refused}")
        if (refused := engine.refusal(sp.method, sp.draft, sp.drafting)) is not None:
            raise SpecwiseError(f"{spec.file}: {spec.where_speculation}.drafting: {refused}")
        return version
    refusal = (
        method_refusal(version, sp.method.name)
        or drafting_refusal(version, sp.drafting, sp.method.samples_from_a_distribution)
        or eagle3_target_refusal(version, sp.method.name, target_model_type)
    )  # as advise refuses the candidate (VllmEngine.refusal, decision._refusal)
    if refusal is not None:
        raise SpecwiseError(f"{spec.file}: [deployment].engine_version: {refusal}")
    if (kv := kv_cache_refusal(version, dep.kv_cache_dtype, gpu, sp.method.name)) is not None:
        raise SpecwiseError(f"{spec.file}: [deployment].kv_cache_dtype: {kv}")
    slots = draft_slots_refusal(version, sp.method.name, dep.max_num_batched_tokens, dep.max_num_seqs)
    if slots is not None:
        raise SpecwiseError(f"{spec.file}: [deployment].max_num_batched_tokens: {slots}")
    if (head := head_tp_refusal(version, sp.method.name, sp.draft_tp)) is not None:
        raise SpecwiseError(f"{spec.file}: {spec.where_speculation}.draft_tp: {sp.draft_tp}, but {head}")
    if sp.method.name == "draft_model" and (
        tp_refusal := draft_model_tp_refusal(version, draft_tp, dep.tp, f"draft_tp = {dep.tp}")
    ):
        raise SpecwiseError(f"{spec.file}: {spec.where_speculation}.draft_tp: {draft_tp}, but {tp_refusal}")
    return version


def _served_draft_tp(spec: ScenarioSpec, version: VllmVersion | None) -> tuple[int, list[str], bool]:
    """The draft's tensor parallelism as the scenario's vLLM runs it
    (:func:`~specwise.engines.vllm_versions.served_draft_tp`; another engine: as asked, else the target's), a note
    when that is not the ``draft_tp`` asked, and whether the head loads its own embedding (vLLM's V0 engine:
    :func:`~specwise.memory.planner.loaded_draft`). A scenario sized for the record only (``engine_checks`` off: a
    candidate its engine refuses) keeps the TP asked."""
    dep, sp = spec.deployment, spec.speculation
    asked = sp.draft_tp or dep.tp
    if dep.engine != "vllm" or not sp.method.has_weights:
        return asked, [], False
    own = speculation_engine(version, sp.method.name) == "v0"
    if not spec.engine_checks:
        return asked, [], own
    served = served_draft_tp(version, sp.method.name, sp.draft_tp, dep.tp)
    if sp.draft_tp is None or served == sp.draft_tp:
        return served, [], own
    why = (
        f"its V0 engine runs an {sp.method.name} head on one GPU only"
        if served == 1
        else f"its V1 engine runs the {sp.method.name} draft with the target's tensor parallelism ({dep.tp})"
        + ("" if sp.method.name == "draft_model" else " and never reads draft_tensor_parallel_size for a head")
    )
    note = f"{spec.where_speculation}.draft_tp = {sp.draft_tp} is not what vLLM runs: {why}; priced at {served}"
    return served, [note], own


FEW_REQUESTS = 100
"""Requests per simulated (QPS, k) cell below which a run is too small to decide on (the default is 1,000), at the
default ``warmup_fraction`` (0.1): :data:`FEW_MEASURED` requests measured. The standard error of a median of n samples
is ~1.25 sigma / sqrt(n) (the asymptotic variance of a sample median, pi sigma^2 / 2n, for a normal); with the
examples' length spread (cv 0.4-0.6) that is ~6% of an E2E p50 at 100 requests -- well inside the predictor's +-27%
band, which does not include it -- but ~11% at 30 and ~28% at 5, as large as the band itself."""
DEFAULT_WARMUP_FRACTION = 0.1  # [sweep].warmup_fraction's default (scenario/model.py SweepSpec)


def measured_requests(num_requests: int, warmup_fraction: float = 0.0) -> int:
    """The requests per cell the statistics are taken over: the first ``int(n * warmup_fraction)`` are left out
    (:func:`specwise.sim.metrics.summarize`)."""
    return num_requests - int(num_requests * warmup_fraction)


FEW_MEASURED = measured_requests(FEW_REQUESTS, DEFAULT_WARMUP_FRACTION)
"""Requests measured per cell below which a run is too small to decide on: what :data:`FEW_REQUESTS` leave after the
default warmup (90). A larger ``warmup_fraction`` must be made up for by more requests."""


def enough_requests(warmup_fraction: float = DEFAULT_WARMUP_FRACTION) -> int:
    """The fewest requests per cell to decide on: :data:`FEW_REQUESTS`, and enough that :data:`FEW_MEASURED` are
    left after ``warmup_fraction``."""
    # measured_requests grows with n, by at most n (1 - w) + 1: no n below (FEW_MEASURED - 1) / (1 - w) is enough
    needed = max(FEW_REQUESTS, math.floor((FEW_MEASURED - 1) / (1.0 - warmup_fraction)))
    while measured_requests(needed, warmup_fraction) < FEW_MEASURED:
        needed += 1
    return needed


def measured_worth_saying(num_requests: int, warmup_fraction: float) -> int | None:
    """The requests measured per cell where a count should say it: a warmup other than the default (the one
    :data:`FEW_REQUESTS` was set at) cut some; None otherwise (the count given says enough)."""
    measured = measured_requests(num_requests, warmup_fraction)
    return measured if warmup_fraction != DEFAULT_WARMUP_FRACTION and measured < num_requests else None


def _run_size_warnings(spec: ScenarioSpec) -> list[str]:
    """Cells too small to decide on (:func:`few_requests_warning`), and a trace shorter than them
    (:func:`short_trace_warning`)."""
    sweep = spec.sweep
    said = few_requests_warning(sweep.num_requests, warmup_fraction=sweep.warmup_fraction)
    short = short_trace_warning(sweep.arrivals, sweep.num_requests, sweep.warmup_fraction)
    return [w for w in (said, short) if w is not None]


def short_trace_warning(
    arrivals: Arrivals, num_requests: int, warmup_fraction: float, given_as: str | None = None
) -> str | None:
    """A trace of fewer arrival times than the cells' ``num_requests`` (``given_as``: how that count was set, default
    the file's field): each cell replays the trace's times only, so it runs fewer requests than asked (None: it
    does not)."""
    times = len(arrivals.trace_s)
    if arrivals.kind != "trace" or times >= num_requests:
        return None
    asked = given_as or f"num_requests = {num_requests}"
    few = few_requests_warning(times, warmup_fraction=warmup_fraction) is not None
    return (
        f"the trace holds {times} arrival times, fewer than {asked}: each (QPS, k) cell simulates {times} requests"
        + (", too few" if few else "")
    )


def few_requests_warning(
    num_requests: int, given_as: str | None = None, warmup_fraction: float = DEFAULT_WARMUP_FRACTION
) -> str | None:
    """The warning a sweep of ``num_requests`` per cell carries when it is fewer than :func:`enough_requests` (None:
    enough to decide on). ``given_as``: where the count came from, as the warning names it (default: the
    scenario's ``[sweep].num_requests = N``; a ``--num-requests`` override passes its own); ``warmup_fraction``: the
    share left out of the statistics, which a count must make up for (said when it is not the default)."""
    needed = enough_requests(warmup_fraction)
    if num_requests >= needed:
        return None
    given = given_as or f"[sweep].num_requests = {num_requests}"
    measured = measured_worth_saying(num_requests, warmup_fraction)
    warm = "" if measured is None else f" ({measured} measured after the warmup_fraction {warmup_fraction:g})"
    return (
        f"{given}{warm}: percentiles of so few requests per (QPS, k) cell are noisy, and "
        f"the speedup band does not include that noise; use {needed} or more"
    )


def _fit_warnings(spec: ScenarioSpec, plan: MemoryPlan) -> list[str]:
    """Refuse (unless advise weighs it) a deployment that fits only without its draft: vLLM would not start it;
    advise's candidates get a warning instead."""
    if plan.fits:
        return []
    if spec.deployable_only:
        raise NegativeAnswer(
            f"{spec.file}: {spec.where_speculation}: with the draft the deployment does not fit, so vLLM would not "
            "start it: " + "; ".join(plan.problems)
        )
    return [
        "with the draft the deployment does not fit ("
        + "; ".join(plan.problems)
        + "); speculation rows are simulated anyway with the KV left"
    ]


def _gpu(spec: ScenarioSpec, resolved: Callable[[], GpuSpec] | None) -> GpuSpec:
    """The deployment's GPU: ``resolved()`` where the caller builds many scenarios of one deployment and resolved it
    once (advise: :attr:`~specwise.advisor.inputs.AdviseInputs.gpu`, which names its own errors), asked for here,
    after the target, as the build resolves it itself; else looked up now, an error naming the file and field."""
    if resolved is not None:
        return resolved()
    return named(spec.file, "[deployment].gpu", lambda: resolve_gpu(spec.deployment.gpu))


def build_scenario(spec: ScenarioSpec, gpu_of: Callable[[], GpuSpec] | None = None) -> Scenario:
    dep, sp, file, where = spec.deployment, spec.speculation, spec.file, spec.where_speculation
    target = named(file, "[deployment].target", lambda: resolve_model(dep.target, "[deployment].target"))
    gpu = _gpu(spec, gpu_of)
    draft_choice, findings = _draft(spec, target)
    failed = [f.message for f in findings if f.status == "fail"]
    version = _checked_version(spec, sp.draft_tp or dep.tp, target.model_type, gpu)  # input errors before any "no"
    draft_tp, tp_notes, own_weights = _served_draft_tp(spec, version)
    if failed and spec.deployable_only and dep.engine == "vllm":  # vLLM would not start it: no speedup to report
        raise NegativeAnswer(f"{file}: {where}.draft: vLLM refuses this draft for {dep.target}: {'; '.join(failed)}")
    warnings = [f"draft/target: {m}" for m in failed] + list(spec.notes) + tp_notes
    draft_spec = draft_choice.spec
    names = FieldNames(
        {"draft_tp": where, "draft_quantization": where, "num_speculative_tokens": where}, "[deployment]"
    )
    request = MemoryPlanRequest(
        target=target,
        gpu=gpu,
        tp=dep.tp,
        num_gpus=dep.tp,
        draft=draft_choice,
        draft_tp=None if draft_spec is None or (sp.draft_tp is None and draft_tp == dep.tp) else draft_tp,  # implied
        quantization=dep.quantization,
        draft_quantization=sp.draft_quantization,
        kv_cache_dtype=dep.kv_cache_dtype,
        max_model_len=dep.max_model_len,
        gpu_memory_utilization=dep.gpu_memory_utilization,
        max_num_seqs=dep.max_num_seqs,
        max_num_batched_tokens=dep.max_num_batched_tokens,
        num_speculative_tokens=max(1, *sp.k_values, *(k for _, _, k in sp.k_schedule)),  # the sweep's or schedule's
        names=names,
        draft_shares_target_weights=not own_weights,
    )
    plan = named(file, None, lambda: plan_memory(request))
    if not plan.fits_without_draft:  # say why the target alone misses, not the figures with its draft
        alone = plan_memory(replace(request, draft=None, draft_tp=None))
        raise NegativeAnswer(f"{file}: [deployment]: the target does not fit: {'; '.join(alone.problems)}")
    deployed = Deployed(
        target=target,
        gpu=gpu,
        tp=dep.tp,
        method=sp.method,
        draft=draft_spec,
        draft_tp=draft_tp,
        quantization=quantization_setting(dep.quantization),
        draft_quantization=quantization_setting(sp.draft_quantization),
        kv_dtype=plan.kv_cache_dtype,
    )
    warnings += _length_limits(spec, plan.max_model_len, target) + _fit_warnings(spec, plan) + _run_size_warnings(spec)
    scheduled, slot_notes = _scheduled_with_spec(spec, version)
    total = sum(c.share for c in spec.classes) or 1.0  # sliding-window layers: the capacity at the mean length
    mean_len = sum(c.share * (c.prompt_tokens.mean + c.output_tokens.mean / 2) for c in spec.classes) / total
    kv_tokens, kv_tokens_alone = kv_tokens_at_length(plan, target, draft_spec, draft_tp, int(mean_len))
    # the largest step it may run: max_num_seqs sequences of the mean length (the KV cache permitting)
    limits = StepRange(dep.max_num_seqs, min(dep.max_num_seqs * mean_len, kv_tokens), dep.max_num_batched_tokens)
    models = named(file, None, lambda: serving_models(dep.predictor, deployed))  # its errors name the file
    return Scenario(
        name=spec.name,
        target=target,
        gpu=gpu,
        tp=dep.tp,
        method=sp.method,
        draft=draft_spec,
        draft_tp=draft_tp,
        classes=spec.classes,
        sweep=spec.sweep,
        max_num_seqs=dep.max_num_seqs,
        max_num_batched_tokens=dep.max_num_batched_tokens,
        kv_cache_tokens=max(kv_tokens, 0),
        kv_cache_tokens_without_draft=kv_tokens_alone,
        memory_plan=plan,
        models=models,
        k_schedule=sp.k_schedule,
        warnings=tuple(warnings + list(plan.warnings) + list(models.notes) + slot_notes),
        decision_metric=spec.decision_metric,
        draft_findings=findings,
        step_limits=limits,
        scheduled_tokens_with_spec=scheduled,
        baseline_chunked_prefill=_baseline_chunked_prefill(spec, version, plan.max_model_len, gpu),
    )


def _baseline_chunked_prefill(
    spec: ScenarioSpec, version: VllmVersion | None, max_model_len: int, gpu: GpuSpec
) -> bool:
    """Whether the scenario's plain decoding prefills in chunks: not on vLLM V0 up to a 32K context, whether the
    release runs V0 (:func:`~specwise.engines.vllm_versions.baseline_chunked_prefill`) or its fp8 KV cache sends
    the whole server there (:func:`~specwise.engines.vllm_kv_cache.kv_cache_engine`, 0.8.2 to 0.10.2 off FA3's
    cards), as the plain command written for it says (review s49a M4)."""
    dep = spec.deployment
    if version is None:  # another engine, or the current vLLM
        return True
    if kv_cache_engine(version, dep.kv_cache_dtype, gpu) == "v0":
        return v0_chunked_prefill(max_model_len)
    return baseline_chunked_prefill(version, max_model_len)


def _scheduled_with_spec(spec: ScenarioSpec, version: VllmVersion | None) -> tuple[int, list[str]]:
    """The tokens a speculating step of the scenario's vLLM schedules
    (:func:`~specwise.memory.vllm_rules.scheduled_tokens`: a draft model on 0.17 to 0.27 gives up one slot per
    sequence), and a warning where that is less than the budget."""
    dep, method = spec.deployment, spec.speculation.method.name
    if version is None:  # another engine, or the current vLLM
        return dep.max_num_batched_tokens, []
    left = scheduled_tokens(version, method, dep.max_num_batched_tokens, dep.max_num_seqs)
    if left == dep.max_num_batched_tokens:
        return left, []
    return left, [
        f"vLLM {version} keeps one token slot per sequence out of each step beside a draft model: a speculating "
        f"step schedules at most {dep.max_num_batched_tokens} - {dep.max_num_seqs} = {left} tokens "
        "(vllm/config/vllm.py, _set_max_num_scheduled_tokens), and is simulated so"
    ]


_LENGTH_DRAWS = 20_000
_REJECTED_SHARE_MAX = 0.5  # more of a class's prompts rejected than this: the scenario describes the wrong traffic


def _length_limits(spec: ScenarioSpec, max_model_len: int, target: ModelSpec) -> list[str]:
    """Requests longer than ``max_model_len``, per workload class (estimated on draws seeded by the sweep's seed).
    vLLM rejects a prompt of ``max_model_len`` tokens or more (``vllm/v1/engine/input_processor.py``) and cuts an
    output where the sequence reaches ``max_model_len`` (``vllm/v1/core/sched/utils.py``); the simulation does
    the same (:func:`~specwise.sim.workload.admit`). When most of a class's prompts would be rejected the scenario
    is wrong: an input error naming the class and the lengths. Otherwise a warning with the shares."""
    out: list[str] = []
    for c in spec.classes:
        rng = np.random.default_rng([spec.sweep.seed, 2**20])
        prompt = c.prompt_tokens.sample(rng, _LENGTH_DRAWS)
        output = c.output_tokens.sample(rng, _LENGTH_DRAWS)
        rejected = float((prompt >= max_model_len).mean())
        cut = float(((prompt < max_model_len) & (prompt + output > max_model_len)).mean())
        p = c.prompt_tokens
        lengths = f"prompt_tokens mean {p.mean:g}, min {p.min}, max {p.max}"
        if rejected > _REJECTED_SHARE_MAX:
            raise SpecwiseError(
                f"{spec.file}: [[workload]] {c.name!r}: {rejected:.0%} of its prompts ({lengths}) are at least "
                f"max_model_len {max_model_len} tokens long and vLLM rejects those: raise [deployment].max_model_len "
                f"({target.name} allows {target.max_position_embeddings}) or shorten prompt_tokens"
            )
        said = []
        if rejected > 0:
            said.append(
                f"~{rejected:.1%} of its prompts ({lengths}) are at least max_model_len {max_model_len} tokens: "
                "vLLM rejects them and the simulation leaves them out"
            )
        if cut > 0:
            said.append(f"~{cut:.1%} of its outputs are cut where the sequence reaches max_model_len {max_model_len}")
        if said:
            out.append(f"workload {c.name!r}: " + "; ".join(said))
    return out


def _draft(spec: ScenarioSpec, target: ModelSpec) -> tuple[DraftChoice, tuple[Finding, ...]]:
    """What proposes the tokens, and what the pair check (with the method's fit) found about it."""
    method, file, where = spec.speculation.method, spec.file, spec.where_speculation
    if method.is_lookup:
        return DraftChoice(kind=method.name), ()  # type: ignore[arg-type]
    if method.proposer == "target_layers":
        choice, _ = named(file, f"{where}.method", lambda: resolve_draft("mtp", target))
        return choice, ()
    assert spec.speculation.draft is not None
    name = spec.speculation.draft
    choice, trained_for = named(file, f"{where}.draft", lambda: resolve_draft(name, target, f"{where}.draft"))
    assert choice.spec is not None
    report = check_pair(target, choice.spec, head_trained_for=trained_for)
    return choice, (method_fit(method.name, choice.spec), *report.findings)
