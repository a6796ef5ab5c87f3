"""The monitor loop: scrape every server each interval, evaluate the last window, open/close alerts once.

Clock and sleep are passed in. Servers are scraped concurrently by a lean fetcher (:mod:`specwise.monitor.fetch`: a
total deadline and a body cap per fetch) and each answer is windowed as soon as it arrives, so a slow or hung server
never holds back the others' windows. A server that fails to answer (down, hanging, 500, garbage text, a page over
the cap) is reported once when it starts failing and once when it recovers; a server whose samples a window must not
use (non-finite values, impossible counters: :mod:`specwise.monitor.vet` per scrape,
:func:`~specwise.monitor.window.window_stats` per window) is reported once per fault kind; a restart is reported
once, and the next window starts after it; the loop keeps going. Memory stays bounded (the scrapes of one window per
server, the window's samples only; history in SQLite with retention). URLs are reported with credentials redacted.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from urllib.parse import urlsplit

from specwise.errors import SpecwiseError, redact_url
from specwise.metrics.exposition import Scrape
from specwise.metrics.families import FamilyParser
from specwise.monitor.events import (
    AlertOpened,
    AlertResolved,
    FaultCleared,
    MonitorEvent,
    ServerRestart,
    TargetDown,
    TargetFault,
    TargetUp,
)
from specwise.monitor.fetch import Endpoint, Scraper, Slot, endpoint, redact
from specwise.monitor.fleet import FleetWindow, instance_stats
from specwise.monitor.predicted import SlowdownModel
from specwise.monitor.report import ServerWindow
from specwise.monitor.rules import AlertState, Finding, Thresholds, check, held_rules, unjudged_note
from specwise.monitor.store import MonitorStore
from specwise.monitor.vet import fault_alert, first_of_each_kind, vet
from specwise.monitor.window import WINDOW_SAMPLES, WindowStats, window_stats

TARGET_DOWN = "target_down"  # the alert a --once report raises for a server that did not answer
SERVER_RESTART = "server_restart"  # the alert a --once report raises for a restart inside its window
RESTART_DETAIL = "the server restarted inside the window (new _created timestamps, or counters went back)"
RESTART_WHILE_DOWN = "the server restarted while it was down (new _created timestamps, or counters went back)"


@dataclass
class Target:
    """One watched server. Windows span the last ``window_scrapes`` scrapes (``--window / --interval``); only
    those are kept, reduced to the samples windows read, so memory is bounded per target. ``url`` is how the
    target is reported (credentials redacted); ``source`` is what is fetched (default: ``url``)."""

    url: str
    window_scrapes: int = 1
    previous: Scrape | None = None
    previous_t: float = 0.0
    failing: str | None = None
    alerts: AlertState = field(default_factory=AlertState)
    last: WindowStats | None = None
    history: deque[tuple[float, Scrape]] = field(default_factory=deque)
    source: str = field(default="", repr=False)
    faults: AlertState = field(default_factory=AlertState)
    answered: bool = False  # a scrape has succeeded at least once
    slot: Slot = field(default_factory=Slot, repr=False, compare=False)
    _endpoint: Endpoint | None = field(default=None, repr=False, compare=False)
    instance: str = ""  # Prometheus' name for it: HOST:PORT of its URL unless given (never with userinfo)
    model_name: str = ""  # the model_name label(s) of its spec-decode series, comma-joined
    restarts: int = 0  # restarts seen (each reported once)
    judged: int = 0  # windows judged

    def __post_init__(self) -> None:
        if not self.source:
            self.source = self.url
        self.url = redact_url(self.url)
        if not self.instance:
            self.instance = instance_of(self.source)

    @property
    def alerting(self) -> bool:
        """Whether the target counts as an alert now: an open alert, down (or never up), restarted, or a fault still
        reported (impossible counters, non-finite samples: each an alert in ``--once`` too)."""
        return bool(self.alerts.active or self.failing or self.restarts or self.faults.active)

    @property
    def endpoint(self) -> Endpoint:
        if self._endpoint is None:
            self._endpoint = endpoint(self.source)
        return self._endpoint

    def remember(self, now: float, scrape: Scrape) -> None:
        self.history.append((now, scrape))
        while len(self.history) > self.window_scrapes:
            self.history.popleft()
        self.previous, self.previous_t = scrape, now


def instance_of(url: str) -> str:
    """``http://user:pw@host:8000/metrics`` -> ``host:8000``, as Prometheus names a scraped target's
    ``instance`` (the default port of the scheme when none is given); credentials never part of it."""
    try:
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return ""
    host = parts.hostname or ""
    if not host:
        return ""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


_SCRAPER: Scraper | None = None


def window_parser() -> FamilyParser:
    """A parser that keeps exactly the samples windows read."""
    return FamilyParser(WINDOW_SAMPLES)


def default_scraper() -> Scraper:
    """One shared fetcher (event loop, kept-alive connections) for callers that do not bring their own."""
    global _SCRAPER
    if _SCRAPER is None:
        _SCRAPER = Scraper(window_parser())
    return _SCRAPER


def scrape(url: str, timeout_s: float) -> Scrape:
    """Fetch and parse one /metrics page (the samples windows read); every failure is one :class:`SpecwiseError`
    naming the URL (credentials redacted)."""
    [result] = default_scraper().fetch_all([url], timeout_s)
    if isinstance(result, SpecwiseError):
        raise result
    return result


def findings(stats: WindowStats, thresholds: Thresholds, slowdown: SlowdownModel | None = None) -> list[Finding]:
    """The threshold rules, plus the perf model's predicted net slowdown when a scenario was given."""
    out = check(stats, thresholds)
    predicted = slowdown.check(stats, thresholds.min_drafts) if slowdown is not None else None
    return [*out, predicted] if predicted else out


