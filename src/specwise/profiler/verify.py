"""Empirical check of a profile: run the real speculative sampling loop and compare acceptance with the
prediction at the same (temperature, drafting, k); also the loop's wall-clock speedup over plain decoding.

Two predictions are set against the loop. *Unpaired*: the profile's own number, from its own sampled
continuations. *Paired*: the profiler's estimator applied to the loop's own output paths (one teacher-forced
pass per model over each), which removes path-sampling noise and checks the acceptance arithmetic given the
paths. Both are reported (``agrees`` = the paired check within the tolerance or the loop's CI;
``unpaired_within_ci`` = the profile's number and the loop's apart by no more than both samples' noise:
:func:`unpaired_agrees`). The paired check cannot see whether the
loop's output is distributed as the target's samples; the unpaired one can, but at T > 0 per-path acceptance is
heavy-tailed (a path that samples EOS and runs on into unrelated text accepts far less), so it needs several loop
paths per prompt (``paths_per_prompt``; bench/loop_paths.py measures this on Qwen2.5-Coder).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from torch.nn import Module

from specwise.acceptance.counts import SpecDecodeCounts
from specwise.contracts.profile import ProfileK, ProfileResult, VerificationRow
from specwise.profiler import analysis
from specwise.profiler.bootstrap import ratio_ci
from specwise.profiler.counting import model_draft_proposals, walk
from specwise.profiler.forward import continuation_logits, shared_vocab
from specwise.profiler.sampling import probs
from specwise.profiler.settings import ProfileSettings
from specwise.profiler.specloop import autoregressive_generate, speculative_generate

TOLERANCE = 0.03

ROUNDING = 1e-5  # the rates are kept to 6 decimals; a prediction's float sums differ by less


def predicted_rate(results: Sequence[ProfileResult], temperature: float, drafting: str, k: int) -> float | None:
    """The profile's acceptance rate at ``k`` over all prompts, unquantised; None if it has no such result."""
    row = _profile_row(results, temperature, drafting, k)
    return None if row is None else row.acceptance_rate


def _profile_row(results: Sequence[ProfileResult], temperature: float, drafting: str, k: int) -> ProfileK | None:
    for r in results:
        if r.temperature == temperature and r.drafting == drafting and r.workload_class is None and not r.quantization:
            for row in r.by_k:
                if row.k == k:
                    return row
    return None


def _half_width(ci: tuple[float | None, float | None], centre: float) -> float:
    """The larger distance from ``centre`` to either end of a 95% interval (0 where an end is missing)."""
    return max((abs(end - centre) for end in ci if end is not None and np.isfinite(end)), default=0.0)


def unpaired_agrees(
    measured: float,
    loop_ci: tuple[float | None, float | None],
    predicted: float,
    profile_ci: tuple[float | None, float | None],
) -> bool:
    """Whether the profile's rate and the loop's differ by no more than both samples' noise: |difference| within
    the two 95% half-widths added in quadrature (the two-sample rule for independent estimates; each half-width
    the larger side of its bootstrap interval), plus :data:`ROUNDING`. The loop's interval alone left out the
    profile's own path-sampling noise, so a profile of few prompts was called off at T > 0 where the paired check
    agreed (review s47d F6: 0.127 against 0.074 [0.062, 0.086], each from 4 prompts). Lenient: both rates come from
    the same prompts, so the prompt-to-prompt spread both intervals hold would cancel in their difference, and is
    counted twice here (review s48c F8); a bootstrap of the per-prompt difference would be exact, and needs the
    profile's per-prompt counts, which a profile document does not keep. The paired check (``agrees``) is the
    strict one."""
    spread = float(np.hypot(_half_width(loop_ci, measured), _half_width(profile_ci, predicted)))
    return bool(abs(measured - predicted) <= spread + ROUNDING)


def path_counts(
    target: Module,
    draft: Module | None,
    prompt: Sequence[int],
    path: Sequence[int],
    n_start: int,
    temperature: float,
    drafting: str,
    k: int,
    settings: ProfileSettings,
) -> SpecDecodeCounts:
    """The profiler's expected counters for steps starting in the first ``n_start`` positions of ``path``
    (realized acceptance coins along it; :func:`specwise.profiler.analysis.realized_accept_probs`)."""
    lt = continuation_logits(target, prompt, path)
    n_start = min(n_start, len(path))
    if draft is not None:
        ld = continuation_logits(draft, prompt, path)
        lt, ld = shared_vocab(lt, ld)
        p = probs(lt, temperature, settings.top_k, settings.top_p)
        q = probs(ld, temperature, settings.top_k, settings.top_p)
        accept = analysis.realized_accept_probs(p, q, drafting, ld, path)
        return walk(model_draft_proposals(accept, n_start, k), k)
    p = probs(lt, temperature, settings.top_k, settings.top_p)
    tokens = analysis.lookup_token_proposals(
        settings.method, prompt, path, n_start, [k], settings.prompt_lookup_min, settings.prompt_lookup_max
    )[k]
    return walk(analysis.lookup_proposals(tokens, p, n_start, path), k)


@dataclass
class _Tally:
    """One (temperature, drafting) job over every prompt: the loop's counters and the paired prediction's, per
    prompt as [drafts, draft tokens, accepted]; loop and plain-decoding wall seconds; tokens generated."""

    loop: NDArray[np.float64]
    paired: NDArray[np.float64]
    speculative_s: float = 0.0
    autoregressive_s: float = 0.0
    tokens: int = 0


