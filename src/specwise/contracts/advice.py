"""``specwise.advise/1``: the recommendation for a scenario -- per candidate the memory plan, the evidence its
acceptance came from, the simulated curve, the rule checks and a verdict; then a ranking, one decision and the
serve command that implements it."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from specwise.contracts.document import Fields, JsonObject, Schema
from specwise.contracts.memory import ModelMemory
from specwise.contracts.sweep import P80_SPEEDUP_ERROR, SweepResult, predictor_json
from specwise.stats import MAX_REPLICATES, interval_90, mean_half_width
from specwise.units import fmt_rate, fmt_x

SCHEMA = Schema("specwise.advise", 1)
VERDICTS = ("enable", "enable_below", "measure_first", "disable", "does_not_fit", "unsupported")
NOT_SIMULATED = ("does_not_fit", "unsupported")  # no memory for the draft; an engine that cannot run the method


@dataclass(frozen=True)
class EvidenceUsed:
    """Where one workload's acceptance came from: measured, profiled, given or assumed (with its source)."""

    workload: str
    kind: str
    source: str
    per_position: tuple[float, ...]  # per proposal (vLLM's definition: a lookup's are per match)
    proposal_rate: float = 1.0  # the share of decode steps with a proposal (a lookup drafts only on a match)
    # a lookup's match rate (proposal_rate) taken from a prior: with its rates (kind "assumed") or alone (its rates
    # measured, profiled or given); false for a method without one (a draft model proposes at every step)
    match_rate_assumed: bool = False
    # the draft positions its rates were measured, profiled or given for (None: one rate for every position, or a
    # prior): past them they are extrapolated (the last position's conditional rate reused)
    positions: int | None = None

    @property
    def assumed(self) -> bool:
        """Whether any of what drives the prediction was assumed rather than measured or given."""
        return self.kind == "assumed" or self.match_rate_assumed

    def extrapolated_at(self, k: int) -> bool:
        """Whether a config at ``k`` runs past the positions the rates were measured, profiled or given for."""
        return self.positions is not None and k > self.positions

    def label(self, k: int) -> str:
        """Where the acceptance came from, as a candidate at ``k`` uses it: its kind, and whether past its positions
        the rates are extrapolated ("measured to k=4, extrapolated beyond")."""
        return f"{self.kind} to k={self.positions}, extrapolated beyond" if self.extrapolated_at(k) else self.kind

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "workload": self.workload,
            "kind": self.kind,
            "source": self.source,
            "per_position": list(self.per_position),
            "proposal_rate": self.proposal_rate,
            "match_rate_assumed": self.match_rate_assumed,
        }
        if self.positions is not None:  # only where rates end somewhere (older outputs stay as they were)
            out["positions"] = self.positions
        return out

    @classmethod
    def from_json(cls, f: Fields) -> EvidenceUsed:
        return cls(
            workload=f.text("workload", "") or "",
            kind=f.text("kind", "") or "",
            source=f.text("source", "") or "",
            per_position=tuple(x for x in f.numbers("per_position") if x is not None),
            proposal_rate=f.number("proposal_rate", 1.0) or 1.0,
            match_rate_assumed=f.data.get("match_rate_assumed") is True,
            positions=f.integer("positions"),
        )


@dataclass(frozen=True)
class RuleCheck:
    rule: str
    status: str  # pass | warn | fail
    message: str
    evidence: str

    def to_json(self) -> dict[str, str]:
        return {"rule": self.rule, "status": self.status, "message": self.message, "evidence": self.evidence}

    @classmethod
    def from_json(cls, f: Fields) -> RuleCheck:
        return cls(*(f.text(k, "") or "" for k in ("rule", "status", "message", "evidence")))


# a schedule check within this of 1x is even with no speculation: the tie validate counts for a published speedup
# (specwise.evidence.records.TIE_WITHIN; tests/contracts test they agree)
EVEN_WITHIN = 0.01


