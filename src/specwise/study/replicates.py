"""The simulation's own sampling noise at one load: the speedup of one k there re-simulated with the next seeds
(the sweep's cell is the first), each seed's k and plain-decoding cells on the same requests (common random
numbers, as in the sweep), so each seed gives one paired speedup. ``advise`` decides on their mean and its 90%
interval (:class:`~specwise.contracts.advice.SamplingNoise`) rather than on the one draw the sweep made."""

from __future__ import annotations

from dataclasses import replace

from specwise.contracts.advice import SamplingNoise
from specwise.contracts.sweep import SweepResult
from specwise.executors import Executor, Progress
from specwise.executors.local import LocalExecutor
from specwise.scenario.model import Scenario
from specwise.study.decide import sweep_row
from specwise.study.sweep import Cell, run_cell


def _run(job: tuple[Scenario, float, int]) -> Cell:
    return run_cell(*job)


def replicate_jobs(sc: Scenario, qps: float, k: int, replicates: int) -> list[tuple[Scenario, float, int]]:
    """Plain decoding then ``k`` at ``qps`` for each seed after the sweep's: ``[sweep].seed + 1`` .. ``+ replicates
    - 1`` (the sweep's own seed is its cell)."""
    seeds = [sc.sweep.seed + i for i in range(1, replicates)]
    return [(replace(sc, sweep=replace(sc.sweep, seed=s)), qps, kk) for s in seeds for kk in (0, k)]


def sampling_noise(
    sc: Scenario,
    sim: SweepResult,
    qps: float,
    k: int,
    replicates: int,
    executor: Executor | None = None,
    progress: Progress | None = None,
) -> SamplingNoise | None:
    """``k``'s speedup at ``qps`` (``sim``'s decision metric) at ``replicates`` seeds; None when there is nothing
    to replicate: one seed, no such cell in ``sim``, or a speedup undefined there (goodput: none without
    speculation). Each seed's rows are judged against the sweep's capacities (a saturated run per seed would
    double the cost; the loads advise weighs with a band are ones both keep up with)."""
    row = sim.row(qps, k)
    first = row.speedup(sim.decision_metric) if row is not None else None
    if replicates < 2 or first is None:
        return None
    jobs = replicate_jobs(sc, qps, k, replicates)
    cells = (executor or LocalExecutor()).map(_run, jobs, progress)
    capacity, base_capacity = sim.capacity_per_s_by_k.get(k), sim.capacity_per_s_by_k.get(0)
    speedups = [first]
    for base, spec in zip(cells[0::2], cells[1::2], strict=True):
        value = sweep_row(spec, base.summary, capacity, base_capacity).speedup(sim.decision_metric)
        if value is None:
            return None
        speedups.append(value)
    seeds = tuple(sc.sweep.seed + i for i in range(replicates))
    return SamplingNoise(qps, k, sc.sweep.num_requests, seeds, tuple(speedups))