def _run_paths(
    target: Module,
    draft: Module | None,
    ids: Sequence[int],
    i: int,
    n_paths: int,
    job: tuple[float, str, int],
    settings: ProfileSettings,
    tally: _Tally,
    measure_speedup: bool,
) -> None:
    """``n_paths`` loop runs on prompt ``i`` (distinct seeds), added to its row of the tally."""
    temp, drafting, k = job
    for path in range(n_paths):
        seed = settings.seed * 7919 + i + 1_000_003 * path
        res = speculative_generate(
            target,
            draft,
            ids,
            settings.max_new_tokens,
            k,
            temp,
            drafting,
            seed,
            (settings.prompt_lookup_min, settings.prompt_lookup_max),
            settings.top_k,
            settings.top_p,
        )
        tally.loop[i] += (res.counts.drafts, res.counts.draft_tokens, res.counts.accepted_tokens)
        pc = path_counts(target, draft, ids, res.output, settings.max_new_tokens, temp, drafting, k, settings)
        tally.paired[i] += (pc.drafts, pc.draft_tokens, pc.accepted_tokens)
        tally.speculative_s += res.wall_s
        tally.tokens += res.tokens
        if measure_speedup:
            tally.autoregressive_s += autoregressive_generate(target, ids, res.tokens, temp, seed)


def _row(
    tally: _Tally,
    job: tuple[float, str, int],
    n_paths: int,
    profile: ProfileK | None,
    settings: ProfileSettings,
    measure_speedup: bool,
) -> VerificationRow:
    """Measured vs predicted (unpaired: the profile's number; paired: the estimator on the loop's own paths)."""
    temp, drafting, k = job
    predicted = None if profile is None else profile.acceptance_rate
    totals = tally.loop.sum(axis=0)
    measured = totals[2] / totals[1] if totals[1] else float("nan")
    ci = ratio_ci(tally.loop[:, 2], tally.loop[:, 1], np.random.default_rng(settings.seed), 1000)
    diff = None if predicted is None else measured - predicted
    p_tot = tally.paired.sum(axis=0)
    paired_rate = float(p_tot[2] / p_tot[1]) if p_tot[1] else float("nan")
    paired_diff = float(measured - paired_rate)
    agrees = abs(paired_diff) <= TOLERANCE or ci[0] <= paired_rate <= ci[1]
    spec_s, base_s = tally.speculative_s, tally.autoregressive_s
    return VerificationRow(
        temperature=temp,
        drafting=drafting,
        k=k,
        measured_acceptance_rate=round(float(measured), 6),
        measured_ci95=(round(ci[0], 6), round(ci[1], 6)),
        measured_mean_acceptance_length=round(1 + totals[2] / totals[0], 6) if totals[0] else None,
        predicted_acceptance_rate=predicted,
        difference=None if diff is None else round(float(diff), 6),
        paired_predicted_acceptance_rate=round(paired_rate, 6),
        paired_difference=round(paired_diff, 6),
        agrees=bool(agrees),
        unpaired_within_ci=(
            None if predicted is None or profile is None else unpaired_agrees(measured, ci, predicted, profile.ci95)
        ),
        paths_per_prompt=n_paths,
        tokens=tally.tokens,
        speculative_wall_s=round(spec_s, 3),
        autoregressive_wall_s=round(base_s, 3) if measure_speedup else None,
        measured_speedup=round(base_s / spec_s, 4) if measure_speedup and spec_s > 0 else None,
    )


def verify(
    target: Module,
    draft: Module | None,
    prompt_ids: Sequence[Sequence[int]],
    results: Sequence[ProfileResult],
    settings: ProfileSettings,
    temperatures: Sequence[float],
    k: int,
    progress: Callable[[str, int, int], None] | None = None,
    measure_speedup: bool = True,
    paths_per_prompt: int = 1,
) -> list[VerificationRow]:
    """One row per (temperature, drafting mode): measured vs predicted acceptance rate at ``k``; with
    ``measure_speedup`` also plain decoding of the same number of tokens, for the loop's CPU speedup.

    ``paths_per_prompt`` loop runs per prompt (distinct seeds; counters summed per prompt, CI over prompts): at
    T > 0 one path per prompt is a small sample of a heavy-tailed quantity (a path that samples EOS and runs on into
    unrelated text accepts far less), so the unpaired check needs several."""
    rows = []
    jobs = [(t, m) for t in temperatures for m in settings.drafting_modes]
    for j, (temp, drafting) in enumerate(jobs):
        tally = _Tally(np.zeros((len(prompt_ids), 3)), np.zeros((len(prompt_ids), 3)))
        n_paths = 1 if temp == 0 else paths_per_prompt  # T = 0 is deterministic
        for i, ids in enumerate(prompt_ids):
            _run_paths(target, draft, ids, i, n_paths, (temp, drafting, k), settings, tally, measure_speedup)
            if progress:
                progress(f"verify T={temp:g} {drafting} k={k} ({j + 1}/{len(jobs)})", i + 1, len(prompt_ids))
        row = _profile_row(results, temp, drafting, k)
        rows.append(_row(tally, (temp, drafting, k), n_paths, row, settings, measure_speedup))
    return rows