@dataclass(frozen=True)
class ScheduleCheck:
    """The k-by-batch-size schedule simulated at one load: its e2e p50 speedup over no speculation -- the mean of
    ``runs`` paired runs, with their two-sided 90% interval where there were two or more (1: the sweep's own draw;
    advise repeats the loads where the schedule must switch a loss off, ``[advise].replicates``)."""

    qps: float
    speedup_e2e: float | None
    runs: int = 1
    interval_90: tuple[float, float] | None = None
    # where the schedule does not keep up with the load: its capacity (req/s), and the speedup its bound
    capacity_per_s: float | None = None

    @classmethod
    def bound(cls, qps: float, capacity_per_s: float) -> ScheduleCheck:
        """The schedule at a load above its capacity: its queue grows without bound, so its speedup is at most the
        share of the load it serves, capacity / load (as a sweep's best speedup where no k keeps up), whatever one
        finite run showed."""
        return cls(qps, capacity_per_s / qps, runs=0, capacity_per_s=capacity_per_s)

    @property
    def overloaded(self) -> bool:
        """The schedule does not keep up with this load (no speculation does)."""
        return self.capacity_per_s is not None

    @classmethod
    def of_runs(cls, qps: float, speedups: Sequence[float]) -> ScheduleCheck:
        """The check from its runs' speedups (none: an undefined speedup)."""
        if not speedups:
            return cls(qps, None)
        if len(speedups) == 1:
            return cls(qps, speedups[0])
        return cls(qps, sum(speedups) / len(speedups), len(speedups), interval_90(speedups))

    @property
    def below_one(self) -> bool:
        """Whether the schedule loses to no speculation here: below 1 by :data:`EVEN_WITHIN` or more (not a tie, as
        ``validate`` counts a published slowdown: 0.99 or less), and where it was run more than once, its 90%
        interval's high end below 1 too (:attr:`about_one` otherwise: even)."""
        if self.overloaded:  # its queue grows: a capacity, not a draw within a tie (review s60)
            return True
        s, iv = self.speedup_e2e, self.interval_90
        return s is not None and s <= 1.0 - EVEN_WITHIN and (iv is None or iv[1] < 1.0)

    @property
    def about_one(self) -> bool:
        """Below 1, but within :data:`EVEN_WITHIN` of it (a tie) or with its runs' 90% interval reaching 1: even
        with no speculation (one draw of ``schedule-llama31-70b-1b`` at 8 QPS sat at 0.99x and turned its headline
        with the seed; the means of five runs at seeds 0-4 are 0.993-1.005x)."""
        s = self.speedup_e2e
        return s is not None and s < 1.0 and not self.below_one

    @property
    def tie(self) -> bool:
        """Within :data:`EVEN_WITHIN` of 1 (``validate``'s tie for a published speedup)."""
        return self.speedup_e2e is not None and abs(self.speedup_e2e - 1.0) < EVEN_WITHIN

    def even_words(self) -> str:
        """Why an :attr:`about_one` check counts as even: ``8 QPS 0.7% slower, within the 1% counted as even`` or
        ``8 QPS 2.2% slower, but its runs' 90% interval reaches 1x``."""
        tenths = math.floor(1000 * (1.0 - (self.speedup_e2e or 1.0))) / 10  # 0.99001: 0.9%, not "1.0% ... within 1%"
        slower = f"{self.qps:g} QPS {tenths:.1f}% slower"
        if self.tie:
            return f"{slower}, within the {EVEN_WITHIN:.0%} counted as even"
        return f"{slower}, but its runs' 90% interval reaches 1x"

    def words(self) -> str:
        """``8 QPS 0.99x`` (``(mean of 5 runs, 90% interval 0.97-1.01x)`` after it where there were more)."""
        x = fmt_x(self.speedup_e2e)
        if self.capacity_per_s is not None:
            return f"{self.qps:g} QPS at most {x} (the schedule serves {fmt_rate(self.capacity_per_s)} req/s)"
        iv = self.interval_90
        runs = f" (mean of {self.runs} runs, 90% interval {iv[0]:.2f}-{iv[1]:.2f}x)" if iv is not None else ""
        return f"{self.qps:g} QPS {x}{runs}"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"qps": self.qps, "speedup_e2e": self.speedup_e2e}
        if self.interval_90 is not None:  # only where repeated (a one-run document stays as it was)
            out["runs"] = self.runs
            out["interval_90"] = list(self.interval_90)
        if self.capacity_per_s is not None:  # a bound, not a run (a document without one stays as it was)
            out["runs"] = 0
            out["capacity_per_s"] = self.capacity_per_s
        return out


@dataclass(frozen=True)
class PlannedGpu:
    name: str
    memory_bytes: int
    count: int  # GPUs in the deployment


