"""Decisions from a sweep: best k per QPS (on the scenario's decision metric), the crossover QPS where
speculation stops paying, each k's capacity and the loads above it, and the typed result
(:class:`~specwise.contracts.sweep.SweepResult`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import fields, replace
from typing import TypeVar

from specwise.contracts.sweep import (
    BaselinePoint,
    ClassLatency,
    PartialSweep,
    RowLatency,
    SweepResult,
    SweepRow,
    fastest,
    speculative_choices,
)
from specwise.perfmodel.calibration_match import StepRange, largest
from specwise.scenario.model import Scenario
from specwise.sim.metrics import SimLatencySummary, SimSummary
from specwise.sim.saturation import overloaded
from specwise.stats import interval_90, ratio
from specwise.study.sweep import CAPACITY_QPS, Cell

L = TypeVar("L", bound=RowLatency)


def _typed(kind: type[L], summary: SimLatencySummary) -> L:
    """The row's typed latency from the simulator's summary, field by field (NaN where no request gave a sample
    stays NaN: the JSON writer makes it null)."""
    return kind(**{f.name: getattr(summary, f.name) for f in fields(kind) if hasattr(summary, f.name)})


def sweep_row(
    cell: Cell, base: SimSummary, capacity: float | None = None, base_capacity: float | None = None
) -> SweepRow:
    """``capacity``: the row's k's (or its schedule's); ``base_capacity``: plain decoding's."""
    o, b = cell.summary.overall, base.overall
    both_keep_up = not overloaded(cell.qps, capacity) and not overloaded(cell.qps, base_capacity)
    return SweepRow(
        qps=cell.qps,
        k=cell.k,
        tpot_p50_s=o.tpot_s.p50,
        tpot_p90_s=o.tpot_s.p90,
        tpot_p99_s=o.tpot_s.p99,
        ttft_p50_s=o.ttft_s.p50,
        ttft_p99_s=o.ttft_s.p99,
        itl_p50_s=o.itl_s.p50,
        e2e_p50_s=o.e2e_s.p50,
        e2e_p99_s=o.e2e_s.p99,
        output_tokens_per_s=o.output_tokens_per_s,
        goodput_per_s=o.goodput_per_s,
        speedup_tpot=ratio(b.tpot_s.p50, o.tpot_s.p50),
        speedup_e2e=ratio(b.e2e_s.p50, o.e2e_s.p50),
        speedup_throughput=_throughput_speedup(o, b, cell.qps, capacity, base_capacity),
        speedup_goodput=_goodput_speedup(o, b, both_keep_up),
        acceptance_rate=cell.summary.acceptance_rate,
        mean_acceptance_length=cell.summary.mean_acceptance_length,
        preemptions=o.preemptions,
        latency=_typed(RowLatency, o),
        by_class={
            name: replace(_typed(ClassLatency, s), speedup_tpot=ratio(base.by_class[name].tpot_s.p50, s.tpot_s.p50))
            for name, s in cell.summary.by_class.items()
        },
        overloaded=overloaded(cell.qps, capacity),
    )


def _throughput_speedup(
    o: SimLatencySummary, b: SimLatencySummary, qps: float, capacity: float | None, base_capacity: float | None
) -> float | None:
    """Output tokens per second with speculation over without, in steady state: each serves the offered load or,
    above its capacity, its capacity -- the same requests (common random numbers), so the ratio is
    min(load, capacity) over min(load, plain decoding's capacity). Where both keep up that is exactly 1 -- the ratio
    of two finite runs' spans is when their last requests happened to end, no speedup (review s46a: best k = 4 at
    1.0011x, and ``never_pays`` false where the text said it breaks even). Above capacity a finite run's span is
    mostly its drain, not its rate (review s60: 1.06x at 12 QPS for a k whose capacity is 0.70x plain decoding's;
    0.79x with 2,000 requests). Only where a capacity is unknown (an interrupted sweep, review s46c) is it the two
    runs' ratio."""
    if capacity is None or base_capacity is None:
        return ratio(o.output_tokens_per_s, b.output_tokens_per_s)
    served = min(qps, base_capacity)
    return min(qps, capacity) / served if served > 0 else None


def _goodput_speedup(o: SimLatencySummary, b: SimLatencySummary, both_keep_up: bool) -> float | None:
    """Goodput with speculation over goodput without. At a load both keep up with, the two runs serve the same
    requests at the same offered rate (common random numbers), so the ratio is of the requests meeting their SLOs --
    exactly 1 where the same number do; the ratio of two finite runs' spans (their last requests end a little apart)
    is no speedup (review s45c: 0.3-3.6% "gains" and a best k of 8 where nothing differed; s45d: at 99% attainment
    too). Where either is overloaded its throughput is capped, and goodput per second is the measure."""
    if both_keep_up and o.slo_attainment is not None and b.slo_attainment is not None:
        return ratio(o.slo_attainment, b.slo_attainment)
    return ratio(o.goodput_per_s, b.goodput_per_s)


def crossover(qps: Sequence[float], best_speedup: Sequence[float], threshold: float = 1.0) -> float | None:
    """QPS where the best speculative speedup falls through ``threshold`` (1: where speculation stops paying),
    interpolated linearly between grid points; None when it never clears it or never stops clearing it."""
    for i in range(1, len(qps)):
        s0, s1 = best_speedup[i - 1], best_speedup[i]
        if s0 >= threshold > s1:
            return qps[i - 1] + (qps[i] - qps[i - 1]) * (s0 - threshold) / (s0 - s1)
    return None


def falls_below(gains: Mapping[float, float], threshold: float, first_failing: float) -> float:
    """The load where ``gains`` (load -> speedup) falls below ``threshold`` on its way to ``first_failing``, the
    first load that misses it: interpolated from the load just below (:func:`crossover`'s rule); ``first_failing``
    itself when there is no load below it or the segment does not cross."""
    below = [q for q in gains if q < first_failing]
    if not below:
        return first_failing
    last = max(below)
    return crossover([last, first_failing], [gains[last], gains[first_failing]], threshold) or first_failing


def _best(
    q: float, rows: Sequence[SweepRow], metric: str, capacity: Mapping[int | None, float], base_overloaded: bool
) -> tuple[int, float, bool]:
    """(best k, its speedup, whether that speedup is a capacity bound) at load ``q``, among the k the deployment can
    choose there (:func:`~specwise.contracts.sweep.speculative_choices`). If no k can be chosen, speculation loses
    there: k = 0, and the speedup is at most the share of the load the best k can serve (capacity / load < 1) --
    an upper bound, not a simulated cell (the third value is then True)."""
    spec_rows, keeping_up = speculative_choices(rows, q, metric, base_overloaded)
    top = fastest(keeping_up, metric)
    if top is None and spec_rows:
        bounded = [min(r.speedup(metric) or 0.0, (capacity.get(r.k) or 0.0) / q) for r in spec_rows]
        return 0, max(bounded), True
    best = float(top.speedup(metric) or 0.0) if top else 0.0
    return (int(top.k or 0) if top and best > 1.0 else 0), best, False


def _range_notes(sc: Scenario, cells: Sequence[Cell]) -> tuple[str, ...]:
    """Where the simulated steps pass what a calibration measured: the largest step of each load over every k, and
    of the capacity runs (:meth:`~specwise.perfmodel.calibration_match.CalibratedRange.sweep_notes`)."""
    cal = sc.models.calibrated_range
    if cal is None:
        return ()
    by_qps: dict[float, list[StepRange]] = {}
    for c in cells:
        s = c.summary
        by_qps.setdefault(c.qps, []).append(StepRange(s.peak_seqs, s.peak_kv_tokens, s.peak_batched_tokens))
    capacity = by_qps.pop(CAPACITY_QPS, None)
    return cal.sweep_notes(
        {q: largest(r) for q, r in by_qps.items()}, largest(capacity) if capacity is not None else None
    )


def _split(
    cells: Sequence[Cell],
) -> tuple[dict[int | None, float], list[Cell], dict[float, SimSummary]]:
    """(each k's capacity: the mean of its saturated runs, one per seed; the cells at a load; k = 0's summary at each
    load)."""
    runs = _capacity_runs(cells)
    capacity = {k: sum(v) / len(v) for k, v in runs.items()}
    loads = [c for c in cells if c.qps != CAPACITY_QPS]
    return capacity, loads, {c.qps: c.summary for c in loads if c.k == 0}


def _capacity_runs(cells: Sequence[Cell]) -> dict[int | None, list[float]]:
    """Each k's saturated runs' capacities, in the cells' order (the sweep's, then advise's replicates of it)."""
    runs: dict[int | None, list[float]] = {}
    for c in cells:
        if c.qps == CAPACITY_QPS and c.capacity_per_s is not None:
            runs.setdefault(c.k, []).append(c.capacity_per_s)
    return runs


def decide(sc: Scenario, cells: Sequence[Cell]) -> SweepResult:
    """Best k and the crossover, judged on ``sc.decision_metric``; each k's capacity the mean of its saturated runs
    (one, or more: advise's ``capacity_replicates``)."""
    repeated = {k: v for k, v in _capacity_runs(cells).items() if k is not None and len(v) > 1}
    runs_by_k = {k: len(v) for k, v in repeated.items()}
    interval_by_k = {k: interval_90(v) for k, v in repeated.items()}
    metric = sc.decision_metric
    range_notes = _range_notes(sc, cells)
    capacity, cells, base = _split(cells)
    rows = tuple(sweep_row(c, base[c.qps], capacity.get(c.k), capacity.get(0)) for c in cells if c.k is not None)
    best_k: dict[float, int] = {}
    best_speedup: dict[float, float] = {}
    bound: list[float] = []
    for q in sc.sweep.qps:
        best_k[q], best_speedup[q], is_bound = _best(q, rows, metric, capacity, overloaded(q, capacity.get(0)))
        if is_bound:
            bound.append(q)
    return SweepResult(
        scenario=sc.name,
        target=sc.target.name,
        gpu=sc.gpu.name,
        tp=sc.tp,
        method=sc.method.name,
        draft=sc.draft.name if sc.draft else None,
        kv_cache_tokens=sc.kv_cache_tokens,
        kv_cache_tokens_without_draft=sc.kv_cache_tokens_without_draft,
        baseline=tuple(
            BaselinePoint(
                qps=q,
                tpot_p50_s=s.overall.tpot_s.p50,
                ttft_p50_s=s.overall.ttft_s.p50,
                e2e_p50_s=s.overall.e2e_s.p50,
                output_tokens_per_s=s.overall.output_tokens_per_s,
                goodput_per_s=s.overall.goodput_per_s,
                overloaded=overloaded(q, capacity.get(0)),
            )
            for q, s in sorted(base.items())
        ),
        results=rows,
        schedule_results=tuple(
            sweep_row(c, base[c.qps], capacity.get(None), capacity.get(0)) for c in cells if c.k is None
        ),
        decision_metric=metric,
        best_k_by_qps=best_k,
        best_speedup_by_qps=best_speedup,
        capacity_bound_qps=tuple(bound),
        crossover_qps=crossover(sc.sweep.qps, [best_speedup[q] for q in sc.sweep.qps]),
        warnings=sc.warnings + range_notes,
        predictor=sc.models.predictor,
        band=sc.models.band,
        band_source=sc.models.band_source,
        band_statistic=sc.models.band_statistic,
        capacity_per_s_by_k={k: v for k, v in sorted(capacity.items(), key=lambda kv: kv[0] or 0) if k is not None},
        schedule_capacity_per_s=capacity.get(None),
        capacity_runs_by_k=runs_by_k,
        capacity_interval_by_k=interval_by_k,
    )


def partial_sweep(sc: Scenario, cells: Sequence[Cell], cells_total: int) -> PartialSweep:
    """What an interrupted :func:`~specwise.study.sweep.run_sweep` finished (``cells``, the prefix it appended):
    each finished cell as a row against k = 0 at its QPS (a cell whose baseline did not finish is left out; the
    sweep's order runs k = 0 first, so none is), and the capacity runs that finished."""
    capacity, loads, base = _split(cells)
    return PartialSweep(
        scenario=sc.name,
        decision_metric=sc.decision_metric,
        cells_done=len(cells),
        cells_total=cells_total,
        results=tuple(sweep_row(c, base[c.qps], capacity.get(c.k), capacity.get(0)) for c in loads if c.qps in base),
        capacity_per_s_by_k=capacity,
        predictor=sc.models.predictor,
        band=sc.models.band,
        band_source=sc.models.band_source,
        band_statistic=sc.models.band_statistic,
    )
