"""Replaying a published measurement through the simulator: the record's models, GPU, TP, engine, method, k,
lengths and load become a simulation with and without speculation, and the simulated metric is set against the
published one.

Loads, as the sources ran them:

* ``batch`` B (SpecDecode-Bench): B copies of one prompt, all submitted at once, decoded greedily -- so every copy
  accepts the same tokens (shared acceptance draws); throughput = output tokens / wall time including prefill.
* ``concurrency`` N (``vllm bench serve --max-concurrency``, InferenceX, P-EAGLE): a closed loop of N users. A run
  whose length the source states (``Load.requests``: ``--num-prompts``, a list given to ``LLM.generate``) is that
  many requests, scored over the whole run as vLLM's bench scores it (``output_throughput = sum(output_lens) /
  dur_s``, ``dur_s`` from the first send to the last completion: ``benchmarks/serve.py`` ``calculate_metrics``), the
  ramp-down's smaller batches included, and every request's TPOT in the mean. Else a long run's steady state:
  throughput = N x output tokens / mean E2E (Little's law on the requests after the first N), TPOT the mean.
* ``qps`` (Poisson arrivals): mean E2E latency, mean TPOT, output tokens/s over the run.

Acceptance draws use :class:`~specwise.sim.drafting.WeylUniforms` (low discrepancy), so a short replay carries no
sampling noise into the comparison.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from specwise.acceptance.model import AcceptanceModel
from specwise.catalog import resolve_gpu, resolve_model
from specwise.engines.vllm_versions import unchunked_token_budget, v0_chunked_prefill
from specwise.errors import SpecwiseError
from specwise.evidence.lengths import Lengths, lengths_for
from specwise.evidence.records import EvidenceRecord, Load
from specwise.memory import MemoryPlanRequest, plan_memory
from specwise.methods import METHODS, Method
from specwise.perfmodel.drafting import DraftCost
from specwise.perfmodel.predictor import StepTimePredictor
from specwise.perfmodel.profiles import EngineProfile
from specwise.sim.drafting import WeylUniforms
from specwise.sim.engine import EngineConfig, SimResult, SpecConfig, simulate
from specwise.sim.workload import RequestTable, WorkloadClass
from specwise.specs.derived import derived_eagle_head, mtp_draft_spec
from specwise.specs.draft import DraftChoice
from specwise.specs.gpu import GpuSpec
from specwise.specs.model import ModelSpec
from specwise.specs.quant import Quantization, quantization_setting
from specwise.traffic import LengthDist

# (model, gpu, tp, profile) -> the step-time predictor of one forward pass
PredictorFactory = Callable[[ModelSpec, GpuSpec, int, EngineProfile], StepTimePredictor]
QPS_REQUESTS = 300
MAX_BATCHED_TOKENS = 8192  # vLLM V1's default max_num_batched_tokens for online serving
MAX_NUM_SEQS = 256


class Unreplayable(SpecwiseError):
    """A record the simulator cannot replay (an unknown GPU or model, no load): said, never guessed."""


@dataclass(frozen=True)
class Setup:
    record: EvidenceRecord
    target: ModelSpec
    gpu: GpuSpec
    draft: ModelSpec | None
    method: Method | None  # None: plain decoding
    k_values: tuple[int, ...]
    lengths: Lengths
    kv_capacity_tokens: int
    kv_capacity_without_draft: int
    profile: EngineProfile
    draft_tp: int = 1
    notes: tuple[str, ...] = ()
    baseline_chunked_prefill: bool = True  # plain decoding prefills in chunks (not on vLLM V0 up to 32K: setup_for)
    # the weights and KV cache as the source served them (None: as the checkpoint stores them, the model's dtype)
    quantization: Quantization | None = None
    draft_quantization: Quantization | None = None
    kv_dtype: str | None = None


def setup_for(record: EvidenceRecord, profile: EngineProfile, baseline_on_v0: bool = False) -> Setup:
    """What ``record`` is replayed with; :class:`Unreplayable` says why it cannot be. ``baseline_on_v0``: the
    record's plain decoding ran vLLM's V0 engine, which prefilled in chunks only above a 32K context
    (:func:`~specwise.engines.vllm_versions.v0_chunked_prefill`), here the target's own context length: vLLM's default
    ``max_model_len`` where a source states none."""
    try:
        target = resolve_model(record.target)
        gpu = resolve_gpu(record.gpu)
    except SpecwiseError as exc:
        raise Unreplayable(str(exc)) from None
    method = None if record.method == "none" else METHODS.get(record.method)
    if record.method != "none" and method is None:
        raise Unreplayable(f"method {record.method!r} is not simulated")
    draft, notes = _draft(record, target, method)
    draft_tp = record.tp
    if draft is not None and method is not None and method.proposer == "draft_model" and not _divides(draft, record.tp):
        draft_tp = 1  # vLLM takes 1 or the target's TP; a draft whose heads do not split runs on one GPU
        notes += (f"draft on 1 GPU (its heads do not divide over {record.tp})",)
    lengths = lengths_for(record)
    if lengths.unknown:
        raise Unreplayable(lengths.how.removeprefix("UNKNOWN: "))
    # the weights and KV cache as served, in the settings' words ("auto": as the checkpoints store them)
    quant, draft_quant = record.quantization or "auto", draft_quantization(record, method) or "auto"
    kv, kv_base, kv_dtype = _kv_capacity(
        target,
        gpu,
        record.tp,
        method,
        draft,
        draft_tp,
        lengths,
        profile.name != "vllm-v0",
        quant,
        draft_quant,
        record.kv_cache_dtype or "auto",
    )
    k_values = (record.k,) if record.k is not None else (3, 5, 7)
    if record.verification == "tree":
        k_values = (record.tree_depth or 3,)
    chunked = not baseline_on_v0 or v0_chunked_prefill(_max_model_len(target))
    return Setup(
        record,
        target,
        gpu,
        draft,
        method,
        k_values,
        lengths,
        kv,
        kv_base,
        profile,
        draft_tp,
        notes,
        chunked,
        quantization_setting(quant),
        quantization_setting(draft_quant) if draft is not None else None,
        kv_dtype if record.kv_cache_dtype is not None else None,
    )


def draft_quantization(record: EvidenceRecord, method: Method | None) -> str | None:
    """The draft's weights as served: the record's ``draft_quantization``; else, for MTP layers (part of the target's
    checkpoint, loaded with its quantization), the target's; else as the draft's checkpoint stores them (None)."""
    if record.draft_quantization is not None:
        return record.draft_quantization
    return record.quantization if method is not None and method.proposer == "target_layers" else None


def _max_model_len(target: ModelSpec) -> int:
    """The replayed server's ``max_model_len``: vLLM's default, the model's ``max_position_embeddings`` (no source
    in the evidence set states another)."""
    return target.max_position_embeddings


def _divides(spec: ModelSpec, tp: int) -> bool:
    a = spec.attention
    return a.num_heads % tp == 0 and (a.num_kv_heads % tp == 0 or tp % a.num_kv_heads == 0)


def _draft(
    record: EvidenceRecord, target: ModelSpec, method: Method | None
) -> tuple[ModelSpec | None, tuple[str, ...]]:
    """The draft network: MTP layers of the target, the named checkpoint, or -- for an EAGLE head whose
    checkpoint is not catalogued -- a head derived from the target's shape (said so)."""
    if method is None or method.is_lookup:
        return None, ()
    if method.proposer == "target_layers":
        return mtp_draft_spec(target), ()
    if record.draft is not None:
        try:
            return resolve_model(record.draft), ()
        except SpecwiseError as exc:
            if method.proposer != "head":
                raise Unreplayable(f"draft: {exc}") from None
    if method.proposer != "head":
        raise Unreplayable("the draft model is not named")
    try:
        head = derived_eagle_head(target, method.name)
    except SpecwiseError as exc:
        raise Unreplayable(f"draft: {exc}") from None
    return head, (f"{method.name} head derived from {target.name}'s shape (checkpoint not catalogued)",)


