"""How many draft tokens a verification accepts, sampled per sequence: the drafting shape's one seam.

A *chain* (vLLM's default: k tokens on one path) verifies ``1 + k`` query tokens per sequence and accepts a
prefix: position i is accepted with its conditional rate c_i only if positions 1..i-1 were
(:mod:`specwise.acceptance.model`). A tree (several paths verified together, EAGLE-2/3's dynamic trees) would
verify more query tokens and accept the best path; it plugs in here as another :class:`DraftShape`, and the
engine loop, scheduler and step cost ask this object how many tokens a sequence feeds and how many it keeps.

Every draw comes from the ``rng`` passed in, in a fixed order, so a seed fixes the trace.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from specwise.sim.workload import WorkloadClass
from specwise.traffic import FloatArray, IntArray


class Uniforms(Protocol):
    """Where acceptance draws come from: ``numpy.random.Generator`` or :class:`WeylUniforms`."""

    def random(self, size: tuple[int, ...]) -> FloatArray: ...


class WeylUniforms:
    """Low-discrepancy uniforms for replays of published measurements: draw n of column j is
    ``frac(seed + n * alpha_j)`` with alpha_j the fractional parts of square roots of distinct primes (Weyl's
    equidistribution theorem), so the realised acceptance matches its expectation within O(1/n) instead of a
    random walk's O(1/sqrt n) -- a 70-step replay does not carry a 5% sampling error into a validation."""

    PRIMES = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73, 79, 83, 89, 97)

    def __init__(self, seed: float = 0.5, primes: tuple[int, ...] = PRIMES) -> None:
        self.n = 0
        self.seed = seed
        self.alpha = np.array([math.sqrt(p) % 1.0 for p in primes])
        self._proposals: WeylUniforms | None = None

    @property
    def proposals(self) -> WeylUniforms:
        """The stream a lookup's "does it draft this step" draws come from: its own counter and an irrational
        (sqrt 113) independent of the acceptance columns'. Drawn from the acceptance stream, a proposal and the
        next step's first acceptance draw would be ``u`` and ``frac(u + sqrt 2)``: whether a step drafts would
        decide whether it accepts, and a replay's realised acceptance would miss its rates by a wide margin."""
        if self._proposals is None:
            self._proposals = WeylUniforms(self.seed, (113,))
        return self._proposals

    def random(self, size: tuple[int, ...]) -> FloatArray:
        width = size[-1]
        rows = 1
        for d in size[:-1]:
            rows *= d
        if width > self.alpha.size:
            raise ValueError(f"WeylUniforms: at most {self.alpha.size} columns, got {width}")
        n = np.arange(self.n, self.n + rows, dtype=np.float64)[:, None]
        self.n += rows
        out: FloatArray = np.mod(self.seed + n * self.alpha[None, :width], 1.0)
        return out.reshape(size)


def proposal_uniforms(rng: Uniforms) -> Uniforms:
    """Where proposal draws come from: a Weyl replay's own proposal stream; a random generator itself."""
    return rng.proposals if isinstance(rng, WeylUniforms) else rng


@dataclass(frozen=True)
class Draw:
    """Accepted tokens per sequence, and the accepted-position mask (``sequences x k``) for the per-position
    counters (vLLM's ``num_accepted_tokens_per_pos``)."""

    accepted: IntArray
    mask: IntArray


class DraftShape(Protocol):
    always_proposes: bool
    shared: bool
    conditional: FloatArray  # classes x positions: acceptance of position i given 1..i-1 were accepted
    proposal_rate: FloatArray  # per class: the share of steps in which the proposer drafts

    def query_tokens(self, k: IntArray) -> IntArray:
        """Tokens each decoding sequence feeds the target in a verification with ``k[i]`` draft tokens."""
        ...

    def proposes(self, rng: Uniforms, classes: IntArray) -> IntArray:
        """1 where a sequence drafts this step, 0 where it decodes plainly."""
        ...

    def proposes_steps(self, rng: Uniforms, cls: int, steps: int) -> IntArray:
        """For shared draws: 1 for each of ``steps`` steps in which the (identical) sequences draft."""
        ...

    def draw(self, rng: Uniforms, classes: IntArray, k: int, drafted: IntArray) -> Draw:
        """One step: what each sequence (of workload class ``classes[i]``, ``drafted[i]`` draft tokens this step:
        k, or 0 where it does not propose) accepts."""
        ...

    def draw_steps(self, rng: Uniforms, classes: IntArray, k: int, steps: int) -> Draw:
        """``steps`` consecutive steps of the same sequences, none capped: arrays get a leading steps axis."""
        ...

    # The same, for a handful of sequences as plain Python values (the simulator's scalar step path); the draws
    # come from ``rng`` in the same calls and order, so either path gives the same trace.

    def query_table(self, max_k: int) -> list[int]:
        """Entry k: what :meth:`query_tokens` gives a sequence with k draft tokens (k = 0..max_k)."""
        ...

    def proposes_list(self, rng: Uniforms, classes: list[int]) -> list[int]:
        """:meth:`proposes` for classes given as a list."""
        ...

    def draw_list(self, rng: Uniforms, classes: list[int], k: int, drafted: list[int]) -> list[int]:
        """:meth:`draw`'s accepted counts (the mask is the first ``accepted[i]`` positions of each row)."""
        ...


