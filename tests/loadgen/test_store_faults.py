"""The results store when things go wrong (issue 13): a full disk is one clear error that stops the run, two
processes cannot run the same run id at once, and a run where no request succeeded exits 2 after printing."""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from specwise.cli import main
from specwise.errors import SpecwiseError
from specwise.loadgen import store as store_module
from specwise.loadgen.client import ClientConfig, RequestSpec
from specwise.loadgen.mock_server import MockBehaviour, MockServer
from specwise.loadgen.records import RequestRecord
from specwise.loadgen.runner import BenchPlan, LevelPlan, run_plan
from specwise.loadgen.store import ResultStore
from specwise.traffic import Arrivals


def _tiny_disk(monkeypatch: pytest.MonkeyPatch, pages: int) -> None:
    """Every connection the store opens sees a database that cannot grow past ``pages`` pages: SQLite answers
    SQLITE_FULL ("database or disk is full"), exactly as on a full filesystem."""
    real = store_module._connect

    def connect(path: Path) -> sqlite3.Connection:
        db = real(path)
        db.execute(f"PRAGMA max_page_count = {pages}")
        return db

    monkeypatch.setattr(store_module, "_connect", connect)


def _record(i: int) -> RequestRecord:
    return RequestRecord(
        run_id="r", level=0, request_id=f"q{i}", workload_class=None, scheduled_s=0.0, start_s=0.0, end_s=1.0,
        first_token_s=0.5, output_tokens=16, prompt_tokens=8, chunks=tuple((0.5 + j / 100, 1) for j in range(16)),
        error=None, status_code=200, tokens_exact=True,
    )  # fmt: skip


def test_a_full_disk_is_one_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = ResultStore(tmp_path / "r.sqlite")
    _tiny_disk(monkeypatch, 8)
    store.db.execute("PRAGMA max_page_count = 8")
    with pytest.raises(SpecwiseError, match="cannot write results: database or disk is full"):
        for i in range(500):
            store.add(_record(i))
    assert store.done_ids("r")  # what was committed before the disk filled is still there


def test_a_full_disk_stops_the_run_instead_of_sending_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "r.sqlite"
    ResultStore(path).close()
    _tiny_disk(monkeypatch, 8)
    levels = (LevelPlan(0, 400.0, tuple(RequestSpec(f"q{i}", "x " * 400, 64) for i in range(600))),)
    with MockServer(MockBehaviour(ttft_s=0.0, chunk_interval_s=0.0, tokens_per_chunk=4)) as server:
        plan = BenchPlan(
            client=ClientConfig(base_url=server.url, model="m", request_timeout_s=10),
            levels=levels,
            arrivals=Arrivals("poisson", 400.0),
            metrics_url=None,
        )
        with pytest.raises(SpecwiseError, match="disk is full"):
            asyncio.run(run_plan(plan, ResultStore(path), "r"))
        sent = server.state.requests
    assert sent < 600


def test_one_process_at_a_time_runs_a_run_id(tmp_path: Path) -> None:
    path = tmp_path / "r.sqlite"
    holder = textwrap.dedent(
        f"""
        import sys, time
        from pathlib import Path
        from specwise.loadgen.store import ResultStore
        with ResultStore(Path({str(path)!r})).hold_run("run-a"):
            print("held", flush=True)
            time.sleep(60)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", holder], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
        store = ResultStore(path)
        with pytest.raises(SpecwiseError, match="being run by another specwise process"), store.hold_run("run-a"):
            pass
        with store.hold_run("run-b"):  # another run of the same file is free
            pass
    finally:
        proc.kill()  # kill -9: the kernel drops the lock with the process
        proc.wait(timeout=10)
    with store.hold_run("run-a"):
        pass


def test_every_request_failing_exits_2_after_the_results(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with MockServer(MockBehaviour(fail_500_every=1)) as server:
        code = main(
            ["bench", "--url", server.url, "--model", "m", "--rates", "20", "--requests-per-level", "4",
             "--db", str(tmp_path / "r.sqlite"), "--json"]
        )  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 2
    assert '"failed": 4' in out  # the results came first
    assert "all 4 requests failed (4 http 500)" in err


def test_an_unwritable_export_path_fails_before_any_request(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with MockServer(MockBehaviour()) as server:
        code = main(
            ["bench", "--url", server.url, "--model", "m", "--rates", "20", "--requests-per-level", "4",
             "--db", str(tmp_path / "r.sqlite"), "--export-jsonl", str(tmp_path)]
        )  # fmt: skip
        sent = server.state.requests
    assert code == 2 and sent == 0
    assert "is a directory" in capsys.readouterr().err