def _kv_capacity(
    target: ModelSpec,
    gpu: GpuSpec,
    tp: int,
    method: Method | None,
    draft: ModelSpec | None,
    draft_tp: int,
    lengths: Lengths,
    shares_target_weights: bool,
    quantization: str,
    draft_quant: str,
    kv_cache_dtype: str,
) -> tuple[int, int, str]:
    """KV tokens with and without the draft, and the KV cache's dtype, for the weights and KV cache as served
    (the memory plan's settings); an EAGLE / MTP head holds the target's embedding except on vLLM's V0 engine,
    which loads its own copy (:func:`specwise.memory.planner.loaded_draft`)."""
    choice = None
    if method is not None:
        if method.is_lookup:
            choice = DraftChoice(kind=method.name)  # type: ignore[arg-type]
        else:
            assert draft is not None
            choice = DraftChoice(kind="mtp" if method.proposer == "target_layers" else "model", spec=draft)
    need = int(lengths.prompt_tokens + lengths.output_tokens) + 64
    max_len = min(target.max_position_embeddings, max(4096, need))
    try:
        plan = plan_memory(
            MemoryPlanRequest(
                target=target,
                gpu=gpu,
                tp=tp,
                draft=choice,
                draft_tp=draft_tp if draft is not None else None,
                max_model_len=max_len,
                max_num_seqs=256,
                draft_shares_target_weights=shares_target_weights,
                quantization=quantization,
                draft_quantization=draft_quant,
                kv_cache_dtype=kv_cache_dtype,
            )
        )
    except SpecwiseError as exc:
        raise Unreplayable(f"memory plan: {exc}") from None
    if not plan.fits_without_draft:
        raise Unreplayable(f"the target does not fit: {'; '.join(plan.problems)}")
    return max(plan.kv_cache_tokens, need), max(plan.kv_cache_tokens_without_draft, need), plan.kv_cache_dtype


