"""Where monitor events and state go: JSON lines, a webhook (retries, timeout), and the monitor's own /metrics.

Every sink failure is reported as an event of its own and never stops the loop. The exporter binds 127.0.0.1
unless told otherwise and serves ``specwise_*`` gauges that Prometheus/Grafana can alert on.
"""

from __future__ import annotations

import contextlib
import json
import queue
import threading
import time
from collections.abc import Callable, Iterable
from typing import TextIO

import httpx
from prometheus_client import CollectorRegistry, Gauge, generate_latest

from specwise.contracts.document import json_safe, map_leaves
from specwise.errors import redact_url
from specwise.monitor.events import MonitorEvent, WebhookFailed
from specwise.monitor.fetch import failure_words, redact
from specwise.monitor.http_serve import GetServer
from specwise.monitor.loop import Emit, Target
from specwise.monitor.rules import RULES
from specwise.monitor.vet import FAULTS

# Every alert the monitor can raise on a window, and every fault kind, has a specwise_alert_active series from the
# first update on (0 until it opens); a rule named per served model (class_drag:<model_name>) has one from when it
# first opens (then 0 again once it clears, never removed while the target keeps its labels).
ALERT_SERIES = (*RULES, *FAULTS)


def event_line(event: MonitorEvent) -> str:
    """An event as one JSON line: strict JSON (no NaN), URL credentials redacted in every string before it is
    serialised (a mask applied to the serialised line could reach past a value's closing quote)."""
    masked = map_leaves(json_safe(event.to_json()), lambda v: redact(v) if isinstance(v, str) else v)
    return json.dumps(masked, allow_nan=False)


def json_lines(out: TextIO) -> Emit:
    lock = threading.Lock()  # events may come from the webhook's delivery thread too

    def emit(event: MonitorEvent) -> None:
        with lock:
            out.write(event_line(event) + "\n")
            out.flush()

    return emit


class Background:
    """Runs a (blocking) sink on its own thread so a slow webhook never stalls the scrape loop. Events are
    delivered in order; past ``max_queued`` waiting events the newest is dropped and reported through
    ``on_drop`` once per overflow episode. :meth:`close` delivers what is queued, waiting at most ``drain_s``."""

    def __init__(self, sink: Emit, on_drop: Emit | None = None, max_queued: int = 1000) -> None:
        self.sink, self.on_drop = sink, on_drop
        self.queue: queue.Queue[MonitorEvent | None] = queue.Queue(maxsize=max_queued)
        self.dropping = False
        self.thread = threading.Thread(target=self._run, name="specwise-webhook", daemon=True)
        self.thread.start()

    def __call__(self, event: MonitorEvent) -> None:
        try:
            self.queue.put_nowait(event)
            self.dropping = False
        except queue.Full:
            if not self.dropping and self.on_drop is not None:
                self.on_drop(WebhookFailed(event.at, "delivery queue full: event dropped", event.event))
            self.dropping = True

    def _run(self) -> None:
        while (event := self.queue.get()) is not None:
            self.sink(event)

    def close(self, drain_s: float = 5.0) -> None:
        try:
            self.queue.put(None, timeout=drain_s)
        except queue.Full:
            return
        self.thread.join(drain_s)


_JSON = {"Content-Type": "application/json"}


def webhook(
    url: str,
    *,
    retries: int = 3,
    timeout_s: float = 5.0,
    backoff_s: float = 0.5,
    on_failure: Emit | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> Emit:
    """POST each event as JSON; retry on errors and 5xx/429; report a final failure through ``on_failure``."""

    def emit(event: MonitorEvent) -> None:
        last = ""
        for attempt in range(retries):
            try:
                resp = httpx.post(url, content=event_line(event), headers=_JSON, timeout=timeout_s)
                if resp.status_code < 400:
                    return
                last = f"HTTP {resp.status_code}"
                if resp.status_code < 500 and resp.status_code != 429:
                    break  # a client error will not get better
            except httpx.HTTPError as exc:
                last = failure_words(exc)
            if attempt + 1 < retries:
                sleep(backoff_s * (2**attempt))
        if on_failure is not None:
            on_failure(WebhookFailed(event.at, last, event.event))

    return emit


class MetricsExporter:
    """``specwise_*`` gauges about the watched servers, served at http://HOST:PORT/metrics.

    Each series carries ``target`` (the URL, credentials redacted), ``instance`` (HOST:PORT, as Prometheus names
    the server) and ``model_name`` (of the server's vLLM series), so they join with the ``vllm:*`` series
    Prometheus scrapes from the same servers (issue 15); no label ever holds URL userinfo."""

    LABELS = ("target", "instance", "model_name")

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self.registry = CollectorRegistry()
        labels = list(self.LABELS)
        self.up = Gauge(
            "specwise_target_up", "1 when the last scrape of the target succeeded", labels, registry=self.registry
        )
        self.acceptance = Gauge(
            "specwise_acceptance_rate", "accepted / draft tokens over the last window", labels, registry=self.registry
        )
        self.length = Gauge(
            "specwise_mean_acceptance_length",
            "1 + accepted / drafts over the last window",
            labels,
            registry=self.registry,
        )
        self.alert = Gauge(
            "specwise_alert_active", "1 while the rule's alert is open", [*labels, "rule"], registry=self.registry
        )
        self.restarts = Gauge(
            "specwise_server_restarts",
            "restarts of the target seen since the monitor started (new _created timestamps, or counters went back)",
            labels,
            registry=self.registry,
        )
        self._shown: dict[str, tuple[str, str, str]] = {}
        self._rules: dict[str, set[str]] = {}  # per target URL: the rules that have a series
        self.server = GetServer(host, port, self._route)

    def _route(self, path: str) -> tuple[int, str, bytes]:
        if path == "/metrics":
            return 200, "text/plain; version=0.0.4", generate_latest(self.registry)
        return 404, "text/plain; version=0.0.4", b"not found"

    @property
    def url(self) -> str:
        return self.server.base_url() + "/metrics"

    def _labels(self, t: Target) -> tuple[str, str, str]:
        """The target's label values (redacted); a target whose model_name changed loses its old series."""
        values = (redact(t.url), redact_url(t.instance), t.model_name)
        old = self._shown.get(t.url)
        if old is not None and old != values:
            for gauge in (self.up, self.acceptance, self.length, self.restarts):
                with contextlib.suppress(KeyError):
                    gauge.remove(*old)
            for rule in self._rules.get(t.url, ()):
                with contextlib.suppress(KeyError):
                    self.alert.remove(*old, rule)
        self._shown[t.url] = values
        return values

    def update(self, targets: Iterable[Target]) -> None:
        for t in targets:
            labels = self._labels(t)
            self.up.labels(*labels).set(0 if t.failing else 1)
            if t.last is not None:
                for gauge, value in (
                    (self.acceptance, t.last.acceptance_rate),
                    (self.length, t.last.mean_acceptance_length),
                ):
                    if value is not None:
                        gauge.labels(*labels).set(value)
                    else:  # no usable value this window (no drafts, impossible counts): no stale number
                        with contextlib.suppress(KeyError):
                            gauge.remove(*labels)
            self.restarts.labels(*labels).set(t.restarts)
            active = {*t.alerts.active, *t.faults.active}
            rules = self._rules.setdefault(t.url, set(ALERT_SERIES))
            rules |= active
            for rule in sorted(rules):
                self.alert.labels(*labels, rule).set(1 if rule in active else 0)

    def close(self) -> None:
        self.server.close()