@dataclass(frozen=True)
class PlannedReserve:
    """What vLLM keeps out of the KV cache besides weights, per GPU (``specwise.memory.reserve``)."""

    activation_bytes: int
    cuda_graph_bytes: int
    non_torch_bytes: int
    overridden: bool = False  # the sum was given (``reserve``), not estimated


@dataclass(frozen=True)
class PlannedPerGpu:
    """The most loaded GPU's budget and what takes it (the plan-memory JSON's ``per_gpu``)."""

    budget_bytes: int
    target_weight_bytes: int
    draft_weight_bytes: int
    reserve_bytes: int
    reserve: PlannedReserve
    kv_budget_bytes: int  # negative when weights and reserve alone overrun the budget
    kv_budget_bytes_without_draft: int
    shortfall_bytes: int

    def to_json(self) -> dict[str, Any]:
        out = {k: getattr(self, k) for k in _names(PlannedPerGpu)}
        out["reserve"] = {k: getattr(self.reserve, k) for k in _names(PlannedReserve)}  # keeps its place
        return out

    @classmethod
    def from_json(cls, f: Fields) -> PlannedPerGpu:
        def n(g: Fields, key: str) -> int:
            return g.integer(key, 0) or 0

        r = _object(f, "reserve")
        return cls(
            n(f, "budget_bytes"),
            n(f, "target_weight_bytes"),
            n(f, "draft_weight_bytes"),
            n(f, "reserve_bytes"),
            PlannedReserve(
                n(r, "activation_bytes"), n(r, "cuda_graph_bytes"), n(r, "non_torch_bytes"), r.flag("overridden")
            ),
            n(f, "kv_budget_bytes"),
            n(f, "kv_budget_bytes_without_draft"),
            n(f, "shortfall_bytes"),
        )


@dataclass(frozen=True)
class CandidateMemory:
    """A candidate's memory plan as ``advise`` reports it: the plan-memory JSON contract (README "plan-memory JSON
    contract", :meth:`specwise.memory.MemoryPlan.to_dict`), typed. Its fields are named as
    :class:`~specwise.memory.MemoryPlan`'s (``fits``, ``max_concurrent_seqs``, ``kv_cache_tokens``, ...), the
    per-GPU figures under ``per_gpu``. A view of the plan's JSON, not the plan: the GPU's other specs and the pair
    check are not in it."""

    target: ModelMemory
    draft: ModelMemory | None
    draft_method: str | None
    gpu: PlannedGpu
    fits: bool
    fits_without_draft: bool
    kv_cache_tokens: int
    kv_cache_tokens_without_draft: int
    max_concurrent_seqs: int
    max_concurrent_seqs_without_draft: int
    draft_concurrency_cost: float | None  # the share of max concurrent sequences the draft costs, 0..1
    max_model_len: int
    max_model_len_that_fits: int
    tp: int
    replicas: int
    kv_cache_dtype: str
    gpu_memory_utilization: float
    per_gpu: PlannedPerGpu
    problems: tuple[str, ...]
    warnings: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        """The plan-memory JSON contract, key for key as ``plan-memory --json`` writes it (less ``compatibility``)."""
        out = {k: getattr(self, k) for k in _names(CandidateMemory)}
        out["target"] = self.target.to_json()
        out["draft"] = self.draft.to_json() if self.draft else None
        out["gpu"] = {k: getattr(self.gpu, k) for k in _names(PlannedGpu)}
        out["per_gpu"] = self.per_gpu.to_json()
        out["problems"], out["warnings"] = list(self.problems), list(self.warnings)
        return out

    @classmethod
    def from_json(cls, f: Fields) -> CandidateMemory:
        """The contract read back; a key it lacks reads as 0, false or empty (a plan that says nothing fits nothing)."""

        def n(key: str) -> int:
            return f.integer(key, 0) or 0

        draft, gpu = f.object("draft"), _object(f, "gpu")
        return cls(
            target=ModelMemory.from_json(_object(f, "target")),
            draft=ModelMemory.from_json(draft) if draft else None,
            draft_method=f.text("draft_method"),
            gpu=PlannedGpu(
                gpu.text("name", "") or "", gpu.integer("memory_bytes", 0) or 0, gpu.integer("count", 0) or 0
            ),
            fits=f.flag("fits"),
            fits_without_draft=f.flag("fits_without_draft"),
            kv_cache_tokens=n("kv_cache_tokens"),
            kv_cache_tokens_without_draft=n("kv_cache_tokens_without_draft"),
            max_concurrent_seqs=n("max_concurrent_seqs"),
            max_concurrent_seqs_without_draft=n("max_concurrent_seqs_without_draft"),
            draft_concurrency_cost=f.number("draft_concurrency_cost"),
            max_model_len=n("max_model_len"),
            max_model_len_that_fits=n("max_model_len_that_fits"),
            tp=n("tp"),
            replicas=n("replicas"),
            kv_cache_dtype=f.text("kv_cache_dtype", "") or "",
            gpu_memory_utilization=_as_written(f, "gpu_memory_utilization"),
            per_gpu=PlannedPerGpu.from_json(_object(f, "per_gpu")),
            problems=tuple(str(p) for p in f.data.get("problems") or ()),
            warnings=tuple(str(w) for w in f.data.get("warnings") or ()),
        )


