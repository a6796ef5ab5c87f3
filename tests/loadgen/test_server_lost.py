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
