"""QPS x k sweeps of a scenario: one simulation per cell, common random numbers across k; the cells on an
:class:`~specwise.executors.Executor` (a local process pool, or Ray). Each k also gets one saturated run that
measures the deployment's capacity (:mod:`specwise.sim.saturation`), so a load above it is said, not averaged."""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, replace

import numpy as np

from specwise.engines.vllm_versions import unchunked_token_budget
from specwise.executors import Executor, Progress
from specwise.executors.local import LocalExecutor
from specwise.scenario.model import Scenario
from specwise.sim.engine import EngineConfig, SimResult, SpecConfig, simulate
from specwise.sim.metrics import SimSummary, summarize
from specwise.sim.saturation import capacity_per_s, capacity_requests
from specwise.sim.workload import RequestTable, admit, generate_requests
from specwise.traffic import Arrivals, FloatArray

log = logging.getLogger(__name__)

CAPACITY_QPS = math.inf  # the qps of a capacity cell: the saturated run
_CAPACITY_STREAM = 2**20  # its random-number stream, apart from every rate's (those are [seed, 1, rate_stream])
_REPLICATE_STREAM = 2**21  # a replicate's streams: [seed, _REPLICATE_STREAM, replicate, ...], apart from both


def random_key(sc: Scenario, *stream: int) -> list[int]:
    """The key of ``stream``'s random numbers: ``[seed, *stream]`` for the sweep's own draw, and for replicate r of
    that seed (``[sweep].replicate``, advise's replicates) ``[seed, _REPLICATE_STREAM, r, *stream]`` -- its own
    streams, so the replicates of seed 0 are not seed 1's draws (review s57: with seeds 1-4 as seed 0's replicates,
    advising at seeds 0 and 1 shared 4 of their 5 draws). numpy's SeedSequence hashes the whole key: different keys,
    independent streams (numpy.random.SeedSequence docs)."""
    r = sc.sweep.replicate
    return [sc.sweep.seed, *stream] if r == 0 else [sc.sweep.seed, _REPLICATE_STREAM, r, *stream]


@dataclass(frozen=True)
class Cell:
    qps: float  # CAPACITY_QPS: the saturated run of this k
    k: int | None  # None: the k-by-batch-size schedule
    summary: SimSummary
    capacity_per_s: float | None = None  # requests/s served once saturated (capacity cells only)


def _simulate(sc: Scenario, requests: RequestTable, k: int | None, rng: np.random.Generator) -> SimResult:
    speculating = k is None or k > 0
    chunked = sc.models.chunked_prefill_with_spec if speculating else sc.baseline_chunked_prefill
    budget = sc.scheduled_tokens_with_spec or sc.max_num_batched_tokens if speculating else sc.max_num_batched_tokens
    engine = EngineConfig(
        kv_capacity_tokens=sc.kv_cache_tokens if speculating else sc.kv_cache_tokens_without_draft,
        max_num_seqs=sc.max_num_seqs,
        # a server that prefills whole prompts takes at least max_model_len (as the command written for it does)
        max_num_batched_tokens=budget if chunked else unchunked_token_budget(budget, sc.memory_plan.max_model_len),
        overhead=sc.models.overhead,
        chunked_prefill=chunked,
        batch_expansion_scorer=sc.models.batch_expansion_scorer,
    )
    spec = None
    if k is None:
        spec = SpecConfig(k=0, draft_cost=sc.models.draft_cost, schedule=sc.k_schedule, shape=sc.method.shape)
    elif k > 0:
        spec = SpecConfig(k=k, draft_cost=sc.models.draft_cost, shape=sc.method.shape)
    return simulate(requests, sc.classes, engine, sc.models.target, spec, rng)


def rate_stream(qps: float) -> int:
    """The random-number stream of a cell at ``qps``: the rate in micro-requests per second (a finite positive
    rate; two rates closer than 1e-6 QPS share a stream)."""
    return round(qps * 1_000_000)


def run_cell(sc: Scenario, qps: float, k: int | None) -> Cell:
    """One simulation. The same seed gives the same requests for every k (common random numbers); those vLLM
    would reject as longer than max_model_len are left out (:func:`~specwise.sim.workload.admit`). The random
    streams are keyed by the rate itself (:func:`rate_stream`), so a cell is the same whatever other rates the sweep
    holds (review s47b F1: keyed by the rate's place in the list, adding 1 QPS moved the 2 QPS speedup 1.026 ->
    1.008)."""
    if math.isinf(qps):
        return run_capacity(sc, k)
    stream = (1, rate_stream(qps))
    rng = np.random.default_rng(random_key(sc, *stream))
    requests = generate_requests(sc.classes, sc.sweep.arrivals.with_rate(qps), sc.sweep.num_requests, rng)
    requests = admit(requests, sc.memory_plan.max_model_len)  # vLLM rejects over-long prompts, caps the rest
    result = _simulate(sc, requests, k, np.random.default_rng(random_key(sc, *stream, 1)))
    return Cell(qps, k, summarize(result, sc.classes, sc.sweep.warmup_fraction))


