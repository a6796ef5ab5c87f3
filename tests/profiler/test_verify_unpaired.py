"""The unpaired check of ``profile --verify`` weighs both samples' noise (review s47d F6): the loop's 95% interval
alone left out the profile's own, so a 4-prompt profile at T = 1 (0.127) was called off against a loop at 0.074
[0.062, 0.086] where the paired check agreed."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from specwise.profiler.verify import unpaired_agrees


def test_a_wide_profile_interval_is_weighed() -> None:
    assert unpaired_agrees(0.074, (0.062, 0.086), 0.127, (0.05, 0.21))
    assert not unpaired_agrees(0.074, (0.062, 0.086), 0.127, (0.12, 0.134))  # a tight profile: a real difference
    assert not unpaired_agrees(0.074, (0.062, 0.086), 0.5, (0.48, 0.52))


def test_deterministic_rates_agree_within_rounding_only() -> None:
    assert unpaired_agrees(1.0, (1.0, 1.0), 0.999997, (1.0, 1.0))
    assert not unpaired_agrees(1.0, (1.0, 1.0), 0.9999, (None, None))


rates = st.floats(0.0, 1.0)


@given(rates, rates, rates, rates)
def test_a_prediction_inside_the_loops_interval_still_agrees(m: float, a: float, b: float, p: float) -> None:
    """What the old rule (the profile's number inside the loop's interval) passed, the new one passes too."""
    lo, hi = min(a, b, m), max(a, b, m)
    if lo <= p <= hi:
        assert unpaired_agrees(m, (lo, hi), p, (None, None))
