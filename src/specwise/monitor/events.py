"""What the monitor loop reports, once per transition: a server going down or coming back, a server restart, an alert
opening or clearing, a fault in what a server reports starting or ending (non-finite samples, impossible counters),
a webhook that could not be delivered; with ``--json``, each judged window too. Each event's ``to_json()`` is the
JSON line (and webhook body) the monitor prints: ``{"at", "url", "event", ...}``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar


@dataclass(frozen=True)
class TargetDown:
    at: float
    url: str
    error: str
    event: ClassVar[str] = "target_down"

    def to_json(self) -> dict[str, Any]:
        return {"at": self.at, "url": self.url, "event": self.event, "error": self.error}


@dataclass(frozen=True)
class TargetUp:
    at: float
    url: str
    event: ClassVar[str] = "target_up"

    def to_json(self) -> dict[str, Any]:
        return {"at": self.at, "url": self.url, "event": self.event}


@dataclass(frozen=True)
class ServerRestart:
    """A server restarted inside a window (new ``_created`` timestamps, or counters going back where it exports
    none); reported once per restart: the window after it starts at the restart."""

    at: float
    url: str
    detail: str
    event: ClassVar[str] = "server_restart"

    def to_json(self) -> dict[str, Any]:
        return {"at": self.at, "url": self.url, "event": self.event, "detail": self.detail}


@dataclass(frozen=True)
class AlertOpened:
    at: float
    url: str
    rule: str
    severity: str
    message: str
    event: ClassVar[str] = "alert"

    def to_json(self) -> dict[str, Any]:
        return {
            "at": self.at,
            "url": self.url,
            "event": self.event,
            "rule": self.rule,
            "severity": self.severity,
            "message": self.message,
        }


@dataclass(frozen=True)
class AlertResolved:
    at: float
    url: str
    rule: str
    event: ClassVar[str] = "resolved"

    def to_json(self) -> dict[str, Any]:
        return {"at": self.at, "url": self.url, "event": self.event, "rule": self.rule}


@dataclass(frozen=True)
class TargetFault:
    """A server reports something a window must not use (``fault``: its kind; ``detail``: the first example)."""

    at: float
    url: str
    fault: str
    detail: str
    event: ClassVar[str] = "fault"

    def to_json(self) -> dict[str, Any]:
        return {"at": self.at, "url": self.url, "event": self.event, "fault": self.fault, "detail": self.detail}


@dataclass(frozen=True)
class FaultCleared:
    at: float
    url: str
    fault: str
    event: ClassVar[str] = "fault_cleared"

    def to_json(self) -> dict[str, Any]:
        return {"at": self.at, "url": self.url, "event": self.event, "fault": self.fault}


@dataclass(frozen=True)
class WebhookFailed:
    """A webhook gave up on an event (``failed_event``: that event's kind) after its retries."""

    at: float
    error: str
    failed_event: str
    event: ClassVar[str] = "webhook_failed"

    def to_json(self) -> dict[str, Any]:
        return {"at": self.at, "event": self.event, "error": self.error, "for": self.failed_event}


@dataclass(frozen=True)
class WindowJudged:
    """One judged window of a target (loop mode with ``--json`` only; never sent to a webhook): its stats and the
    alerts open after it."""

    at: float
    url: str
    stats: dict[str, Any]
    open_alerts: tuple[str, ...] = ()
    event: ClassVar[str] = "window"

    def to_json(self) -> dict[str, Any]:
        return {"at": self.at, "url": self.url, "event": self.event, "stats": self.stats, "alerts": [*self.open_alerts]}


MonitorEvent = (
    TargetDown
    | TargetUp
    | ServerRestart
    | AlertOpened
    | AlertResolved
    | TargetFault
    | FaultCleared
    | WebhookFailed
    | WindowJudged
)
