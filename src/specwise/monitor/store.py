"""Monitor history in SQLite: one row per (server, window), pruned to a retention period.

Rows are written in one transaction per monitor pass (:meth:`MonitorStore.commit`, which also prunes), not one per
row: a pass over 1,000 servers is one commit. WAL with ``synchronous=NORMAL``: a crash of the monitor loses at most
the pass in progress; an OS crash can also lose the last commits.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from specwise.contracts.document import json_safe
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
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.executescript(_SCHEMA)
        except (OSError, sqlite3.Error) as exc:
            raise SpecwiseError(f"{path}: cannot open monitor database: {exc}") from None
        self.retention_s = retention_s
        self._latest = float("-inf")
        self._pending = False

    def close(self) -> None:
        self.commit()
        self.db.close()

    def add_window(self, url: str, end_s: float, stats: dict[str, Any]) -> None:
        """Queued in the pass's transaction (:meth:`commit`). Non-finite numbers are stored as null."""
        self.db.execute(
            "INSERT INTO windows (url, end_s, stats) VALUES (?, ?, ?)",
            (url, end_s, json.dumps(json_safe(stats), allow_nan=False)),
        )
        self._latest, self._pending = max(self._latest, end_s), True

    def add_alert(self, url: str, at_s: float, event: str, rule: str, message: str) -> None:
        self.db.execute("INSERT INTO alerts VALUES (?, ?, ?, ?, ?)", (url, at_s, event, rule, message))
        self._latest, self._pending = max(self._latest, at_s), True

    def commit(self) -> None:
        """Prune rows older than the retention period and commit the pass."""
        if not self._pending:
            return
        cutoff = self._latest - self.retention_s
        try:
            with self.db:
                self.db.execute("DELETE FROM windows WHERE end_s < ?", (cutoff,))
                self.db.execute("DELETE FROM alerts WHERE at_s < ?", (cutoff,))
        except sqlite3.Error as exc:
            raise SpecwiseError(f"monitor database: cannot write: {exc}") from None
        self._pending = False

    def windows(self, url: str) -> list[tuple[float, dict[str, Any]]]:
        rows = self.db.execute("SELECT end_s, stats FROM windows WHERE url = ? ORDER BY end_s", (url,))
        return [(float(t), json.loads(s)) for t, s in rows]

    def alerts(self) -> list[tuple[str, float, str, str, str]]:
        return [
            (str(u), float(t), str(e), str(r), str(m))
            for u, t, e, r, m in self.db.execute("SELECT * FROM alerts ORDER BY at_s")
        ]
