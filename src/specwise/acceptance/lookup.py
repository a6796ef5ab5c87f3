"""A lookup proposer's acceptance split into how often it drafts and how well its drafts do (pure).

An n-gram (prompt lookup) or suffix proposer drafts only when it finds a match: vLLM V1's ``NgramProposer``
(``vllm/v1/spec_decode/ngram_proposer.py``) returns no draft tokens for a request without one, and the scheduler
then schedules that request's single sampled token, so a step without a match costs what a plain decoding step
costs. vLLM's counters follow the same split: ``num_drafts`` and the per-position accepted counts are observed
only for requests that were scheduled draft tokens (``vllm/v1/core/sched/scheduler.py``, ``update_from_output``),
so vLLM's per-position acceptance of a lookup is per match.

Offline traces that count a step without a match as a drafted and rejected proposal (SpecDecode-Bench's released
vLLM traces, Liu et al. 2026, arXiv 2601.11580) give per-step rates ``r_i = rho * a_i``: the match rate ``rho``
times the per-match rate ``a_i``. One more number separates them: the first token of a match is accepted with
``first_given_match`` (a constant fitted with the step-time model on SpecDecode-Bench's n-gram points,
``scripts/fit_published.py``), so ``rho = r_1 / first_given_match`` and ``a_i = r_i / rho``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from specwise.acceptance.model import AcceptanceModel
from specwise.errors import SpecError


@dataclass(frozen=True)
class LookupAcceptance:
    """Per-match acceptance (vLLM's definition for a lookup) and the share of decode steps with a match."""

    per_match: AcceptanceModel
    proposal_rate: float

    def __post_init__(self) -> None:
        if not 0.0 < self.proposal_rate <= 1.0:
            raise SpecError(f"lookup proposal_rate: must be in (0, 1], got {self.proposal_rate}")


def split_per_step(per_step: Sequence[float], first_given_match: float) -> LookupAcceptance:
    """Per-step rates (a step without a match counted as a rejection) -> match rate and per-match acceptance.

    The match rate is floored at 0.1% (a trace whose first rate is 0 still drafts somewhere) and capped at 1 (a
    first rate above ``first_given_match`` means every step matched); later per-match rates never exceed earlier
    ones (a position is accepted only if all before it are)."""
    if not per_step:
        raise SpecError("lookup per-step rates: empty list")
    if not 0.0 < first_given_match <= 1.0:
        raise SpecError(f"lookup first_given_match: must be in (0, 1], got {first_given_match}")
    rho = min(1.0, max(per_step[0] / first_given_match, 1e-3))
    per_match = [min(1.0, r / rho) for r in per_step]
    for i in range(1, len(per_match)):
        per_match[i] = min(per_match[i], per_match[i - 1])
    return LookupAcceptance(AcceptanceModel.from_per_position(per_match), rho)