def _names(cls: type) -> tuple[str, ...]:
    """A dataclass's field names in order: its JSON keys in the order the contract writes them."""
    return tuple(x.name for x in fields(cls))


def _schedule_check(r: Fields) -> ScheduleCheck:
    """One ``schedule_results`` entry: runs of the schedule (``runs`` >= 1, an ``interval_90`` where 2 or more), or
    its bound above its capacity (``runs`` 0 and a ``capacity_per_s`` > 0, nothing else)."""
    capacity = r.number("capacity_per_s")
    runs = r.integer("runs", 1, low=0)
    if capacity is not None or runs == 0:
        if capacity is None or not capacity > 0 or runs != 0 or r.data.get("interval_90") is not None:
            raise r.fail("capacity_per_s", "a bound check has runs = 0 and a capacity_per_s > 0 (and no interval_90)")
        return ScheduleCheck(r.number("qps", 0.0) or 0.0, r.number("speedup_e2e"), 0, None, capacity)
    runs = runs or 1
    return ScheduleCheck(r.number("qps", 0.0) or 0.0, r.number("speedup_e2e"), runs, _interval(r, runs))


def _interval(f: Fields, runs: int) -> tuple[float, float] | None:
    """A schedule check's ``interval_90`` ([low, high], low <= high, of 2 or more ``runs``), or None where it has
    none."""
    if f.data.get("interval_90") is None:
        return None
    if runs < 2:
        raise f.fail("runs", f"an interval_90 is of 2 or more runs, got runs = {runs}")
    iv = f.numbers("interval_90")
    if len(iv) != 2 or iv[0] is None or iv[1] is None or iv[0] > iv[1]:
        raise f.fail("interval_90", f"expected [low, high] with low <= high, got {f.data.get('interval_90')!r}")
    return iv[0], iv[1]


def _object(f: Fields, key: str) -> Fields:
    """``key``'s object, or an empty one where the document has none."""
    return f.object(key) or Fields({}, f.at(key))


def _as_written(f: Fields, key: str) -> float:
    """A number as the JSON holds it (``1`` stays an int), so the document writes back byte for byte."""
    f.number(key, 0.0)  # refuses what is not a finite number
    value: float = f.data.get(key, 0.0)
    return value


