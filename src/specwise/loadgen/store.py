"""Results that survive a crash: every request's record is committed to SQLite soon after it completes.

During a run, records are committed by a :class:`RecordWriter` on its own thread and connection, in batches of
whatever completed while the previous commit ran (so neither JSON encoding nor SQLite runs on the event loop).
The guarantee: a request counts as done -- in the progress display, in ``done_ids`` and in every summary -- only
once its record is committed, so a crash (even ``kill -9``) loses nothing already reported complete; what it can
lose is the records of requests that finished but were not yet committed (the batch in flight, typically a few ms
of completions), and ``--resume`` sends those again.

A run row keeps the run's configuration (never an API key) so ``--resume RUN_ID`` can finish it:
requests already recorded are skipped, the rest are sent. One process at a time runs a given run id
(:meth:`ResultStore.hold_run`: an advisory lock the kernel drops when the process dies, even by ``kill -9``), so two
``--resume`` of the same run cannot send its requests twice. Records export to JSONL.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import queue
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import fields
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


_INSERT = "INSERT OR IGNORE INTO records (run_id, level, request_id, record) VALUES (?, ?, ?, ?)"


def _connect(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(str(path), timeout=30.0)
    # WAL + synchronous=NORMAL: a committed record survives the harness being killed (kill -9); only an
    # OS crash could lose the last commits. Per-record fsyncs would cap the request rate instead.
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    return db


class ResultStore:
    def __init__(self, path: Path) -> None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self.db = _connect(path)
            self.db.executescript(_SCHEMA)
        except (OSError, sqlite3.Error) as exc:
            raise SpecwiseError(f"{path}: cannot open results database: {exc}") from None
        self.path = path

    def close(self) -> None:
        self.db.close()

    @contextlib.contextmanager
    def hold_run(self, run_id: str) -> Iterator[None]:
        """Hold ``run_id`` for this process (a byte-range lock in ``<db>.lock`` keyed by the run id); another
        process holding it is one clear error, not a second copy of the run."""
        lock_path = self.path.with_name(self.path.name + ".lock")
        offset = int.from_bytes(hashlib.sha256(run_id.encode()).digest()[:7], "big")
        try:
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise SpecwiseError(f"{lock_path}: cannot open the run lock: {exc.strerror}") from None
        try:
            try:
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, offset)
            except OSError:
                raise SpecwiseError(
                    f"{self.path}: run {run_id!r} is being run by another specwise process right now; "
                    "wait for it to finish (or stop it) before resuming"
                ) from None
            yield
        finally:
            os.close(fd)  # closing drops the lock

    def _write(self, sql: str, params: tuple[Any, ...]) -> None:
        """One committed statement; a full disk or a read-only file is one :class:`SpecwiseError`."""
        try:
            with self.db:
                self.db.execute(sql, params)
        except sqlite3.IntegrityError:
            raise
        except sqlite3.Error as exc:
            raise SpecwiseError(f"{self.path}: cannot write results: {exc}") from None

    def create_run(self, run_id: str, created_s: float, config: dict[str, Any]) -> None:
        self._write(
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

    def launch_bases(self) -> list[str]:
        """The ids of the ``--launch`` runs here (each configuration's run is ``BASE-CONFIG``), oldest first."""
        rows = self.db.execute("SELECT run_id, config FROM runs ORDER BY created_s, rowid").fetchall()
        bases: dict[str, None] = {}
        for run_id, text in rows:
            name = (json.loads(text).get("launch") or {}).get("name")
            if isinstance(name, str) and run_id.endswith("-" + name):
                bases[run_id.removesuffix("-" + name)] = None
        return list(bases)

    def has_run(self, run_id: str) -> bool:
        return self.db.execute("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)).fetchone() is not None

    def update_config(self, run_id: str, config: dict[str, Any]) -> None:
        self._write("UPDATE runs SET config = ? WHERE run_id = ?", (json.dumps(config), run_id))

    def set_status(self, run_id: str, status: str) -> None:
        self._write("UPDATE runs SET status = ? WHERE run_id = ?", (status, run_id))

    def status(self, run_id: str) -> str | None:
        """``running`` (started, or stopped before its end) or ``complete``; None for no such run."""
        row = self.db.execute("SELECT status FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        return None if row is None else str(row[0])

    def add(self, record: RequestRecord) -> None:
        """Commit one record (idempotent per request id: a resumed run never duplicates)."""
        self._write(_INSERT, (record.run_id, record.level, record.request_id, record.to_json()))

    def discard(self, run_id: str, request_ids: Iterable[str]) -> None:
        """Forget these requests' records (requests that never reached a server), so ``--resume`` sends them."""
        rows = [(run_id, rid) for rid in request_ids]
        try:
            with self.db:
                self.db.executemany("DELETE FROM records WHERE run_id = ? AND request_id = ?", rows)
        except sqlite3.Error as exc:
            raise SpecwiseError(f"{self.path}: cannot write results: {exc}") from None

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

    def save_scrape(self, run_id: str, level: int, phase: str, text: str, replica: int = 0) -> None:
        """Keep one /metrics scrape; ``replica`` is the index of its ``--metrics-url`` (a fleet run)."""
        self._write(
            "INSERT OR REPLACE INTO scrapes (run_id, level, phase, text) VALUES (?, ?, ?, ?)",
            (run_id, level, scrape_phase(phase, replica), text),
        )

    def drop_scrape(self, run_id: str, level: int, phase: str, replica: int = 0) -> None:
        """Forget a stored scrape (an earlier process's before-scrape this one could not take again)."""
        self._write(
            "DELETE FROM scrapes WHERE run_id = ? AND level = ? AND phase = ?",
            (run_id, level, scrape_phase(phase, replica)),
        )

    def scrape(self, run_id: str, level: int, phase: str, replica: int = 0) -> str | None:
        row = self.db.execute(
            "SELECT text FROM scrapes WHERE run_id = ? AND level = ? AND phase = ?",
            (run_id, level, scrape_phase(phase, replica)),
        ).fetchone()
        return None if row is None else str(row[0])

    def export_jsonl(self, run_id: str) -> Iterator[str]:
        for r in self.records(run_id):
            yield r.to_json()


def scrape_phase(phase: str, replica: int) -> str:
    """The stored phase of a replica's scrape: replica 0 keeps the plain phase (so databases written before fleets
    read the same, and a one-server run stores what it always did); replica ``i > 0`` is ``phase@i``."""
    return phase if replica == 0 else f"{phase}@{replica}"


_RECORD_FIELDS = tuple(f.name for f in fields(RequestRecord))


def record_json(record: RequestRecord) -> str:
    """``record.to_json()``, the same text, without deep-copying the record first (``asdict`` copies every chunk;
    this runs once per request on the writer's thread, which shares the interpreter with the event loop)."""
    return json.dumps({name: getattr(record, name) for name in _RECORD_FIELDS}, separators=(",", ":"))


class RecordWriter:
    """Commits records to the store's file on a thread of its own, in batches; ``on_committed(n)`` is called (from
    that thread) after each commit with the number of records it made durable. :meth:`flush` waits until
    everything added so far is committed and raises the writer's error, if it had one."""

    def __init__(self, path: Path, on_committed: Callable[[int], None] | None = None, max_batch: int = 512) -> None:
        self.path, self.on_committed, self.max_batch = path, on_committed, max_batch
        self._queue: queue.SimpleQueue[RequestRecord | threading.Event | None] = queue.SimpleQueue()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="specwise-records", daemon=True)
        self._thread.start()

    def add(self, record: RequestRecord) -> None:
        self._queue.put(record)

    def check(self) -> None:
        """Raise the writer's error now (a full disk, say), so the run stops instead of sending requests whose
        records cannot be kept."""
        if self._error is not None:
            raise SpecwiseError(f"{self.path}: cannot write results: {self._error}")

    def flush(self) -> None:
        """Wait until what was added is committed; a writer thread that has ended (an error it could not keep, or
        :meth:`close` already called) is not waited on for ever: its error, if any, is raised."""
        done = threading.Event()
        self._queue.put(done)
        while not done.wait(0.5):
            if not self._thread.is_alive():
                break
        self.check()

    def close(self) -> None:
        self.flush()
        self._queue.put(None)
        self._thread.join()

    def stop(self) -> None:
        """Commit what was added and end the thread, without waiting (a run abandoned with its event loop)."""
        self._queue.put(None)

    def _run(self) -> None:
        try:
            db: sqlite3.Connection | None = _connect(self.path)
        except sqlite3.Error as exc:
            db, self._error = None, exc
        try:
            self._loop(db)
        except BaseException as exc:  # never end silently: flush() would wait on an Event nobody sets
            self._error = self._error or exc
        finally:
            if db is not None:
                db.close()
            while True:  # release whoever still waits: their flush() raises the error
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if isinstance(item, threading.Event):
                    item.set()

    def _loop(self, db: sqlite3.Connection | None) -> None:
        """Commit batches until ``None`` arrives; each Event is set once what came before it is committed."""
        while True:
            items = [self._queue.get()]
            while len(items) < self.max_batch:
                try:
                    items.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            records = [r for r in items if isinstance(r, RequestRecord)]
            if records and db is not None and self._error is None:
                self._commit(db, records)
            for item in items:
                if isinstance(item, threading.Event):
                    item.set()
            if any(item is None for item in items):
                return

    def _commit(self, db: sqlite3.Connection, records: list[RequestRecord]) -> None:
        try:
            rows = [(r.run_id, r.level, r.request_id, record_json(r)) for r in records]
            with db:
                db.executemany(_INSERT, rows)
        except (sqlite3.Error, OSError) as exc:
            self._error = exc
            return
        if self.on_committed is not None:
            self.on_committed(len(records))
