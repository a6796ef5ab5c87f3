"""Fit the simulator's step-time model to a bench run's measured engine steps (pure).

Target: the linear predictor ``t = a kv + b max(batched - m, 0) + c`` (SpecDecode-Bench's form with the roofline's
knee m, :mod:`specwise.perfmodel.calibrated`), non-negative least squares weighted by steps per point, over the
steps of the configurations without speculation (or, when the run has none, the n-gram / suffix ones). Each
speculative configuration then gets one factor fitted by least squares on what the target law leaves unexplained, in
the shape the simulator charges its proposer (:mod:`specwise.perfmodel.drafting`):

* draft model: residual = s * (catch-up pass over AL tokens + (k - 1) single-token passes + its prefill of the
  prompts prefilled in the step), the draft modelled as the target's law scaled by s;
* lookup (n-gram / suffix): residual = f * verification time (SpecDecode-Bench measured f = 0.59% on GPUs; on the
  CPU build the per-step speculation overhead -- proposer, rejection sampler, extra logits -- lands here).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from specwise.calibration.steps import MeasuredStep, decode_steps, query_per_seq, request_steps
from specwise.errors import SpecwiseError
from specwise.loadgen.records import RequestRecord
from specwise.methods import LOOKUP_METHODS
from specwise.perfmodel.calibrated import CalibratedPredictor, fit_linear_predictor


@dataclass(frozen=True)
class LevelRun:
    level: int
    rate_per_s: float | None
    records: tuple[RequestRecord, ...]
    drafts: float | None  # spec-decode counter deltas over the level (None without speculation)
    draft_tokens: float | None
    per_position: tuple[float, ...]
    measured_tpot_p50_s: float | None


@dataclass(frozen=True)
class ConfigRun:
    name: str
    method: str | None  # None: no speculation
    k: int
    levels: tuple[LevelRun, ...]

    @property
    def draft_model(self) -> bool:
        return self.method is not None and self.method not in LOOKUP_METHODS


@dataclass(frozen=True)
class Calibration:
    target: CalibratedPredictor
    draft_scale: dict[str, float]  # per speculative config: draft-model scale s, or lookup overhead fraction f
    points: tuple[MeasuredStep, ...]
    fit_points: int
    base_configs: tuple[str, ...] = ()

    def relative_rms_error(self) -> float:
        """The law's step-time error relative to the run's mean step: RMS of (predicted - measured) seconds over the
        mean measured step, both weighted by the steps each point averages (as the fit is) -- CV(RMSE) over the
        points the target was fitted on.

        Not the RMS of per-point ratios: a point can average one client-observed gap of microseconds (two steps'
        chunks read back to back on a busy client), and its ratio alone would make the error thousands of percent
        (CI measured 234,000% that way on the real vLLM CPU server, with the law tracking every other point)."""
        base = [p for p in self.points if p.config in self.base_configs]
        w = np.array([p.samples for p in base], dtype=np.float64)
        if not base or w.sum() <= 0:
            return float("nan")
        measured = np.array([p.time_s for p in base])
        residual = np.array([_predict(self.target, p) for p in base]) - measured
        mean_step_s = float(np.average(measured, weights=w))
        return (
            float(np.sqrt(np.average(np.square(residual), weights=w))) / mean_step_s
            if mean_step_s > 0
            else float("nan")
        )


class NoBaseStepsError(SpecwiseError):
    """No engine step was measured in the configurations the target's law is fitted to."""


KNEES = (0.0, 4.0, 8.0, 16.0, 24.0, 32.0, 48.0, 64.0, 96.0)  # batched tokens; 0 = SpecDecode-Bench's form


def _predict(pred: CalibratedPredictor, p: MeasuredStep) -> float:
    return pred.time_s(p.kv_tokens, p.batched_tokens)


def measured_steps(run: ConfigRun) -> list[MeasuredStep]:
    out = []
    for lv in run.levels:
        q = query_per_seq(lv.draft_tokens, request_steps(lv.records))
        out += decode_steps(lv.records, run.name, lv.level, q, max_tokens_per_step=run.k + 1)
    return out


def _draft_pass_time_s(target: CalibratedPredictor, p: MeasuredStep, k: int, al: float) -> float:
    """Target-predicted seconds of the draft passes of one step (to be scaled by s)."""
    n = p.num_seqs
    context = max(0.0, (p.kv_tokens - p.batched_tokens) / n) if n else 0.0
    catch_up = target.time_s(n * (context + al), n * al)
    single = target.time_s(n * (context + al + 1), n)
    prefill = target.time_s(p.prefill_tokens, p.prefill_tokens)
    return catch_up + max(0, k - 1) * single + (prefill if p.prefill_tokens > 0 else 0.0)


def fit(runs: Sequence[ConfigRun]) -> Calibration:
    per_run = {run.name: measured_steps(run) for run in runs}
    base_runs = [run for run in runs if run.method is None and per_run[run.name]]
    if not base_runs:
        base_runs = [run for run in runs if not run.draft_model and per_run[run.name]]
    base_points = [p for run in base_runs for p in per_run[run.name]]
    if not base_points:
        raise NoBaseStepsError(
            "calibration: no steps from a configuration without a draft model (baseline or n-gram); "
            "include one in the launch file"
        )
    target = fit_linear_predictor(base_points, weights=[p.samples for p in base_points], knees=KNEES)
    scales = {}
    for run in runs:
        if run in base_runs or run.method is None or not per_run[run.name]:
            continue
        num = den = 0.0
        for p in per_run[run.name]:
            lv = next(lv for lv in run.levels if lv.level == p.level)
            al = 1.0 + (sum(lv.per_position) if lv.per_position else 0.0)
            d = _draft_pass_time_s(target, p, run.k, al) if run.draft_model else _predict(target, p)
            num += p.samples * (p.time_s - _predict(target, p)) * d
            den += p.samples * d * d
        scales[run.name] = max(0.0, num / den) if den > 0 else 0.0
    points = tuple(p for run in runs for p in per_run[run.name])
    return Calibration(target, scales, points, len(base_points), tuple(run.name for run in base_runs))


def proposer_cost_text(name: str, method: str | None, scale: float) -> str:
    """What a configuration's fitted ``draft_cost_scale`` means, in words (see :func:`fit`)."""
    if method in LOOKUP_METHODS:
        return f"{name} (lookup, no draft pass): speculation overhead per step = {scale:.2f} x the target's verify step"
    return f"{name}: draft pass = {scale:.2f} x target pass"
