"""Scenarios in two stages.

* :class:`ScenarioSpec` -- what a file says, validated (``scenario/parse.py``): names of models and GPUs as
  written, the speculation, workload classes with their acceptance, the sweep grid. No catalog, no I/O beyond the
  files the scenario names.
* :class:`Scenario` -- what the simulator and the decisions run on (``scenario/build.py``): models and GPU
  resolved from the catalog, the draft checked against the target, the memory plan, and the step-time models.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from specwise.acceptance.model import AcceptanceModel
from specwise.compat.pair import Finding
from specwise.memory.planner import MemoryPlan
from specwise.methods import Method
from specwise.perfmodel.calibration_match import StepRange
from specwise.perfmodel.factory import PredictorChoice, ServingModels
from specwise.sim.workload import WorkloadClass
from specwise.specs.gpu import GpuSpec
from specwise.specs.model import ModelSpec
from specwise.traffic import Arrivals, LengthDist

# What "speculation pays" is judged on. E2E (p50, queueing included) is the default: under overload TPOT can even
# improve with speculation (verification tokens displace prefill chunks) while TTFT and E2E get worse.
DECISION_METRICS = ("e2e", "tpot", "throughput", "goodput")
DRAFTING_MODES = ("greedy", "probabilistic")
DEFAULT_QPS = (1.0, 2.0, 4.0, 8.0, 16.0, 32.0)
TASKS = ("code", "summarization", "chat", "qa", "translation", "other")  # what the acceptance priors know


@dataclass(frozen=True)
class DeploymentSpec:
    """``[deployment]``: the target and how vLLM serves it (model and GPU by name, as written)."""

    target: str
    gpu: str
    tp: int = 1
    max_model_len: int | None = None
    gpu_memory_utilization: float = 0.9
    max_num_seqs: int = 256
    max_num_batched_tokens: int = 8192
    quantization: str = "auto"
    kv_cache_dtype: str = "auto"
    engine: str = "vllm"
    engine_version: str | None = None
    predictor: PredictorChoice = field(default_factory=PredictorChoice)


@dataclass(frozen=True)
class SpeculationSpec:
    """``[speculation]`` (or one advise ``[[candidate]]``): the method, its draft, the k values to try."""

    method: Method
    k_values: tuple[int, ...]
    draft: str | None = None
    draft_tp: int | None = None
    draft_quantization: str = "auto"
    drafting: str = "greedy"
    k_schedule: tuple[tuple[int, int, int], ...] = ()
    prompt_lookup: tuple[int, int] | None = None  # n-gram's (min, max); None for other methods


@dataclass(frozen=True)
class WorkloadSpec:
    """One ``[[workload]]`` as written, before its acceptance is known (advise: it depends on the candidate)."""

    name: str
    share: float
    prompt_tokens: LengthDist
    output_tokens: LengthDist
    temperature: float = 0.0
    slo_ttft_s: float | None = None
    slo_tpot_s: float | None = None
    task: str = "other"

    def with_acceptance(self, acceptance: AcceptanceModel, proposal_rate: float = 1.0) -> WorkloadClass:
        return WorkloadClass(
            proposal_rate=proposal_rate,
            name=self.name,
            share=self.share,
            prompt_tokens=self.prompt_tokens,
            output_tokens=self.output_tokens,
            acceptance=acceptance,
            temperature=self.temperature,
            slo_ttft_s=self.slo_ttft_s,
            slo_tpot_s=self.slo_tpot_s,
        )


@dataclass(frozen=True)
class SweepSpec:
    qps: tuple[float, ...]
    k_values: tuple[int, ...]
    num_requests: int
    seed: int
    arrivals: Arrivals
    warmup_fraction: float = 0.1
    # which replicate of ``seed`` a run is (advise's [advise].replicates; 0: the sweep's own draw): each replicate
    # draws from random-number streams of its own (study/sweep.random_key), so seeds 0 and 1 share none
    replicate: int = 0


@dataclass(frozen=True)
class ScenarioSpec:
    name: str
    file: str  # where it came from, for messages
    deployment: DeploymentSpec
    speculation: SpeculationSpec
    classes: tuple[WorkloadClass, ...]
    sweep: SweepSpec
    decision_metric: str = "e2e"
    where_speculation: str = "[speculation]"  # how messages name the speculation table
    notes: tuple[str, ...] = ()  # assumptions the parse made (shown with the scenario's warnings)
    # refuse what the named engine version cannot run (off only to size, for the record, a candidate advise has
    # already marked unsupported)
    engine_checks: bool = True
    # refuse a draft vLLM would not load (a failed pair check) or a deployment that does not fit with it; off for
    # advise, which weighs such candidates itself (vetoes them, drops the k values that do not fit)
    deployable_only: bool = True


@dataclass(frozen=True)
class Scenario:
    name: str
    target: ModelSpec
    gpu: GpuSpec
    tp: int
    method: Method
    draft: ModelSpec | None
    draft_tp: int
    classes: tuple[WorkloadClass, ...]
    sweep: SweepSpec
    max_num_seqs: int
    max_num_batched_tokens: int
    kv_cache_tokens: int
    kv_cache_tokens_without_draft: int
    memory_plan: MemoryPlan
    models: ServingModels
    k_schedule: tuple[tuple[int, int, int], ...] = ()
    warnings: tuple[str, ...] = ()
    decision_metric: str = "e2e"
    # what the pair check (compat/pair.py) found for the draft: the method fit, then vocabulary, tokenizer, head ...
    draft_findings: tuple[Finding, ...] = ()
    step_limits: StepRange | None = None  # the largest step the deployment may run (its scheduler's limits)
    # the tokens a speculating step schedules where the engine keeps some of the budget back (None: the budget;
    # memory.vllm_rules.scheduled_tokens)
    scheduled_tokens_with_spec: int | None = None
    # whether plain decoding (k = 0) runs with chunked prefill: vLLM before 0.8 (V0) turns it on by default only
    # above a 32K max model length (engines.vllm_versions.baseline_chunked_prefill)
    baseline_chunked_prefill: bool = True

    def limit_notes(self) -> tuple[str, ...]:
        """What a calibrated price says where nothing was simulated (export's rules, the monitor's check): the
        deployment's limits pass the steps the calibration measured (simulate and advise check the simulated steps
        instead, :meth:`~specwise.perfmodel.calibration_match.CalibratedRange.sweep_notes`)."""
        cal = self.models.calibrated_range
        return cal.notes(self.step_limits) if cal is not None and self.step_limits is not None else ()