def run_capacity(sc: Scenario, k: int | None) -> Cell:
    """The saturated run of ``k``: a closed loop of ``max_num_seqs`` users on the scenario's mix of requests
    (the same requests for every k), and the completion rate it sustains. The users start spread over one cycle
    (:func:`_staggered_starts`), as an overloaded open loop fills its batch, not all at once. A trace's times are
    not used (the loop makes its own), so a trace scenario draws its lengths as a Poisson one does: a trace of
    fewer times than the run's requests would otherwise cut the run short (review s46a: 300 times gave 192.5 req/s
    where the deployment serves 68.7)."""
    users = sc.max_num_seqs
    rng = np.random.default_rng(random_key(sc, _CAPACITY_STREAM))
    arrivals = sc.sweep.arrivals if sc.sweep.arrivals.kind != "trace" else Arrivals("poisson")
    drawn = generate_requests(sc.classes, arrivals.with_rate(1.0), capacity_requests(users), rng)
    closed = admit(replace(drawn, arrival_s=np.zeros(drawn.size), users=users), sc.memory_plan.max_model_len)
    closed = replace(closed, arrival_s=_staggered_starts(sc, closed, k))
    result = _simulate(sc, closed, k, np.random.default_rng(random_key(sc, _CAPACITY_STREAM, 1)))
    summary = summarize(result, sc.classes)
    return Cell(CAPACITY_QPS, k, summary, capacity_per_s(result.finish_s, users))


def _staggered_starts(sc: Scenario, closed: RequestTable, k: int | None) -> FloatArray:
    """The closed loop's first arrivals, one every ``cycle / users`` seconds, where the cycle is the median time
    the first ``users`` requests take when they all start at once. All starting together, requests of one length
    prefill, decode and finish in lock-step cohorts that never mix prefill with decode, which overstated capacity
    by ~28% for fixed lengths (review s46a: 68.7 req/s where an open loop saturates at 53.5; ``vllm bench serve
    --dataset-name random``'s shape); spread over a cycle, the loop keeps the mix an overloaded server runs."""
    users = min(int(closed.users or closed.size), closed.size)
    first = RequestTable(
        np.zeros(users), closed.prompt_tokens[:users], closed.output_tokens[:users], closed.class_index[:users]
    )
    cohort = _simulate(sc, first, k, np.random.default_rng(random_key(sc, _CAPACITY_STREAM, 2)))
    done = cohort.finish_s[np.isfinite(cohort.finish_s)]
    cycle_s = float(np.median(done)) if done.size else 0.0
    starts = np.full(closed.size, cycle_s * (users - 1) / users)  # the later rows' times are unused: kept sorted
    starts[:users] = cycle_s * np.arange(users) / users
    return starts


def run_job(args: tuple[Scenario, float, int | None]) -> Cell:
    """:func:`run_cell` on one (scenario, qps, k) job, as an executor maps them."""
    return run_cell(*args)


def replicate_of(sc: Scenario, r: int) -> Scenario:
    """``sc`` as replicate ``r`` of its seed (0: itself)."""
    return sc if r == 0 else replace(sc, sweep=replace(sc.sweep, replicate=r))


def sweep_jobs(sc: Scenario) -> list[tuple[Scenario, float, int | None]]:
    """The cells of :func:`run_sweep`, in its order: every (qps, k) with k = 0 first at each QPS (so a finished
    prefix has the baseline of every speculative cell in it), the schedule last per QPS, then the capacity runs."""
    ks: list[int | None] = list(sc.sweep.k_values) + ([None] if sc.k_schedule else [])
    return [(sc, q, k) for q in [*sc.sweep.qps, CAPACITY_QPS] for k in ks]


def run_sweep(
    sc: Scenario,
    executor: Executor | None = None,
    *,
    progress: Progress | None = None,
    into: list[Cell] | None = None,
) -> list[Cell]:
    """Every (qps, k) cell, plus the schedule per QPS when the scenario has one, in (qps, k) order, then one
    capacity cell per k (qps :data:`CAPACITY_QPS`; advise adds replicates of those a load is near:
    :func:`~specwise.study.replicates.capacity_replicates`); on ``executor`` (default: a local process pool, at
    most one process per cell and per core). Each cell seeds its own random numbers, so where it runs does not
    change it. ``into``: the list the cells are appended to as they finish, in that order (what a caller keeps
    when the sweep is interrupted; :func:`~specwise.study.decide.partial_sweep` reads it)."""
    jobs = sweep_jobs(sc)
    started_s, cpu_s = time.monotonic(), time.process_time()
    cells = (executor or LocalExecutor()).map(run_job, jobs, progress, into)
    log.debug(
        "%s: %d simulations (%d requests each) in %.1f s wall, %.1f s CPU in this process",
        sc.name,
        len(jobs),
        sc.sweep.num_requests,
        time.monotonic() - started_s,
        time.process_time() - cpu_s,
    )
    return cells
