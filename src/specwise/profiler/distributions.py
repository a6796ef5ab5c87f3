"""Per-position acceptance probability of one draft token (numpy; rows are positions, columns the vocabulary).

* Probabilistic drafting (Leviathan et al. 2023, "Fast Inference from Transformers via Speculative Decoding",
  §3.1 and Chen et al. 2023): the draft samples x ~ q and the target accepts with min(1, p(x)/q(x)); the
  probability that the position is accepted is beta = sum_x min(p(x), q(x)).
* Greedy drafting (vLLM's default for draft models and EAGLE: the proposer takes its argmax): q is one-hot at
  x* = argmax q, so the acceptance probability is p(x*); at temperature 0 (p one-hot too) it is an exact match.
  With draft == target at T > 0 it is E[max_x p(x)], not 1.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]


def softmax(logits: NDArray[np.floating], temperature: float) -> FloatArray:
    """Rows of ``logits`` -> probabilities at ``temperature``; T = 0 is the one-hot argmax (greedy sampling)."""
    x = np.asarray(logits, dtype=np.float64)
    if temperature < 0:
        raise ValueError(f"temperature must be >= 0, got {temperature}")
    if temperature == 0:
        out = np.zeros_like(x)
        out[np.arange(x.shape[0]), np.argmax(x, axis=-1)] = 1.0
        return out
    z = x / temperature
    z -= z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)  # type: ignore[no-any-return]


def sum_min(p: NDArray[np.floating], q: NDArray[np.floating]) -> FloatArray:
    """beta = sum_x min(p(x), q(x)) per row: acceptance probability under probabilistic drafting."""
    return np.minimum(p, q).sum(axis=-1)  # type: ignore[no-any-return]


def greedy_accept(p: NDArray[np.floating], q: NDArray[np.floating]) -> FloatArray:
    """p(argmax q) per row: acceptance probability when the draft proposes its argmax."""
    idx = np.argmax(q, axis=-1)
    return np.asarray(p[np.arange(p.shape[0]), idx], dtype=np.float64)