def _requests(s: Setup, n: int, arrivals: np.ndarray, users: int | None) -> RequestTable:
    return RequestTable(
        arrivals,
        np.full(n, round(s.lengths.prompt_tokens), dtype=np.int64),
        np.full(n, max(2, round(s.lengths.output_tokens)), dtype=np.int64),
        np.zeros(n, dtype=np.int64),
        users,
    )


def _table(s: Setup) -> RequestTable:
    load = s.record.load
    if load.kind == "batch":
        b = max(1, int(load.value))
        return _requests(s, b, np.zeros(b), None)
    if load.kind == "concurrency":
        users = load.users
        n = load.requests or max(3 * users, users + 16)
        return _requests(s, n, np.zeros(n), users)
    if load.ladder is None:
        arrivals = _arrivals(load.value, QPS_REQUESTS, load.arrivals, 0.0)
        return _requests(s, QPS_REQUESTS, arrivals, None)
    stages = [
        _arrivals(rate, _stage_requests(rate, load.ladder.stage_s), load.arrivals, i * load.ladder.stage_s)
        for i, rate in enumerate(_ladder_run(load))
    ]
    arrivals = np.concatenate(stages)
    return _requests(s, len(arrivals), arrivals, None)


def _ladder_run(load: Load) -> tuple[float, ...]:
    """The stages a ladder record's run simulates: those up to its own and the one after it, whose arrivals share
    the server with the measured requests still running. Later stages would cost time and change nothing measured
    while the measured requests finish within that next stage, as at the source's loads: a stage lasts 120 s, and
    at 8 QPS a request waits 9.8-19.2 s for its first token (TTFT p50) and takes ~55 s for its 256 tokens."""
    assert load.ladder is not None
    rates = load.ladder.rates_per_s
    return rates[: rates.index(load.value) + 2]


def _stage_requests(rate_per_s: float, stage_s: float) -> int:
    return max(1, round(rate_per_s * stage_s))


