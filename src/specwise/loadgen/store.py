"""Results that survive a crash: every request's record is committed to SQLite as it completes.

A run row keeps the run's configuration (never an API key) so ``--resume RUN_ID`` can finish it:
requests already recorded are skipped, the rest are sent. Records export to JSONL.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from specwise.errors import SpecwiseError
from specwise.loadgen.records import RequestRecord

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (run_id TEXT PRIMARY KEY, created_s REAL NOT NULL, config TEXT NOT NULL,
                                 status TEXT NOT NULL DEFAULT 'running');
CREATE TABLE IF NOT EXISTS records (run_id TEXT NOT NULL, level INTEGER NOT NULL, request_id TEXT NOT NULL,
                                    record TEXT NOT NULL, PRIMARY KEY (run_id, request_id));
CREATE TABLE IF NOT EXISTS scrapes (run_id TEXT NOT NULL, level INTEGER NOT NULL, phase TEXT NOT NULL,
                                    text TEXT NOT NULL, PRIMARY KEY (run_id, level, phase));
"""


class ResultStore:
    def __init__(self, path: Path) -> None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(str(path))
            # WAL + synchronous=NORMAL: a committed record survives the harness being killed (kill -9); only an
            # OS crash could lose the last commits. Per-record fsyncs would cap the request rate instead.
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.executescript(_SCHEMA)
        except (OSError, sqlite3.Error) as exc:
            raise SpecwiseError(f"{path}: cannot open results database: {exc}") from None
        self.path = path

    def close(self) -> None:
        self.db.close()

    def create_run(self, run_id: str, created_s: float, config: dict[str, Any]) -> None:
        with self.db:
            self.db.execute(
                "INSERT INTO runs (run_id, created_s, config) VALUES (?, ?, ?)", (run_id, created_s, json.dumps(config))
            )

    def run_config(self, run_id: str) -> dict[str, Any]:
        row = self.db.execute("SELECT config FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        if row is None:
            known = [r[0] for r in self.db.execute("SELECT run_id FROM runs ORDER BY created_s DESC LIMIT 5")]
            hint = f"; recent runs: {', '.join(known)}" if known else ""
            raise SpecwiseError(f"{self.path}: no run {run_id!r} to resume{hint}")
        config: dict[str, Any] = json.loads(row[0])
        return config

    def launch_runs(self, base_id: str) -> list[tuple[str, dict[str, Any]]]:
        """(run id, config) of each configuration a ``--launch`` run named ``base_id`` ran, in launch order."""
        rows = self.db.execute("SELECT run_id, config FROM runs ORDER BY created_s, rowid").fetchall()
        out = [(r, json.loads(c)) for r, c in rows if r.startswith(base_id + "-")]
        return [(r, c) for r, c in out if "launch" in c]

    def update_config(self, run_id: str, config: dict[str, Any]) -> None:
        with self.db:
            self.db.execute("UPDATE runs SET config = ? WHERE run_id = ?", (json.dumps(config), run_id))

    def set_status(self, run_id: str, status: str) -> None:
        with self.db:
            self.db.execute("UPDATE runs SET status = ? WHERE run_id = ?", (status, run_id))

    def add(self, record: RequestRecord) -> None:
        """Commit one record (idempotent per request id: a resumed run never duplicates)."""
        with self.db:
            self.db.execute(
                "INSERT OR IGNORE INTO records (run_id, level, request_id, record) VALUES (?, ?, ?, ?)",
                (record.run_id, record.level, record.request_id, record.to_json()),
            )

    def done_ids(self, run_id: str) -> set[str]:
        return {r[0] for r in self.db.execute("SELECT request_id FROM records WHERE run_id = ?", (run_id,))}

    def records(self, run_id: str, level: int | None = None) -> list[RequestRecord]:
        if level is None:
            rows = self.db.execute("SELECT record FROM records WHERE run_id = ? ORDER BY rowid", (run_id,))
        else:
            rows = self.db.execute(
                "SELECT record FROM records WHERE run_id = ? AND level = ? ORDER BY rowid", (run_id, level)
            )
        return [RequestRecord.from_json(r[0]) for r in rows]

    def save_scrape(self, run_id: str, level: int, phase: str, text: str) -> None:
        with self.db:
            self.db.execute(
                "INSERT OR REPLACE INTO scrapes (run_id, level, phase, text) VALUES (?, ?, ?, ?)",
                (run_id, level, phase, text),
            )

    def scrape(self, run_id: str, level: int, phase: str) -> str | None:
        row = self.db.execute(
            "SELECT text FROM scrapes WHERE run_id = ? AND level = ? AND phase = ?", (run_id, level, phase)
        ).fetchone()
        return None if row is None else str(row[0])

    def export_jsonl(self, run_id: str) -> Iterator[str]:
        for r in self.records(run_id):
            yield r.to_json()
