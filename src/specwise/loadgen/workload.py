"""What a bench run sends: prompts (a dataset or synthetic, :mod:`specwise.prompts`), the same for every
configuration."""

from __future__ import annotations

from pathlib import Path

from specwise.loadgen.client import RequestSpec
from specwise.prompts.items import PromptItem
from specwise.prompts.sources import BUILTIN_SETS, MAX_PROMPT_FILE_BYTES, SHIPPED_SETS, Selection
from specwise.prompts.sources import load_prompts as _load
from specwise.prompts.synthetic import word_prompts

__all__ = [
    "BUILTIN_SETS",
    "MAX_PROMPT_FILE_BYTES",
    "SHIPPED_SETS",
    "PromptItem",
    "level_requests",
    "load_prompts",
    "synthetic_prompts",
]


def load_prompts(path: Path | str, selection: Selection | None = None) -> list[PromptItem]:
    """The requests of a prompt source (:func:`specwise.prompts.sources.load_prompts`)."""
    return _load(path, selection)


def synthetic_prompts(count: int, words: int, seed: int) -> list[PromptItem]:
    """``count`` prompts of ``words`` words of varied text (:mod:`specwise.prompts.synthetic`)."""
    return word_prompts(count, words, seed)


def level_requests(
    prompts: list[PromptItem], level: int, count: int, max_tokens: int, temperature: float, ignore_eos: bool
) -> list[RequestSpec]:
    """Request i of every level uses prompt i (cycled): every configuration sends the same requests."""
    specs = []
    for i in range(count):
        p = prompts[i % len(prompts)]
        specs.append(
            RequestSpec(
                request_id=f"L{level}-{i}",
                prompt=p.prompt,
                max_tokens=p.max_tokens or max_tokens,
                temperature=p.temperature if p.temperature is not None else temperature,
                workload_class=p.workload_class,
                ignore_eos=ignore_eos,
                history=p.history,
            )
        )
    return specs
