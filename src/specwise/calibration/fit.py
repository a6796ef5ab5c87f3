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

Both are fitted twice (:func:`fit`): first to each shape class's median step, then to the class means of the step
timings that first fit does not find stalled (``STALL_FACTOR``), so an engine stall of seconds does not become
part of the law.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from specwise.calibration.steps import (
    MeasuredStep,
    StepTiming,
    class_points,
    query_per_seq,
    request_steps,
    step_timings,
)
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
    concurrency: int | None = None  # the level's cap on requests in flight (None: none, or not a concurrency level)


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
    outlier_steps: int = 0  # step timings left out (the points' outliers and the classes left with none)

    def relative_rms_error(self) -> float:
        """The law's step-time error relative to the run's mean step: RMS of (predicted - measured) seconds over the
        mean measured step, both weighted by the steps each point averages (as the fit is) -- CV(RMSE) over the
        points the target was fitted on.

        Not the RMS of per-point ratios: a point can average a single short step, and its ratio alone can make the
        error thousands of percent (CI measured 234,000% that way on the real vLLM CPU server, from a gap of
        microseconds -- two steps' chunks read back to back, which :func:`~specwise.calibration.steps.step_intervals`
        now joins -- with the law tracking every other point)."""
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
# A step timing over its price (a first, median-based fit's time for its shape) by more than STALL_FACTOR - 1 times
# the smaller of that price and its level's median step is no step of the law (:func:`_excess`): an engine stall
# (every running request waits; on a loaded 2-core CI machine one stall of seconds among ~370 steps of ~0.1 s made
# the law's fit error 113% of the mean step), or a step that also ran a chunk of a prompt not yet answered. For a
# decode step that is 4x its price; on the CPU build a clean run's decode steps stay within 2.4x of their class's
# median (three runs of the slow tier's SmolLM2 bench), and those runs leave out 0-2 of ~600 timings.
STALL_FACTOR = 4.0

Shape = MeasuredStep | StepTiming


def _predict(pred: CalibratedPredictor, p: Shape) -> float:
    return pred.time_s(p.kv_tokens, p.batched_tokens)


def _level_timings(run: ConfigRun) -> dict[int, list[StepTiming]]:
    out = {}
    for lv in run.levels:
        q = query_per_seq(lv.draft_tokens, request_steps(lv.records))
        out[lv.level] = step_timings(lv.records, q, max_tokens_per_step=run.k + 1)
    return out


def _al(run: ConfigRun, level: int) -> float:
    lv = next(lv for lv in run.levels if lv.level == level)
    return 1.0 + (sum(lv.per_position) if lv.per_position else 0.0)


def _draft_pass_time_s(target: CalibratedPredictor, p: Shape, k: int, al: float) -> float:
    """Target-predicted seconds of the draft passes of one step (to be scaled by s)."""
    n = p.num_seqs
    context = max(0.0, (p.kv_tokens - p.batched_tokens) / n) if n else 0.0
    catch_up = target.time_s(n * (context + al), n * al)
    single = target.time_s(n * (context + al + 1), n)
    prefill = target.time_s(p.prefill_tokens, p.prefill_tokens)
    return catch_up + max(0, k - 1) * single + (prefill if p.prefill_tokens > 0 else 0.0)


def _proposer_s(target: CalibratedPredictor, run: ConfigRun, p: Shape, level: int) -> float:
    """What the fitted scale multiplies for ``run`` at ``level``: its draft passes, or (a lookup) the verify step."""
    return _draft_pass_time_s(target, p, run.k, _al(run, level)) if run.draft_model else _predict(target, p)


def _fit_points(runs: Sequence[ConfigRun], per_run: dict[str, list[MeasuredStep]], emptied: int = 0) -> Calibration:
    """The target's law on the base configurations' points, then each speculative configuration's scale."""
    base_runs = [run for run in runs if run.method is None and per_run[run.name]]
    if not base_runs:
        base_runs = [run for run in runs if not run.draft_model and per_run[run.name]]
    base_points = [p for run in base_runs for p in per_run[run.name]]
    if not base_points:
        raise NoBaseStepsError(
            "calibration: no steps from a configuration without a draft model (baseline or n-gram); "
            "include one in the launch file"
        )
    try:
        target = fit_linear_predictor(base_points, weights=[p.samples for p in base_points], knees=KNEES)
    except SpecwiseError as exc:  # too few, or too alike, steps to separate the law's terms (review s47d F1)
        batches = sorted({p.num_seqs for p in base_points})
        raise SpecwiseError(
            f"{exc}: the steps of {', '.join(run.name for run in base_runs)} ran {len(base_points)} distinct "
            f"step shape(s) at batch sizes {', '.join(map(str, batches))}; the law needs steps that vary in batch "
            "size and KV tokens: run the baseline at loads where requests overlap (higher --request-rate or "
            "--max-concurrency, more than one level), not one request at a time"
        ) from None
    scales = {}
    for run in runs:
        if run in base_runs or run.method is None or not per_run[run.name]:
            continue
        num = den = 0.0
        for p in per_run[run.name]:
            d = _proposer_s(target, run, p, p.level)
            num += p.samples * (p.time_s - _predict(target, p)) * d
            den += p.samples * d * d
        scales[run.name] = max(0.0, num / den) if den > 0 else 0.0
    points = tuple(p for run in runs for p in per_run[run.name])
    outliers = emptied + sum(p.outliers for p in points)
    return Calibration(target, scales, points, len(base_points), tuple(run.name for run in base_runs), outliers)


