import pytest

from specwise.profiler.ngram import propose
from specwise.profiler.suffix import SuffixTree

# Expected values produced by vLLM 0.32's own _find_longest_matched_ngram_and_propose_tokens
# (vllm/v1/spec_decode/ngram_proposer.py); tests/integration/test_ngram_vs_vllm.py re-checks 300 random cases.
VLLM_CASES = [
    ([1, 2, 3, 4, 1, 2, 3, 5, 6], 2, 2, 2, []),
    ([1, 2, 3, 4, 1, 2, 3], 2, 2, 2, [4, 1]),
    ([1, 2, 3, 4, 1, 2, 3], 2, 3, 3, [4, 1, 2]),
    ([1, 2, 3, 4, 1, 2, 3], 4, 5, 2, []),
    ([5, 5, 5, 5], 1, 3, 4, [5]),
    ([1, 2, 1, 2, 1, 2], 1, 2, 5, [1, 2, 1, 2]),
    ([7, 1, 2, 9, 1, 2, 8, 1, 2], 1, 3, 2, [9, 1]),
    ([1], 1, 1, 2, []),
    ([1, 2], 1, 1, 2, []),
]


@pytest.mark.parametrize(("tokens", "lo", "hi", "k", "expected"), VLLM_CASES)
def test_ngram_matches_vllm(tokens: list[int], lo: int, hi: int, k: int, expected: list[int]) -> None:
    assert propose(tokens, k, lo, hi) == expected


def test_ngram_respects_max_model_len() -> None:
    assert propose([1, 2, 3, 1, 2], 3, 2, 2, max_model_len=6) == [3]
    assert propose([1, 2, 3, 1, 2], 3, 2, 2, max_model_len=5) == []


def test_suffix_incremental_append_equals_bulk() -> None:
    seq = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 1, 4, 1]
    bulk, inc = SuffixTree(5), SuffixTree(5)
    bulk.extend(bulk.new_sequence(), seq)
    own = inc.new_sequence()
    for t in seq:
        inc.append(own, t)
    assert bulk._count == inc._count and bulk._children == inc._children


def test_suffix_proposals_per_k_are_vllms_not_prefixes() -> None:
    # the global tree holds an earlier output; at k = 1 the best draft is one token, at k = 4 a longer match's
    from specwise.profiler.analysis import lookup_token_proposals

    history = SuffixTree()
    history.extend(history.new_sequence(), [1, 2, 3, 4, 5, 6])
    by_k = lookup_token_proposals("suffix", [9, 9, 1, 2], [3, 4, 5, 6], 3, (1, 4), 1, 1, history)
    assert by_k[1][0] == [3] and by_k[4][0] == [3, 4]  # context ..1 2: match (1, 2) caps the draft at 2 tokens
    assert by_k[4][1] == [4, 5, 6]  # after 3: match (1, 2, 3) allows 3
    assert history._seqs[1] == [3, 4, 5, 6]  # the walked output joined the global tree, all of it
