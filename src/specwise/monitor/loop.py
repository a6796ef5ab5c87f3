"""The monitor loop: scrape every server each interval, evaluate the last window, open/close alerts once.

Clock and sleep are passed in. A server that fails to answer (down, hanging, 500, garbage text) is reported
once when it starts failing and once when it recovers, and the loop keeps going; memory stays bounded (the
scrapes of one window per server, vLLM samples only; history in SQLite with retention).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import httpx

from specwise.errors import SpecwiseError
from specwise.metrics import parse_exposition
from specwise.metrics.exposition import Scrape
from specwise.monitor.events import AlertOpened, AlertResolved, MonitorEvent, TargetDown, TargetUp
from specwise.monitor.predicted import SlowdownModel
from specwise.monitor.rules import AlertState, Finding, Thresholds, check
from specwise.monitor.store import MonitorStore
from specwise.monitor.window import WindowStats, window_stats


@dataclass
class Target:
    """One watched server. Windows span the last ``window_scrapes`` scrapes (``--window / --interval``); only
    those are kept, reduced to the ``vllm:*`` samples, so memory is bounded per target."""

    url: str
    window_scrapes: int = 1
    previous: Scrape | None = None
    previous_t: float = 0.0
    failing: str | None = None
    alerts: AlertState = field(default_factory=AlertState)
    last: WindowStats | None = None
    history: deque[tuple[float, Scrape]] = field(default_factory=deque)

    def remember(self, now: float, scrape: Scrape) -> None:
        self.history.append((now, _vllm_only(scrape)))
        while len(self.history) > self.window_scrapes:
            self.history.popleft()
        self.previous, self.previous_t = scrape, now


def _vllm_only(scrape: Scrape) -> Scrape:
    """The samples the window reads (vLLM's families), so a long window does not hold whole pages."""
    return Scrape(tuple(x for x in scrape.samples if x.name.startswith("vllm:")), scrape.types)


_CLIENT: httpx.Client | None = None


def _client() -> httpx.Client:
    """One pooled client for every scrape: ``httpx.get`` builds a new client (and TLS context) per call, which
    cost ~40 ms of CPU per scrape -- most of a 100-target round."""
    global _CLIENT
    if _CLIENT is None:
        _CLIENT = httpx.Client(limits=httpx.Limits(max_keepalive_connections=200))
    return _CLIENT


def scrape(url: str, timeout_s: float) -> Scrape:
    """Fetch and parse one /metrics page; every failure is one :class:`SpecwiseError` naming the URL."""
    try:
        resp = _client().get(url, timeout=timeout_s)
    except httpx.HTTPError as exc:
        raise SpecwiseError(f"{url}: scrape failed: {type(exc).__name__}") from None
    if resp.status_code >= 400:
        raise SpecwiseError(f"{url}: scrape failed: HTTP {resp.status_code}")
    return parse_exposition(resp.text, url)


def findings(stats: WindowStats, thresholds: Thresholds, slowdown: SlowdownModel | None = None) -> list[Finding]:
    """The threshold rules, plus the perf model's predicted net slowdown when a scenario was given."""
    out = check(stats, thresholds)
    predicted = slowdown.check(stats, thresholds.min_drafts) if slowdown is not None else None
    return [*out, predicted] if predicted else out


def _fetch_all(urls: list[str], fetch: Callable[[str], Scrape], workers: int) -> list[Scrape | SpecwiseError]:
    def one(url: str) -> Scrape | SpecwiseError:
        try:
            return fetch(url)
        except SpecwiseError as exc:
            return exc

    if workers <= 1 or len(urls) <= 1:
        return [one(u) for u in urls]
    with ThreadPoolExecutor(max_workers=min(workers, len(urls))) as pool:
        return list(pool.map(one, urls))


Emit = Callable[[MonitorEvent], None]


def _out(emit: Emit | None, event: MonitorEvent) -> None:
    if emit is not None:
        emit(event)


def _window(
    t: Target,
    now: float,
    current: Scrape,
    thresholds: Thresholds,
    store: MonitorStore | None,
    emit: Emit | None,
    slowdown: SlowdownModel | None,
) -> None:
    """Window ``current`` against the oldest scrape kept, run the rules, report and record the transitions."""
    base_t, base = t.history[0]
    stats = window_stats(base, current, now - base_t)
    t.last = stats
    if store is not None:
        store.add_window(t.url, now, stats.to_dict())
    opened, cleared = t.alerts.update(findings(stats, thresholds, slowdown))
    for f in opened:
        _out(emit, AlertOpened(now, t.url, f.rule, f.severity, f.message))
        if store is not None:
            store.add_alert(t.url, now, "open", f.rule, f.message)
    for rule in cleared:
        _out(emit, AlertResolved(now, t.url, rule))
        if store is not None:
            store.add_alert(t.url, now, "resolved", rule, "")


def evaluate_once(
    targets: list[Target],
    thresholds: Thresholds,
    store: MonitorStore | None,
    emit: Emit | None,
    *,
    clock: Callable[[], float] = time.time,
    fetch: Callable[[str], Scrape] = lambda url: scrape(url, 5.0),
    slowdown: SlowdownModel | None = None,
    workers: int = 1,
) -> None:
    """One pass over every target: scrape (``workers`` at a time), window against the previous scrape, rules,
    transitions (in target order)."""
    fetched = _fetch_all([t.url for t in targets], fetch, workers)
    for t, result in zip(targets, fetched, strict=True):
        now = clock()
        if isinstance(result, SpecwiseError):
            if t.failing is None:
                _out(emit, TargetDown(now, t.url, str(result)))
            t.failing = str(result)
            continue
        if t.failing is not None:
            _out(emit, TargetUp(now, t.url))
            t.failing = None
            t.history.clear()  # do not window across the outage
        if t.history and now > t.history[0][0]:
            _window(t, now, result, thresholds, store, emit, slowdown)
        t.remember(now, result)
