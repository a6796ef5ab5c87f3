"""The step-time models a deployment is simulated with, built in one place: the target's predictor and what the
method's proposer costs, with the name of the predictor that made them (shown next to every prediction)."""

from __future__ import annotations

from dataclasses import dataclass

from specwise.methods import Method
from specwise.perfmodel.drafting import DraftCost
from specwise.perfmodel.predictor import StepTimePredictor
from specwise.perfmodel.roofline import RooflinePredictor
from specwise.specs.gpu import GpuSpec
from specwise.specs.model import ModelSpec


@dataclass(frozen=True)
class ServingModels:
    target: StepTimePredictor
    draft_cost: DraftCost
    predictor: str  # which model made the step times, e.g. "roofline"


def roofline_models(
    target: ModelSpec, gpu: GpuSpec, tp: int, method: Method, draft: ModelSpec | None, draft_tp: int
) -> ServingModels:
    """The analytic roofline for the target and, for a method with weights, for its draft."""
    draft_predictor = RooflinePredictor(draft, gpu, tp=draft_tp) if draft is not None else None
    return ServingModels(RooflinePredictor(target, gpu, tp=tp), method.draft_cost(draft_predictor), "roofline")
