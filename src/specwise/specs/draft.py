"""``DraftChoice``: what proposes the draft tokens (a model, a head, MTP layers, or n-gram lookup)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from specwise.errors import SpecwiseError
from specwise.methods import LOOKUP_METHODS
from specwise.specs.model import ModelSpec

DraftKind = Literal["model", "ngram", "suffix", "mtp"]


@dataclass(frozen=True)
class DraftChoice:
    """What proposes draft tokens: a model (draft LM, EAGLE head, MTP layers) or a model-free method."""

    kind: DraftKind
    spec: ModelSpec | None = None

    def __post_init__(self) -> None:
        if self.kind in ("model", "mtp") and self.spec is None:
            raise SpecwiseError(f"draft kind {self.kind!r} needs a model spec")
        if self.kind in LOOKUP_METHODS and self.spec is not None:
            raise SpecwiseError(f"draft kind {self.kind!r} has no model")

    @property
    def label(self) -> str:
        if self.kind == "model" and self.spec is not None:
            return self.spec.name
        return self.kind
