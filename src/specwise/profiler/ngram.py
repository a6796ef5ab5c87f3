"""n-gram prompt lookup with vLLM's semantics (``vllm/v1/spec_decode/ngram_proposer.py``,
``_find_longest_matched_ngram_and_propose_tokens``, vLLM 0.32).

Find the longest n in [prompt_lookup_min, prompt_lookup_max] such that the last n tokens of the context occur
earlier in it; among occurrences of that length take the earliest; propose the (up to) k tokens that followed
it (fewer when the context ends sooner). No match, or a context shorter than the minimum: no proposal.
"""

from __future__ import annotations

from collections.abc import Sequence


def propose(
    context: Sequence[int], k: int, lookup_min: int, lookup_max: int, max_model_len: int = 1 << 30
) -> list[int]:
    total = len(context)
    if total < lookup_min:
        return []
    k = min(k, max_model_len - total)
    if k <= 0:
        return []
    tokens = list(context)
    # Longest n (capped at lookup_max) such that tokens[-n:] == tokens[j:j+n] for some j + n <= total - 1.
    # For each earlier end position e (exclusive end e < total), the matched length is the common suffix of
    # tokens[:e] and tokens, capped at lookup_max.
    best_len, best_start = 0, -1
    for end in range(total - 1, 0, -1):  # later ends first; ties move to earlier occurrences
        n = 0
        while n < lookup_max and n < end and tokens[end - 1 - n] == tokens[total - 1 - n]:
            n += 1
        if n >= best_len and n > 0:
            best_len, best_start = n, end - n
    if best_len < lookup_min:
        return []
    start = best_start + best_len
    return tokens[start : start + min(k, total - start)]