@dataclass(frozen=True)
class SamplingNoise:
    """The simulation's own sampling noise at one load (the operating load's, or one either side of an edge
    advise names): the candidate's speedup there (on the decision
    metric, at ``k`` against plain decoding, the same requests for both) simulated ``len(replicates)`` times with
    ``num_requests`` requests each -- the sweep's own run (replicate 0) and replicates of its seed that draw from
    random-number streams of their own (``study/sweep.random_key``). One run of a few hundred requests moved a
    verdict across its band's edge (``bench/seed_sensitivity.py``: disable at seed 0, measure first at seeds 1-4);
    advise decides on their mean and its two-sided 90% interval (Student's t), not on one draw."""

    qps: float
    k: int
    num_requests: int
    seed: int  # [sweep].seed
    replicates: tuple[int, ...]  # which replicates of it (0: the sweep's own run), one speedup each
    speedups: tuple[float, ...]

    def __post_init__(self) -> None:
        if not 2 <= len(self.replicates) <= MAX_REPLICATES or len(self.speedups) != len(self.replicates):
            raise ValueError(f"sampling noise needs 2-{MAX_REPLICATES} runs, one speedup each")

    @property
    def mean(self) -> float:
        return sum(self.speedups) / len(self.speedups)

    @property
    def sd(self) -> float:
        """The speedups' sample standard deviation (n - 1)."""
        m, n = self.mean, len(self.speedups)
        return float(math.sqrt(sum((s - m) ** 2 for s in self.speedups) / (n - 1)))

    @property
    def half_width(self) -> float:
        """Half the 90% interval of the mean: t(0.95, n - 1) * sd / sqrt(n)."""
        return mean_half_width(self.speedups)[1]

    @property
    def low(self) -> float:
        return self.mean - self.half_width

    @property
    def high(self) -> float:
        return self.mean + self.half_width

    def words(self) -> str:
        """``mean of 5 runs of 400 requests: 90% interval 0.86-0.95x, runs 0.83-0.96x``."""
        runs = f"{len(self.speedups)} runs of {self.num_requests} requests"
        lo, hi = min(self.speedups), max(self.speedups)
        return f"mean of {runs}: 90% interval {self.low:.2f}-{self.high:.2f}x, runs {lo:.2f}-{hi:.2f}x"

    def to_json(self) -> dict[str, Any]:
        return {
            "qps": self.qps,
            "k": self.k,
            "num_requests": self.num_requests,
            "seed": self.seed,
            "replicates": list(self.replicates),
            "speedups": list(self.speedups),
            "mean": self.mean,
            "interval_90": [self.low, self.high],
        }

    @classmethod
    def from_json(cls, f: Fields) -> SamplingNoise:
        """The mean and interval are worked out again from the speedups (what the document holds of them is
        their record, not an input)."""
        replicates = f.data.get("replicates")
        if (
            not isinstance(replicates, list)
            or not all(isinstance(r, int) and not isinstance(r, bool) and r >= 0 for r in replicates)
            or len(set(replicates)) != len(replicates)
            or not 2 <= len(replicates) <= MAX_REPLICATES
        ):
            raise f.fail("replicates", f"expected 2-{MAX_REPLICATES} distinct whole numbers >= 0, got {replicates!r}")
        speedups = f.numbers("speedups")
        if len(speedups) != len(replicates) or not all(s is not None and 0 < s < math.inf for s in speedups):
            raise f.fail("speedups", "expected one finite speedup > 0 per replicate")
        return cls(
            qps=f.number("qps", required=True, low=0.0) or 0.0,
            k=f.integer("k", required=True, low=1) or 1,
            num_requests=f.integer("num_requests", required=True, low=1) or 1,
            seed=f.integer("seed", required=True) or 0,
            replicates=tuple(replicates),
            speedups=tuple(s or 0.0 for s in speedups),
        )


