"""The record writer's thread never ends silently, and nothing waits on it for ever. Found by a fresh-clone CI run
that hung in tests/loadgen/test_secrets.py: a bench run abandoned with its event loop (an earlier test) left a
writer whose ``on_committed`` then raised "Event loop is closed", killing its thread; when the garbage collector
later closed the abandoned coroutine, its ``finally`` sent ``writer.close`` to the *current* loop's executor, where
``flush`` waited for ever on the dead thread, and so did that loop's shutdown."""

from __future__ import annotations

import threading
from pathlib import Path

from specwise.errors import SpecwiseError
from specwise.loadgen.records import RequestRecord
from specwise.loadgen.store import RecordWriter, ResultStore

BOUND_S = 20.0  # a passing test takes well under a second


def _record(i: int) -> RequestRecord:
    return RequestRecord("r", 0, f"q{i}", None, 0.0, 0.0, 0.1)


def test_a_callback_that_raises_is_the_writers_error_not_a_hang(tmp_path: Path) -> None:
    ResultStore(tmp_path / "r.sqlite").close()

    def broken(n: int) -> None:
        raise RuntimeError("Event loop is closed")

    writer = RecordWriter(tmp_path / "r.sqlite", broken)
    writer.add(_record(1))
    raised: list[BaseException] = []

    def flush_then_close() -> None:  # on a thread: a regression fails the test instead of hanging the suite
        for step in (writer.flush, writer.close):
            try:
                step()
            except SpecwiseError as exc:
                raised.append(exc)

    thread = threading.Thread(target=flush_then_close, daemon=True)
    thread.start()
    thread.join(BOUND_S)
    assert not thread.is_alive(), "flush waited on a dead writer thread"
    assert len(raised) == 2 and all("Event loop is closed" in str(e) for e in raised)


def test_flush_after_close_returns(tmp_path: Path) -> None:
    ResultStore(tmp_path / "r.sqlite").close()
    writer = RecordWriter(tmp_path / "r.sqlite")
    writer.close()
    done = threading.Event()
    threading.Thread(target=lambda: (writer.flush(), done.set()), daemon=True).start()
    assert done.wait(BOUND_S)