def assess(
    stats: WindowStats, thresholds: Thresholds, slowdown: SlowdownModel | None = None
) -> tuple[WindowStats, list[Finding]]:
    """:func:`findings`, and ``stats`` with a note when the window had too few drafts for the rules to judge, when
    the server serves another model than the scenario behind the slowdown check, or when --k disagrees with the
    live draft length."""
    notes = [unjudged_note(stats, thresholds)]
    if slowdown is not None:
        notes += [slowdown.model_note(stats.model_names), slowdown.k_note(stats, thresholds.min_drafts)]
    if any(notes):
        stats = replace(stats, notes=(*stats.notes, *(n for n in notes if n)))
    return stats, findings(stats, thresholds, slowdown)


_POOL: ThreadPoolExecutor | None = None


def _fetch_all(
    urls: list[str], fetch: Callable[[str], Scrape], workers: int, deadline_s: float | None
) -> list[Scrape | SpecwiseError]:
    """A caller's own (blocking) fetch function over every URL; with ``workers`` > 1 on threads, each result
    waited for at most ``deadline_s`` (a fetch still running then is reported as failed and left to finish)."""

    def one(url: str) -> Scrape | SpecwiseError:
        try:
            return fetch(url)
        except SpecwiseError as exc:
            return exc

    if workers <= 1 or len(urls) <= 1:
        return [one(u) for u in urls]
    global _POOL
    if _POOL is None:
        _POOL = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="specwise-scrape")
    futures = [_POOL.submit(one, u) for u in urls]
    wait(futures, timeout=deadline_s)
    return [
        f.result() if f.done() else SpecwiseError(f"{redact_url(u)}: scrape failed: no answer within {deadline_s:g} s")
        for u, f in zip(urls, futures, strict=True)
    ]


Emit = Callable[[MonitorEvent], None]
OnWindow = Callable[["Target", float], None]  # a target was judged at this time (its window in ``Target.last``)


def _out(emit: Emit | None, event: MonitorEvent) -> None:
    if emit is not None:
        emit(event)


@dataclass(frozen=True)
class _Round:
    thresholds: Thresholds
    store: MonitorStore | None
    emit: Emit | None
    slowdown: SlowdownModel | None
    on_window: OnWindow | None = None

    def record(self, url: str, now: float, event: str, rule: str, message: str) -> None:
        if self.store is not None:
            self.store.add_alert(url, now, event, rule, message)


def _judge(t: Target, now: float, stats: WindowStats, r: _Round) -> None:
    """Record a window of ``t``, run the rules, report and record the alert transitions."""
    stats, found = assess(stats, r.thresholds, r.slowdown)
    t.last = stats
    t.judged += 1
    if r.store is not None:
        r.store.add_window(t.url, now, stats.to_dict())
    opened, cleared = t.alerts.update(found, held_rules(stats, r.thresholds, t.alerts.active))
    for f in opened:
        _out(r.emit, AlertOpened(now, t.url, f.rule, f.severity, f.message))
        r.record(t.url, now, "open", f.rule, f.message)
    for rule in cleared:
        _out(r.emit, AlertResolved(now, t.url, rule))
        r.record(t.url, now, "resolved", rule, "")
    if r.on_window is not None:
        r.on_window(t, now)


