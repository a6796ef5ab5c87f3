"""Read a fleet's vLLM series from a Prometheus server (HTTP API) instead of scraping each server: the path for
fleets that already run Prometheus (issue 15).

Each evaluation sends one query per metric family (:data:`specwise.monitor.fleet.FAMILIES`): ``increase()`` over
the window evaluated by Prometheus, grouped ``by (model_name, instance)`` -- a fixed number of queries whatever the
fleet's size, each answering one series per replica instead of every ``vllm:*`` series. ``/api/v1/query_range``
with the same expressions back-fills the history before the monitor started (``--lookback``). The parsing and the
arithmetic are pure (:mod:`specwise.monitor.fleet`); this module is the HTTP edge.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from specwise.errors import SpecwiseError, redact_url
from specwise.monitor.events import MonitorEvent, TargetDown, TargetUp
from specwise.monitor.fetch import failure_words
from specwise.monitor.fleet import (
    FAMILIES,
    FleetWindow,
    Point,
    family_query,
    matchers,
    parse_answer,
    replica_windows,
    windows_over_time,
)
from specwise.monitor.loop import Emit, OnWindow, Target, observe_fleet
from specwise.monitor.predicted import SlowdownModel
from specwise.monitor.rules import Thresholds
from specwise.monitor.store import MonitorStore


@dataclass(frozen=True)
class Judge:
    """What each fleet window is judged by and where the verdicts go."""

    thresholds: Thresholds
    store: MonitorStore | None = None
    emit: Emit | None = None
    slowdown: SlowdownModel | None = None
    on_window: OnWindow | None = None

    def emit_event(self, event: MonitorEvent) -> None:
        if self.emit is not None:
            self.emit(event)


def _host(url: str) -> str:
    from urllib.parse import urlsplit

    try:
        return urlsplit(url).hostname or ""
    except ValueError:
        return ""


def api_get(prom_url: str, path: str, params: dict[str, str], timeout_s: float) -> tuple[Point, ...]:
    """One HTTP API call (``path``: ``query`` or ``query_range``); every failure is one line naming the server
    with its credentials redacted."""
    shown = redact_url(prom_url)
    try:
        resp = httpx.get(f"{prom_url.rstrip('/')}/api/v1/{path}", params=params, timeout=timeout_s)
    except httpx.HTTPError as exc:
        raise SpecwiseError(f"{shown}: Prometheus query failed: {failure_words(exc, _host(prom_url))}") from None
    try:
        body: Any = resp.json()
    except ValueError:
        raise SpecwiseError(f"{shown}: Prometheus answered HTTP {resp.status_code} without JSON") from None
    if resp.status_code >= 400 and not isinstance(body, dict):
        raise SpecwiseError(f"{shown}: Prometheus query failed: HTTP {resp.status_code}")
    return parse_answer(body, shown)


def discover_instances(prom_url: str, timeout_s: float = 10.0) -> list[str]:
    """Every ``instance`` that exports vLLM's spec-decode counters."""
    from specwise.engines.vllm import METRICS

    points = api_get(prom_url, "query", {"query": f"group by (instance) ({METRICS.spec_drafts})"}, timeout_s)
    return sorted({p.label("instance") for p in points if p.label("instance")})


def fleet_window(
    prom_url: str, window_s: float, at_s: float, instances: Sequence[str] = (), timeout_s: float = 10.0
) -> FleetWindow:
    """The fleet over the ``window_s`` seconds ending at ``at_s`` (Unix time): one instant query per family."""
    where = matchers(instances)
    answers = {
        f.key: api_get(prom_url, "query", {"query": family_query(f, window_s, where), "time": f"{at_s:.3f}"}, timeout_s)
        for f in FAMILIES
    }
    return FleetWindow(at_s, window_s, replica_windows(answers), queries=len(FAMILIES))


def fleet_history(
    prom_url: str,
    window_s: float,
    start_s: float,
    end_s: float,
    step_s: float,
    instances: Sequence[str] = (),
    timeout_s: float = 30.0,
) -> tuple[FleetWindow, ...]:
    """The fleet's windows every ``step_s`` seconds from ``start_s`` to ``end_s``: one range query per family."""
    where = matchers(instances)
    answers = {
        f.key: api_get(
            prom_url,
            "query_range",
            {
                "query": family_query(f, window_s, where),
                "start": f"{start_s:.3f}",
                "end": f"{end_s:.3f}",
                "step": f"{step_s:g}",
            },
            timeout_s,
        )
        for f in FAMILIES
    }
    return windows_over_time(answers, window_s)


class FleetSource:
    """The monitor loop's view of a fleet through Prometheus: one :class:`~specwise.monitor.loop.Target` per
    instance (added as instances appear), judged each round by :func:`~specwise.monitor.loop.observe_fleet`;
    ``server`` stands for Prometheus itself (down/up reported once per outage, like a scraped server)."""

    def __init__(self, prom_url: str, window_s: float, instances: Sequence[str] = (), timeout_s: float = 10.0) -> None:
        self.prom_url, self.window_s, self.instances, self.timeout_s = prom_url, window_s, tuple(instances), timeout_s
        self.server = Target(prom_url)
        self.targets: list[Target] = []
        self._by_instance: dict[str, Target] = {}
        self.queries = 0

    def _observe(self, windows: Sequence[FleetWindow], now: float, judge: Judge) -> None:
        if self.server.failing is not None:
            judge.emit_event(TargetUp(now, self.server.url))
            self.server.failing = None
        self.server.answered = True
        for w in windows:
            self.queries += w.queries
            observe_fleet(
                self._by_instance, w, judge.thresholds, judge.store, judge.emit, judge.slowdown, judge.on_window
            )
        self.targets += [t for t in self._by_instance.values() if t not in self.targets]

    def _failed(self, now: float, exc: SpecwiseError, judge: Judge) -> None:
        if self.server.failing is None:
            judge.emit_event(TargetDown(now, self.server.url, str(exc)))
        self.server.failing = str(exc)

    def backfill(self, lookback_s: float, now: float, step_s: float, judge: Judge) -> int:
        """Windows every ``step_s`` over the ``lookback_s`` seconds before ``now``, judged in time order (alerts
        that were open then are reported with their own times); how many windows were back-filled."""
        start = now - lookback_s
        try:
            windows = fleet_history(self.prom_url, self.window_s, start, now, step_s, self.instances, self.timeout_s)
        except SpecwiseError as exc:
            self._failed(now, exc, judge)
            return 0
        self._observe(windows, now, judge)
        self.queries += len(FAMILIES)
        return len(windows)

    def round(self, now: float, judge: Judge) -> None:
        """The window ending ``now``: one query per family."""
        try:
            window = fleet_window(self.prom_url, self.window_s, now, self.instances, self.timeout_s)
        except SpecwiseError as exc:
            self._failed(now, exc, judge)
            return
        self._observe([window], now, judge)
