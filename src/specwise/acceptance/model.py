"""How many draft tokens a verification step accepts.

Definitions (vLLM, ``vllm/v1/spec_decode/metrics.py``; Leviathan et al. 2023, arXiv 2211.17192):

* per-position acceptance ``r_i`` = accepted_per_pos[i] / drafts: the *unconditional* probability
  that draft position i (1-based) is accepted. Positions are accepted as a prefix, so
  ``r_1 >= r_2 >= ...``. The conditional rate of position i given the ones before is
  ``c_i = r_i / r_{i-1}`` (``r_0 = 1``).
* mean acceptance length ``AL(k) = 1 + E[accepted] = 1 + sum_{i<=k} r_i`` (includes the bonus token).
* acceptance rate ``(k) = E[accepted] / k``; it falls as k grows even when AL rises.

With i.i.d. acceptance alpha (Leviathan et al. 2023, "Fast Inference from Transformers via
Speculative Decoding", eq. 1 and Theorem 3.8), ``c_i = alpha``, ``E[tokens per step] =
(1 - alpha^(k+1)) / (1 - alpha)`` and the walltime improvement at batch 1 is
``(1 - alpha^(k+1)) / ((1 - alpha)(k c + 1))`` with ``c`` = draft step time / target step time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from specwise.errors import SpecError

_EPS = 1e-9


def expected_tokens_per_step_iid(alpha: float, k: int) -> float:
    """Leviathan et al. eq. (1): expected tokens per step (accepted + bonus) with i.i.d. alpha."""
    _check_alpha(alpha)
    if k < 0:
        raise SpecError(f"k: must be >= 0, got {k}")
    if alpha >= 1.0 - _EPS:
        return float(k + 1)
    return (1.0 - alpha ** (k + 1)) / (1.0 - alpha)


def expected_speedup_iid(alpha: float, k: int, cost_ratio: float) -> float:
    """Leviathan et al. Theorem 3.8: walltime improvement at batch 1, draft/target step cost ``c``."""
    if cost_ratio < 0:
        raise SpecError(f"cost_ratio: must be >= 0, got {cost_ratio}")
    return expected_tokens_per_step_iid(alpha, k) / (k * cost_ratio + 1.0)


def _check_alpha(alpha: float) -> None:
    if not 0.0 <= alpha <= 1.0 or alpha != alpha:
        raise SpecError(f"acceptance: alpha must be in [0, 1], got {alpha}")


@dataclass(frozen=True)
class AcceptanceModel:
    """Conditional acceptance per draft position; positions beyond the list repeat the last rate."""

    conditional: tuple[float, ...]

    def __post_init__(self) -> None:
        if not self.conditional:
            raise SpecError("acceptance: at least one rate is needed")
        for i, c in enumerate(self.conditional):
            if not 0.0 <= c <= 1.0 or c != c:
                raise SpecError(f"acceptance: conditional rate at position {i + 1} must be in [0, 1], got {c}")

    # -- constructors ---------------------------------------------------------------------------
    @classmethod
    def iid(cls, alpha: float) -> AcceptanceModel:
        _check_alpha(alpha)
        return cls((float(alpha),))

    @classmethod
    def from_per_position(cls, rates: Sequence[float]) -> AcceptanceModel:
        """From vLLM's unconditional per-position rates ``r_i`` (must not increase with i)."""
        if not rates:
            raise SpecError("acceptance.per_position: empty list")
        prev = 1.0
        conditional = []
        for i, r in enumerate(rates):
            if not 0.0 <= r <= 1.0 or r != r:
                raise SpecError(f"acceptance.per_position[{i}]: must be in [0, 1], got {r}")
            if r > prev + 1e-9:
                raise SpecError(
                    f"acceptance.per_position[{i}]: {r} is above position {i}'s {prev}; per-position rates "
                    "cannot increase (a position is accepted only if all before it are)"
                )
            conditional.append(r / prev if prev > 0 else 0.0)
            prev = r
        return cls(tuple(min(1.0, c) for c in conditional))

    # -- queries --------------------------------------------------------------------------------
    def conditional_at(self, position: int) -> float:
        """Conditional acceptance of 1-based draft ``position``."""
        return self.conditional[min(position, len(self.conditional)) - 1]

    def per_position(self, k: int) -> tuple[float, ...]:
        """Unconditional per-position rates r_1..r_k (vLLM's ``accepted_per_pos / drafts``)."""
        out, p = [], 1.0
        for i in range(1, k + 1):
            p *= self.conditional_at(i)
            out.append(p)
        return tuple(out)

    def distribution(self, k: int) -> tuple[float, ...]:
        """P(accepted = n) for n = 0..k."""
        if k < 0:
            raise SpecError(f"k: must be >= 0, got {k}")
        probs, reach = [], 1.0
        for i in range(1, k + 1):
            c = self.conditional_at(i)
            probs.append(reach * (1.0 - c))
            reach *= c
        probs.append(reach)
        return tuple(probs)

    def expected_accepted(self, k: int) -> float:
        return sum(self.per_position(k))

    def mean_acceptance_length(self, k: int) -> float:
        """AL(k) = 1 + E[accepted] (includes the bonus token)."""
        return 1.0 + self.expected_accepted(k)

    def acceptance_rate(self, k: int) -> float:
        """vLLM's acceptance rate: E[accepted] / k."""
        if k <= 0:
            raise SpecError("acceptance rate is undefined for k = 0")
        return self.expected_accepted(k) / k
