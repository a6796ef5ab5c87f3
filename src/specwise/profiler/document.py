"""The profile document (``specwise.profile/1``) of one run: what was profiled, the results, the loop check."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from specwise.contracts.profile import ProfileDoc, ProfileResult, VerificationRow
from specwise.profiler.settings import ProfileSettings


def build_document(
    target: str,
    draft: str | None,
    settings: ProfileSettings,
    prompts_source: str,
    n_prompts: int,
    results: Sequence[ProfileResult],
    timings: Mapping[str, float],
    verification: Sequence[VerificationRow] | None = None,
) -> ProfileDoc:
    lookup = settings.method == "ngram"
    return ProfileDoc(
        target=target,
        draft=draft,
        method=settings.method,
        results=tuple(results),
        prompts={"source": prompts_source, "count": n_prompts},
        settings={
            "temperatures": list(settings.temperatures),
            "k": list(settings.k_values),
            "max_new_tokens": settings.max_new_tokens,
            "top_k": settings.top_k,
            "top_p": settings.top_p,
            "contexts": settings.contexts,
            "seed": settings.seed,
            "prompt_lookup_min": settings.prompt_lookup_min if lookup else None,
            "prompt_lookup_max": settings.prompt_lookup_max if lookup else None,
            "quantizations": [dict(q) for q in settings.quantizations],
        },
        verification=tuple(verification or ()),
        timing_s=dict(timings),
    )
