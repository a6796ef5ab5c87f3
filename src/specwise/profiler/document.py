"""The profile document (``specwise.profile/1``) of one run: what was profiled, the results, the loop check."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from specwise.contracts.profile import ProfileDoc, ProfileResult, VerificationRow
from specwise.profiler.settings import ProfileSettings
from specwise.profiler.templates import AppliedTemplate


@dataclass(frozen=True)
class PromptDetails:
    """Which requests of the source were profiled (categories, turns) and the chat template they were rendered
    with (:mod:`specwise.profiler.templates`)."""

    categories: tuple[str, ...] = ()
    turns: str = "first"
    chat_template: AppliedTemplate = field(default_factory=lambda: AppliedTemplate("none"))
    max_prompt_tokens: int | None = None  # a longer prompt keeps its last this many tokens
    truncated: int = 0  # prompts cut so

    def to_json(self) -> dict[str, Any]:
        return {
            "categories": list(self.categories),
            "turns": self.turns,
            "chat_template": self.chat_template.to_json(),
            **({"max_prompt_tokens": self.max_prompt_tokens} if self.max_prompt_tokens else {}),
            "truncated": self.truncated,
        }


def build_document(
    target: str,
    draft: str | None,
    settings: ProfileSettings,
    prompts_source: str,
    n_prompts: int,
    results: Sequence[ProfileResult],
    timings: Mapping[str, float],
    verification: Sequence[VerificationRow] | None = None,
    details: PromptDetails | None = None,
    *,
    interrupted: bool = False,
) -> ProfileDoc:
    """``details``: how the prompts were selected and rendered, kept beside their source and count.
    ``interrupted``: the run was stopped (Ctrl-C) and ``results`` hold the temperatures observed in full only; the
    settings then say so and list those temperatures."""
    lookup = settings.method == "ngram"
    stopped = (
        {"interrupted": True, "temperatures_completed": sorted({r.temperature for r in results if not r.quantization})}
        if interrupted
        else {}
    )
    return ProfileDoc(
        target=target,
        draft=draft,
        method=settings.method,
        results=tuple(results),
        prompts={"source": prompts_source, "count": n_prompts, **(details.to_json() if details else {})},
        settings={
            "temperatures": list(settings.temperatures),
            "k": list(settings.k_values),
            "max_new_tokens": settings.max_new_tokens,
            "ignore_eos": True,  # every continuation runs max_new_tokens, past an EOS (profiler/forward.py)
            "top_k": settings.top_k,
            "top_p": settings.top_p,
            "contexts": settings.contexts,
            "seed": settings.seed,
            "prompt_lookup_min": settings.prompt_lookup_min if lookup else None,
            "prompt_lookup_max": settings.prompt_lookup_max if lookup else None,
            "quantizations": [dict(q) for q in settings.quantizations],
            **stopped,
        },
        verification=tuple(verification or ()),
        timing_s=dict(timings),
    )
