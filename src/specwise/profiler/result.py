"""Aggregate per-prompt counters into the profile's typed results (:class:`ProfileResult`, serialised by
:class:`~specwise.contracts.profile.ProfileDoc`; read by advise and the simulator)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from specwise.acceptance.counts import SpecDecodeCounts
from specwise.contracts.profile import ProfileK, ProfileResult
from specwise.profiler.bootstrap import ratio_ci


@dataclass(frozen=True)
class Observation:
    """One prompt under one (quantisation, temperature, drafting) setting."""

    quantization: tuple[tuple[str, str], ...]
    temperature: float
    drafting: str
    workload_class: str | None
    counts: NDArray[np.float64]  # (len(k_values), 3 + k_max + 1): vLLM's counters per k, then the steps walked
    alpha_sum: float
    alpha_n: int
    estimator: str = "realized"


def _nan_to_none(x: float | None) -> float | None:
    return None if x is None or x != x else round(float(x), 6)


def _ci(num: NDArray[np.float64], den: NDArray[np.float64], seed: int, resamples: int) -> tuple[float, float]:
    """A bootstrap CI drawn from its own generator: a function of these per-prompt counters and the seed alone (the
    same counters give the same interval whichever other groups, classes or k were profiled)."""
    return ratio_ci(num, den, np.random.default_rng(seed), resamples)


def _by_k(obs: Sequence[Observation], k_values: Sequence[int], seed: int, resamples: int) -> list[ProfileK]:
    """vLLM's counters summed over the prompts at every k, with bootstrap CIs over prompts."""
    stacked = np.stack([o.counts for o in obs])  # (prompts, n_k, 3 + k_max)
    by_k = []
    for row, k in enumerate(k_values):
        per_prompt = stacked[:, row, :]
        summed = per_prompt.sum(axis=0)
        total = SpecDecodeCounts.from_row(k, summed)
        rate_ci = _ci(per_prompt[:, 2], per_prompt[:, 1], seed, resamples)
        al_ci = _ci(per_prompt[:, 2], per_prompt[:, 0], seed, resamples)
        by_k.append(
            ProfileK(
                k=k,
                acceptance_rate=_nan_to_none(total.acceptance_rate),
                mean_acceptance_length=_nan_to_none(total.mean_acceptance_length),
                ci95=(_nan_to_none(rate_ci[0]), _nan_to_none(rate_ci[1])),
                mean_acceptance_length_ci95=(_nan_to_none(1 + al_ci[0]), _nan_to_none(1 + al_ci[1])),
                per_position_acceptance=tuple(_nan_to_none(x) for x in total.per_position_or_none()),
                num_drafts=round(total.drafts, 3),
                num_draft_tokens=round(total.draft_tokens, 3),
                num_accepted_tokens=round(total.accepted_tokens, 3),
                num_steps=round(float(summed[-1]), 3),
            )
        )
    return by_k


def _sort_key(r: ProfileResult) -> tuple[int, str, float, str, bool, str]:
    """Unquantised first, then by quantisation, temperature, drafting; all prompts before each class."""
    quant = dict(r.quantization)
    return (len(quant), str(quant), r.temperature, r.drafting, r.workload_class is not None, str(r.workload_class))


def summarise(
    observations: Sequence[Observation], k_values: Sequence[int], seed: int, resamples: int = 1000
) -> tuple[ProfileResult, ...]:
    """One result per (quantisation, temperature, drafting, class); class None = all prompts. Every CI resamples
    prompts with a generator of its own seeded by ``seed``, so it depends only on its group's counters."""
    groups: defaultdict[tuple[Any, ...], list[Observation]] = defaultdict(list)
    classes = {o.workload_class for o in observations}
    for o in observations:
        key = (o.quantization, o.temperature, o.drafting)
        groups[(*key, None)].append(o)
        if len(classes) > 1 or None not in classes:
            groups[(*key, o.workload_class)].append(o)
    results = []
    for (quant, temperature, drafting, cls), obs in groups.items():
        by_k = _by_k(obs, k_values, seed, resamples)
        alpha_n = sum(o.alpha_n for o in obs)
        results.append(
            ProfileResult(
                temperature=temperature,
                drafting=drafting,
                quantization=quant,
                workload_class=cls,
                per_position_acceptance=by_k[-1].per_position_acceptance,
                prompts=len(obs),
                estimator="+".join(sorted({o.estimator for o in obs})),
                alpha_mean=_nan_to_none(sum(o.alpha_sum for o in obs) / alpha_n if alpha_n else float("nan")),
                by_k=tuple(by_k),
            )
        )
    return tuple(sorted(results, key=_sort_key))
