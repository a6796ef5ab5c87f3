"""How many draft tokens a verification accepts, sampled per sequence: the drafting shape's one seam.

A *chain* (vLLM's default: k tokens on one path) verifies ``1 + k`` query tokens per sequence and accepts a
prefix: position i is accepted with its conditional rate c_i only if positions 1..i-1 were
(:mod:`specwise.acceptance.model`). A tree (several paths verified together, EAGLE-2/3's dynamic trees) would
verify more query tokens and accept the best path; it plugs in here as another :class:`DraftShape`, and the
engine loop, scheduler and step cost ask this object how many tokens a sequence feeds and how many it keeps.

Every draw comes from the ``rng`` passed in, in a fixed order, so a seed fixes the trace.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from specwise.sim.workload import WorkloadClass
from specwise.traffic import FloatArray, IntArray


@dataclass(frozen=True)
class Draw:
    """Accepted tokens per sequence, and the accepted-position mask (``sequences x k``) for the per-position
    counters (vLLM's ``num_accepted_tokens_per_pos``)."""

    accepted: IntArray
    mask: IntArray


class DraftShape(Protocol):
    def query_tokens(self, k: IntArray) -> IntArray:
        """Tokens each decoding sequence feeds the target in a verification with ``k[i]`` draft tokens."""
        ...

    def draw(self, rng: np.random.Generator, classes: IntArray, k: int, owed: IntArray) -> Draw:
        """One step: what each sequence (of workload class ``classes[i]``, ``owed[i]`` draft tokens allowed)
        accepts."""
        ...

    def draw_steps(self, rng: np.random.Generator, classes: IntArray, k: int, steps: int) -> Draw:
        """``steps`` consecutive steps of the same sequences, none capped: arrays get a leading steps axis."""
        ...


class ChainDrafting:
    """k draft tokens on one path; position i accepted with probability c_i given 1..i-1 were."""

    def __init__(self, classes: Sequence[WorkloadClass], max_k: int) -> None:
        width = max(1, max_k)
        self.conditional: FloatArray = np.array(
            [[c.acceptance.conditional_at(i) for i in range(1, width + 1)] for c in classes]
        )

    def query_tokens(self, k: IntArray) -> IntArray:
        return 1 + k

    def draw(self, rng: np.random.Generator, classes: IntArray, k: int, owed: IntArray) -> Draw:
        ok = rng.random((classes.size, k)) < self.conditional[classes, :k]
        ok &= np.arange(k) < owed[:, None]
        mask = np.cumprod(ok, axis=1)
        return Draw(mask.sum(axis=1), mask)

    def draw_steps(self, rng: np.random.Generator, classes: IntArray, k: int, steps: int) -> Draw:
        ok = rng.random((steps, classes.size, k)) < self.conditional[classes, :k][None, :, :]
        mask = np.cumprod(ok, axis=2)
        return Draw(mask.sum(axis=2), mask)
