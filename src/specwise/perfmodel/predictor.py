"""The one interface every step-time predictor implements (vidur's predictor split)."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from specwise.perfmodel.batch import BatchShape


@runtime_checkable
class StepTimePredictor(Protocol):
    """Seconds for one forward pass of one model over ``batch`` on its GPUs."""

    def step_time_s(self, batch: BatchShape) -> float: ...