class ChainDrafting:
    """k draft tokens on one path; position i accepted with probability c_i given 1..i-1 were.

    With ``shared``, every sequence of a step uses the same draws: sequences that are copies of one prompt
    decoded greedily accept the same tokens (the SpecDecode-Bench batches replicate one prompt batch-size times).
    """

    def __init__(self, classes: Sequence[WorkloadClass], max_k: int, shared: bool = False) -> None:
        width = max(1, max_k)
        self.conditional: FloatArray = np.array(
            [[c.acceptance.conditional_at(i) for i in range(1, width + 1)] for c in classes]
        )
        self.shared = shared
        self.proposal_rate: FloatArray = np.array([c.proposal_rate for c in classes], dtype=np.float64)
        self.always_proposes = bool((self.proposal_rate >= 1.0).all())
        self._conditional_rows: list[list[float]] = self.conditional.tolist()
        self._rates: list[float] = self.proposal_rate.tolist()

    def proposes(self, rng: Uniforms, classes: IntArray) -> IntArray:
        """Which sequences draft this step (1) and which decode plainly (0): a lookup drafts where it matches."""
        if self.always_proposes:
            return np.ones(classes.size, dtype=np.int64)
        rng = proposal_uniforms(rng)
        u = rng.random((1, 1))[:, 0] if self.shared else rng.random((classes.size, 1))[:, 0]
        return (u < self.proposal_rate[classes]).astype(np.int64)

    def proposes_steps(self, rng: Uniforms, cls: int, steps: int) -> IntArray:
        """Shared proposals over ``steps`` steps of sequences of class ``cls``: 1 where the step drafts."""
        if self.always_proposes:
            return np.ones(steps, dtype=np.int64)
        u = proposal_uniforms(rng).random((steps, 1))[:, 0]
        out: IntArray = (u < self.proposal_rate[cls]).astype(np.int64)
        return out

    def proposes_list(self, rng: Uniforms, classes: list[int]) -> list[int]:
        if self.always_proposes:
            return [1] * len(classes)
        rates = self._rates
        rng = proposal_uniforms(rng)
        if self.shared:
            u = float(rng.random((1, 1))[0, 0])
            return [int(u < rates[c]) for c in classes]
        draws: list[float] = rng.random((len(classes), 1))[:, 0].tolist()
        return [int(x < rates[c]) for x, c in zip(draws, classes, strict=True)]

    def query_tokens(self, k: IntArray) -> IntArray:
        return 1 + k

    def query_table(self, max_k: int) -> list[int]:
        return [1 + k for k in range(max_k + 1)]

    def draw_list(self, rng: Uniforms, classes: list[int], k: int, drafted: list[int]) -> list[int]:
        rows: list[list[float]] = rng.random((1, k) if self.shared else (len(classes), k)).tolist()
        cond = self._conditional_rows
        out = []
        for i, c in enumerate(classes):
            row, rate, cap = rows[0 if self.shared else i], cond[c], drafted[i]
            a = 0
            while a < cap and row[a] < rate[a]:
                a += 1
            out.append(a)
        return out

    def draw(self, rng: Uniforms, classes: IntArray, k: int, drafted: IntArray) -> Draw:
        u = rng.random((1, k)) if self.shared else rng.random((classes.size, k))
        ok = u < self.conditional[classes, :k]
        ok &= np.arange(k) < drafted[:, None]
        mask = np.cumprod(ok, axis=1)
        return Draw(mask.sum(axis=1), mask)

    def draw_steps(self, rng: Uniforms, classes: IntArray, k: int, steps: int) -> Draw:
        u = rng.random((steps, 1, k)) if self.shared else rng.random((steps, classes.size, k))
        ok = u < self.conditional[classes, :k][None, :, :]
        mask = np.cumprod(ok, axis=2)
        return Draw(mask.sum(axis=2), mask)


class TreeDrafting(ChainDrafting):
    """A draft tree of ``size`` tokens verified in one pass (EAGLE-2/3 dynamic trees, SGLang's topk > 1): each
    sequence feeds ``1 + size`` query tokens and accepts at most the tree's depth (``k``), position by position
    with the class's conditional rates (those of the best path)."""

    def __init__(self, classes: Sequence[WorkloadClass], max_k: int, size: int, shared: bool = False) -> None:
        super().__init__(classes, max_k, shared)
        self.size = size

    def query_tokens(self, k: IntArray) -> IntArray:
        return np.where(k > 0, 1 + self.size, 1)

    def query_table(self, max_k: int) -> list[int]:
        return [1 + self.size if k > 0 else 1 for k in range(max_k + 1)]


