"""The profile JSON document, and writing it so a failure never leaves half a file."""

from __future__ import annotations

from typing import Any

from specwise.profiler.settings import ProfileSettings

SCHEMA = "specwise.profile/1"


def build_document(
    target: str,
    draft: str | None,
    settings: ProfileSettings,
    prompts_source: str,
    n_prompts: int,
    results: list[dict[str, Any]],
    timings: dict[str, float],
    verification: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "target": target,
        "draft": draft,
        "method": settings.method,
        "prompts": {"source": prompts_source, "count": n_prompts},
        "settings": {
            "temperatures": list(settings.temperatures),
            "k": list(settings.k_values),
            "max_new_tokens": settings.max_new_tokens,
            "top_k": settings.top_k,
            "top_p": settings.top_p,
            "contexts": settings.contexts,
            "seed": settings.seed,
            "prompt_lookup_min": settings.prompt_lookup_min if settings.method == "ngram" else None,
            "prompt_lookup_max": settings.prompt_lookup_max if settings.method == "ngram" else None,
            "quantizations": [dict(q) for q in settings.quantizations],
        },
        "results": results,
        "verification": verification or [],
        "timing_s": timings,
    }