MAX_STALLED_CLASSES = 8  # classes the first fit may set aside, one at a time

Typical = dict[tuple[str, int], float]  # (config, level) -> its median step timing, seconds


def _excess(cal: Calibration, run: ConfigRun, p: Shape, level: int, typical: Typical) -> float:
    """How far a step's time is over what ``cal`` predicts for its shape (its configuration's proposer included), in
    units of the smaller of that prediction and the level's median step: an engine stall adds seconds whatever the
    step, so a long prefill step is judged by the typical step, not by its own length."""
    scale = cal.draft_scale.get(run.name, 0.0)
    predicted = _predict(cal.target, p)
    if scale:  # a base configuration has no proposer to price
        predicted += scale * _proposer_s(cal.target, run, p, level)
    unit = min(predicted, typical.get((run.name, level), predicted))
    return (p.time_s - predicted) / unit if unit > 0 else 0.0


def _stalled(excess: float) -> bool:
    return excess > STALL_FACTOR - 1.0


def _robust_fit(runs: Sequence[ConfigRun], per_run: dict[str, list[MeasuredStep]], typical: Typical) -> Calibration:
    """:func:`_fit_points`, setting aside one at a time the class whose step the others' fit finds stalled: a stalled
    engine step at a rare batch size is a class of its own, and its median is the stall, which a plain fit partly
    absorbs (a 3-s stall among 0.1-s steps was predicted at 1.5 s)."""
    by_name = {run.name: run for run in runs}
    fitted = _fit_points(runs, per_run)

    def excess(cal: Calibration, p: MeasuredStep) -> float:
        return _excess(cal, by_name[p.config], p, p.level, typical)

    for _ in range(MAX_STALLED_CLASSES):
        worst = max((p for points in per_run.values() for p in points), key=lambda p: excess(fitted, p))
        if excess(fitted, worst) <= 0:
            break
        rest = {name: [p for p in points if p is not worst] for name, points in per_run.items()}
        try:
            without = _fit_points(runs, rest)
        except SpecwiseError:  # too few points left to fit without it
            break
        if not _stalled(excess(without, worst)):
            break
        per_run, fitted = rest, without
    return fitted


def fit(runs: Sequence[ConfigRun]) -> Calibration:
    """The law and scales fitted twice: first to each class's median step (robust to a stall; a class the others'
    fit finds stalled set aside), then to the class means of the timings that fit does not find stalled -- over
    ``STALL_FACTOR - 1`` times the smaller of their prediction and the level's median step above their
    prediction; the others are counted (``outlier_steps``)."""
    timings = {run.name: _level_timings(run) for run in runs}
    typical = {
        (name, level): float(np.median([t.time_s for t in ts]))
        for name, by in timings.items()
        for level, ts in by.items()
        if ts
    }

    def points(keep: Keep, median: bool) -> tuple[dict[str, list[MeasuredStep]], int]:
        per_run: dict[str, list[MeasuredStep]] = {run.name: [] for run in runs}
        emptied = 0
        for run in runs:
            for level, ts in timings[run.name].items():
                got, dropped = class_points(ts, run.name, level, keep(run, level), median)
                per_run[run.name] += got
                emptied += dropped
        return per_run, emptied

    first = _robust_fit(runs, points(lambda run, level: None, median=True)[0], typical)

    def within(run: ConfigRun, level: int) -> Callable[[StepTiming], bool]:
        return lambda t: not _stalled(_excess(first, run, t, level, typical))

    try:
        return _fit_points(runs, *points(within, median=False))
    except SpecwiseError:  # too few classes left to fit (the law, not the steps, is off): keep every timing
        return _fit_points(runs, points(lambda run, level: None, median=False)[0])


Keep = Callable[[ConfigRun, int], Callable[[StepTiming], bool] | None]


def proposer_cost_text(name: str, method: str | None, scale: float) -> str:
    """What a configuration's fitted ``draft_cost_scale`` means, in words (see :func:`fit`)."""
    if method in LOOKUP_METHODS:
        return f"{name} (lookup, no draft pass): speculation overhead per step = {scale:.2f} x the target's verify step"
    return f"{name}: draft pass = {scale:.2f} x target pass"
