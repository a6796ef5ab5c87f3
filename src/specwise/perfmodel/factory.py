"""The step-time models a deployment is simulated with, built in one place: the target's predictor, what the
method's proposer costs, the engine's own per-step costs, and the name of the predictor that made them with its
validation error (every prediction shown to a user carries both).

Three predictors:

* ``published-fit`` (default): :mod:`specwise.perfmodel.v2` with the engine profile fitted to published vLLM
  measurements (``perfmodel/data/published_fit.json``); its band is the held-back validation error.
* ``calibrated``: the law ``specwise bench --calibrate`` fitted to *your* server (a calibration file); its band is
  that calibration's own replay error.
* ``roofline``: the analytic roofline of earlier versions (max of memory and compute time); kept as a component
  and for comparison -- it predicts no slowdown until the roofline's knee.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast

import numpy as np

from specwise.contracts.calibration import CalibrationDoc
from specwise.contracts.sweep import DEFAULT_BAND, P80_REPLAY_ERROR, P80_SPEEDUP_ERROR, RMS_FIT_ERROR
from specwise.errors import CLI_FLAGS, FieldNames, SpecwiseError
from specwise.methods import Method
from specwise.perfmodel.calibrated import CalibratedPredictor
from specwise.perfmodel.calibration_match import (
    CalibratedRange,
    async_notes,
    calibrated_range,
    check_draft,
    check_identity,
    hardware_notes,
    unknown_range_notes,
    version_notes,
)
from specwise.perfmodel.drafting import DraftCost, ModelDraftCost, NgramDraftCost
from specwise.perfmodel.predictor import StepTimePredictor
from specwise.perfmodel.profiles import LEGACY_OVERHEAD, EngineOverhead, PublishedFit, profile_for, published_fit
from specwise.perfmodel.roofline import RooflinePredictor
from specwise.perfmodel.v2 import StepModelV2
from specwise.specs.gpu import GpuSpec
from specwise.specs.model import ModelSpec
from specwise.specs.quant import Quantization

log = logging.getLogger(__name__)

PredictorKind = Literal["published-fit", "roofline", "calibrated"]
PREDICTORS: tuple[str, ...] = ("published-fit", "roofline", "calibrated")


BAND_STATISTICS: dict[str, str] = {  # what a band's number is, in the words that precede its source
    P80_SPEEDUP_ERROR: "80th percentile error of",
    P80_REPLAY_ERROR: "80th percentile replay error of",
    RMS_FIT_ERROR: "RMS step-time fit error of",  # over the mean step: CV(RMSE), not a percentile
    DEFAULT_BAND: "",  # its source says it is a default
}


def band_basis(statistic: str, source: str) -> str:
    """What a band is, in words: ``RMS step-time fit error of the calibrated run ...``."""
    words = BAND_STATISTICS.get(statistic, "error of")
    return f"{words} {source}" if words else source


def band_text(band: float, statistic: str, source: str) -> str:
    """A band and what it is, in one phrase: ``+-7% (RMS step-time fit error of the calibrated run ...)``."""
    return f"+-{band:.0%} ({band_basis(statistic, source)})"


@dataclass(frozen=True)
class ServingModels:
    target: StepTimePredictor
    draft_cost: DraftCost
    predictor: str  # which model made the step times, e.g. "published-fit (vllm-v1)"
    overhead: EngineOverhead = LEGACY_OVERHEAD
    chunked_prefill_with_spec: bool = True
    batch_expansion_scorer: bool = False
    band: float = 0.0  # relative error of a predicted speedup: which statistic, ``band_statistic`` says
    band_source: str = ""
    band_statistic: str = P80_SPEEDUP_ERROR  # one of BAND_STATISTICS
    notes: tuple[str, ...] = ()  # what every result of these models must say (a calibration from other hardware)
    # why the side of 1 a speedup falls on is itself unreliable here (held-back record; direction_notes), or ""
    direction_caveat: str = ""
    calibrated_range: CalibratedRange | None = None  # the steps a calibration measured: prices beyond them say so


@dataclass(frozen=True)
class PredictorChoice:
    """Which predictor a scenario is simulated with (a flag or the scenario's ``[deployment]`` keys)."""

    kind: PredictorKind = "published-fit"
    calibration: CalibrationDoc | None = None
    calibration_path: Path | None = None
    engine: str = "vllm"
    engine_version: str | None = None


@dataclass(frozen=True)
class Deployed:
    """The models as deployed: what a predictor prices."""

    target: ModelSpec
    gpu: GpuSpec
    tp: int
    method: Method
    draft: ModelSpec | None
    draft_tp: int
    quantization: Quantization | None = None
    draft_quantization: Quantization | None = None
    kv_dtype: str | None = None


def predictor_choice(
    predictor: str | None, calibration: Path | None, names: FieldNames = CLI_FLAGS
) -> PredictorChoice | None:
    """``--predictor`` / ``--calibration`` (or the API's ``predictor`` / ``calibration``, named by ``names``): the
    step-time model that replaces the scenario's own (None: no override); reads the calibration file."""
    if predictor is not None and predictor not in PREDICTORS:
        raise SpecwiseError(f"{names.name('predictor')}: {predictor!r} is not one of {', '.join(PREDICTORS)}")
    calibrated = names.setting("predictor", "calibrated")
    if calibration is not None:
        if predictor not in (None, "calibrated"):
            raise SpecwiseError(
                f"{names.name('calibration')} needs {calibrated} (or no {names.name('predictor')}), got {predictor}"
            )
        try:
            doc = CalibrationDoc.read(calibration)
        except SpecwiseError as exc:  # its advice ends "then pass --calibration cal.json": the caller's name for it
            said = names.setting("calibration", "cal.json")
            if said == "--calibration cal.json" or "--calibration cal.json" not in str(exc):
                raise
            raise type(exc)(str(exc).replace("--calibration cal.json", said)) from None
        return PredictorChoice("calibrated", doc, calibration)
    if predictor == "calibrated":
        raise SpecwiseError(
            f"{calibrated} needs {names.name('calibration')} FILE "
            "(from specwise bench --calibrate or specwise calibrate)"
        )
    return PredictorChoice(cast(PredictorKind, predictor)) if predictor else None  # checked: one of PREDICTORS


def roofline_models(
    target: ModelSpec,
    gpu: GpuSpec,
    tp: int,
    method: Method,
    draft: ModelSpec | None,
    draft_tp: int,
    *,
    quantization: Quantization | None = None,
    draft_quantization: Quantization | None = None,
    kv_dtype: str | None = None,
) -> ServingModels:
    """The analytic roofline for the target and, for a method with weights, for its draft, with the weights'
    quantization and the KV cache's dtype as deployed (review s46a: an FP8 deployment was priced as BF16)."""
    draft_predictor = (
        RooflinePredictor(draft, gpu, tp=draft_tp, quantization=draft_quantization, kv_dtype=kv_dtype)
        if draft is not None
        else None
    )
    fit = published_fit()
    where = _on_which_gpus(fit, "vllm", gpu.segment, roofline=True)
    return ServingModels(
        RooflinePredictor(target, gpu, tp=tp, quantization=quantization, kv_dtype=kv_dtype),
        method.draft_cost(draft_predictor),
        "roofline",
        band=fit.band("vllm", gpu.segment, roofline=True),
        band_source=(
            f"roofline replay of the held-back vLLM measurements{where} (specwise validate --predictor roofline)"
        ),
        **_direction(fit, "vllm", gpu.segment, "roofline", roofline=True),
    )


def fitted_models(d: Deployed, engine: str = "vllm", engine_version: str | None = None) -> ServingModels:
    """Step-time model v2 with the engine profile fitted to published measurements."""
    profile = profile_for(engine, engine_version, d.method.name)

    def model(spec: ModelSpec, tp: int, quant: Quantization | None) -> StepModelV2:
        return StepModelV2(spec, d.gpu, profile.gpu, tp=tp, quantization=quant, kv_dtype=d.kv_dtype)

    draft = model(d.draft, d.draft_tp, d.draft_quantization) if d.draft is not None else None
    fit = published_fit()
    return ServingModels(
        model(d.target, d.tp, d.quantization),
        d.method.draft_cost(draft),
        f"published-fit ({profile.name})",
        overhead=profile.overhead,
        chunked_prefill_with_spec=profile.chunked_prefill_with_spec,
        batch_expansion_scorer=profile.batch_expansion_scorer,
        band=fit.band(engine, d.gpu.segment),
        band_source=_band_source(fit, engine, d.gpu.name, d.gpu.segment),
        **_direction(fit, engine, d.gpu.segment, "the published fit"),
    )


def calibrated_models(
    d: Deployed, cal: CalibrationDoc, path: Path | None, engine: str = "vllm", engine_version: str | None = None
) -> ServingModels:
    """The law fitted to a real server by ``specwise bench --calibrate``, with the proposer's fitted cost;
    ``engine_version`` the deployment's (None: the current one), said beside the results when the calibrated server
    ran another (:func:`~specwise.perfmodel.calibration_match.version_notes`)."""
    law = cal.law
    target = CalibratedPredictor(
        law.per_kv_token_s, law.per_batched_token_s, law.constant_s, free_batched_tokens=law.free_batched_tokens
    )
    name = str(path) if path else cal.run_id
    check_identity(cal, name, engine, d.target)
    match = cal.config_for(d.method.name, d.draft.name if d.draft is not None else None)
    missing = missing_proposer_cost(cal, name, d.method, d.draft.name if d.draft is not None else None)
    if missing is not None:
        raise SpecwiseError(missing)
    if match is not None and d.method.has_weights:
        check_draft(cal, name, match, d.draft)
    cost: DraftCost
    if d.method.is_lookup:
        cost = NgramDraftCost(cal.draft_cost_scale[match.name]) if match else NgramDraftCost()
    else:
        scale = cal.draft_cost_scale.get(match.name, 0.0) if match else 0.0
        cost = ModelDraftCost(target.scaled(scale))
    return ServingModels(
        target,
        cost,
        f"calibrated: {name}",
        overhead=EngineOverhead(base_s=0.0, rejection_fraction=LEGACY_OVERHEAD.rejection_fraction),
        band=cal.speedup_band(),
        band_source=cal.band_source(),
        band_statistic=cal.band_statistic(),
        notes=(
            *hardware_notes(cal, name, d.gpu, d.tp),
            *version_notes(cal, name, engine, engine_version, d.method.name),
            *async_notes(cal, name, engine, engine_version, d.method.name),
            *unknown_range_notes(cal, name),
        ),
        calibrated_range=calibrated_range(cal, name),
    )


def missing_proposer_cost(cal: CalibrationDoc, name: str, method: Method, draft: str | None) -> str | None:
    """Why ``cal`` cannot price ``method`` (None: it can): no configuration of the calibrated run proposed like it,
    so its proposer's cost was never measured. A file from an older specwise records no configurations at all."""
    if method.name == "none" or cal.config_for(method.name, draft) is not None:
        return None
    if not cal.configs and cal.draft_cost_scale:
        return (
            f"calibration {name} was written by an older specwise: it records no configurations, so no proposer cost "
            f"can be matched to method {method.name}; redo it: specwise bench --calibrate-run RUN_ID (a launch run in "
            "--db), or specwise calibrate on vllm bench serve --save-detailed files"
        )
    configs = ", ".join(f"{c.name} ({c.method or 'no speculation'})" for c in cal.configs) or "none recorded"
    return (
        f"calibration {name}: no speculative configuration with method {method.name} has a calibrated "
        f"proposer cost (its configurations: {configs}); bench that method with specwise bench --launch "
        "--calibrate, or give vllm bench serve files of it to specwise calibrate"
    )


def calibration_gap(choice: PredictorChoice, method: Method, draft: str | None) -> str | None:
    """With the calibrated predictor: why ``method`` cannot be priced (:func:`missing_proposer_cost`), else None."""
    if choice.kind != "calibrated" or choice.calibration is None:
        return None
    name = str(choice.calibration_path) if choice.calibration_path else choice.calibration.run_id
    return missing_proposer_cost(choice.calibration, name, method, draft)


def serving_models(choice: PredictorChoice, d: Deployed) -> ServingModels:
    if choice.kind == "roofline":
        models = roofline_models(
            d.target,
            d.gpu,
            d.tp,
            d.method,
            d.draft,
            d.draft_tp,
            quantization=d.quantization,
            draft_quantization=d.draft_quantization,
            kv_dtype=d.kv_dtype,
        )
    elif choice.kind == "calibrated":
        if choice.calibration is None:
            raise SpecwiseError("the calibrated predictor needs a calibration file (--calibration FILE)")
        models = calibrated_models(d, choice.calibration, choice.calibration_path, choice.engine, choice.engine_version)
    else:
        models = fitted_models(d, choice.engine, choice.engine_version)
    log.debug(
        "%s on %d x %s, %s%s: predictor %s, band +-%.0f%% (%s)",
        d.target.name,
        d.tp,
        d.gpu.name,
        d.method.name,
        f" with {d.draft.name}" if d.draft is not None else "",
        models.predictor,
        models.band * 100,
        band_basis(models.band_statistic, models.band_source),
    )
    return models


def relative_band(predicted: np.ndarray, measured: np.ndarray) -> float:
    """The 80th percentile of |predicted / measured - 1|."""
    return float(np.percentile(np.abs(predicted / measured - 1.0), 80)) if predicted.size else 0.25


UNSAID_SEGMENT = "the GPU file does not say its segment, datacenter or consumer"
MIN_DIRECTION_AGREEMENT = 0.8  # held-back records predicted on the measured side of plain decoding, at least
MIN_SLOWDOWNS_CAUGHT = 0.5  # of the measured slowdowns predicted below 1, at least (where there are 5 or more)


def _direction(
    fit: PublishedFit, engine: str, segment: str | None, who: str, *, roofline: bool = False
) -> dict[str, Any]:
    """:class:`ServingModels`' ``notes`` and ``direction_caveat`` from :func:`direction_notes`."""
    notes = direction_notes(fit, engine, segment, who, roofline=roofline)
    return {"notes": notes, "direction_caveat": notes[0] if notes else ""}


def direction_poor(sign: float | None, caught: int, slowdowns: int) -> bool:
    """Whether held-back records with this direction record (share of speedups predicted on the measured side of
    1, measured slowdowns predicted below 1, measured slowdowns) call for :func:`direction_notes`' caveat: the side
    of 1 right less than :data:`MIN_DIRECTION_AGREEMENT` of the time, or, among 5 or more slowdowns, fewer than
    :data:`MIN_SLOWDOWNS_CAUGHT` of them predicted below 1."""
    poor_sign = sign is not None and sign < MIN_DIRECTION_AGREEMENT
    return poor_sign or (slowdowns >= 5 and caught < MIN_SLOWDOWNS_CAUGHT * slowdowns)


def direction_notes(
    fit: PublishedFit, engine: str, segment: str | None, who: str, *, roofline: bool = False
) -> tuple[str, ...]:
    """A note for every result where the predictor's held-back record says it often gets the *direction* wrong
    (faster or slower than plain decoding) -- which a band of relative error does not say: SGLang's published-fit
    band was +-39% when this was written, yet it called the side of 1 right in 44% of SGLang's held-back records and
    5 of their 14 slowdowns (a first-hour review found an SGLang scenario told "enable" with nothing but the band;
    ``specwise validate`` prints today's figures)."""
    sign, caught, slowdowns = fit.direction(engine, segment, roofline=roofline)
    if not direction_poor(sign, caught, slowdowns):
        return ()
    said = f"on the held-back {engine} measurements{_on_which_gpus(fit, engine, segment, roofline=roofline)} {who}"
    said += f" put {sign:.0%} of its speedups on the measured side of 1" if sign is not None else ""
    said += (" and" if sign is not None else "") + f" predicted {caught} of {slowdowns} measured slowdowns below 1"
    return (said + ": whether speculation pays here is a guess until measured (specwise bench)",)


def _on_which_gpus(fit: PublishedFit, engine: str, segment: str | None, *, roofline: bool = False) -> str:
    """The held-back measurements' GPUs as a band's source names them: `` on data-centre GPUs`` (or consumer) where
    the band is that segment's own, `` on every kind of GPU (...)`` for a GPU file without a segment, else empty."""
    on = fit.band_segment(engine, segment, roofline=roofline)
    if on is not None:
        return f" on {'data-centre' if on == 'datacenter' else on} GPUs"
    return f" on every kind of GPU ({UNSAID_SEGMENT})" if segment is None else ""


def _band_source(fit: PublishedFit, engine: str, gpu: str, segment: str | None = None) -> str:
    """Where the band comes from (on which segment's GPUs, where it is one segment's), and whether any of those
    measurements ran on this GPU."""
    text = f"the published fit's {fit.band_records(engine, segment)} held-back {engine} measurements"
    text += _on_which_gpus(fit, engine, segment)
    gpus = fit.band_gpus(engine, segment)
    if gpus and gpu not in gpus:
        text += f", none of them on {gpu} (they ran on {', '.join(gpus)}): the error there is not measured"
    return text + "; specwise validate lists them"
