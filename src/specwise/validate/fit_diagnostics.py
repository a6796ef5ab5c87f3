"""The fit's numerics, apart from what it fits: a finite-difference Jacobian sized for a simulator's residuals, and
what the final Jacobian says about which coefficients the training records determine.

Why a Jacobian of our own: scipy's ``least_squares`` steps each coordinate by ``diff_step * |x|`` (scipy
``optimize/_numdiff.py``; scipy issues #18161 and #11258), which in log space is a tiny change for parameters near
1 and a large one for a cost of ~1e-5 s. One uniform step in ln(value) treats every coefficient alike. The
residuals are continuous in the coefficients (:mod:`specwise.validate.anchor_grid`: an anchor solved on the replay's
staircase in acceptance had made them jump by 0.3-1.8% wherever the root crossed an edge). A 5% step, chosen to
straddle that staircase, was too coarse once it was gone: at the 2026-12-07 regularised fit the training cost changed
linearly from 1e-4 to 2e-3 in ln along a random direction while 5% along it curvature dominated, so the Jacobian was
biased and trf rejected its steps; a 0.5% step is small beside that curvature. What is left is kinks: at the
2026-12-07 fits, the node at 0.75 of the lookup constant's 1/32 replay grid (``anchor_grid.FGM_CELLS``) lay 0.44% above
the fitted 0.7467, inside the forward step, so the Jacobian's column for it was a secant across the node (+0.032 where
a central difference of 1e-4 gives -0.0012; ``scripts/fit_kinks.py``). The overlap's ``max()``, suspected first, is
smooth since then (:mod:`specwise.perfmodel.overlap`) and was never near its switch in a training record. Since then a
coordinate replayed on a grid steps away from a node its forward step would cross (:func:`fd_jacobian`'s ``nodes``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

FD_STEP_LN = 0.005
"""The finite-difference step: 0.5% of each coefficient's value."""


def fd_jacobian(
    fun: Callable[[np.ndarray], np.ndarray],
    x: np.ndarray,
    f0: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
    step: float = FD_STEP_LN,
    nodes: Mapping[int, Sequence[float]] | None = None,
) -> np.ndarray:
    """Forward differences of ``fun`` at ``x``, one step ``step`` per coordinate: upward, or downward for a
    coordinate within ``step`` of its upper bound (never past a bound). A coordinate with ``nodes`` (where ``fun``
    is piecewise, in ``x``'s own units: a replay grid's nodes) steps downward when the upward step would cross one
    and the downward step would not, so that its column is the slope of the piece ``x`` is on, not a secant across
    a kink (module docstring)."""
    steps = fd_steps(x, low, high, step, nodes)
    cols = []
    for i, h in enumerate(steps):
        xi = np.array(x, dtype=np.float64)
        xi[i] += h
        cols.append((np.asarray(fun(xi)) - f0) / h)
    return np.column_stack(cols)


def fd_steps(
    x: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
    step: float = FD_STEP_LN,
    nodes: Mapping[int, Sequence[float]] | None = None,
) -> np.ndarray:
    """The signed step :func:`fd_jacobian` takes in each coordinate at ``x``."""
    steps = np.where(x + step <= high, step, -step)
    for i, at in (nodes or {}).items():
        if _crosses(at, x[i], x[i] + steps[i]) and x[i] - step >= low[i] and not _crosses(at, x[i], x[i] - step):
            steps[i] = -step
    if np.any(x + steps < low):
        raise ValueError("a bound interval is narrower than the finite-difference step")
    return steps


def _crosses(nodes: Sequence[float], a: float, b: float) -> bool:
    """Whether a node lies in the half-open step from ``a`` to ``b`` (``a`` excluded), either way."""
    lo, hi = min(a, b), max(a, b)
    return any((lo < n <= hi) if b > a else (lo <= n < hi) for n in nodes)


def soft_l1_cost(r: np.ndarray, f_scale: float) -> float:
    """scipy's soft_l1 cost of residuals ``r``: ``0.5 * f_scale**2 * sum(rho((r / f_scale)**2))`` with
    ``rho(z) = 2 * (sqrt(1 + z) - 1)`` (scipy ``optimize/_lsq/least_squares.py``, ``soft_l1``)."""
    z = (np.asarray(r, dtype=np.float64) / f_scale) ** 2
    return float(0.5 * f_scale**2 * np.sum(2.0 * (np.sqrt(1.0 + z) - 1.0)))


@dataclass(frozen=True)
class Identifiability:
    """What the Jacobian at the fit says: singular values, their ratio, an approximate standard deviation of each
    ln(coefficient) (Gauss-Newton, ``sqrt(diag((J^T J)^-1)) * noise``; None where the Jacobian cannot see the
    coefficient at all), and the least determined directions."""

    singular_values: tuple[float, ...]
    condition: float
    log_sd: dict[str, float | None]
    sloppiest: tuple[dict[str, float], ...]

    def to_json(self) -> dict[str, object]:
        return {
            "singular_values": [round(s, 6) for s in self.singular_values],
            "condition": round(self.condition, 1) if np.isfinite(self.condition) else None,
            "log_sd": {k: None if v is None else round(v, 3) for k, v in self.log_sd.items()},
            "sloppiest_directions": [{k: round(v, 3) for k, v in d.items()} for d in self.sloppiest],
            "how": "a local approximation at the last accepted point (not a stationary point where the optimizer "
            "stalled): SVD of scipy's loss-scaled Jacobian J (so J^T J is the robust cost's Gauss-Newton Hessian); "
            "log_sd = sqrt(sum_k (V_jk / s_k)^2) * sqrt(2 cost / (residuals - parameters)), residuals counting the "
            "priors' and 2 cost standing in for a sum of squares; null if the coefficient has weight on a singular "
            "value below 1e-12 of the largest; it ignores the correlation of records within a series; a direction "
            "lists its components above 0.2 in ln(coefficient)",
        }


def identifiability(jac: np.ndarray, cost: float, names: Sequence[str], directions: int = 2) -> Identifiability:
    """The SVD of ``jac`` (residuals x parameters) read as :class:`Identifiability`; ``cost`` is the fit's cost
    (0.5 * sum of squares for a linear loss)."""
    m, n = jac.shape
    if n != len(names):
        raise ValueError(f"{n} Jacobian columns for {len(names)} names")
    _, s, vt = np.linalg.svd(jac, full_matrices=False)
    noise = float(np.sqrt(2.0 * cost / max(m - n, 1)))
    seen = s > 1e-12 * s[0] if s[0] > 0 else np.zeros_like(s, dtype=bool)
    sd: list[float | None] = []
    for j in range(n):
        blind = (~seen) & (np.abs(vt[:, j]) > 1e-9)
        sd.append(None if blind.any() else float(np.sqrt(np.sum((vt[seen, j] / s[seen]) ** 2))) * noise)
    condition = float(s[0] / s[-1]) if s[-1] > 0 else float("inf")
    sloppy = []
    for row in vt[::-1][:directions]:
        sign = 1.0 if row[np.argmax(np.abs(row))] > 0 else -1.0
        sloppy.append({name: float(sign * c) for name, c in zip(names, row, strict=True) if abs(c) > 0.2})
    return Identifiability(tuple(float(v) for v in s), condition, dict(zip(names, sd, strict=True)), tuple(sloppy))
