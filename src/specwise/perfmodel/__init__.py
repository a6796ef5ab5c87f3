"""Step-time predictors (roofline, calibrated) behind one interface, and draft-method costs (pure)."""

from specwise.perfmodel.batch import BatchShape
from specwise.perfmodel.calibrated import CalibratedPredictor, StepTimePoint, fit_linear_predictor
from specwise.perfmodel.drafting import DraftCost, ModelDraftCost, NgramDraftCost
from specwise.perfmodel.predictor import StepTimePredictor
from specwise.perfmodel.roofline import Efficiency, RooflinePredictor

__all__ = [
    "BatchShape",
    "CalibratedPredictor",
    "DraftCost",
    "Efficiency",
    "ModelDraftCost",
    "NgramDraftCost",
    "RooflinePredictor",
    "StepTimePoint",
    "StepTimePredictor",
    "fit_linear_predictor",
]
