"""specwise's suffix proposer against Arctic Inference 0.1.1, the library vLLM's ``suffix`` method runs: its drafts
on seeded token streams (``tests/fixtures/suffix_arctic/regen.py`` wrote them from the real library), replayed with a
local tree per request and one global tree of outputs, as vLLM's ``SuffixDecodingProposer`` keeps them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specwise.profiler.suffix import SuffixTree, best_draft

FIXTURE = Path(__file__).parents[1] / "fixtures" / "suffix_arctic" / "arctic-0.1.1.json"
DOC = json.loads(FIXTURE.read_text())


@pytest.mark.parametrize("stream", sorted(DOC["streams"]))
def test_drafts_equal_arctics_up_to_ties(stream: str) -> None:
    depth = DOC["depth"]
    data = DOC["streams"][stream]
    glob = SuffixTree(depth)
    same = total = 0
    for (prompt, resp), steps in zip(data["requests"], data["drafts"], strict=True):
        local = SuffixTree(depth)
        local.extend(local.new_sequence(), prompt)
        own = glob.new_sequence()
        for t, step in enumerate(steps):
            local.append(0, resp[t])
            glob.append(own, resp[t])
            pattern = (prompt + resp[: t + 1])[-depth:]
            mine, others = local.drafts(pattern, 16), glob.drafts(pattern, 16)
            for k, want in step.items():
                a, b = best_draft(mine, int(k)), best_draft(others, int(k))
                got = a if a.score >= b.score else b
                total += 1
                if list(got.tokens) == want["tokens"]:
                    same += 1
                    assert got.score == pytest.approx(want["score"], abs=1e-6)
                else:  # Arctic breaks ties between equally frequent children its own way: same score, same length
                    assert got.score == pytest.approx(want["score"], abs=1e-6), (stream, t, k, got, want)
                    assert len(got.tokens) == len(want["tokens"]), (stream, t, k, got, want)
    assert same / total >= 0.98, f"{same} of {total} drafts identical"


def test_depth_bounds_match_plus_draft_and_match_length_caps_the_draft() -> None:
    tree = SuffixTree(max_depth=4)
    tree.extend(tree.new_sequence(), [1, 2, 3, 4, 5, 6, 7])
    # context (1, 2, 3): match 3 leaves one level of depth -> one token; match (2, 3) -> 2 tokens (4, 5), capped
    # at the match length 2; match (3,) -> 1 token. All have probability 1 (one occurrence, continued): the
    # longest draft scores highest
    drafts = tree.drafts([9, 1, 2, 3], 8)
    assert [(d.match_len, d.tokens) for d in drafts] == [(1, (4, 5, 6)), (2, (4, 5)), (3, (4,))]
    assert best_draft(drafts, 8).tokens == (4, 5)  # (1,): 3 tokens walked, capped at 1 x match length 1
    assert best_draft(drafts, 1).tokens == (4,) and best_draft(drafts, 1).match_len == 3  # a tie: the longer match


def test_probability_is_the_product_along_the_path_and_counts_the_context_itself() -> None:
    tree = SuffixTree()
    tree.extend(tree.new_sequence(), [5, 1, 2, 5, 1, 3, 5, 1])
    # (5, 1) occurs 3 times, the last at the end: 2 -> 1/3, 3 -> 1/3 (a tie; the first seen), below 0.1 never
    (d,) = [d for d in tree.drafts([5, 1], 4) if d.match_len == 1]
    assert d.tokens[0] in (2, 3) and d.probs[0] == pytest.approx(1 / 3, rel=1e-6)
    assert tree.drafts([7, 7], 4) == []  # nothing matches