class AcceptanceStream:
    """The acceptance draws of a run whose every draw is ``k`` wide (a fixed k, a proposer that always drafts,
    draws per sequence), taken ahead from a ``numpy.random.Generator`` in blocks, with each row's accepted count
    (the leading positions i with ``u_i < c_i``, per class) computed for the whole block at once.

    A draw of ``(..., k)`` uniforms takes the next rows of the stream, exactly the numbers the generator would
    have returned to that call (it fills arrays from the same sequence of doubles), so the trace is the same;
    :meth:`accepted` and :meth:`accepted_window` hand out the precomputed counts instead of the uniforms.
    :meth:`close` leaves the generator where the run's own draws would have: in the same state as without the
    stream."""

    BLOCK_ROWS = 1 << 14

    def __init__(self, rng: np.random.Generator, conditional: FloatArray, k: int) -> None:
        self.rng, self.k = rng, k
        self._start_state = rng.bit_generator.state
        self._cond = conditional[:, :k]
        self._single = conditional.shape[0] == 1
        self.classes = not self._single  # whether accepted() needs the classes
        self._u: FloatArray = np.zeros((0, k))
        self._acc: IntArray = np.zeros((conditional.shape[0], 0), dtype=np.int64)
        self._pos = 0
        self._handed = 0  # rows handed out before the current block

    def _take(self, rows: int) -> int:
        """Reserve the next ``rows`` rows; returns their first index in the current block."""
        if self._pos + rows > self._u.shape[0]:
            self._handed += self._pos
            fresh = self.rng.random((max(self.BLOCK_ROWS, rows), self.k))
            acc = np.stack([_leading_accepted(fresh, c) for c in self._cond])
            self._u = np.concatenate([self._u[self._pos :], fresh])
            self._acc = np.concatenate([self._acc[:, self._pos :], acc], axis=1)
            self._pos = 0
        start = self._pos
        self._pos += rows
        return start

    def random(self, size: tuple[int, ...]) -> FloatArray:
        if size[-1] != self.k:
            raise ValueError(f"AcceptanceStream: draws are {self.k} wide, asked for {size}")
        rows = 1
        for d in size[:-1]:
            rows *= d
        start = self._take(rows)
        out: FloatArray = self._u[start : start + rows].reshape(size)
        return out

    def accepted(self, classes: list[int] | int) -> list[int]:
        """One step's accepted counts (uncapped), one row per sequence of class ``classes[i]`` (with one class:
        ``classes`` may be the number of sequences)."""
        if isinstance(classes, int):
            start = self._take(classes)
            row: list[int] = self._acc[0, start : start + classes].tolist()
            return row
        start = self._take(len(classes))
        if self._single:
            row = self._acc[0, start : start + len(classes)].tolist()
            return row
        acc = self._acc
        return [int(acc[c, start + i]) for i, c in enumerate(classes)]

    def accepted_window(self, steps: int, classes: list[int]) -> IntArray:
        """``steps`` steps' accepted counts (steps x sequences, uncapped)."""
        b = len(classes)
        start = self._take(steps * b)
        if self._single:
            window: IntArray = self._acc[0, start : start + steps * b].reshape(steps, b)
            return window
        rows = start + np.arange(steps * b).reshape(steps, b)
        out: IntArray = self._acc[np.array(classes)[None, :], rows]
        return out

    def close(self) -> None:
        """Put the generator where drawing the handed-out rows one call at a time would have left it."""
        used = (self._handed + self._pos) * self.k
        bits = self.rng.bit_generator
        start = self._start_state
        bits.state = start
        if start.get("bit_generator") in ("PCG64", "PCG64DXSM"):
            bits.advance(used)  # type: ignore[attr-defined]
            state = dict(bits.state)
            state["has_uint32"], state["uinteger"] = start["has_uint32"], start["uinteger"]
            bits.state = state
            return
        while used > 0:
            chunk = min(used, 1 << 20)
            self.rng.random(chunk)
            used -= chunk


def _leading_accepted(u: FloatArray, conditional: FloatArray) -> IntArray:
    """Per row of ``u``: how many leading positions i have ``u[:, i] < conditional[i]`` (cumprod + sum, a
    column at a time: short rows make numpy's per-row reductions slow)."""
    cols = u.T
    run = cols[0] < conditional[0]
    acc: IntArray = run.astype(np.int64)
    for i in range(1, conditional.size):
        run &= cols[i] < conditional[i]
        acc += run
    return acc