@dataclass(frozen=True)
class CandidateAdvice:
    candidate: str
    method: str
    draft: str | None
    drafting: str
    memory: CandidateMemory  # the memory plan (README "plan-memory JSON contract"), typed
    evidence: tuple[EvidenceUsed, ...]
    warnings: tuple[str, ...]
    decision_metric: str
    verdict: str
    k: int
    reason: str
    rules: tuple[RuleCheck, ...]
    schedule: tuple[tuple[int, int, int], ...] = ()
    schedule_results: tuple[ScheduleCheck, ...] = ()
    speedup_at_operating_qps: float | None = None
    sim: SweepResult | None = None
    speculative_config: JsonObject | None = None
    headline: str = ""  # the verdict in one line, from the same test as reason, k and schedule
    sampling: SamplingNoise | None = None  # the operating load's runs ([advise].replicates > 1)
    # the runs at the loads either side of where the gain falls below min_speedup above the operating load
    edge_sampling: tuple[SamplingNoise, ...] = ()

    @property
    def simulated(self) -> bool:
        return self.verdict not in NOT_SIMULATED

    @property
    def planned_k(self) -> int | None:
        """The k the memory plan (``memory``) was sized for: the largest simulated (its activation reserve grows
        with k, and every k was simulated on that plan's KV cache); None when nothing was simulated."""
        ks = self.sim.k_values if self.sim is not None else ()
        return max(ks) if ks else None

    def kv_tokens_text(self) -> str:
        """The plan's KV cache tokens, with the k they are for when that is not the advised k."""
        planned = self.planned_k
        at = f" (k={planned})" if planned is not None and planned != self.k else ""
        return f"{self.memory.kv_cache_tokens:,}{at}"

    def to_json(self, bulk: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {
            "candidate": self.candidate,
            "method": self.method,
            "draft": self.draft,
            "drafting": self.drafting,
            "memory": self.memory.to_json(),
            "evidence": [e.to_json() for e in self.evidence],
            "warnings": list(self.warnings),
            "decision_metric": self.decision_metric,
            "verdict": self.verdict,
            "headline": self.headline,
            "k": self.k,
            "schedule": [list(b) for b in self.schedule],
            "schedule_results": [s.to_json() for s in self.schedule_results],
            "speedup_at_operating_qps": self.speedup_at_operating_qps,
            "reason": self.reason,
            "sim": _sim_json(self.sim, bulk),
            "speculative_config": dict(self.speculative_config) if self.speculative_config else None,
            "rules": [r.to_json() for r in self.rules],
        }
        if self.sampling is not None:  # only where replicated (a document from one seed stays as it was)
            out["sampling"] = self.sampling.to_json()
        if self.edge_sampling:  # likewise
            out["edge_sampling"] = [n.to_json() for n in self.edge_sampling]
        if not self.simulated:  # a candidate not simulated has no curve, schedule or config to report
            del out["schedule_results"], out["speculative_config"]
        return out

    @classmethod
    def from_json(cls, f: Fields) -> CandidateAdvice:
        sim = f.object("sim")
        spec = f.data.get("speculative_config")
        return cls(
            candidate=f.text("candidate", required=True) or "",
            method=f.text("method", "") or "",
            draft=f.text("draft"),
            drafting=f.text("drafting", "greedy") or "greedy",
            memory=CandidateMemory.from_json(_object(f, "memory")),
            evidence=tuple(EvidenceUsed.from_json(e) for e in f.objects("evidence")),
            warnings=tuple(str(w) for w in f.data.get("warnings") or ()),
            decision_metric=f.text("decision_metric", "e2e") or "e2e",
            verdict=f.text("verdict", required=True) or "",
            k=f.integer("k", 0) or 0,
            reason=f.text("reason", "") or "",
            rules=tuple(RuleCheck.from_json(r) for r in f.objects("rules")),
            schedule=tuple((int(a), int(b), int(k)) for a, b, k in f.data.get("schedule") or ()),
            schedule_results=tuple(_schedule_check(r) for r in f.objects("schedule_results")),
            speedup_at_operating_qps=f.number("speedup_at_operating_qps"),
            sim=SweepResult.from_json(sim.data, sim.where) if sim else None,
            speculative_config=spec if isinstance(spec, Mapping) else None,
            headline=f.text("headline", "") or "",
            sampling=SamplingNoise.from_json(noise) if (noise := f.object("sampling")) is not None else None,
            edge_sampling=tuple(SamplingNoise.from_json(n) for n in f.objects("edge_sampling")),
        )


def _sim_json(sim: SweepResult | None, bulk: bool) -> dict[str, Any] | None:
    """The candidate's simulated curve; without ``bulk``, rows keep their numbers but not every latency table."""
    if sim is None:
        return None
    doc = sim.to_json()
    if not bulk:
        doc["results"] = [{k: v for k, v in r.items() if k not in ("latency", "by_class")} for r in doc["results"]]
    return doc


@dataclass(frozen=True)
class ServeCommand:
    engine: str
    argv: tuple[str, ...]
    command: str
    speculative_config: JsonObject | None
    notes: tuple[str, ...] = ()  # what the engine version's config cannot say (a schedule it does not take)


@dataclass(frozen=True)
class MeasurePlan:
    """How to measure a candidate the simulation cannot settle: a launch file, the bench command (and the advise
    that reads its run back, where the engine's counters allow), and what the command cannot say (``notes``)."""

    candidate: str
    launch_toml: str
    command: str
    notes: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "candidate": self.candidate,
            "launch_toml": self.launch_toml,
            "command": self.command,
            "notes": list(self.notes),
        }


