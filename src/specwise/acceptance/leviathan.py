"""The analytic batch-1 speedup (Leviathan et al. 2023, "Fast Inference from Transformers via Speculative
Decoding", arXiv 2211.17192, Theorem 3.8) as a claim: the number, the formula and paper it comes from, that it
holds at batch 1 with i.i.d. acceptance, and its error against the paper's own Table 4 -- the check ``specwise
validate`` reports as "Leviathan Table 4 max |diff|" (:func:`table4_max_abs_diff`, computed here for both)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from specwise.acceptance.model import expected_speedup_iid, expected_tokens_per_step_iid

# Leviathan et al. 2023, Table 4: (alpha from Table 3, gamma, c) -> expected walltime improvement.
LEVIATHAN_TABLE4 = (
    (0.75, 7, 0.02, 3.2),
    (0.80, 7, 0.04, 3.3),
    (0.82, 7, 0.11, 2.5),
    (0.62, 7, 0.02, 2.3),
    (0.68, 5, 0.04, 2.4),
    (0.71, 3, 0.11, 2.0),
    (0.65, 5, 0.02, 2.4),
    (0.73, 5, 0.04, 2.6),
    (0.74, 3, 0.11, 2.0),
    (0.53, 5, 0.02, 1.9),
    (0.55, 3, 0.04, 1.8),
    (0.56, 3, 0.11, 1.6),
)
PREDICTOR = "leviathan-iid"
FORMULA = "(1 - alpha^(k+1)) / ((1 - alpha)(k c + 1))"
SOURCE = "Leviathan et al. 2023, Theorem 3.8"
ASSUMES = "batch 1, i.i.d. acceptance"
VALIDATION = f"Leviathan et al. 2023 Table 4 ({len(LEVIATHAN_TABLE4)} published speedups; specwise validate checks it)"
MAX_ABS_ERROR = "max_abs_speedup_error"  # the statistic: max |predicted - published speedup|


def table4_max_abs_diff() -> float:
    """Max |analytic - published| over Leviathan et al.'s Table 4 (batch 1, i.i.d. acceptance). The published
    values have one decimal, so part of it is their rounding."""
    return max(abs(expected_speedup_iid(a, g, c) - want) for a, g, c, want in LEVIATHAN_TABLE4)


@dataclass(frozen=True)
class BatchOneSpeedup:
    """``specwise speedup``'s answer: the speedup at batch 1 for i.i.d. acceptance ``alpha``, ``k`` draft tokens
    and draft/target step-cost ratio ``cost_ratio``, with the predictor that made it and its validation error."""

    alpha: float
    k: int
    cost_ratio: float
    expected_tokens_per_step: float
    speedup: float
    max_abs_error: float  # :func:`table4_max_abs_diff`
    batch_size: int = 1

    def to_json(self) -> dict[str, Any]:
        return {
            "speedup": self.speedup,
            "expected_tokens_per_step": self.expected_tokens_per_step,
            "alpha": self.alpha,
            "k": self.k,
            "cost_ratio": self.cost_ratio,
            "batch_size": self.batch_size,
            "predictor": {
                "name": PREDICTOR,
                "formula": FORMULA,
                "source": SOURCE,
                "assumes": ASSUMES,
                "error": self.max_abs_error,
                "statistic": MAX_ABS_ERROR,
                "error_source": VALIDATION,
            },
        }


def batch_one_speedup(alpha: float, k: int, cost_ratio: float) -> BatchOneSpeedup:
    """Theorem 3.8's speedup and eq. (1)'s tokens per step, with Table 4's max error (a SpecError for a value out
    of range, from :mod:`specwise.acceptance.model`)."""
    return BatchOneSpeedup(
        alpha=alpha,
        k=k,
        cost_ratio=cost_ratio,
        expected_tokens_per_step=expected_tokens_per_step_iid(alpha, k),
        speedup=expected_speedup_iid(alpha, k, cost_ratio),
        max_abs_error=table4_max_abs_diff(),
    )
