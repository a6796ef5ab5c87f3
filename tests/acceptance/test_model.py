from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from specwise.acceptance.model import AcceptanceModel, expected_speedup_iid, expected_tokens_per_step_iid
from specwise.errors import SpecError

# Leviathan et al. (2023), Table 4: (alpha from Table 3, gamma, c, published expected speedup).
# T5-XXL EnDe / CNNDM with T5-small/base/large drafts, at T=0 and T=1.
TABLE4 = [
    ("EnDe small T0", 0.75, 7, 0.02, 3.2),
    ("EnDe base T0", 0.80, 7, 0.04, 3.3),
    ("EnDe large T0", 0.82, 7, 0.11, 2.5),
    ("EnDe small T1", 0.62, 7, 0.02, 2.3),
    ("EnDe base T1", 0.68, 5, 0.04, 2.4),
    ("EnDe large T1", 0.71, 3, 0.11, 2.0),
    ("CNNDM small T0", 0.65, 5, 0.02, 2.4),
    ("CNNDM base T0", 0.73, 5, 0.04, 2.6),
    ("CNNDM large T0", 0.74, 3, 0.11, 2.0),
    ("CNNDM small T1", 0.53, 5, 0.02, 1.9),
    ("CNNDM base T1", 0.55, 3, 0.04, 1.8),
    ("CNNDM large T1", 0.56, 3, 0.11, 1.6),
]


@pytest.mark.parametrize(("name", "alpha", "gamma", "c", "published"), TABLE4, ids=[t[0] for t in TABLE4])
def test_leviathan_table4_expected_speedups(name: str, alpha: float, gamma: int, c: float, published: float) -> None:
    assert expected_speedup_iid(alpha, gamma, c) == pytest.approx(published, abs=0.1)


def test_vllm_worked_example() -> None:
    # vLLM PR #40662: per-position [0.906, 0.497, 0.203] -> AL 2.61, acceptance rate 53.5%.
    m = AcceptanceModel.from_per_position([0.906, 0.497, 0.203])
    assert m.mean_acceptance_length(3) == pytest.approx(2.606, abs=1e-9)
    assert m.acceptance_rate(3) == pytest.approx(0.535, abs=1e-3)
    assert m.per_position(3) == pytest.approx((0.906, 0.497, 0.203))


def test_iid_matches_closed_form() -> None:
    m = AcceptanceModel.iid(0.7)
    for k in range(0, 9):
        assert m.mean_acceptance_length(k) == pytest.approx(expected_tokens_per_step_iid(0.7, k))
    assert expected_tokens_per_step_iid(1.0, 4) == 5.0


def test_increasing_per_position_rates_are_rejected() -> None:
    with pytest.raises(SpecError, match=r"per_position\[1\].*cannot increase"):
        AcceptanceModel.from_per_position([0.5, 0.6])
    with pytest.raises(SpecError, match="alpha must be in"):
        AcceptanceModel.iid(1.2)


@given(rates=st.lists(st.floats(0.0, 1.0), min_size=1, max_size=6), k=st.integers(0, 10))
def test_distribution_properties(rates: list[float], k: int) -> None:
    m = AcceptanceModel(tuple(rates))
    dist = m.distribution(k)
    assert len(dist) == k + 1 and sum(dist) == pytest.approx(1.0)
    assert sum(n * p for n, p in enumerate(dist)) == pytest.approx(m.expected_accepted(k))
    assert m.mean_acceptance_length(k + 1) >= m.mean_acceptance_length(k)  # more k never lowers AL
    if k:
        assert 0.0 <= m.acceptance_rate(k) <= 1.0
        assert m.mean_acceptance_length(k) == pytest.approx(1 + m.acceptance_rate(k) * k)  # AL = 1 + rate * k


@given(alpha=st.floats(0.0, 0.999), k=st.integers(1, 8), c=st.floats(0.0, 1.0))
def test_more_alpha_never_hurts_analytic(alpha: float, k: int, c: float) -> None:
    assert expected_speedup_iid(min(1.0, alpha + 0.001), k, c) >= expected_speedup_iid(alpha, k, c) - 1e-12
