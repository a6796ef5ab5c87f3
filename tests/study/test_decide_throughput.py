"""The throughput speedup of a sweep row (``study.decide._throughput_speedup``): steady-state output rates, not the
ratio of two finite runs' spans (review s60)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from specwise.study.decide import _throughput_speedup


def _run(tokens_per_s: float) -> Any:
    return SimpleNamespace(output_tokens_per_s=tokens_per_s)


def test_both_keeping_up_is_exactly_one_whatever_the_spans() -> None:
    assert _throughput_speedup(_run(1_800.0), _run(1_750.0), 8.0, 9.4, 13.5) == 1.0


def test_above_a_capacity_it_is_the_share_of_the_load_each_serves() -> None:
    """Review s60: at 12 QPS a k that serves 6.67 req/s showed 1.06x over plain decoding's 9.49 (the finite runs'
    spans were mostly their drains); in steady state it is 6.67 / 9.49."""
    assert _throughput_speedup(_run(2_107.0), _run(1_990.0), 12.0, 6.67, 9.49) == pytest.approx(6.67 / 9.49)
    # only speculation keeps up: it serves the load, plain decoding its capacity
    assert _throughput_speedup(_run(1.0), _run(1.0), 10.0, 10.3, 9.5) == pytest.approx(10.0 / 9.5)


def test_without_capacities_it_is_the_runs_ratio() -> None:
    """An interrupted sweep has no capacity runs (review s46c): the two runs' ratio, as before."""
    assert _throughput_speedup(_run(1_200.0), _run(1_000.0), 12.0, None, 9.49) == pytest.approx(1.2)
    assert _throughput_speedup(_run(1.0), _run(1.0), 12.0, 5.0, 0.0) is None  # nothing served without speculation
