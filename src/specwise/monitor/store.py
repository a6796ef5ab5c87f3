"""Monitor history in SQLite: one row per (server, window), pruned to a retention period."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from specwise.errors import SpecwiseError

_SCHEMA = """
CREATE TABLE IF NOT EXISTS windows (url TEXT NOT NULL, end_s REAL NOT NULL, stats TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS windows_by_time ON windows (url, end_s);
CREATE TABLE IF NOT EXISTS alerts (url TEXT NOT NULL, at_s REAL NOT NULL, event TEXT NOT NULL, rule TEXT NOT NULL,
                                   message TEXT NOT NULL);
"""


class MonitorStore:
    def __init__(self, path: Path, retention_s: float) -> None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(str(path))
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.executescript(_SCHEMA)
        except (OSError, sqlite3.Error) as exc:
            raise SpecwiseError(f"{path}: cannot open monitor database: {exc}") from None
        self.retention_s = retention_s

    def close(self) -> None:
        self.db.close()

    def add_window(self, url: str, end_s: float, stats: dict[str, Any]) -> None:
        with self.db:
            self.db.execute("INSERT INTO windows (url, end_s, stats) VALUES (?, ?, ?)", (url, end_s, json.dumps(stats)))
            self.db.execute("DELETE FROM windows WHERE end_s < ?", (end_s - self.retention_s,))

    def add_alert(self, url: str, at_s: float, event: str, rule: str, message: str) -> None:
        with self.db:
            self.db.execute("INSERT INTO alerts VALUES (?, ?, ?, ?, ?)", (url, at_s, event, rule, message))
            self.db.execute("DELETE FROM alerts WHERE at_s < ?", (at_s - self.retention_s,))

    def windows(self, url: str) -> list[tuple[float, dict[str, Any]]]:
        rows = self.db.execute("SELECT end_s, stats FROM windows WHERE url = ? ORDER BY end_s", (url,))
        return [(float(t), json.loads(s)) for t, s in rows]

    def alerts(self) -> list[tuple[str, float, str, str, str]]:
        return [
            (str(u), float(t), str(e), str(r), str(m))
            for u, t, e, r, m in self.db.execute("SELECT * FROM alerts ORDER BY at_s")
        ]
