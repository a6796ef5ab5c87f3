"""A lookup's per-step rates split into a match rate and per-match acceptance (vLLM counts drafts only on a match)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from specwise.acceptance.lookup import split_per_step
from specwise.errors import SpecError

CNN_DM = (0.1235, 0.0896, 0.0684, 0.0539, 0.0429)  # SpecDecode-Bench's vLLM traces, per step


def test_the_split_keeps_the_per_step_rates_and_puts_the_first_match_token_at_the_fitted_rate() -> None:
    split = split_per_step(CNN_DM, 0.661)
    assert split.proposal_rate == pytest.approx(0.1235 / 0.661)
    per_match = split.per_match.per_position(5)
    assert per_match[0] == pytest.approx(0.661)
    for r, a in zip(CNN_DM, per_match, strict=True):
        assert split.proposal_rate * a == pytest.approx(r)  # the same accepted tokens per step


def test_a_first_rate_above_the_per_match_rate_means_every_step_matched() -> None:
    split = split_per_step((0.8, 0.7), 0.661)
    assert split.proposal_rate == 1.0
    assert split.per_match.per_position(2) == pytest.approx((0.8, 0.7))


@pytest.mark.parametrize(("rates", "given_match"), [((), 0.6), ((0.1,), 0.0), ((0.1,), 1.2)])
def test_bad_input_is_refused(rates: tuple[float, ...], given_match: float) -> None:
    with pytest.raises(SpecError):
        split_per_step(rates, given_match)


@given(
    st.lists(st.floats(0.0, 1.0), min_size=1, max_size=8).map(lambda xs: sorted(xs, reverse=True)),
    st.floats(0.2, 0.99),
)
def test_per_match_rates_never_increase_and_the_match_rate_is_a_share(rates: list[float], given_match: float) -> None:
    split = split_per_step(rates, given_match)
    per_match = split.per_match.per_position(len(rates))
    assert 0.0 < split.proposal_rate <= 1.0
    assert all(b <= a + 1e-12 for a, b in itertools.pairwise(per_match))
    assert all(0.0 <= a <= 1.0 for a in per_match)
