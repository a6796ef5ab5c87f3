"""A profile's 95% intervals depend only on their own group's per-prompt counters and the seed: the same counters
give the same interval in the all-prompts table and a class table holding every prompt, whatever other
temperatures were profiled, and whatever the k range around a given k."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from specwise.contracts.profile import ProfileResult
from specwise.profiler.analysis import counts_by_k
from specwise.profiler.counting import model_draft_proposals
from specwise.profiler.result import Observation, summarise


def _observations(k_values: Sequence[int], temp: float, cls: str | None = "summarization") -> list[Observation]:
    rng = np.random.default_rng(11)
    out = []
    for _ in range(8):
        accept = rng.uniform(0.1, 0.95, size=30)
        counts = counts_by_k(model_draft_proposals(accept, 24, max(k_values)), k_values)
        out.append(Observation((), temp, "greedy", cls, counts, float(accept[:24].sum()), 24))
    return out


def _cis(results: Sequence[ProfileResult], temp: float, cls: str | None) -> dict[int, tuple[object, object]]:
    (r,) = [r for r in results if r.temperature == temp and r.workload_class == cls]
    return {bk.k: (bk.ci95, bk.mean_acceptance_length_ci95) for bk in r.by_k}


def test_the_same_counters_give_the_same_interval_whatever_else_was_profiled() -> None:
    wide = summarise(_observations((1, 2, 3, 4, 5, 6), 0.0), (1, 2, 3, 4, 5, 6), 0, 300)
    all_prompts, one_class = _cis(wide, 0.0, None), _cis(wide, 0.0, "summarization")
    assert all_prompts == one_class  # the class holds every prompt: the same counters
    assert all(lo is not None and lo < hi for (lo, hi), _ in all_prompts.values())

    narrow_k = (2, 3, 4)
    other_temps = summarise(_observations(narrow_k, 0.0) + _observations(narrow_k, 1.0), narrow_k, 0, 300)
    narrow = _cis(other_temps, 0.0, "summarization")
    assert narrow == {k: one_class[k] for k in narrow_k}  # another k range and another temperature change nothing
    assert _cis(other_temps, 1.0, None) == narrow  # same counters at T=1: the same interval


def test_the_seed_still_matters() -> None:
    obs = _observations((1, 2), 0.0)
    assert _cis(summarise(obs, (1, 2), 0, 300), 0.0, None) != _cis(summarise(obs, (1, 2), 1, 300), 0.0, None)
