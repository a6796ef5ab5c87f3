"""``specwise monitor --once``: one window per server, typed; ``to_json()`` is the ``--json`` document."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from specwise.monitor.rules import Finding
from specwise.monitor.window import WindowStats


@dataclass(frozen=True)
class ServerWindow:
    """One server over the window: its stats and the alerts they raise, or why it could not be read."""

    url: str
    stats: WindowStats | None = None
    alerts: tuple[Finding, ...] = ()
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"url": self.url}
        if self.stats is not None:
            out["stats"] = self.stats.to_dict()
        if self.error is not None:
            out["error"] = self.error
        out["alerts"] = [f.__dict__ for f in self.alerts]
        return out


@dataclass(frozen=True)
class MonitorReport:
    window_s: float
    servers: tuple[ServerWindow, ...]

    @property
    def alerting(self) -> bool:
        return any(s.alerts for s in self.servers)

    def to_json(self) -> dict[str, Any]:
        return {"window_s": self.window_s, "servers": [s.to_json() for s in self.servers]}
