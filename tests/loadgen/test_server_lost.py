"""A server that goes away mid-run (crashed, killed for memory) stops the run after a few refused connections,
exit 2 with the resume command; the refused requests are not recorded, so ``--resume`` sends them (review s45a:
every request left was sent to the closed port, recorded as failed, the run exited 0 and --resume had nothing to
send)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from specwise.cli import main
from specwise.loadgen.mock_server import MockBehaviour, MockServer
from specwise.loadgen.records import RequestRecord
from specwise.loadgen.runner import LOST_AFTER
from specwise.loadgen.store import ResultStore


def test_a_server_gone_mid_run_stops_it_and_resume_finishes_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "r.sqlite"
    args = ["--model", "m", "--rates", "10,20", "--requests-per-level", "20", "--db", str(db), "--api-key-env", ""]
    with MockServer(MockBehaviour()) as server:
        url = server.url

        def stop_when_some_are_in() -> None:
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                time.sleep(0.05)
                if server.state.requests >= 5:
                    break
            server.__exit__(None, None, None)  # the server dies: its port refuses connections from now on

        killer = threading.Thread(target=stop_when_some_are_in, daemon=True)
        killer.start()
        started = time.monotonic()
        assert main(["bench", "--url", url, *args, "--run-id", "gone"]) == 2
        killer.join(timeout=10)
    err = capsys.readouterr().err
    assert "stopped accepting connections during level 0" in err and f"{LOST_AFTER} requests in a row" in err
    assert "continue with: specwise bench --resume gone" in err
    assert time.monotonic() - started < 15  # stopped: not the rest of the schedule against a closed port
    store = ResultStore(db)
    try:
        kept = store.records("gone")
    finally:
        store.close()
    assert 0 < len(kept) < 40 and not [r for r in kept if (r.error or "").startswith("connection: ClientConnector")]
    with MockServer(MockBehaviour()) as back:  # the server is back (on another port: --url says where)
        assert main(["bench", "--resume", "gone", "--db", str(db), "--url", back.url, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [lv["requests"] for lv in doc["levels"]] == [20, 20]
    assert sum(lv["failed"] for lv in doc["levels"]) <= len(kept)  # only what was in flight when it died


def _record(i: int, error: str | None = None, status: int | None = 200) -> RequestRecord:
    return RequestRecord("r", 0, str(i), None, 0.0, 0.0, 1.0, error=error, status_code=status)


REFUSED = "connection: ClientConnectorError: Cannot connect to host 127.0.0.1:9"


def test_streams_cut_by_the_crash_do_not_reset_the_count() -> None:
    """A crash cuts the streams in flight (their 200 came before it) just as the refusals begin: they say nothing of
    the server now, so the refusals keep counting and every one of them is dropped for --resume (review s45d)."""
    from specwise.loadgen.runner import _ConnectGate, _ServerGone

    gate = _ConnectGate()
    gate.observe(_record(0))  # answered
    gate.observe(_record(1, REFUSED, None))
    gate.observe(_record(2, "stream: ServerDisconnectedError", 200))  # cut mid-stream by the crash
    gate.observe(_record(3, REFUSED, None))
    with pytest.raises(_ServerGone):
        gate.observe(_record(4, REFUSED, None))
    assert gate.lost == ["1", "3", "4"]
    gate = _ConnectGate()
    gate.observe(_record(0))
    gate.observe(_record(1, REFUSED, None))
    gate.observe(_record(2, "http 503: overloaded", 503))  # an HTTP answer: someone is there
    gate.observe(_record(3, REFUSED, None))
    assert gate.lost == ["3"]
