"""Suffix decoding, model-free, as vLLM runs it: SuffixDecoding (Oliaro et al. 2024, arXiv:2411.04975), vLLM's
``suffix`` method (``vllm/v1/spec_decode/suffix_decoding.py``, 0.11.1+), which calls Arctic Inference's
``SuffixDecodingCache.speculate`` (``arctic_inference/suffix_decoding/cache.py``; tree:
``csrc/suffix_decoding/suffix_tree.cc``; vLLM pins ``arctic-inference==0.1.1``) with ``use_tree_spec=False``.

What that code does, and what this module reproduces:

* **Two trees.** A *local* tree per request holds its prompt and its output so far; one *global* tree holds the
  outputs (not the prompts) of earlier requests and the current output so far. Both are speculated from; the draft
  with the higher score wins, the local one on a tie.
* **Depth.** A tree indexes every suffix of its sequences up to ``max_depth`` tokens
  (``suffix_decoding_max_tree_depth``, default 24): a node's count is the number of occurrences of its token string
  (of at most ``max_depth`` tokens), those at a sequence's end included. So the match length plus the speculated
  length never exceed ``max_depth``.
* **Speculation.** The context is the last ``max_depth`` tokens. For every match length ``m`` from 1 to
  ``len(context) - 1`` whose suffix occurs (stopping at the first that does not), walk down from it to the most
  frequent child, multiplying ``prob`` by ``count(child) / count(node)``, appending tokens while ``prob >=
  min_token_prob`` (default 0.1), at most ``min(k, floor(m * max_spec_factor + max_spec_offset))`` (factor 1.0,
  offset 0). A draft's score is the sum of its tokens' ``prob``; the best score wins, the longer match on a tie
  (``>=``). Probabilities and scores are float32, as in the C++.

One difference, on purpose: among children of equal count Arctic takes the head of a sibling list that its node
splits and moves reorder; this takes the child first seen. The two then draft different, equally frequent
continuations (``tests/profiler/test_suffix_arctic.py`` measures how often against the real library).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass

MAX_DEPTH = 24  # vLLM's suffix_decoding_max_tree_depth default
MIN_TOKEN_PROB = 0.1  # suffix_decoding_min_token_prob
MAX_SPEC_FACTOR = 1.0  # suffix_decoding_max_spec_factor


def _f32(x: float) -> float:
    """``x`` rounded to float32 (the C++ ``float``; float64 arithmetic then rounding equals float32 arithmetic for
    + - * /, since 53 >= 2 * 24 + 2 -- Figueroa 1995)."""
    return float(struct.unpack("f", struct.pack("f", x))[0])


@dataclass(frozen=True)
class SuffixDraft:
    tokens: tuple[int, ...]
    probs: tuple[float, ...]  # each token's prob (float32)
    match_len: int

    @property
    def score(self) -> float:
        s = 0.0
        for p in self.probs:
            s = _f32(s + p)
        return s

    def capped(self, k: int, max_spec_factor: float, max_spec_offset: float = 0.0) -> SuffixDraft:
        """The draft a speculation with ``max_spec_tokens = k`` makes from the same match (the walk is the same;
        only its length is capped)."""
        cap = max(0, min(k, int(self.match_len * max_spec_factor + max_spec_offset + 1e-6)))
        return SuffixDraft(self.tokens[:cap], self.probs[:cap], self.match_len)


EMPTY = SuffixDraft((), (), 0)


class SuffixTree:
    """Occurrence counts of every token string of at most ``max_depth`` tokens in the sequences appended so far,
    and each string's next tokens (the counts of Arctic's suffix tree nodes, without its edge compression)."""

    def __init__(self, max_depth: int = MAX_DEPTH) -> None:
        self.max_depth = max_depth
        self._count: dict[tuple[int, ...], int] = {}
        self._children: dict[tuple[int, ...], dict[int, int]] = {}
        self._seqs: dict[int, list[int]] = {}

    def new_sequence(self) -> int:
        seq_id = len(self._seqs)
        self._seqs[seq_id] = []
        return seq_id

    def append(self, seq_id: int, token: int) -> None:
        seq = self._seqs.setdefault(seq_id, [])
        seq.append(token)
        n = len(seq)
        for start in range(max(0, n - self.max_depth), n):
            parent = tuple(seq[start : n - 1])
            string = (*parent, token)
            self._count[string] = self._count.get(string, 0) + 1
            kids = self._children.setdefault(parent, {})
            kids[token] = kids.get(token, 0) + 1

    def extend(self, seq_id: int, tokens: Sequence[int]) -> None:
        for t in tokens:
            self.append(seq_id, int(t))

    def drafts(
        self, context: Sequence[int], max_tokens: int, min_token_prob: float = MIN_TOKEN_PROB
    ) -> list[SuffixDraft]:
        """The walk from every matching suffix of ``context`` (shortest first), each up to ``max_tokens`` tokens
        (before the match-length cap, which :meth:`SuffixDraft.capped` applies)."""
        ctx = tuple(context[-self.max_depth :])
        out = []
        for m in range(1, len(ctx)):
            node = ctx[-m:]
            if node not in self._count:
                break
            out.append(self._walk(node, m, max_tokens, min_token_prob))
        return out

    def _walk(self, node: tuple[int, ...], m: int, max_tokens: int, min_token_prob: float) -> SuffixDraft:
        prob = 1.0
        tokens: list[int] = []
        probs: list[float] = []
        while len(tokens) < max_tokens:
            kids = self._children.get(node)
            if not kids:
                break
            token, count = max(kids.items(), key=lambda kv: kv[1])  # the first seen among equal counts
            prob = _f32(prob * _f32(count / self._count[node]))
            if prob < min_token_prob:
                break
            tokens.append(token)
            probs.append(prob)
            node = (*node, token)
        return SuffixDraft(tuple(tokens), tuple(probs), m)


def best_draft(drafts: Sequence[SuffixDraft], k: int, max_spec_factor: float = MAX_SPEC_FACTOR) -> SuffixDraft:
    """Arctic's choice over match lengths at ``max_spec_tokens = k``: the highest score, the longer match on a tie."""
    best = EMPTY
    for d in drafts:
        c = d.capped(k, max_spec_factor)
        if c.score >= best.score:
            best = c
    return best


def speculate(
    local: Sequence[SuffixDraft], global_: Sequence[SuffixDraft], k: int, max_spec_factor: float = MAX_SPEC_FACTOR
) -> tuple[int, ...]:
    """The tokens vLLM drafts at ``num_speculative_tokens = k``: the local tree's draft unless the global one scores
    higher (``SuffixDecodingCache.speculate``)."""
    a, b = best_draft(local, k, max_spec_factor), best_draft(global_, k, max_spec_factor)
    return a.tokens if a.score >= b.score else b.tokens
