import pytest

from specwise.profiler.ngram import propose
from specwise.profiler.suffix import SuffixIndex

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


def test_suffix_follows_most_frequent_continuation() -> None:
    idx = SuffixIndex(max_depth=4)
    idx.add([1, 2, 3, 1, 2, 3, 1, 2, 4])
    # after (1, 2): 3 twice, 4 once -> 3; then (2, 3) -> 1, (3, 1) -> 2
    assert idx.propose([9, 1, 2], 3) == [3, 1, 2]


def test_suffix_threshold_and_unknown_context() -> None:
    idx = SuffixIndex(max_depth=2)
    idx.add([1, 2, 1, 3, 1, 4, 1, 5])
    assert idx.propose([1], 2, min_token_prob=0.3) == []  # four continuations, each 0.25
    assert idx.propose([42], 2) == []


def test_suffix_incremental_add_equals_bulk() -> None:
    seq = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 1, 4, 1]
    bulk, inc = SuffixIndex(5), SuffixIndex(5)
    bulk.add(seq)
    for end in range(1, len(seq) + 1):
        inc.add(seq[:end], start=end - 1)
    assert bulk._next == inc._next
