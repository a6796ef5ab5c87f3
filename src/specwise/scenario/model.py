"""The validated scenario: deployment, speculation method, workload classes, sweep grid."""

from __future__ import annotations

from dataclasses import dataclass

from specwise.memory.planner import MemoryPlan
from specwise.sim.distributions import Arrivals
from specwise.sim.workload import WorkloadClass
from specwise.specs.gpu import GpuSpec
from specwise.specs.model import ModelSpec

METHODS = ("draft_model", "eagle", "eagle3", "mtp", "ngram", "suffix")
# What "speculation pays" is judged on. E2E (p50, queueing included) is the default: under overload TPOT can even
# improve with speculation (verification tokens displace prefill chunks) while TTFT and E2E get worse.
DECISION_METRICS = ("e2e", "tpot", "throughput", "goodput")


@dataclass(frozen=True)
class SweepSpec:
    qps: tuple[float, ...]
    k_values: tuple[int, ...]
    num_requests: int
    seed: int
    arrivals: Arrivals
    warmup_fraction: float = 0.1


@dataclass(frozen=True)
class Scenario:
    name: str
    target: ModelSpec
    gpu: GpuSpec
    tp: int
    method: str
    draft: ModelSpec | None
    draft_tp: int
    classes: tuple[WorkloadClass, ...]
    sweep: SweepSpec
    max_num_seqs: int
    max_num_batched_tokens: int
    kv_cache_tokens: int
    kv_cache_tokens_without_draft: int
    k_schedule: tuple[tuple[int, int, int], ...] = ()
    warnings: tuple[str, ...] = ()
    decision_metric: str = "e2e"
    memory_plan: MemoryPlan | None = None
