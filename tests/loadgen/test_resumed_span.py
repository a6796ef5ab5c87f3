"""A level resumed after a crash counts the time each bench process was sending, not the time no process ran:
its throughput is what the server did, not diluted by the outage (review: 30 tok/s where 93 were measured)."""

from __future__ import annotations

import io
import json

from rich.console import Console

from specwise.contracts.bench import BenchDoc, BenchLevel
from specwise.contracts.document import json_safe
from specwise.loadgen.records import RequestRecord, active_span_s, summarize_level
from specwise.report.bench import render_bench


def _record(i: int, start: float, session: str) -> RequestRecord:
    return RequestRecord("r", 0, str(i), None, start, start, start + 1.0, start + 0.1, 10, session=session)


def test_a_resumed_level_leaves_the_outage_out() -> None:
    before = [_record(i, 0.5 * i, "first") for i in range(9)]  # 0.0 .. 5.0 s, then killed
    after = [_record(9 + i, 30.0 + 0.5 * i, "second") for i in range(7)]  # resumed 25 s later
    assert active_span_s(before + after) == 5.0 + 4.0
    level = summarize_level(before + after, 0, 2.0)
    assert level.duration_s == 9.0
    uninterrupted = [_record(i, 0.5 * i, "one") for i in range(16)]
    assert summarize_level(uninterrupted, 0, 2.0).duration_s == 8.5


def test_records_from_before_sessions_existed_keep_one_span() -> None:
    old = [_record(i, 0.5 * i, "") for i in range(4)]  # a database written before the field: one span, as before
    assert active_span_s(old) == 2.5
    assert RequestRecord.from_json(old[0].to_json()).session == ""


def test_a_resumed_level_is_marked_in_the_table_and_kept_in_the_json() -> None:

    before = [_record(i, 0.5 * i, "first") for i in range(9)]
    after = [_record(9 + i, 30.0 + 0.5 * i, "second") for i in range(7)]
    resumed = BenchLevel(summarize_level(before + after, 0, 2.0))
    plain = BenchLevel(summarize_level([_record(i, 0.5 * i, "first") for i in range(4)], 1, 4.0))
    doc = BenchDoc("r", "db.sqlite", "m", url="http://127.0.0.1:1", levels=(resumed, plain))
    buf = io.StringIO()
    render_bench(doc, Console(file=buf, width=120))
    text = buf.getvalue()
    assert "2*" in text and "4*" not in text
    assert "* level 0 was resumed: sent by 2 bench processes; its duration (9.0 s)" in text
    assert "level 1 was resumed" not in text
    again = BenchDoc.from_json(json.loads(json.dumps(json_safe(doc.to_json()), allow_nan=False)))
    assert [lv.summary.sessions for lv in again.levels] == [2, 1]


def _due(i: int, offset: float, zero: float, session: str, latency: float = 1.0) -> RequestRecord:
    """Request ``i`` due ``offset`` s into the level's schedule, in a process whose clock read ``zero`` at the
    schedule's start: sent when due."""
    t = zero + offset
    return RequestRecord("r", 0, str(i), None, t, t, t + latency, t + 0.1, 10, session=session)


def test_an_open_loop_level_resumed_counts_the_schedules_idle_time() -> None:
    """A level due every 0.5 s, then 3 s of nothing (its Poisson draws), then every 0.5 s again; killed after the
    first burst, resumed an hour later. Laid on its schedule the level lasts what one uninterrupted run lasts: the
    3 s without arrivals count (review s45a: they did not, and the resumed level's tok/s came out ~40% high)."""
    offsets = {str(i): 0.5 * i for i in range(5)} | {str(5 + i): 5.0 + 0.5 * i for i in range(5)}
    first = [_due(i, offsets[str(i)], 100.0, "first") for i in range(5)]  # 0.0-2.0 s due, done by 3.0 s
    again = [_due(i, offsets[str(i)], 3_700.0 - 5.0, "second") for i in range(5, 10)]  # its schedule resumed at 5 s
    one_run = [_due(i, offsets[str(i)], 0.0, "one") for i in range(10)]
    assert active_span_s(one_run) == 8.0 == active_span_s(first + again, offsets)
    assert active_span_s(first + again) == 3.0 + 3.0  # without the schedule: each process's span alone
    assert summarize_level(first + again, 0, 2.0, offsets=offsets).duration_s == 8.0


def test_requests_lost_in_flight_and_sent_again_are_not_counted_twice() -> None:
    """Killed with requests 3 and 4 in flight (never recorded): the next process sends them first. The schedule's
    time from 1.5 s (due of 3) on is covered by both processes, and counted once."""
    offsets = {str(i): 0.5 * i for i in range(8)}
    first = [_due(i, offsets[str(i)], 50.0, "first") for i in range(3)]  # 0-1 s due, ends by 2.0 s
    again = [_due(i, offsets[str(i)], 900.0 - 1.5, "second") for i in range(3, 8)]  # 1.5-3.5 s due, ends by 4.5 s
    assert active_span_s(first + again, offsets) == 4.5
