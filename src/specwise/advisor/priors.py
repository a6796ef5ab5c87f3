"""Acceptance priors, used only when nothing was measured: by method, task type and temperature.

Every number here is an assumption and is reported as such ("ASSUMED prior") next to every decision it feeds.
Sources:

* draft models, T = 0: Leviathan et al. 2023 Table 3 -- T5-XXL EnDe (translation) with a base draft 0.80,
  CNNDM (summarisation) 0.73, LaMDA 137B (dialogue) with a 2B draft 0.71. Code is not in that table; 0.75 is a
  guess between them. T = 1 under probabilistic drafting: the same table's T1/T0 ratios (EnDe 0.85, CNNDM 0.75,
  LaMDA 1.0) -> x0.85 at T = 1, linear in T.
* EAGLE-3: AL 3.53 at k = 7 (vLLM issue #26191) <=> i.i.d. alpha ~0.745; EAGLE (v1) assumed 0.70.
* MTP: 0.85 at T = 0 (DeepSeek-V3 report, second-token acceptance 85-90%); T = 1 probabilistic 49.4% at k = 2
  (vLLM PR #41044) -> 0.5 at T = 1.
* Greedy drafting at T > 0 (vLLM's default): accept probability is p(argmax q), lower than sum-min. PR #41044
  measured 10.3% vs 49.4% (x0.21) at T = 1 for MTP; specwise assumes x(1 - 0.5 T) for draft models and heads and
  says so -- profile it (``specwise profile``) before trusting it.
* n-gram / suffix, T = 0: SpecDecode-Bench's measured per-position acceptance (Liu et al. 2026, arXiv 2601.11580,
  its released vLLM 0.10.1 traces: Llama-3.1-8B, ``prompt_lookup_min`` 3, ``max`` 7, k = 5), per step (a step
  without a match counts as drafted and rejected): summarisation / RAG / editing from CNN/DailyMail [0.124,
  0.090, 0.068, 0.054, 0.043], code from InstructCoder [0.219, 0.195, 0.175, 0.161, 0.149], chat / QA /
  translation / other from ShareGPT [0.134, 0.103, 0.084, 0.073, 0.064]; positions 6-8 continue the last
  conditional rate. A step without a match drafts nothing in vLLM (it costs a plain step), so these per-step rates
  are split into a match rate and per-match acceptance (:mod:`specwise.acceptance.lookup`). Prompts that make the
  output copy the input do far better: the vLLM blog's Llama-3-70B on CNN/DailyMail (Oct 2024, 2.8x at 1 QPS with
  k = 4) needs a match at every step -- and prompts that do not copy do worse (vLLM issue #6494: 0.62x throughput
  at k = 8). Suffix decoding adds cross-request history: +0.05 per step.
"""

from __future__ import annotations

from dataclasses import dataclass

from specwise.acceptance.lookup import MEASURED_WINDOW, measured_per_step, split_per_step
from specwise.acceptance.model import AcceptanceModel
from specwise.methods import Method
from specwise.perfmodel.profiles import published_fit
from specwise.scenario.model import TASKS

_DRAFT_T0 = {"code": 0.75, "summarization": 0.73, "chat": 0.71, "qa": 0.71, "translation": 0.80, "other": 0.70}


@dataclass(frozen=True)
class Prior:
    """Assumed acceptance: ``model`` per proposal (per match for a lookup), drafted in ``proposal_rate`` of the
    decode steps (a lookup drafts only when it finds a match; every other proposer drafts every step)."""

    model: AcceptanceModel
    source: str
    proposal_rate: float = 1.0


def _t_factor(method: Method, temperature: float, drafting: str) -> float:
    t = min(max(temperature, 0.0), 1.0)
    prob = 1.0 - t * (1.0 - 0.5 / 0.85) if method.proposer == "target_layers" else 1.0 - 0.15 * t
    return prob * (1.0 - 0.5 * t) if drafting == "greedy" else prob


def prior(
    method: Method, task: str, temperature: float, drafting: str = "greedy", first_given_match: float | None = None
) -> Prior:
    """The assumed acceptance for one workload class under one candidate. A lookup's measured per-step rates are
    split into a match rate and per-match acceptance with ``first_given_match`` (default: the published fit's)."""
    task = task if task in TASKS else "other"
    name = method.name
    if method.is_lookup:
        return _lookup_prior(method, task, temperature, first_given_match)
    base = method.prior_alpha_t0 if method.prior_alpha_t0 is not None else _DRAFT_T0[task]
    alpha = min(1.0, base * _t_factor(method, temperature, drafting))
    return Prior(
        AcceptanceModel.iid(alpha),
        f"ASSUMED prior: {name} on {task}, T={temperature:g}, {drafting} drafting, alpha {alpha:.2f}",
    )


def _lookup_prior(method: Method, task: str, temperature: float, first_given_match: float | None) -> Prior:
    """Matches come from the text (suffix decoding's cross-request history finds more of them); a match's copied
    tokens are accepted at T > 0 with the target's probability of the copy, which falls like greedy drafting does."""
    factor = 1.0 - 0.5 * min(max(temperature, 0.0), 1.0)
    like, rates = measured_per_step(task, method.cross_request_history)
    given_match = published_fit().first_given_match if first_given_match is None else first_given_match
    split = split_per_step(rates, given_match)
    per_match = AcceptanceModel.from_per_position([r * factor for r in split.per_match.per_position(len(rates))])
    return Prior(
        per_match,
        f"ASSUMED prior: {method.name} on {task}, T={temperature:g}, SpecDecode-Bench's {like} per-step rates "
        f"(prompt_lookup {MEASURED_WINDOW[0]}-{MEASURED_WINDOW[1]}) split into a match in {split.proposal_rate:.0%} "
        f"of steps and a first token accepted in {per_match.per_position(1)[0]:.0%} of matches (a fitted rate); "
        "copy-heavy prompts match far more -- "
        "profile yours",
        split.proposal_rate,
    )
