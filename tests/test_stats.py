"""``specwise.stats.Percentiles``: weighted percentiles are those of the samples repeated, interpolated as
``np.percentile`` interpolates (vLLM's ``benchmarks/serve.py``), so a run whose every chunk carries one token gets the
same p50 weighted or not (review s47a F4)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from specwise.stats import Percentiles


def test_unit_weights_interpolate_as_np_percentile() -> None:
    values = np.array([1.0, 2.0, 3.0, 4.0])
    weighted = Percentiles.of(values, np.ones(4))
    assert weighted == Percentiles.of(values)
    assert weighted.p50 == 2.5  # nearest rank said 2.0


@given(st.lists(st.tuples(st.floats(0.0, 10.0, allow_nan=False), st.integers(1, 6)), min_size=1, max_size=30))
def test_integer_weights_are_the_samples_repeated(pairs: list[tuple[float, int]]) -> None:
    values = np.array([v for v, _ in pairs])
    weights = np.array([w for _, w in pairs])
    got = Percentiles.of(values, weights)
    repeated = np.repeat(values, weights)
    want = np.percentile(repeated, [50, 90, 99])
    assert (got.p50, got.p90, got.p99) == pytest.approx(tuple(want), abs=1e-9)
    assert got.mean == pytest.approx(float(repeated.mean()))


def test_no_samples_are_nan() -> None:
    assert np.isnan(Percentiles.of(np.array([]), np.array([])).p50)


def test_interval_90_is_the_mean_plus_minus_students_t_half_width() -> None:
    from specwise.stats import interval_90, mean_half_width

    runs = [4.10, 3.98, 4.22, 4.05, 4.15]
    mean, half = mean_half_width(runs)
    low, high = interval_90(runs)
    assert (low + high) / 2 == pytest.approx(sum(runs) / 5) and high - low == pytest.approx(2 * half)
    # t(0.95, 4) = 2.132: half = 2.132 * sd / sqrt(5) with the sample sd (n - 1)
    sd = float(np.std(runs, ddof=1))
    assert half == pytest.approx(2.132 * sd / 5**0.5) and mean == pytest.approx(4.10)
    with pytest.raises(ValueError, match="2-"):
        interval_90([4.1])


def test_fmt_x_prints_a_speedup_or_a_dash() -> None:
    from specwise.units import fmt_x

    assert fmt_x(1.234) == "1.23x" and fmt_x(None) == "-" and fmt_x(0.995) == "0.99x"


def test_fmt_rate_keeps_two_significant_digits_below_one() -> None:
    """Review s59: capacities of 0.118 and 0.204 req/s printed as ~0.1 and ~0.2."""
    from specwise.units import fmt_rate

    assert [fmt_rate(x) for x in (0.118, 0.204, 0.054, 7.224, 41.3)] == ["0.12", "0.20", "0.054", "7.2", "41.3"]
    assert fmt_rate(3.996, 4.0) == "3.996" and fmt_rate(3.5, 4.0) == "3.5"  # beside a load: its side shown


def test_fmt_sig3_keeps_three_digits_and_no_e_notation() -> None:
    """Review s59: validate's tables printed 0.71 beside 0.771, and 1.02e+04."""
    from specwise.units import fmt_sig3

    got = [fmt_sig3(x) for x in (0.71, 0.771, 1.1, 25, 100.0, 0.00437, 999.6, 10200)]
    assert got == ["0.710", "0.771", "1.10", "25.0", "100", "0.00437", "1,000", "10,200"]