@dataclass(frozen=True)
class NearbyEvidence:
    """The held-back published measurements most like the deployment and the predictor's error on them (the
    published fit's stored replay; ``specwise validate --like`` lists them): a band is one number per engine and GPU
    segment, this is the evidence nearest the operator's own setup, with how near it is and what in it differs."""

    records: int  # 0: no held-back measurement ran on this engine and kind of GPU
    median_abs_rel_error: float | None
    p80_abs_rel_error: float | None  # the band's statistic, on these records
    within_25pct: float | None
    slowdowns: int  # published slowdowns among them
    slowdowns_predicted: int  # of those, predicted below 1
    record_ids: tuple[str, ...]
    command: str  # the validate --like command that lists them
    nearness: tuple[float, float] | None = None  # the lowest and highest score among them
    nearness_of: float = 25.0  # the score of a record whose setup is the deployment's
    differs: tuple[str, ...] = ()  # what differs from the deployment in at least one of them (card, target, ...)

    def to_json(self) -> dict[str, Any]:
        return {
            "records": self.records,
            "median_abs_rel_error": self.median_abs_rel_error,
            "p80_abs_rel_error": self.p80_abs_rel_error,
            "within_25pct": self.within_25pct,
            "slowdowns": self.slowdowns,
            "slowdowns_predicted": self.slowdowns_predicted,
            "record_ids": list(self.record_ids),
            "command": self.command,
            "nearness": list(self.nearness) if self.nearness else None,
            "nearness_of": self.nearness_of,
            "differs": list(self.differs),
            "load_compared": False,
        }

    @classmethod
    def from_json(cls, f: Fields) -> NearbyEvidence:
        near = f.numbers("nearness", allow_null=False) if f.data.get("nearness") else ()
        return cls(
            records=f.integer("records", 0) or 0,
            median_abs_rel_error=f.number("median_abs_rel_error"),
            p80_abs_rel_error=f.number("p80_abs_rel_error"),
            within_25pct=f.number("within_25pct"),
            slowdowns=f.integer("slowdowns", 0) or 0,
            slowdowns_predicted=f.integer("slowdowns_predicted", 0) or 0,
            record_ids=tuple(str(x) for x in f.data.get("record_ids") or ()),
            command=f.text("command", "") or "",
            nearness=(float(near[0] or 0.0), float(near[1] or 0.0)) if len(near) == 2 else None,
            nearness_of=f.number("nearness_of", 25.0) or 25.0,
            differs=tuple(str(x) for x in f.data.get("differs") or ()),
        )


@dataclass(frozen=True)
class TemperaturePoint:
    series: str
    temperature: float
    acceptance: float


NEGATIVE_DECISIONS = ("disable", "unsupported")
"""The decisions that answer no: speculation should stay off, or no candidate can run (:attr:`Advice.negative`)."""


