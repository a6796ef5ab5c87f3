"""The fast harness keeps its guarantees: a request is reported complete only once its record is committed (by the
batch writer, off the event loop), per-chunk token accounting stays exact, the bytes SSE parser says what the text
one says."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from specwise.loadgen.client import ClientConfig, RequestSpec, _Stream
from specwise.loadgen.mock_server import MockBehaviour, MockServer
from specwise.loadgen.records import RequestRecord
from specwise.loadgen.runner import BenchPlan, LevelPlan, run_plan
from specwise.loadgen.sse import DONE, MalformedStream, parse_sse_line, sse_payload
from specwise.loadgen.store import RecordWriter, ResultStore
from specwise.traffic import Arrivals


def test_reported_complete_means_committed(tmp_path: Path) -> None:
    path = tmp_path / "r.sqlite"
    store = ResultStore(path)
    seen: list[tuple[int, int]] = []

    def progress(level: int, done: int, total: int, rate: float | None) -> None:
        with sqlite3.connect(str(path)) as other:  # another connection: what a crash right now would leave
            on_disk = other.execute("SELECT COUNT(*) FROM records WHERE run_id = 'p'").fetchone()[0]
        seen.append((done, on_disk))

    with MockServer(MockBehaviour(ttft_s=0.0, chunk_interval_s=0.0)) as server:
        reqs = tuple(RequestSpec(f"r{i}", "hi", 8) for i in range(120))
        plan = BenchPlan(
            ClientConfig(base_url=server.url, model="mock"), (LevelPlan(0, 400.0, reqs),), Arrivals("poisson", 400.0)
        )
        asyncio.run(run_plan(plan, store, "p", progress=progress))
    assert seen and seen[-1][0] == 120
    assert all(on_disk >= done for done, on_disk in seen)  # never reported before it was on disk
    records = store.records("p")
    store.close()
    assert len(records) == 120 and all(r.ok and r.output_tokens == 8 and r.tokens_exact for r in records)
    assert all(sum(n for _, n in r.chunks) == 8 for r in records)


def test_writer_commits_in_batches_and_flushes(tmp_path: Path) -> None:
    path = tmp_path / "w.sqlite"
    ResultStore(path).close()
    commits: list[int] = []
    writer = RecordWriter(path, commits.append)
    for i in range(1000):
        writer.add(RequestRecord("w", 0, f"r{i}", None, 0.0, 0.0, 1.0, chunks=((0.5, 1),)))
    writer.flush()
    assert sum(commits) == 1000 and len(commits) < 1000  # batched
    writer.add(RequestRecord("w", 0, "r0", None, 0.0, 0.0, 1.0))  # a resumed duplicate is ignored
    writer.close()
    store = ResultStore(path)
    assert len(store.records("w")) == 1000
    store.close()


def test_chunk_accounting_exact_and_fallback() -> None:
    s = _Stream()
    s.add({"choices": [{"text": "a"}], "usage": {"prompt_tokens": 5, "completion_tokens": 1}}, 1.0)
    s.add({"choices": [{"text": "bcd"}], "usage": {"completion_tokens": 4}}, 2.0)
    s.add({"choices": [], "usage": {"completion_tokens": 4}}, 3.0)  # usage-only: no chunk
    assert s.chunks() == ((1.0, 1), (2.0, 3)) and s.tokens == 4 and s.exact and s.first == 1.0
    assert s.prompt_tokens == 5
    t = _Stream()
    t.add({"choices": [{"delta": {"content": "x"}}]}, 1.0)
    t.add({"choices": [{"delta": {"content": "y"}}]}, 2.0)
    assert t.chunks() == ((1.0, 1), (2.0, 1)) and not t.exact


@pytest.mark.parametrize(
    "line",
    ["", ": keepalive", "event: x", 'data: {"choices": [{"text": "a"}]}', "data: [DONE]", "data:[DONE]  \r"],
)
def test_bytes_and_text_parsers_agree(line: str) -> None:
    payload, event = sse_payload(line.encode()), parse_sse_line(line)
    if payload is None:
        assert event is None
    elif payload is DONE:
        assert event is not None and event.done
    else:
        assert event is not None and event.payload == payload


@pytest.mark.parametrize("bad", [b"data: {oops", b"data: [1]", b"garbage", b'data: {"error": "x"}', b"data: \xff\xfe"])
def test_bytes_parser_refuses_what_the_text_one_refuses(bad: bytes) -> None:
    with pytest.raises(MalformedStream):
        sse_payload(bad)


def test_record_json_is_to_json() -> None:
    from specwise.loadgen.store import record_json

    rec = RequestRecord("r", 1, "x", "code", 0.5, 0.6, 1.5, 0.7, 5, 3, ((0.7, 1), (0.9, 4)), None, 200, True)
    assert record_json(rec) == rec.to_json()
    failed = RequestRecord("r", 0, "y", None, 0.0, 0.0, 1.0, error="timeout: x", status_code=None, tokens_exact=False)
    assert record_json(failed) == failed.to_json()
