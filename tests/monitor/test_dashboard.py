"""The dashboard's state API and page (the browser rendering is tests/integration/test_dashboard_browser.py)."""

from __future__ import annotations

import httpx

from specwise.monitor.dashboard import SERIES, Dashboard
from specwise.monitor.loop import Target, evaluate_once
from specwise.monitor.rules import Thresholds
from tests.conftest import mock_with_traffic


def test_state_has_one_point_per_window_and_bounded_history() -> None:
    board = Dashboard(history=3)
    try:
        clock = iter(float(i) for i in range(100))
        with mock_with_traffic() as server:
            targets = [Target(server.url + "/metrics")]
            for _ in range(6):  # a request of its own in every window: the background traffic may lag (2 busy cores)
                body = {"model": "m", "prompt": "x", "max_tokens": 9}
                httpx.post(server.url + "/v1/completions", json=body, timeout=10)
                evaluate_once(targets, Thresholds(min_drafts=1), None, None, clock=lambda: next(clock))
                board.update(targets, 0.0)
                board.update(targets, 0.0)  # the same window twice counts once
        state = httpx.get(board.url + "api/state", timeout=5).json()
        [t] = state["targets"]
        assert state["windows"] == 5
        assert len(t["series"]["t"]) == 3  # ring of 3
        assert set(t["series"]) == {"t", *(key for key, _ in SERIES)}
        rates = [x for x in t["series"]["acceptance_rate"] if x is not None]
        assert rates and all(0 <= x <= 1 for x in rates)
        assert t["alerts"] and t["alerts"][0]["rule"] == "low_acceptance_rate"  # the mock accepts 0.25
        page = httpx.get(board.url, timeout=5).text
        assert "api/state" in page and "<script" in page and "http" not in page.split("<script>")[1]
        assert httpx.get(board.url + "nope", timeout=5).status_code == 404
    finally:
        board.close()


def test_fleet_windows_each_add_a_point_at_their_own_time() -> None:
    """In fleet mode (--prometheus) every window is a new point, stamped with the window's end (review 7 #3)."""
    from specwise.acceptance.counts import SpecDecodeCounts
    from specwise.monitor.fleet import FleetWindow, ReplicaWindow
    from specwise.monitor.loop import observe_fleet

    def fleet(end_s: float, rate: float) -> FleetWindow:
        return FleetWindow(
            end_s, 60.0, (ReplicaWindow("m", "a:8000", SpecDecodeCounts(100.0, 400.0, 400.0 * rate, ())),)
        )

    board = Dashboard()
    try:
        targets: dict[str, Target] = {}
        for end_s, rate in ((100.0, 0.5), (105.0, 0.6), (110.0, 0.7)):
            observe_fleet(targets, fleet(end_s, rate), Thresholds(), None, None)
            board.update(list(targets.values()), end_s)
        [t] = board.state()["targets"]
        assert t["series"]["t"] == [100.0, 105.0, 110.0]
        assert t["series"]["acceptance_rate"] == [0.5, 0.6, 0.7]
    finally:
        board.close()
