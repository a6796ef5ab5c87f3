"""Suffix decoding, model-free: speculate from the longest suffix match over the prompt, the output so far and
earlier outputs (SuffixDecoding, Oliaro et al. 2024, arXiv:2411.04975; vLLM's ``suffix`` method via Arctic
Inference).

This is the linear (single-path) variant: find the longest suffix of the context, up to ``max_depth`` tokens,
seen before; then repeatedly append the most frequent next token after the current pattern while its empirical
probability is at least ``min_token_prob``, up to k tokens. vLLM's implementation speculates a tree and sizes
it by a score; a single path is what a verifier without tree attention (and this profiler) checks, so AL here
is a lower bound for the tree variant.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence


class SuffixIndex:
    """Counts of the next token after every n-gram (n <= max_depth) of the sequences added so far."""

    def __init__(self, max_depth: int = 24) -> None:
        self.max_depth = max_depth
        self._next: defaultdict[tuple[int, ...], Counter[int]] = defaultdict(Counter)

    def add(self, tokens: Sequence[int], start: int = 0) -> None:
        """Index transitions into positions ``start..len(tokens)-1`` of ``tokens``."""
        for i in range(max(start, 1), len(tokens)):
            for n in range(1, min(self.max_depth, i) + 1):
                self._next[tuple(tokens[i - n : i])][tokens[i]] += 1

    def propose(self, context: Sequence[int], k: int, min_token_prob: float = 0.1) -> list[int]:
        ctx = list(context)
        out: list[int] = []
        while len(out) < k:
            counter = None
            for n in range(min(self.max_depth, len(ctx)), 0, -1):
                counter = self._next.get(tuple(ctx[-n:]))
                if counter:
                    break
            if not counter:
                break
            token, count = counter.most_common(1)[0]
            if count / sum(counter.values()) < min_token_prob:
                break
            out.append(token)
            ctx.append(token)
        return out
