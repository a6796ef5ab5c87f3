"""The expected longer of two overlapped step parts (perfmodel/overlap.py: Clark 1961's first moment)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specwise.perfmodel.overlap import FAR_APART, expected_max_s
from specwise.perfmodel.profiles import EngineOverhead

seconds = st.floats(min_value=0.0, max_value=0.5, allow_nan=False)
jitters = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)


def test_no_jitter_is_the_hard_max() -> None:
    assert expected_max_s(3e-3, 1e-3, 0.0) == 3e-3
    assert expected_max_s(1e-3, 3e-3, 0.0) == 3e-3
    assert expected_max_s(0.0, 0.0, 0.2) == 0.0


def test_equal_parts_cost_one_plus_jitter_over_root_pi() -> None:
    """At a = b, alpha = 0: a/2 + a/2 + theta phi(0) with theta = c a sqrt(2), i.e. a (1 + c / sqrt(pi))."""
    assert expected_max_s(2e-3, 2e-3, 0.1) == pytest.approx(2e-3 * (1 + 0.1 / math.sqrt(math.pi)), rel=1e-12)


def test_far_apart_parts_cost_the_longer_one() -> None:
    """A part ten times the other, 5% jitter: alpha ~ 18 standard deviations, nothing left of the shorter one."""
    assert expected_max_s(10e-3, 1e-3, 0.05) == pytest.approx(10e-3, rel=1e-12)


@pytest.mark.parametrize(("a_s", "b_s", "jitter"), [(4e-3, 3e-3, 0.2), (1e-3, 1.2e-3, 0.1), (5e-3, 5e-3, 0.3)])
def test_matches_the_mean_of_sampled_maxima(a_s: float, b_s: float, jitter: float) -> None:
    """Clark's formula is the mean of max(A, B) for independent normal A, B: compared with 400,000 draws (a fixed
    seed), within five standard errors of the sample mean."""
    rng = np.random.default_rng(7)
    n = 400_000
    draws = np.maximum(rng.normal(a_s, jitter * a_s, n), rng.normal(b_s, jitter * b_s, n))
    tolerance = 5 * float(draws.std()) / math.sqrt(n)
    assert expected_max_s(a_s, b_s, jitter) == pytest.approx(float(draws.mean()), abs=tolerance)


@settings(max_examples=300, deadline=None)
@given(seconds, seconds, jitters)
def test_never_below_the_longer_part_and_symmetric(a_s: float, b_s: float, jitter: float) -> None:
    t = expected_max_s(a_s, b_s, jitter)
    assert math.isfinite(t)
    assert t >= max(a_s, b_s) * (1 - 1e-12)
    assert t == pytest.approx(expected_max_s(b_s, a_s, jitter), rel=1e-12, abs=1e-18)
    # no more than the longer part plus its share of the combined spread (phi(0) = 1/sqrt(2 pi) at most)
    assert t <= max(a_s, b_s) + jitter * math.hypot(a_s, b_s) / math.sqrt(2 * math.pi) + 1e-15


@settings(max_examples=200, deadline=None)
@given(seconds, seconds, st.floats(min_value=0.0, max_value=1.0), st.floats(min_value=0.0, max_value=1.0))
def test_grows_with_jitter(a_s: float, b_s: float, j1: float, j2: float) -> None:
    low, high = sorted((j1, j2))
    assert expected_max_s(a_s, b_s, low) <= expected_max_s(a_s, b_s, high) * (1 + 1e-12) + 1e-18


def test_smooth_where_the_hard_max_has_a_kink() -> None:
    """The hard max's slope in a jumps from 0 to 1 where a crosses b; the expected max's slope there is Phi(0) = 1/2
    plus the spread's own growth, d theta / da phi(0) = (c / sqrt 2) / sqrt(2 pi), and it changes continuously:
    finite differences on either side of the crossing agree."""
    b, c, h = 2e-3, 0.1, 1e-9

    def slope(a: float) -> float:
        return (expected_max_s(a + h, b, c) - expected_max_s(a - h, b, c)) / (2 * h)

    assert slope(b) == pytest.approx(0.5 + c / math.sqrt(2) / math.sqrt(2 * math.pi), abs=1e-4)
    assert slope(b * (1 - 1e-4)) == pytest.approx(slope(b * (1 + 1e-4)), abs=1e-3)


def test_the_engine_overhead_prices_overlapped_steps_with_it() -> None:
    o = EngineOverhead(
        base_s=2e-3,
        per_seq_s=0.0,
        per_draft_token_s=0.0,
        overlapped_without_speculation=True,
        overlapped_with_speculation=True,
        overlap_jitter=0.1,
    )
    assert o.plain_step_s(2e-3, 8) == pytest.approx(expected_max_s(2e-3, 2e-3, 0.1), rel=1e-15)
    assert o.plain_step_s(2e-3, 8) > 2e-3  # the hard max would hide the engine completely
    assert o.speculating_step_s(2.5e-3, 8, 0, 0.0) == pytest.approx(expected_max_s(2.5e-3, 2e-3, 0.1), rel=1e-15)
    in_series = EngineOverhead(base_s=2e-3, overlap_jitter=0.1)  # no overlap: the jitter changes nothing
    assert in_series.plain_step_s(2e-3, 8) == pytest.approx(4e-3)


def _clark(a_s: float, b_s: float, jitter: float) -> float:
    """The formula without the far-apart shortcut."""
    theta = jitter * math.hypot(a_s, b_s)
    alpha = (a_s - b_s) / theta
    cdf = 0.5 * (1.0 + math.erf(alpha / math.sqrt(2.0)))
    return a_s * cdf + b_s * (1.0 - cdf) + theta / math.sqrt(2 * math.pi) * math.exp(-0.5 * alpha * alpha)


@settings(max_examples=500, deadline=None)
@given(
    st.floats(min_value=1e-6, max_value=0.5),
    st.floats(min_value=0.0, max_value=1.0),
    st.floats(min_value=1e-3, max_value=1.0),
)
def test_the_far_apart_shortcut_changes_no_bit(a_s: float, share: float, jitter: float) -> None:
    """Where the shortcut answers max(a, b) (parts FAR_APART spreads apart or more), the full formula gives the same
    float."""
    b_s = a_s * share
    if abs(a_s - b_s) >= FAR_APART * jitter * math.hypot(a_s, b_s):
        assert _clark(a_s, b_s, jitter) == max(a_s, b_s) == expected_max_s(a_s, b_s, jitter)
        assert _clark(b_s, a_s, jitter) == max(a_s, b_s) == expected_max_s(b_s, a_s, jitter)  # either order


def test_subnormal_parts_cost_the_longer_one() -> None:
    """Found by the property test above: two parts of 5e-324 s (the smallest double) with jitter 1 underflowed
    Clark's terms to 0, below either part; below the smallest normal spread the hard max is the answer."""
    assert expected_max_s(5e-324, 5e-324, 1.0) == 5e-324
    assert expected_max_s(1e-310, 3e-310, 0.5) == 3e-310
