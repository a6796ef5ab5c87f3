"""The load an "enable below ~X QPS" names is no further than what speculation serves (review s60: "below ~9.7
QPS" for a schedule that serves 9.3 req/s and k's that serve at most 9.4)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from specwise.advisor.decision import _edge


def _sim(bound: tuple[float, ...], capacities: dict[int, float]) -> Any:
    return SimpleNamespace(capacity_bound_qps=bound, capacity_per_s_by_k=capacities)


GAINS = {4.0: 1.8, 8.0: 1.73, 10.0: 0.94}  # 10 QPS: no k keeps up (capacity / load)


def test_an_edge_interpolated_past_every_ks_capacity_stops_at_the_largest() -> None:
    sim = _sim((10.0,), {0: 13.5, 1: 9.4, 2: 9.1, 4: 8.2})
    edge, why = _edge(sim, GAINS, 1.05, 10.0, None)
    assert edge == 9.4 and why == "the most any k serves with speculation (9.4 req/s)"


def test_the_schedules_capacity_caps_it_too() -> None:
    sim = _sim((10.0,), {0: 13.5, 1: 9.4})
    edge, why = _edge(sim, GAINS, 1.05, 10.0, 9.28)
    assert edge == 9.28 and why == "what the config's schedule serves (9.3 req/s)"


def test_an_edge_between_loads_that_keep_up_is_interpolated() -> None:
    gains = {4.0: 1.5, 8.0: 0.9}
    edge, why = _edge(_sim((), {0: 20.0, 2: 15.0}), gains, 1.0, 8.0, 16.0)
    assert edge == pytest.approx(4.0 + 4.0 * 0.5 / 0.6) and why == ""


def test_a_schedule_that_cannot_serve_a_paying_load_is_not_written() -> None:
    """Code review s60: the schedule's one saturated run can fall below a load where speculation pays (the k's
    capacities are means of several runs); its queue would grow there, so the config keeps one k instead."""
    from specwise.advisor.decision import _unserved
    from specwise.contracts.advice import ScheduleCheck

    paying_bound = (ScheduleCheck(4.0, 1.3), ScheduleCheck.bound(8.0, 7.9), ScheduleCheck.bound(10.0, 7.9))
    words = _unserved(paying_bound, failing=[10.0])
    assert words == (
        "; no k-by-batch-size schedule: the one simulated serves 7.9 req/s, below 8 QPS where speculation pays, so "
        "the config keeps one k"
    )
    assert _unserved(paying_bound, failing=[8.0, 10.0]) == ""  # bounds only where it loses anyway: kept
    assert _unserved((ScheduleCheck(4.0, 1.3),), failing=[]) == ""