@dataclass(frozen=True)
class Advice:
    """advise's answer. ``candidates`` are in the scenario's order; ``ranked`` and :meth:`in_rank_order` give them
    best first, the order ``to_json`` (``advise --json``) writes -- so ``advice.in_rank_order()[0]`` is the JSON's
    ``candidates[0]`` (review s46d), and a document read back with ``from_json`` holds them in rank order."""

    scenario: str
    target: str
    gpu: str
    tp: int
    operating_qps: float
    min_speedup: float
    decision: str  # enable | enable_below | measure_first | disable | unsupported (no candidate can run)
    headline: str
    recommended: str | None
    reason: str
    assumed_acceptance_for: tuple[str, ...]
    ranking: tuple[str, ...]
    candidates: tuple[CandidateAdvice, ...]
    serve: ServeCommand
    acceptance_vs_temperature: tuple[TemperaturePoint, ...]
    monitoring: Mapping[str, str] = field(default_factory=dict)  # PromQL by name
    report: str | None = None
    measure: MeasurePlan | None = None
    predictor: str = ""  # the step-time model the decision rests on
    band: float = 0.0  # its relative error (80th percentile over held-back measurements)
    band_source: str = ""
    band_statistic: str = P80_SPEEDUP_ERROR  # which statistic ``band`` is
    nearby_evidence: NearbyEvidence | None = None  # published-fit only: its stored held-back replay

    def candidate(self, label: str) -> CandidateAdvice:
        return next(c for c in self.candidates if c.candidate == label)

    @property
    def negative(self) -> bool:
        """The answer is no: ``disable`` or ``unsupported`` (NEGATIVE_DECISIONS; ``specwise advise`` exits 1)."""
        return self.decision in NEGATIVE_DECISIONS

    @property
    def ranked(self) -> tuple[CandidateAdvice, ...]:
        return tuple(self.candidate(name) for name in self.ranking)

    def in_rank_order(self) -> tuple[CandidateAdvice, ...]:
        """Every candidate, ranked first (as ``ranking`` names them), any the ranking does not name after them."""
        place = {name: i for i, name in enumerate(self.ranking)}
        return tuple(sorted(self.candidates, key=lambda c: place.get(c.candidate, len(place))))

    def to_json(self, bulk: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {
            "schema": SCHEMA.id,
            "scenario": self.scenario,
            "target": self.target,
            "gpu": self.gpu,
            "tp": self.tp,
            "operating_qps": self.operating_qps,
            "min_speedup": self.min_speedup,
            "decision": self.decision,
            "headline": self.headline,
            "recommended": self.recommended,
            "reason": self.reason,
            "assumed_acceptance_for": list(self.assumed_acceptance_for),
            "ranking": list(self.ranking),
            "candidates": [c.to_json(bulk) for c in self.in_rank_order()],
            self.serve.engine: {
                "serve_argv": list(self.serve.argv),
                "serve_command": self.serve.command,
                "speculative_config": dict(self.serve.speculative_config) if self.serve.speculative_config else None,
                # only where the command cannot say something the plan assumed (older outputs stay as they were)
                **({"notes": list(self.serve.notes)} if self.serve.notes else {}),
            },
            "acceptance_vs_temperature": [
                {"series": p.series, "temperature": p.temperature, "acceptance": p.acceptance}
                for p in self.acceptance_vs_temperature
            ],
            "monitoring": dict(self.monitoring),
            # null when no candidate was simulated (every one unsupported): no predictor, not a perfect one
            "predictor": (
                predictor_json(self.predictor, self.band, self.band_source, self.band_statistic)
                if self.predictor
                else None
            ),
            "measure": self.measure.to_json() if self.measure else None,
        }
        # null where no published-fit replay is stored for the predictor used (roofline, a calibration)
        out["nearby_evidence"] = self.nearby_evidence.to_json() if self.nearby_evidence is not None else None
        if self.report is not None:
            out["report"] = self.report
        return out

    @classmethod
    def from_json(cls, data: JsonObject, where: str = "advice") -> Advice:
        SCHEMA.check(data, where)
        f = Fields(data, where)
        engine = next((e for e in ("vllm", "sglang", "llama.cpp") if e in data), "vllm")
        serve = f.object(engine)
        pred = f.object("predictor")
        spec = serve.data.get("speculative_config") if serve else None
        return cls(
            scenario=f.text("scenario", "") or "",
            target=f.text("target", "") or "",
            gpu=f.text("gpu", "") or "",
            tp=f.integer("tp", 1) or 1,
            operating_qps=f.number("operating_qps", required=True) or 0.0,
            min_speedup=f.number("min_speedup", 1.0) or 1.0,
            decision=f.text("decision", required=True) or "",
            headline=f.text("headline", "") or "",
            recommended=f.text("recommended"),
            reason=f.text("reason", "") or "",
            assumed_acceptance_for=tuple(str(x) for x in data.get("assumed_acceptance_for") or ()),
            ranking=tuple(str(x) for x in data.get("ranking") or ()),
            candidates=tuple(CandidateAdvice.from_json(c) for c in f.objects("candidates")),
            serve=ServeCommand(
                engine,
                tuple(str(a) for a in serve.data.get("serve_argv") or ()) if serve else (),
                (serve.text("serve_command", "") if serve else "") or "",
                spec if isinstance(spec, Mapping) else None,
                tuple(str(n) for n in serve.data.get("notes") or ()) if serve else (),
            ),
            acceptance_vs_temperature=tuple(
                TemperaturePoint(
                    p.text("series", "") or "", p.number("temperature", 0.0) or 0.0, p.number("acceptance", 0.0) or 0.0
                )
                for p in f.objects("acceptance_vs_temperature")
            ),
            monitoring={str(k): str(v) for k, v in (data.get("monitoring") or {}).items()},
            report=f.text("report"),
            measure=_measure(f.object("measure")),
            predictor=(pred.text("name", "") if pred else "") or "",
            band=(pred.number("relative_error_p80", 0.0) if pred else 0.0) or 0.0,
            band_source=(pred.text("source", "") if pred else "") or "",
            band_statistic=(pred.text("statistic") if pred else None) or P80_SPEEDUP_ERROR,
            nearby_evidence=_nearby(f.object("nearby_evidence")),
        )


def _nearby(f: Fields | None) -> NearbyEvidence | None:
    return None if f is None else NearbyEvidence.from_json(f)


def _measure(f: Fields | None) -> MeasurePlan | None:
    if f is None:
        return None
    notes = tuple(str(n) for n in f.data.get("notes") or ())
    return MeasurePlan(
        f.text("candidate", "") or "", f.text("launch_toml", "") or "", f.text("command", "") or "", notes
    )
