"""QPS x k sweeps and the decisions drawn from them: best k per QPS, the crossover QPS."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from specwise.perfmodel.drafting import DraftCost, ModelDraftCost, NgramDraftCost
from specwise.perfmodel.roofline import RooflinePredictor
from specwise.scenario.model import Scenario
from specwise.sim.engine import EngineConfig, SpecConfig, simulate
from specwise.sim.metrics import SimSummary, summarize
from specwise.sim.workload import generate_requests
from specwise.stats import ratio


@dataclass(frozen=True)
class Cell:
    qps: float
    k: int | None  # None: the k-by-batch-size schedule
    summary: SimSummary


def build_models(sc: Scenario) -> tuple[RooflinePredictor, DraftCost]:
    target = RooflinePredictor(sc.target, sc.gpu, tp=sc.tp)
    if sc.draft is None:
        return target, NgramDraftCost()
    return target, ModelDraftCost(RooflinePredictor(sc.draft, sc.gpu, tp=sc.draft_tp))


def run_cell(sc: Scenario, qps: float, k: int | None) -> Cell:
    """One simulation. The same seed gives the same requests for every k (common random numbers)."""
    qps_index = sc.sweep.qps.index(qps) if qps in sc.sweep.qps else 0
    rng = np.random.default_rng([sc.sweep.seed, qps_index])
    requests = generate_requests(sc.classes, sc.sweep.arrivals.with_rate(qps), sc.sweep.num_requests, rng)
    target, draft_cost = build_models(sc)
    speculating = k is None or k > 0
    engine = EngineConfig(
        kv_capacity_tokens=sc.kv_cache_tokens if speculating else sc.kv_cache_tokens_without_draft,
        max_num_seqs=sc.max_num_seqs,
        max_num_batched_tokens=sc.max_num_batched_tokens,
    )
    spec = None
    if k is None:
        spec = SpecConfig(k=0, draft_cost=draft_cost, schedule=sc.k_schedule)
    elif k > 0:
        spec = SpecConfig(k=k, draft_cost=draft_cost)
    result = simulate(requests, sc.classes, engine, target, spec, np.random.default_rng([sc.sweep.seed, qps_index, 1]))
    return Cell(qps, k, summarize(result, sc.classes, sc.sweep.warmup_fraction))


def _run_cell_args(args: tuple[Scenario, float, int | None]) -> Cell:
    return run_cell(*args)


def run_sweep(
    sc: Scenario, *, processes: int | None = None, progress: Callable[[int, int], None] | None = None
) -> list[Cell]:
    """Every (qps, k) cell, plus the schedule per QPS when the scenario has one; in processes."""
    ks: list[int | None] = list(sc.sweep.k_values) + ([None] if sc.k_schedule else [])
    jobs = [(sc, q, k) for q in sc.sweep.qps for k in ks]
    workers = processes if processes is not None else min(len(jobs), os.cpu_count() or 1)
    cells: list[Cell] = []
    if workers <= 1:
        for i, job in enumerate(jobs, start=1):
            cells.append(_run_cell_args(job))
            if progress:
                progress(i, len(jobs))
        return cells
    with ProcessPoolExecutor(max_workers=workers) as pool:
        for i, cell in enumerate(pool.map(_run_cell_args, jobs, chunksize=1), start=1):
            cells.append(cell)
            if progress:
                progress(i, len(jobs))
    return cells


# -- decisions ----------------------------------------------------------------------------------
def _row(cell: Cell, base: SimSummary) -> dict[str, Any]:
    o, b = cell.summary.overall, base.overall
    return {
        "qps": cell.qps,
        "k": cell.k if cell.k is not None else "schedule",
        "tpot_p50_s": o.tpot_s.p50,
        "tpot_p90_s": o.tpot_s.p90,
        "tpot_p99_s": o.tpot_s.p99,
        "ttft_p50_s": o.ttft_s.p50,
        "ttft_p99_s": o.ttft_s.p99,
        "itl_p50_s": o.itl_s.p50,
        "e2e_p50_s": o.e2e_s.p50,
        "e2e_p99_s": o.e2e_s.p99,
        "output_tokens_per_s": o.output_tokens_per_s,
        "goodput_per_s": o.goodput_per_s,
        "speedup_tpot": ratio(b.tpot_s.p50, o.tpot_s.p50),
        "speedup_e2e": ratio(b.e2e_s.p50, o.e2e_s.p50),
        "speedup_throughput": ratio(o.output_tokens_per_s, b.output_tokens_per_s),
        "speedup_goodput": ratio(o.goodput_per_s, b.goodput_per_s),
        "acceptance_rate": cell.summary.acceptance_rate,
        "mean_acceptance_length": cell.summary.mean_acceptance_length,
        "preemptions": o.preemptions,
        "latency": o.to_dict(),
        "by_class": {
            name: {**s.to_dict(), "speedup_tpot": ratio(base.by_class[name].tpot_s.p50, s.tpot_s.p50)}
            for name, s in cell.summary.by_class.items()
        },
    }


def crossover(qps: Sequence[float], best_speedup: Sequence[float]) -> float | None:
    """QPS where the best speculative speedup falls through 1, interpolated linearly between grid points;
    None when it never pays or never stops paying."""
    for i in range(1, len(qps)):
        s0, s1 = best_speedup[i - 1], best_speedup[i]
        if s0 >= 1.0 > s1:
            return qps[i - 1] + (qps[i] - qps[i - 1]) * (s0 - 1.0) / (s0 - s1)
    return None


def decide(sc: Scenario, cells: Sequence[Cell]) -> dict[str, Any]:
    """The ``specwise simulate --json`` document. Best k and the crossover are judged on
    ``sc.decision_metric`` (``speedup_<metric>`` of each row)."""
    key = f"speedup_{sc.decision_metric}"
    base = {c.qps: c.summary for c in cells if c.k == 0}
    rows = [_row(c, base[c.qps]) for c in cells if c.k is not None]
    schedule_rows = [_row(c, base[c.qps]) for c in cells if c.k is None]
    best_k: dict[str, int] = {}
    best_speedup: list[float] = []
    for q in sc.sweep.qps:
        spec_rows = [r for r in rows if r["qps"] == q and r["k"] != 0 and r[key] is not None]
        top = max(spec_rows, key=lambda r: r[key], default=None)
        best = float(top[key]) if top else 0.0
        best_speedup.append(best)
        best_k[f"{q:g}"] = int(top["k"]) if top and best > 1.0 else 0
    cross = crossover(sc.sweep.qps, best_speedup)
    return {
        "scenario": sc.name,
        "target": sc.target.name,
        "gpu": sc.gpu.name,
        "tp": sc.tp,
        "method": sc.method,
        "draft": sc.draft.name if sc.draft else None,
        "kv_cache_tokens": sc.kv_cache_tokens,
        "kv_cache_tokens_without_draft": sc.kv_cache_tokens_without_draft,
        "baseline": {
            "by_qps": [
                {
                    "qps": q,
                    "tpot_p50_s": s.overall.tpot_s.p50,
                    "ttft_p50_s": s.overall.ttft_s.p50,
                    "e2e_p50_s": s.overall.e2e_s.p50,
                    "output_tokens_per_s": s.overall.output_tokens_per_s,
                    "goodput_per_s": s.overall.goodput_per_s,
                }
                for q, s in sorted(base.items())
            ]
        },
        "results": rows,
        "schedule_results": schedule_rows,
        "decision_metric": sc.decision_metric,
        "best_k_by_qps": best_k,
        "best_speedup_by_qps": {f"{q:g}": s for q, s in zip(sc.sweep.qps, best_speedup, strict=True)},
        "crossover_qps": cross,
        "never_pays": all(s <= 1.0 for s in best_speedup),
        "warnings": list(sc.warnings),
    }
