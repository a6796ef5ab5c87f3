"""The k-by-batch-size schedule (vLLM's ``num_speculative_tokens_per_batch_size``) an advice writes: the best k
at each simulated load, switched off (k = 0) at the mean batch sizes where speculation is predicted to lose, and
the schedule simulated back at every load the deployment keeps up with."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace

from specwise.contracts.advice import ScheduleCheck
from specwise.contracts.sweep import SweepResult
from specwise.scenario.model import Scenario
from specwise.sim.saturation import overloaded
from specwise.study.sweep import CAPACITY_QPS, replicate_of, run_cell


def batch_at(sim: SweepResult, qps: float, max_num_seqs: int) -> float:
    """Mean running batch at a load, by Little's law on the baseline: QPS x E2E p50 (capped at max_num_seqs)."""
    b = sim.baseline_at(qps)
    e2e = b.e2e_p50_s if b is not None and b.e2e_p50_s == b.e2e_p50_s else 0.0
    return min(float(max_num_seqs), max(1.0, qps * e2e))


def k_schedule(
    batches: Mapping[float, float],
    best_k: Mapping[float, int],
    best_speedup: Mapping[float, float],
    max_num_seqs: int,
    min_speedup: float = 1.0,
) -> list[tuple[int, int, int]]:
    """Bands [start_bs, end_bs, k] (vLLM's num_speculative_tokens_per_batch_size): the best k at each simulated
    load, band edges half-way between the loads' mean batch sizes, k = 0 wherever the best speedup is below
    ``min_speedup``."""
    points = [(batches[q], best_k[q] if best_speedup[q] >= min_speedup else 0) for q in sorted(batches)]
    bands: list[list[int]] = []
    start = 1
    for i, (b, k) in enumerate(points):
        end = max_num_seqs if i == len(points) - 1 else int((b + points[i + 1][0]) / 2)
        end = max(end, start)
        if bands and bands[-1][2] == k:
            bands[-1][1] = end
        else:
            bands.append([start, end, k])
        start = end + 1
        if start > max_num_seqs:
            break
    if bands[-1][1] < max_num_seqs:
        bands[-1][1] = max_num_seqs
    if any(k == 0 for _, k in points) and not any(band[2] == 0 for band in bands):
        return []  # the losing loads run at the same (saturated) batch size as paying ones: no batch rule helps
    return [(a, b, k) for a, b, k in bands]


def schedule_for(sim: SweepResult, sc: Scenario, min_speedup: float) -> list[tuple[int, int, int]]:
    """The schedule by :func:`k_schedule` over the loads the deployment keeps up with (an overloaded load's batch
    size is its queue's, not a load's): k = 0 where the point estimate misses ``min_speedup`` -- where speculation
    is predicted to lose, not merely where the band is unsure (switching it off there would throw away the gain
    the prediction expects)."""
    served = [q for q in sc.sweep.qps if q not in sim.overloaded_qps]
    batches = {q: batch_at(sim, q, sc.max_num_seqs) for q in served}
    gains = {q: sim.best_speedup_by_qps[q] for q in served}
    return k_schedule(batches, sim.best_k_by_qps, gains, sc.max_num_seqs, min_speedup)


def k_at(schedule: Sequence[tuple[int, int, int]], batch: float) -> int | None:
    """The k the schedule runs at a (mean) batch size; None outside every band."""
    return next((k for a, b, k in schedule if a <= round(batch) <= b), None)


def schedule_words(schedule: Sequence[tuple[int, int, int]]) -> str:
    return ", ".join(f"k={k} at batch {a}-{b}" for a, b, k in schedule)


def schedule_checks(
    sc: Scenario,
    sim: SweepResult,
    schedule: Sequence[tuple[int, int, int]],
    repeat_at: Collection[float] = (),
    replicates: int = 1,
) -> tuple[tuple[ScheduleCheck, ...], float | None]:
    """The schedule simulated at every load of the sweep the deployment keeps up with (its e2e p50 speedup over no
    speculation; above capacity both would be growing queues), and the schedule's own capacity (its saturated run,
    as ``simulate`` gives a scenario's ``k_schedule``). At a load above that capacity the schedule's queue grows
    without bound: its check is the bound capacity / load (:meth:`ScheduleCheck.bound`), not its finite run, which a
    burst shorter than the batch can hold makes look fast (review s60: 1.40x at 10 QPS for a schedule that serves
    9.3 req/s -- k = 0 at large batches does not give back the draft's KV cache). At the loads in ``repeat_at`` the
    speedup is the mean of ``replicates`` paired runs (the sweep's baseline draw and replicates 1 .. ``replicates``
    - 1 of its seed, each the schedule and no speculation on the same requests): advise repeats the loads where the
    schedule must switch a loss off, whose one draw sat at 0.99x (``schedule-llama31-70b-1b`` at 8 QPS) and turned
    the headline with the seed."""
    sched_sc = replace(sc, k_schedule=tuple(schedule))
    capacity = run_cell(sched_sc, CAPACITY_QPS, None).capacity_per_s
    checks = []
    for b in sim.baseline:
        if b.overloaded:
            continue
        if capacity is not None and overloaded(b.qps, capacity):
            checks.append(ScheduleCheck.bound(b.qps, capacity))
            continue
        first = _ratio(b.e2e_p50_s, run_cell(sched_sc, b.qps, None).summary.overall.e2e_s.p50)
        runs = [first]
        if b.qps in repeat_at and first is not None:
            for r in range(1, replicates):
                plain = run_cell(replicate_of(sc, r), b.qps, 0).summary.overall.e2e_s.p50
                value = _ratio(plain, run_cell(replicate_of(sched_sc, r), b.qps, None).summary.overall.e2e_s.p50)
                if value is not None:
                    runs.append(value)
        checks.append(ScheduleCheck.of_runs(b.qps, [v for v in runs if v is not None]))
    return tuple(checks), capacity


def _ratio(plain_s: float, with_s: float) -> float | None:
    """No speculation's e2e p50 over the schedule's (None where the schedule's is 0 or undefined)."""
    return plain_s / with_s if with_s and with_s == with_s else None
