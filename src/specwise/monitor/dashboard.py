"""``specwise monitor --serve 127.0.0.1:8800``: a small live web page of the tracked series and active alerts.

The page is one HTML document with inline CSS and a short inline script (no CDN, nothing fetched but this
server's own ``/api/state``) that polls the state and draws each series as an SVG line chart. History is a
bounded ring per target (``history`` windows), so a long-running monitor's memory stays flat.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from typing import Any

from specwise.contracts.document import json_safe
from specwise.monitor.http_serve import GetServer
from specwise.monitor.loop import Target

SERIES = (
    ("acceptance_rate", "acceptance rate"),
    ("mean_acceptance_length", "mean acceptance length"),
    ("generation_tokens_per_s", "generated tokens/s"),
    ("running", "running requests"),
)

_PAGE = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>specwise monitor</title>
<link rel="icon" href="data:,">
<style>
body{font-family:system-ui,sans-serif;margin:1.5em;color:#222} h1{font-size:1.3em} h2{font-size:1.05em}
.charts{display:flex;flex-wrap:wrap;gap:1em} .chart{border:1px solid #ddd;border-radius:6px;padding:.4em}
.chart h3{font-size:.85em;margin:.1em 0 .3em} .alerts li{color:#b00020} .ok{color:#137333}
.down{color:#b00020;font-weight:600} svg{background:#fafafa}
</style></head><body>
<h1>specwise monitor</h1><p id="updated">waiting for the first window...</p><div id="targets"></div>
<script>
const SERIES = __SERIES__;
function chart(id, title, ts, ys) {
  const w = 320, h = 140, pad = 28;
  const pts = ts.map((t, i) => [t, ys[i]]).filter(p => p[1] !== null);
  let body = "";
  if (pts.length) {
    const t0 = pts[0][0], t1 = Math.max(pts[pts.length - 1][0], t0 + 1e-9);
    const lo = Math.min(0, ...pts.map(p => p[1])), hi = Math.max(...pts.map(p => p[1]), lo + 1e-9);
    const xy = pts.map(p => [pad + (w - 2 * pad) * (p[0] - t0) / (t1 - t0),
                             h - pad - (h - 2 * pad) * (p[1] - lo) / (hi - lo)]);
    body = '<polyline fill="none" stroke="#1a73e8" stroke-width="2" points="' +
      xy.map(p => p[0].toFixed(1) + "," + p[1].toFixed(1)).join(" ") + '"/>' +
      xy.map(p => '<circle r="2.5" fill="#1a73e8" cx="' + p[0].toFixed(1) + '" cy="' + p[1].toFixed(1) +
                  '"/>').join("") +
      '<text x="4" y="14" font-size="10">' + hi.toPrecision(3) + '</text>' +
      '<text x="4" y="' + (h - pad + 4) + '" font-size="10">' + lo.toPrecision(3) + '</text>';
  }
  return '<div class="chart"><h3>' + title + '</h3><svg id="' + id + '" width="' + w + '" height="' + h +
    '" role="img" aria-label="' + title + '">' + body + '</svg></div>';
}
function esc(s) { const d = document.createElement("div"); d.textContent = s; return d.innerHTML; }
async function refresh() {
  try {
    const r = await fetch("api/state", {cache: "no-store"});
    const state = await r.json();
    let html = "";
    state.targets.forEach((t, i) => {
      const down = t.failing ? ' <span class="down">DOWN: ' + esc(t.failing) + "</span>" : "";
      html += "<h2>" + esc(t.url) + down + "</h2>";
      html += t.alerts.length ? '<ul class="alerts">' + t.alerts.map(a => "<li>" + esc(a.rule) + ": " +
        esc(a.message) + "</li>").join("") + "</ul>" : '<p class="ok">no active alerts</p>';
      html += '<div class="charts">' + SERIES.map(([key, title]) => chart("chart-" + key + "-" + i, title,
        t.series.t, t.series[key])).join("") + "</div>";
    });
    document.getElementById("targets").innerHTML = html;
    document.getElementById("updated").textContent = "updated " + new Date(state.now * 1000).toLocaleTimeString() +
      " - " + state.windows + " windows";
  } catch (e) {
    document.getElementById("updated").textContent = "monitor not reachable";
  }
}
refresh(); setInterval(refresh, __REFRESH_MS__);
</script></body></html>"""


class Dashboard:
    def __init__(self, host: str = "127.0.0.1", port: int = 0, history: int = 720, refresh_s: float = 5.0) -> None:
        self._lock = threading.Lock()
        self._history = history
        self._series: dict[str, deque[tuple[float, dict[str, float | None]]]] = {}
        self._status: dict[str, dict[str, Any]] = {}
        self._now = 0.0
        self._windows = 0
        page = _PAGE.replace("__SERIES__", json.dumps([list(s) for s in SERIES])).replace(
            "__REFRESH_MS__", str(int(refresh_s * 1000))
        )
        self._page = page.encode()
        self.server = GetServer(host, port, self._route, {"Cache-Control": "no-store"})

    def _route(self, path: str) -> tuple[int, str, bytes]:
        if path in ("/", "/index.html"):
            return 200, "text/html; charset=utf-8", self._page
        if path == "/api/state":
            return 200, "application/json", json.dumps(json_safe(self.state()), allow_nan=False).encode()
        return 404, "text/plain", b"not found"

    @property
    def url(self) -> str:
        return self.server.base_url() + "/"

    def update(self, targets: list[Target], now: float) -> None:
        """Record each target's latest window (once per window) and its failure / alert status."""
        with self._lock:
            self._now = now
            for t in targets:
                ring = self._series.setdefault(t.url, deque(maxlen=self._history))
                if t.last is not None and t.failing is None and (not ring or ring[-1][0] != t.previous_t):
                    ring.append((t.previous_t, {key: json_safe(getattr(t.last, key)) for key, _ in SERIES}))
                    self._windows += 1
                self._status[t.url] = {
                    "failing": t.failing,
                    "alerts": [
                        {"rule": r, "severity": f.severity, "message": f.message}
                        for r, f in sorted(t.alerts.active.items())
                    ],
                }

    def state(self) -> dict[str, Any]:
        with self._lock:
            targets = []
            for url, ring in self._series.items():
                series: dict[str, list[Any]] = {"t": [t for t, _ in ring]}
                for key, _ in SERIES:
                    series[key] = [v[key] for _, v in ring]
                targets.append({"url": url, **self._status.get(url, {"failing": None, "alerts": []}), "series": series})
            return {"now": self._now, "windows": self._windows, "targets": targets}

    def close(self) -> None:
        self.server.close()
