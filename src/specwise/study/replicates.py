"""The simulation's own sampling noise at one load: the speedup of one k there re-simulated as replicates of the
sweep's seed (:func:`~specwise.study.sweep.random_key`: streams of their own; the sweep's run is replicate 0), each
replicate's k and plain-decoding cells on the same requests (common random numbers, as in the sweep), so each gives
one paired speedup. ``advise`` decides on their mean and its 90% interval
(:class:`~specwise.contracts.advice.SamplingNoise`) rather than on the one draw the sweep made, and reports that
mean as the operating load's best speedup (:func:`with_mean`). The two loads either side of where the gain falls
below ``min_speedup`` above the operating load (:func:`edge_loads`) are replicated the same way: the load an
"enable below ~X QPS" names is interpolated between them, and on one draw each it moved with the seed
(``bench/seed_sensitivity.py``: ~5.7-6.4 QPS for ``schedule-llama31-70b-1b``)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import replace

from specwise.contracts.advice import SamplingNoise
from specwise.contracts.sweep import SweepResult
from specwise.executors import Executor, Progress
from specwise.executors.local import LocalExecutor
from specwise.scenario.model import Scenario
from specwise.study.decide import crossover, sweep_row
from specwise.study.sweep import CAPACITY_QPS, Cell, replicate_of, run_job

# a k's saturated run is repeated when a simulated load is within this share of it: only there can its noise put the
# load on the other side (evidence-llama31-8b-eagle-rtx3090: 4 QPS beside k=2's ~4.0 req/s turned with the seed)
CAPACITY_NEAR = 0.10


def capacity_replicates(
    sc: Scenario,
    cells: Sequence[Cell],
    replicates: int,
    executor: Executor | None = None,
    progress: Progress | None = None,
) -> list[Cell]:
    """Replicates 1 .. ``replicates`` - 1 of the saturated run of each k (None: the schedule) whose one run in
    ``cells`` a simulated load is within :data:`CAPACITY_NEAR` of; ``decide`` takes the mean of a k's runs. A
    capacity no load is near is left at one run: which side of it each load is on does not depend on its noise
    (and the runs cost as much as the rest of a sweep: review s57's CPU figures)."""
    near = [
        c.k
        for c in cells
        if c.qps == CAPACITY_QPS
        and c.capacity_per_s
        and any(abs(q / c.capacity_per_s - 1.0) <= CAPACITY_NEAR for q in sc.sweep.qps)
    ]
    jobs = [(replicate_of(sc, r), CAPACITY_QPS, k) for k in near for r in range(1, replicates)]
    return (executor or LocalExecutor()).map(run_job, jobs, progress) if jobs else []


def replicate_jobs(sc: Scenario, qps: float, k: int, replicates: int) -> list[tuple[Scenario, float, int]]:
    """Plain decoding then ``k`` at ``qps`` for replicates 1 .. ``replicates`` - 1 of the sweep's seed (replicate
    0 is the sweep's own cell)."""
    return [(replicate_of(sc, r), qps, kk) for r in range(1, replicates) for kk in (0, k)]


def sampling_noise(
    sc: Scenario,
    sim: SweepResult,
    qps: float,
    k: int,
    replicates: int,
    executor: Executor | None = None,
    progress: Progress | None = None,
) -> SamplingNoise | None:
    """``k``'s speedup at ``qps`` (``sim``'s decision metric) over ``replicates`` runs; None when there is nothing
    to replicate: one run, no such cell in ``sim``, a speedup undefined there (goodput: none without speculation),
    or one that is 1 by definition (throughput where both keep up: the same requests served). A replicate whose
    speedup is undefined is left out (the runs kept are named); fewer than two left: None. Each replicate's rows
    are judged against the sweep's capacities (advise averages those over as many saturated runs)."""
    row = sim.row(qps, k)
    first = row.speedup(sim.decision_metric) if row is not None else None
    base = sim.baseline_at(qps)
    by_definition = sim.decision_metric == "throughput" and row is not None and not row.overloaded
    if replicates < 2 or first is None or by_definition or (base is not None and base.overloaded):
        return None
    cells = (executor or LocalExecutor()).map(run_job, replicate_jobs(sc, qps, k, replicates), progress)
    capacity, base_capacity = sim.capacity_per_s_by_k.get(k), sim.capacity_per_s_by_k.get(0)
    kept, speedups = [0], [first]
    for r, (plain, spec) in enumerate(zip(cells[0::2], cells[1::2], strict=True), start=1):
        value = sweep_row(spec, plain.summary, capacity, base_capacity).speedup(sim.decision_metric)
        if value is not None:
            kept.append(r)
            speedups.append(value)
    if len(kept) < 2:
        return None
    return SamplingNoise(qps, k, sc.sweep.num_requests, sc.sweep.seed, tuple(kept), tuple(speedups))


def with_mean(sim: SweepResult, noise: SamplingNoise) -> SweepResult:
    """``sim`` with the replicates' mean as the best speedup at their load, and its k the best k there when that
    pays (``decide``'s rule: a best speedup of 1 or less is k = 0), the crossover worked out again: what the
    schedule, the rule checks, the ranking and the document read then agree with the verdict (review s57: the
    one-draw 0.83x beside a verdict on 0.90x). The rows keep each k's one draw."""
    best = {**sim.best_speedup_by_qps, noise.qps: noise.mean}
    best_k = {**sim.best_k_by_qps, noise.qps: noise.k if noise.mean > 1.0 else 0}
    qps = list(sim.best_speedup_by_qps)
    return replace(
        sim,
        best_speedup_by_qps=best,
        best_k_by_qps=best_k,
        crossover_qps=crossover(qps, [best[q] for q in qps]),
    )


def edge_loads(sim: SweepResult, operating_qps: float, minimum: float, done: Collection[float]) -> tuple[float, ...]:
    """The loads either side of where the best speedup first falls below ``minimum`` above the operating load (the
    last load below the first that misses it, and that one; :func:`~specwise.study.decide.falls_below`
    interpolates between them) that are simulated cells not in ``done``: a load where no k keeps up is left out (its
    speedup is a capacity's bound, capacity / load, and that capacity is already the mean of its saturated runs
    where a load is near it: :func:`capacity_replicates`). () where the operating load itself misses ``minimum`` or
    no load above it does. Only loads the deployment keeps up with count, as in advise's verdict."""
    gains = {q: s for q, s in sim.best_speedup_by_qps.items() if q not in sim.overloaded_qps}
    if gains.get(operating_qps, 0.0) < minimum:
        return ()
    above = sorted(q for q, s in gains.items() if q > operating_qps and s < minimum)
    if not above:
        return ()
    pair = (max(q for q in gains if q < above[0]), above[0])
    return tuple(q for q in pair if q not in done and q not in sim.capacity_bound_qps)
