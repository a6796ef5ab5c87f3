import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specwise.acceptance.counts import SpecDecodeCounts
from specwise.acceptance.model import AcceptanceModel
from specwise.profiler.counting import walk, walk_model_draft, walk_with_steps


def test_all_accepted_gives_al_k_plus_1() -> None:
    c = walk_model_draft(np.ones(40), n_start=32, k=4)
    assert c.acceptance_rate == 1.0
    assert c.mean_acceptance_length == 5.0
    # token 0 is the prefill's; steps start at 1, 6, 11, ..., 31: 7 drafts
    assert c.drafts == pytest.approx(7.0)
    assert c.per_position_or_none() == (1.0, 1.0, 1.0, 1.0)


def test_nothing_accepted_gives_al_1() -> None:
    c = walk_model_draft(np.zeros(20), n_start=16, k=3)
    assert c.acceptance_rate == 0.0 and c.mean_acceptance_length == 1.0
    assert c.drafts == pytest.approx(15.0)  # one token per step, from position 1 (token 0 is the prefill's)


@pytest.mark.parametrize("alpha", [0.3, 0.6, 0.9])
@pytest.mark.parametrize("k", [1, 3, 5])
def test_iid_matches_leviathan_closed_form(alpha: float, k: int) -> None:
    c = walk_model_draft(np.full(300, alpha), n_start=290, k=k)
    model = AcceptanceModel.iid(alpha)
    assert c.mean_acceptance_length == pytest.approx(model.mean_acceptance_length(k), rel=1e-9)
    assert c.acceptance_rate == pytest.approx(model.acceptance_rate(k), rel=1e-9)


def test_walk_matches_monte_carlo_of_the_chain() -> None:
    rng = np.random.default_rng(3)
    accept = rng.uniform(0.2, 0.95, size=60)
    n_start, k = 50, 4
    expected = walk_model_draft(accept, n_start, k)
    drafts = accepted = 0
    per_pos = np.zeros(k)
    trials = 20000
    for _ in range(trials):
        t = 1  # output token 0 comes from the prefill step
        while t < n_start:
            n = 0
            while n < k and rng.random() < accept[t + n]:
                n += 1
            drafts += 1
            accepted += n
            per_pos[:n] += 1
            t += n + 1
    assert drafts / trials == pytest.approx(expected.drafts, rel=0.01)
    assert accepted / drafts / k == pytest.approx(expected.acceptance_rate, abs=0.005)
    assert np.allclose(per_pos / drafts, expected.per_position_or_none(), atol=0.005)


def test_position_0_is_never_verified() -> None:
    """vLLM's prefill step samples output token 0 and verifies no draft; the first drafts cover positions 1..k."""
    props = [np.array([0.0, 0.0]), np.array([1.0, 1.0]), np.zeros(0), np.array([1.0])]
    c = walk(props, k=2)
    # t=1 drafts 2, both accepted -> t=4: past the sequence. A walk from t=0 would have rejected at t=0.
    assert (c.drafts, c.draft_tokens, c.accepted_tokens) == (1.0, 2.0, 2.0)
    from_zero = walk(props, k=2, start=0)
    assert (from_zero.drafts, from_zero.draft_tokens, from_zero.accepted_tokens) == (2.0, 4.0, 2.0)  # t=0 rejects both


def test_no_proposal_counts_no_draft() -> None:
    props = [np.zeros(0), np.array([1.0, 1.0]), np.zeros(0), np.zeros(0), np.array([0.0])]
    c = walk(props, k=2, start=0)
    # t=0 no draft -> t=1 drafts 2, both accepted -> t=4 drafts 1, rejected -> t=5 end
    assert (c.drafts, c.draft_tokens, c.accepted_tokens) == (2.0, 3.0, 2.0)
    assert c.accepted_per_position == (1.0, 1.0)


def test_the_walk_counts_steps_so_a_lookups_match_rate_is_drafts_over_steps() -> None:
    props = [np.zeros(0), np.array([1.0, 1.0]), np.zeros(0), np.zeros(0), np.array([0.0])]
    c, steps = walk_with_steps(props, k=2, start=0)
    # steps start at t = 0 (no draft), 1 (drafts, both accepted: the next starts at 4), 4 (drafts): 3 steps, 2 drafts
    assert steps == 3.0 and c.drafts == 2.0
    none, none_steps = walk_with_steps([np.zeros(0)] * 7, k=3)
    assert none.drafts == 0.0 and none_steps == 6.0  # no match anywhere: every position after the prefill's


def test_total_sums_counters() -> None:
    a = SpecDecodeCounts(1, 2, 1, (1.0, 0.0))
    b = SpecDecodeCounts(3, 6, 4, (3.0, 1.0))
    t = SpecDecodeCounts.total(2, [a, b])
    assert (t.drafts, t.draft_tokens, t.accepted_tokens, t.accepted_per_position) == (4, 8, 5, (4.0, 1.0))
    assert t.acceptance_rate == 5 / 8 and t.mean_acceptance_length == 1 + 5 / 4


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.floats(0, 1), min_size=12, max_size=60),
    st.integers(1, 8),
)
def test_walk_invariants(accept: list[float], k: int) -> None:
    arr = np.array(accept)
    n_start = max(1, len(arr) - k)
    c = walk_model_draft(arr, n_start, k)
    assert 0 <= c.accepted_tokens <= c.draft_tokens + 1e-9
    assert c.draft_tokens == pytest.approx(k * c.drafts)
    assert 1 <= c.mean_acceptance_length <= k + 1 + 1e-9
    assert all(x >= y - 1e-9 for x, y in zip(c.per_position_or_none(), c.per_position_or_none()[1:], strict=False))
    # every step emits 1 + accepted tokens and steps cover positions 1..n_start - 1 (the last may overshoot)
    assert c.drafts + c.accepted_tokens >= n_start - 1 - 1e-6