def _arrivals(rate_per_s: float, n: int, kind: str, start_s: float) -> np.ndarray:
    """``n`` arrival times from ``start_s``: Poisson (seeded, so every replay sees the same) or evenly spaced."""
    if kind == "constant":
        return start_s + np.arange(n, dtype=np.float64) / rate_per_s
    gaps = np.random.default_rng(0).exponential(1.0 / rate_per_s, n)
    return start_s + np.cumsum(gaps)


def _measured(s: Setup) -> slice:
    """The requests the source measured: after the first N of a closed loop scored as a steady state (its warm-up);
    those sent in a ladder's stage at the record's rate (later stages still run beside them); else all (a closed
    loop of stated length among them)."""
    load = s.record.load
    if load.steady_closed_loop:
        return slice(int(load.value), None)
    if load.ladder is not None:
        rates = load.ladder.rates_per_s
        stage = rates.index(load.value)
        first = sum(_stage_requests(r, load.ladder.stage_s) for r in rates[:stage])
        return slice(first, first + _stage_requests(load.value, load.ladder.stage_s))
    return slice(None)


def measure(s: Setup, result: SimResult) -> float:
    """The record's metric from one simulated run."""
    req, load, metric = result.requests, s.record.load, s.record.metric
    tokens = req.output_tokens.astype(np.float64)
    e2e = result.finish_s - req.arrival_s
    tpot = (result.finish_s - result.first_token_s) / np.maximum(tokens - 1, 1)
    steady = _measured(s)
    stat = np.median if s.record.statistic == "p50" else np.mean
    if metric in ("tpot_s", "tpot_speedup"):
        return float(stat(tpot[steady]))
    if metric in ("e2e_latency_s", "e2e_latency_speedup"):
        return float(stat(e2e[steady]))
    if load.steady_closed_loop:
        return float(load.value * np.mean(tokens[steady]) / np.mean(e2e[steady]))
    span = float(np.nanmax(result.finish_s[steady]) - req.arrival_s[steady].min())
    return float(tokens[steady].sum() / span) if span > 0 else math.nan


def engine_config(s: Setup, speculating: bool) -> EngineConfig:
    """The server a record's arm is replayed on: a server that prefills whole prompts (vLLM V0's plain decoding up
    to 32K, or its speculation) takes vLLM's budget for them, ``max(max_model_len, 2048)``."""
    chunked = s.profile.chunked_prefill_with_spec if speculating else s.baseline_chunked_prefill
    budget = MAX_BATCHED_TOKENS if chunked else unchunked_token_budget(None, _max_model_len(s.target))
    return EngineConfig(
        kv_capacity_tokens=s.kv_capacity_tokens if speculating else s.kv_capacity_without_draft,
        max_num_seqs=MAX_NUM_SEQS,
        max_num_batched_tokens=budget,
        overhead=s.profile.overhead,
        chunked_prefill=chunked,
        batch_expansion_scorer=s.profile.batch_expansion_scorer,
    )


def run(
    s: Setup,
    target: StepTimePredictor,
    draft_cost: DraftCost | None,
    k: int,
    acceptance: AcceptanceModel | None,
    proposal_rate: float = 1.0,
) -> float:
    """The metric simulated with speculation at ``k`` (``draft_cost`` None or k = 0: without); a lookup drafts in
    ``proposal_rate`` of the steps."""
    table = _table(s)
    speculating = draft_cost is not None and k > 0
    engine = engine_config(s, speculating)
    lengths = LengthDist("fixed", 1.0)
    cls = WorkloadClass(
        "replay", 1.0, lengths, lengths, acceptance or AcceptanceModel.iid(0.0), proposal_rate=proposal_rate
    )
    spec = None
    if speculating:
        assert draft_cost is not None
        tree = s.record.verification == "tree"
        spec = SpecConfig(
            k,
            draft_cost,
            shape="tree" if tree else "chain",
            tree_size=(s.record.tree_size or k) if tree else 0,
            shared_acceptance=s.record.load.kind == "batch",
        )
    return measure(s, simulate(table, [cls], engine, target, spec, WeylUniforms()))
