"""``specwise monitor --once``: one window per server, typed; ``to_json()`` is the ``--json`` document."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from specwise.monitor.fleet import FleetWindow
from specwise.monitor.predicted import SlowdownModel
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


def _predictor_json(slowdown: SlowdownModel | None) -> dict[str, Any]:
    """With --scenario: ``predictor`` (the object simulate and advise emit, plus what the check prices) and
    ``warnings`` (a calibration from other hardware, a --k the scenario does not model), as simulate's ``--json``
    carries them; nothing without."""
    if slowdown is None:
        return {}
    return {"predictor": slowdown.to_json(), "warnings": list(slowdown.warnings())}


@dataclass(frozen=True)
class MonitorReport:
    window_s: float
    servers: tuple[ServerWindow, ...]
    predictor: SlowdownModel | None = None  # with --scenario: the model behind the predicted-slowdown check

    @property
    def alerting(self) -> bool:
        return any(s.alerts for s in self.servers)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"window_s": self.window_s, "servers": [s.to_json() for s in self.servers]}
        return out | _predictor_json(self.predictor)


@dataclass(frozen=True)
class FleetReport:
    """``monitor --prometheus --once``: the fleet's window as Prometheus saw it (per-model roll-up, worst replicas,
    per-instance rows), the alerts each instance raises, and the windows back-filled from before the monitor
    started (``--lookback``)."""

    prometheus: str  # the server's URL, credentials redacted
    window: FleetWindow
    alerts: tuple[tuple[str, Finding], ...] = ()  # (instance, finding)
    history: tuple[FleetWindow, ...] = ()
    predictor: SlowdownModel | None = None  # with --scenario: the model behind the predicted-slowdown check

    @property
    def alerting(self) -> bool:
        return bool(self.alerts)

    def to_json(self) -> dict[str, Any]:
        return {
            "prometheus": self.prometheus,
            **self.window.to_json(),
            "alerts": [{"instance": i, **f.__dict__} for i, f in self.alerts],
            "history": [
                {"end_s": w.end_s, "models": [m.to_json() for m in w.models], "replicas": len(w.replicas)}
                for w in self.history
            ],
            **_predictor_json(self.predictor),
        }