def _faults(t: Target, now: float, faults: list[tuple[str, str]], r: _Round) -> None:
    """Report and record each fault kind once when it starts and once when it clears."""
    opened, cleared = t.faults.update([Finding(kind, "warning", detail) for kind, detail in faults])
    for f in opened:
        _out(r.emit, TargetFault(now, t.url, f.rule, f.message))
        r.record(t.url, now, "fault", f.rule, f.message)
    for kind in cleared:
        _out(r.emit, FaultCleared(now, t.url, kind))
        r.record(t.url, now, "fault_cleared", kind, "")


def _down(t: Target, now: float, result: SpecwiseError, r: _Round) -> None:
    error = redact(str(result).replace(t.source, t.url))
    if t.failing is None:
        _out(r.emit, TargetDown(now, t.url, error))
        r.record(t.url, now, "down", TARGET_DOWN, error)
    t.failing = error


def _restart(t: Target, now: float, detail: str, r: _Round) -> None:
    t.restarts += 1
    _out(r.emit, ServerRestart(now, t.url, detail))
    r.record(t.url, now, "restart", SERVER_RESTART, detail)


def _restarted_while_down(t: Target, now: float, scrape: Scrape | None) -> bool:
    """Whether the server that answers again is a new life of the one last scraped before the outage: the same
    test as inside a window (new ``_created`` timestamps, or counters gone back where there are none), against the
    last good scrape (kept through the outage; a real restart takes tens of seconds of failed scrapes)."""
    if t.previous is None or scrape is None:
        return False
    return window_stats(t.previous, scrape, max(now - t.previous_t, 1e-9)).counter_reset


def _observe(t: Target, now: float, result: Scrape | SpecwiseError, r: _Round) -> None:
    """One scrape result of ``t`` at ``now``: failure/recovery, faults, restart, the window, the scrape kept."""
    if isinstance(result, SpecwiseError):
        _down(t, now, result, r)
        return
    vetted = vet(result)
    if t.failing is not None:
        _out(r.emit, TargetUp(now, t.url))
        r.record(t.url, now, "up", "target_up", "")
        t.failing = None
        t.history.clear()  # do not window across the outage
        if _restarted_while_down(t, now, vetted.scrape):
            _restart(t, now, RESTART_WHILE_DOWN, r)
    t.answered = True
    stats = None
    if vetted.scrape is not None and t.history and now > t.history[0][0]:
        base_t, base = t.history[0]
        stats = window_stats(base, vetted.scrape, now - base_t, after_at=now)  # the clock: unix time, as _created
        t.model_name = ",".join(stats.model_names)
    _faults(t, now, [*vetted.faults, *(stats.faults if stats else ())], r)
    if vetted.scrape is None:
        return
    if stats is not None:
        if stats.counter_reset:  # reported once: the windows after it start at the restart
            _restart(t, now, RESTART_DETAIL, r)
            t.history.clear()
        _judge(t, now, stats, r)
    t.remember(now, vetted.scrape)


def observe_fleet(
    targets: dict[str, Target],
    fleet: FleetWindow,
    thresholds: Thresholds,
    store: MonitorStore | None,
    emit: Emit | None,
    slowdown: SlowdownModel | None = None,
    on_window: OnWindow | None = None,
) -> None:
    """One fleet window read from Prometheus (:mod:`specwise.monitor.prometheus_source`): each instance in it
    becomes (or updates) the target of that name and is judged by the same rules, with the same hysteresis, as a
    scraped server (its replicas' faults reported as a scraped server's); the window's end time stamps the
    transitions (so back-filled history keeps its own times)."""
    r = _Round(thresholds, store, emit, slowdown, on_window)
    for instance, rows in fleet.instances().items():
        t = targets.get(instance)
        if t is None:
            t = targets[instance] = Target(instance, instance=instance)
        t.answered = True
        t.model_name = ",".join(sorted({row.model_name for row in rows}))
        t.previous_t = fleet.end_s  # the window's time: what the dashboard keys each new point on
        stats = instance_stats(rows, fleet.window_s)
        _faults(t, fleet.end_s, list(stats.faults), r)
        _judge(t, fleet.end_s, stats, r)
    if store is not None:
        store.commit()


