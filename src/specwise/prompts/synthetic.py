"""Synthetic prompts of a given length drawn from varied text, not one repeated phrase.

The text is ``data/corpus.txt``: 119 plain sentences on unrelated subjects, written for specwise (CC0). Each
prompt takes the sentences in a fresh random order (a new order each time the corpus is used up, so a sentence
repeats only in prompts longer than the corpus, about 2,000 words / 2,500 tokens) and is cut to length: in
words, or in tokens of the model's own tokenizer (:func:`token_prompts`, as ``vllm bench serve``'s random dataset
sizes its prompts in the served model's tokens). A phrase repeated over the prompt would hand n-gram and suffix
drafting matches a real prompt does not have.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Protocol

import numpy as np

from specwise.prompts.items import PromptItem

CORPUS = Path(__file__).resolve().parent / "data" / "corpus.txt"
CLASS = "synthetic"


class Encoder(Protocol):
    """What sizing in tokens needs of a tokenizer (:class:`specwise.prompts.tokenizer.TokenizerFile`)."""

    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids: list[int]) -> str: ...


@cache
def corpus_sentences() -> tuple[str, ...]:
    return tuple(line.strip() for line in CORPUS.read_text(encoding="utf-8").splitlines() if line.strip())


def _sentences(rng: np.random.Generator) -> Iterator[str]:
    corpus = corpus_sentences()
    while True:
        for i in rng.permutation(len(corpus)):
            yield corpus[int(i)]


def _text(rng: np.random.Generator, words: int) -> str:
    out: list[str] = []
    sentences = _sentences(rng)
    while len(out) < words:
        out += next(sentences).split()
    return " ".join(out[:words])


def word_prompts(count: int, words: int, seed: int) -> list[PromptItem]:
    """``count`` prompts of exactly ``words`` whitespace-separated words."""
    rng = np.random.default_rng(seed)
    return [PromptItem(_text(rng, words), CLASS) for _ in range(count)]


def token_prompts(count: int, tokens: int, seed: int, encoder: Encoder) -> list[PromptItem]:
    """``count`` prompts of ``tokens`` tokens of ``encoder`` (the text is cut at that many tokens and decoded; the
    decoded text re-encodes to that length give or take a token at the cut, as in ``vllm bench serve``'s random
    dataset)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        words = max(8, tokens)  # a word is at least one token: this many words always holds enough tokens
        ids = encoder.encode(_text(rng, words))[:tokens]
        out.append(PromptItem(encoder.decode(ids), CLASS))
    return out
