"""advise's rule at one load (advisor/band_rule.py): the band's ends against min_speedup, and no enable where the
predictor often gets the side of 1 wrong. ``validate`` scores this same function on the published measurements."""

from __future__ import annotations

import pytest

from specwise.advisor.band_rule import band_verdict, direction_guarded, interval_verdict


@pytest.mark.parametrize(
    ("speedup", "band", "verdict"),
    [
        (1.5, 0.26, "enable"),  # low end 1.11 clears 1.05
        (1.42, 0.26, "enable"),  # low end 1.0508: clears, just
        (1.41, 0.26, "measure_first"),  # low end 1.043: straddles
        (1.0, 0.26, "measure_first"),  # below the minimum, high end 1.26 clears it
        (0.84, 0.26, "measure_first"),  # high end 1.058 clears 1.05
        (0.83, 0.26, "disable"),  # high end 1.0458 misses it
        (0.80, 0.26, "disable"),  # high end 1.008
        (1.2, 0.0, "enable"),  # no band: the point estimate decides
        (1.04, 0.0, "disable"),
    ],
)
def test_band_ends_against_the_minimum(speedup: float, band: float, verdict: str) -> None:
    assert band_verdict(speedup, band, 1.05) == verdict


def test_a_poor_direction_record_turns_only_enable_into_measure_first() -> None:
    assert direction_guarded("enable", True) == "measure_first"
    assert direction_guarded("enable", False) == "enable"
    assert direction_guarded("disable", True) == "disable"
    assert direction_guarded("measure_first", True) == "measure_first"


@pytest.mark.parametrize(
    ("speedup", "band", "minimum", "verdict"),
    [
        (1.05, 0.0, 1.05, "enable"),  # the low end exactly at the minimum clears it (>=, as advise compares)
        (1.0, 0.05, 1.05, "measure_first"),  # the high end exactly at the minimum clears it
        (2.0, 0.5, 1.0, "enable"),  # low end exactly 1.0
        (0.5, 1.0, 1.0, "measure_first"),  # high end exactly 1.0
    ],
)
def test_an_end_exactly_at_the_minimum_clears_it(speedup: float, band: float, minimum: float, verdict: str) -> None:
    assert band_verdict(speedup, band, minimum) == verdict


@pytest.mark.parametrize(
    ("low", "high", "verdict"),
    [
        (1.42, 1.60, "enable"),  # the interval's low end 1.42 x 0.74 = 1.0508 clears 1.05
        (1.41, 1.60, "measure_first"),  # 1.0434 does not; the high end does
        (0.84, 0.84, "measure_first"),  # a point: band_verdict's answer
        (0.70, 0.84, "measure_first"),  # the high end 0.84 x 1.26 = 1.058 clears it
        (0.70, 0.83, "disable"),  # 1.0458 misses it
    ],
)
def test_an_interval_is_judged_by_its_ends(low: float, high: float, verdict: str) -> None:
    """The sampling noise's interval widens the band on both sides: enable needs its low end, disable its high end."""
    assert interval_verdict(low, high, 0.26, 1.05) == verdict
    if low == high:
        assert band_verdict(low, 0.26, 1.05) == verdict
