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

# SpecDecode-Bench's measured per-step acceptance (Liu et al. 2026, arXiv 2601.11580, its released vLLM 0.10.1
# traces: Llama-3.1-8B, prompt_lookup_min 3, max 7, k = 5; positions 6-8 continue the last conditional rate), by
# the dataset that stands for a task: summarisation / RAG / editing -> CNN/DailyMail, code -> InstructCoder,
# everything else -> ShareGPT.
MEASURED_WINDOW = (3, 7)  # the traces' (prompt_lookup_min, prompt_lookup_max)
_CNN_DM = (0.1235, 0.0896, 0.0684, 0.0539, 0.0429, 0.0341, 0.0271, 0.0216)
_INSTRUCTCODER = (0.2192, 0.1948, 0.1754, 0.1609, 0.1492, 0.1384, 0.1283, 0.1190)
_SHAREGPT = (0.1343, 0.1032, 0.0843, 0.0732, 0.0644, 0.0567, 0.0499, 0.0439)
_BY_TASK = {"summarization": ("CNN/DailyMail", _CNN_DM), "code": ("InstructCoder", _INSTRUCTCODER)}
# How to measure a lookup's match rate on a server from vLLM's counters: drafts over decode steps (every request's
# first token comes from its prefill; a decode step emits 1 + its accepted tokens). Approximate: vLLM counts the
# draft tokens a request's last step accepts past its max_tokens, which it never emits (a draft model's counters,
# where every decode step drafts, exceed the formula's steps by up to 6% in adixg/vllm-specdecode-cost-model's
# results/phase4_sweep.json).
MATCH_RATE_HINT = (
    "set match_rate ~= vllm:spec_decode_num_drafts / (generated tokens - accepted tokens - requests) from your server "
    "(approximate: tokens accepted past a request's max_tokens are counted but not generated)"
)
CROSS_REQUEST_BONUS = 0.05  # suffix decoding's history of earlier outputs: more matches (an assumption)


def measured_per_step(task: str, cross_request_history: bool = False) -> tuple[str, tuple[float, ...]]:
    """(dataset, per-step rates) SpecDecode-Bench measured for the dataset that stands for ``task``; a proposer
    with cross-request history (suffix decoding) gets :data:`CROSS_REQUEST_BONUS` per position."""
    dataset, rates = _BY_TASK.get(task, ("ShareGPT", _SHAREGPT))
    bonus = CROSS_REQUEST_BONUS if cross_request_history else 0.0
    out, prev = [], 1.0
    for r in rates:
        prev = min(prev, r + bonus)
        out.append(prev)
    return dataset, tuple(out)


def assumed_match_rate(task: str, cross_request_history: bool, first_given_match: float) -> tuple[float, str]:
    """The share of steps with a match the prior assumes for ``task``, and where it comes from."""
    dataset, rates = measured_per_step(task, cross_request_history)
    rho = split_per_step(rates, first_given_match).proposal_rate
    return rho, (
        f"match rate ASSUMED: {rho:.0%} of steps, SpecDecode-Bench's {dataset} per-step rate ({rates[0]:.3f}) / a "
        f"fitted per-match first-token rate ({first_given_match:.2f}), prompt_lookup "
        f"{MEASURED_WINDOW[0]}-{MEASURED_WINDOW[1]}"
    )


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
