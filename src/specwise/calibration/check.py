"""Predicted vs measured speedup per rate: replay each bench level through the simulator with the calibrated
step-time model and the level's measured acceptance (pure; the RNG is seeded by the caller).

Each level is replayed with its own requests: the arrival times the harness scheduled, the prompt tokens the
server counted and the tokens it generated. TPOT p50 is compared, as in the A/B table.

A lookup (n-gram, suffix) is replayed as the server ran it. vLLM counts a draft only where the lookup matched
(``vllm/v1/core/sched/scheduler.py``, ``update_from_output``: ``make_spec_decoding_stats`` only for a request with
scheduled draft tokens; ``vllm/v1/spec_decode/metrics.py`` adds one to ``num_drafts`` and to each accepted position's
count per such request). So the level's counters give the share of request-steps that drafted
(``drafts / request-steps``, the simulator's ``proposal_rate``) and the per-position acceptance *of a draft*. The
other steps verify one token, as the fit (:mod:`specwise.calibration.fit`) saw them. The lookup's fitted overhead
is charged on every step with sequences decoding, drafted or not, as it was fitted.

A level of a few requests gives the simulator's acceptance draws few steps to average over, so each level is
replayed ``REPLAY_SEEDS`` times (seeds ``seed .. seed + REPLAY_SEEDS - 1``) and the mean of the TPOT p50s is the
prediction.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from specwise.acceptance.model import AcceptanceModel
from specwise.calibration.fit import Calibration, ConfigRun, LevelRun
from specwise.calibration.steps import request_steps
from specwise.contracts.calibration import CalibrationRow
from specwise.methods import LOOKUP_METHODS
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


def _acceptance(run: ConfigRun, lv: LevelRun) -> tuple[AcceptanceModel, float]:
    """The level's acceptance per draft and the share of request-steps that drafted (1 for a draft model)."""
    rates = [min(1.0, max(0.0, r)) for r in lv.per_position[: run.k]] or [0.0]
    proposal_rate = 1.0
    if lv.drafts is not None and run.method in LOOKUP_METHODS:
        steps = request_steps(lv.records)
        proposal_rate = min(1.0, lv.drafts / steps) if lv.drafts > 0 and steps > 0 else 1.0
        if lv.drafts <= 0:  # the lookup never matched: every step verifies one token, as with no draft
            rates = [0.0]
    return AcceptanceModel.from_per_position(rates), proposal_rate


def _spec(run: ConfigRun, cal: Calibration) -> SpecConfig | None:
    """The run's speculation as the simulator prices it: the draft scaled by its fitted factor, or a lookup's fitted
    overhead fraction (the published one when the lookup was the fitted base); None without speculation."""
    if run.method is None:
        return None
    scale = cal.draft_scale.get(run.name)
    cost: DraftCost
    if run.draft_model:
        cost = ModelDraftCost(cal.target.scaled(scale or 0.0))
    else:
        cost = NgramDraftCost() if scale is None else NgramDraftCost(fraction_of_verify=scale)
    return SpecConfig(run.k, cost)


REPLAY_SEEDS = 8  # replays per level, their TPOT p50s averaged (module docstring)


def _tpot_p50(run: ConfigRun, lv: LevelRun, cal: Calibration, engine: EngineConfig, seed: int) -> float | None:
    """The mean over ``REPLAY_SEEDS`` replays (seeds ``seed`` on) of the level's TPOT p50, the requests, acceptance
    and speculation set up once (None: no request with two or more tokens)."""
    table = _requests(lv)
    if table is None:
        return None
    spec = _spec(run, cal)
    length = LengthDist("fixed", 1.0)  # lengths come from the replayed table
    acceptance, proposal_rate = _acceptance(run, lv)
    cls = WorkloadClass("bench", 1.0, length, length, acceptance, proposal_rate=proposal_rate)
    known = []
    for i in range(REPLAY_SEEDS):
        res = simulate(table, [cls], engine, cal.target, spec, np.random.default_rng(seed + i))
        p50 = summarize(res, [cls]).overall.tpot_s.p50
        if p50 == p50:  # NaN: no request with two or more tokens
            known.append(p50)
    return sum(known) / len(known) if known else None


def prediction_rows(
    cal: Calibration, runs: Sequence[ConfigRun], engine: EngineConfig | Mapping[str, EngineConfig], seed: int = 0
) -> list[CalibrationRow]:
    """One row per (config, level): measured and predicted TPOT p50, and both speedups vs ``runs[0]``; each run
    replayed on ``engine``, or on its own (``{run name: engine}``: a launch file's configs may set their own batch
    limits)."""

    def on(run: ConfigRun) -> EngineConfig:
        return engine[run.name] if isinstance(engine, Mapping) else engine

    base = runs[0]
    base_measured = {lv.level: lv.measured_tpot_p50_s for lv in base.levels}
    base_predicted = {lv.level: _tpot_p50(base, lv, cal, on(base), seed) for lv in base.levels}
    rows = []
    for run in runs:
        for lv in run.levels:
            predicted = base_predicted[lv.level] if run is base else _tpot_p50(run, lv, cal, on(run), seed)
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
                    concurrency=lv.concurrency,
                )
            )
    return rows
