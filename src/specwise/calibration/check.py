"""Predicted vs measured speedup per rate: replay each bench level through the simulator with the calibrated
step-time model and the level's measured acceptance (pure; the RNG is seeded by the caller).

Each level is replayed with its own requests: the arrival times the harness scheduled, the prompt tokens the
server counted and the tokens it generated. TPOT p50 is compared, as in the A/B table. For a lookup method
(n-gram) vLLM counts a draft only where the lookup matched; the simulator drafts every step, so the per-position
rates are scaled by the level's drafted fraction of request-steps (a step without a match then counts as one
that accepted nothing -- its verification cost is overstated by k query tokens).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from specwise.acceptance.model import AcceptanceModel
from specwise.calibration.fit import Calibration, ConfigRun, LevelRun
from specwise.calibration.steps import request_steps
from specwise.contracts.calibration import CalibrationRow
from specwise.perfmodel.drafting import DraftCost, ModelDraftCost, NgramDraftCost
from specwise.sim.engine import EngineConfig, SpecConfig, simulate
from specwise.sim.metrics import summarize
from specwise.sim.workload import RequestTable, WorkloadClass
from specwise.stats import ratio
from specwise.traffic import LengthDist


def _requests(lv: LevelRun) -> RequestTable | None:
    ok = sorted((r for r in lv.records if r.ok and r.prompt_tokens and r.output_tokens), key=lambda r: r.scheduled_s)
    if not ok:
        return None
    t0 = ok[0].scheduled_s
    return RequestTable(
        np.array([r.scheduled_s - t0 for r in ok], dtype=np.float64),
        np.array([r.prompt_tokens for r in ok], dtype=np.int64),
        np.array([r.output_tokens for r in ok], dtype=np.int64),
        np.zeros(len(ok), dtype=np.int64),
    )


def _acceptance(run: ConfigRun, lv: LevelRun) -> AcceptanceModel:
    rates = list(lv.per_position[: run.k]) or [0.0]
    if lv.drafts and not run.draft_model:
        drafted = min(1.0, lv.drafts / max(1, request_steps(lv.records)))
        rates = [r * drafted for r in rates]
    return AcceptanceModel.from_per_position([min(1.0, max(0.0, r)) for r in rates])


def _tpot_p50(run: ConfigRun, lv: LevelRun, cal: Calibration, engine: EngineConfig, seed: int) -> float | None:
    table = _requests(lv)
    if table is None:
        return None
    spec = None
    if run.method is not None:
        scale = cal.draft_scale.get(run.name)
        cost: DraftCost
        if run.draft_model:
            cost = ModelDraftCost(cal.target.scaled(scale or 0.0))
        else:  # a lookup: its fitted overhead fraction, or the published one when it was the fitted base
            cost = NgramDraftCost() if scale is None else NgramDraftCost(fraction_of_verify=scale)
        spec = SpecConfig(run.k, cost)
    length = LengthDist("fixed", 1.0)  # lengths come from the replayed table
    cls = WorkloadClass("bench", 1.0, length, length, _acceptance(run, lv))
    res = simulate(table, [cls], engine, cal.target, spec, np.random.default_rng(seed))
    p50 = summarize(res, [cls]).overall.tpot_s.p50
    return None if p50 != p50 else p50  # NaN: no request with two or more tokens


def prediction_rows(
    cal: Calibration, runs: Sequence[ConfigRun], engine: EngineConfig, seed: int = 0
) -> list[CalibrationRow]:
    """One row per (config, level): measured and predicted TPOT p50, and both speedups vs ``runs[0]``."""
    base = runs[0]
    base_measured = {lv.level: lv.measured_tpot_p50_s for lv in base.levels}
    base_predicted = {lv.level: _tpot_p50(base, lv, cal, engine, seed) for lv in base.levels}
    rows = []
    for run in runs:
        for lv in run.levels:
            predicted = base_predicted[lv.level] if run is base else _tpot_p50(run, lv, cal, engine, seed)
            m_speedup = ratio(base_measured.get(lv.level), lv.measured_tpot_p50_s)
            p_speedup = ratio(base_predicted.get(lv.level), predicted)
            rows.append(
                CalibrationRow(
                    config=run.name,
                    level=lv.level,
                    rate_per_s=lv.rate_per_s,
                    measured_tpot_p50_s=lv.measured_tpot_p50_s,
                    predicted_tpot_p50_s=predicted,
                    measured_speedup_tpot=m_speedup,
                    predicted_speedup_tpot=p_speedup,
                    speedup_error=None if m_speedup is None or p_speedup is None else p_speedup - m_speedup,
                )
            )
    return rows
