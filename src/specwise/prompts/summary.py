"""What a prompt source yields, per category: requests, how many carry earlier turns, their length."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from specwise.prompts.items import PromptItem

if TYPE_CHECKING:
    from specwise.prompts.sources import Selection

Counter = Callable[[str], int]  # text -> its length (words, or tokens of a tokenizer)


@dataclass(frozen=True)
class CategorySummary:
    category: str  # "(none)" for records without one; "all" for the total row ("(total)" beside a category "all")
    requests: int
    multi_turn: int  # requests carrying earlier turns (user/assistant; a system prompt is not a turn)
    mean_length: float
    max_length: int
    total: bool = False  # the row of every request

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "category": self.category,
            "requests": self.requests,
            "multi_turn": self.multi_turn,
            "mean_length": round(self.mean_length, 1),
            "max_length": self.max_length,
        }
        if self.total:
            out["total"] = True
        return out


@dataclass(frozen=True)
class PromptSummary:
    source: str
    unit: str  # "words" or "tokens"
    rows: tuple[CategorySummary, ...]  # per category, then the total

    def to_json(self) -> dict[str, object]:
        return {"source": self.source, "unit": self.unit, "categories": [r.to_json() for r in self.rows]}


def _row(name: str, items: Sequence[PromptItem], count: Counter) -> CategorySummary:
    lengths = [count(i.raw_text()) for i in items]
    multi = sum(1 for i in items if i.multi_turn)
    return CategorySummary(name, len(items), multi, sum(lengths) / len(lengths), max(lengths))


def summarize(
    source: str, items: Sequence[PromptItem], count: Counter | None = None, unit: str = "words"
) -> PromptSummary:
    """Lengths are of the raw text (all turns of a request); ``count`` defaults to whitespace-separated words."""
    counter: Counter = count or (lambda text: len(text.split()))
    names = sorted({i.workload_class or "(none)" for i in items})
    rows = [_row(n, [i for i in items if (i.workload_class or "(none)") == n], counter) for n in names]
    if len(rows) > 1:  # review s60: a category called "all" read as a second total row
        total = _row("(total)" if "all" in names else "all", items, counter)
        rows.append(replace(total, total=True))
    return PromptSummary(source, unit, tuple(rows))


def summarize_source(source: str, selection: Selection | None = None, tokenizer: str | None = None) -> PromptSummary:
    """What ``source`` (a file, ``hf:PATH`` or ``builtin:NAME``) yields under ``selection``: lengths in words, or in
    tokens of ``tokenizer`` (a directory, a tokenizer.json or a hub id) -- ``specwise prompts``."""
    from specwise.prompts.sources import load_prompts

    items = load_prompts(source, selection)
    if not tokenizer:
        return summarize(source, items)
    from specwise.prompts.tokenizer import load_tokenizer

    tok = load_tokenizer(tokenizer)
    return summarize(source, items, lambda text: len(tok.encode(text)), "tokens")
