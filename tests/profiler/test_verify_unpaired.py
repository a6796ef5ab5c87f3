"""The unpaired check of ``profile --verify`` weighs both samples' noise (review s47d F6): the loop's 95% interval
alone left out the profile's own, so a 4-prompt profile at T = 1 (0.127) was called off against a loop at 0.074
[0.062, 0.086] where the paired check agreed."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from specwise.contracts.profile import ProfileK
from specwise.profiler.settings import ProfileSettings
from specwise.profiler.verify import _row, _Tally, unpaired_agrees


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


def _profile_k(rate: float, ci: tuple[float, float]) -> ProfileK:
    return ProfileK(4, rate, None, ci, (None, None), (), 40.0, 160.0, 160.0 * rate)


def test_the_verification_row_weighs_the_profiles_interval() -> None:
    """The row ``verify`` writes uses the profile's own interval (review s48c F10: the tests above pass without
    the wiring): four prompts whose loop accepts ~0.074 against a profile of 0.127, called off with a tight
    profile interval and not with a wide one."""
    loop = np.array([[10.0, 40.0, 2.0], [10.0, 40.0, 3.0], [10.0, 40.0, 3.5], [10.0, 40.0, 3.3]])
    tally = _Tally(loop, loop.copy())
    settings = ProfileSettings(bootstrap_resamples=200)
    wide = _row(tally, (1.0, "greedy", 4), 1, _profile_k(0.127, (0.05, 0.21)), settings, False)
    tight = _row(tally, (1.0, "greedy", 4), 1, _profile_k(0.127, (0.125, 0.129)), settings, False)
    assert wide.measured_acceptance_rate < 0.08 and not (wide.measured_ci95[0] <= 0.127 <= wide.measured_ci95[1])
    assert wide.unpaired_within_ci is True and tight.unpaired_within_ci is False