def evaluate_once(
    targets: list[Target],
    thresholds: Thresholds,
    store: MonitorStore | None,
    emit: Emit | None,
    *,
    clock: Callable[[], float] = time.time,
    fetch: Callable[[str], Scrape] | None = None,
    slowdown: SlowdownModel | None = None,
    workers: int = 1,
    scraper: Scraper | None = None,
    deadline_s: float | None = None,
    on_window: OnWindow | None = None,
) -> None:
    """One pass over every target: scrape, window against the kept scrapes, rules, transitions.

    By default every target is fetched at once by ``scraper`` (each within ``deadline_s``) and handled as its
    answer arrives. With ``fetch`` (a blocking function of the target's URL; ``workers`` at a time) the results are
    handled in target order. The history database is committed once per pass; ``on_window`` hears of each
    judged window."""
    r = _Round(thresholds, store, emit, slowdown, on_window)
    if fetch is not None:
        fetched = _fetch_all([t.source for t in targets], fetch, workers, deadline_s)
        for t, result in zip(targets, fetched, strict=True):
            _observe(t, clock(), result, r)
    else:
        sc = scraper or default_scraper()
        sc.round(
            [(t.endpoint, t.slot) for t in targets],
            lambda i, result: _observe(targets[i], clock(), result, r),
            deadline_s,
        )
    if store is not None:
        store.commit()


def fleet_findings(
    fleet: FleetWindow, thresholds: Thresholds, slowdown: SlowdownModel | None = None
) -> tuple[tuple[str, Finding], ...]:
    """What each instance of a fleet window raises, by the same rules as a scraped server's window: an alert per
    fault kind of its replicas (:func:`~specwise.monitor.vet.fault_alert`), then the rules' findings."""
    out: list[tuple[str, Finding]] = []
    for instance, rows in fleet.instances().items():
        stats = instance_stats(rows, fleet.window_s)
        out += [(instance, fault_alert(kind, detail)) for kind, detail in first_of_each_kind(stats.faults)]
        out += [(instance, f) for f in findings(stats, thresholds, slowdown)]
    return tuple(out)


def server_window(
    url: str,
    first: Scrape | SpecwiseError,
    second: Scrape | SpecwiseError,
    window_s: float,
    thresholds: Thresholds,
    slowdown: SlowdownModel | None = None,
    after_at: float | None = None,
) -> ServerWindow:
    """One server's window between two scrape results ``window_s`` seconds apart (``--once``; ``after_at``: when the
    second was taken, unix seconds, which dates a restart inside the window), or why there is
    none, by the same rules as the loop's and a fleet's: a server that did not answer is a ``target_down`` alert;
    one whose page has a fault (:mod:`specwise.monitor.vet`: a dropped non-finite gauge as well as counters no live
    server can report) raises an alert per fault kind, as the loop reports one. A restart inside the window is an
    alert, and so is each kind of fault in the window's counts, once
    (:func:`~specwise.monitor.vet.first_of_each_kind`)."""
    if isinstance(first, SpecwiseError) or isinstance(second, SpecwiseError):
        error = redact(str(first if isinstance(first, SpecwiseError) else second))
        down = Finding(TARGET_DOWN, "critical", "target down: " + error.removeprefix(f"{url}: "))
        return ServerWindow(url, None, (down,), error=error)
    before, after = vet(first), vet(second)
    faults = dict.fromkeys((*before.faults, *after.faults))
    if before.scrape is None or after.scrape is None:
        alerts = tuple(fault_alert(kind, d) for kind, d in first_of_each_kind(faults))
        return ServerWindow(url, None, alerts, error=redact(f"{url}: " + "; ".join(d for _, d in faults)))
    stats = None
    try:
        stats = window_stats(before.scrape, after.scrape, window_s, after_at)
        stats, found = assess(stats, thresholds, slowdown)
    except SpecwiseError as exc:
        return ServerWindow(url, stats, error=redact(str(exc)))
    if stats.counter_reset:
        found.append(Finding(SERVER_RESTART, "warning", RESTART_DETAIL))
    found += [fault_alert(kind, detail) for kind, detail in first_of_each_kind([*faults, *stats.faults])]
    return ServerWindow(url, stats, tuple(found))
