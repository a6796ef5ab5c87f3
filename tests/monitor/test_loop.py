"""The monitor loop: faults reported once, alerts opened/closed once, history kept with retention."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from specwise.cli import main
from specwise.errors import SpecwiseError
from specwise.metrics import parse_exposition
from specwise.metrics.exposition import Scrape
from specwise.monitor.loop import Target, evaluate_once
from specwise.monitor.rules import AlertState, Thresholds
from specwise.monitor.sinks import json_lines
from specwise.monitor.store import MonitorStore
from tests.conftest import mock_with_traffic


def _counters(drafts: int, accepted: int) -> Scrape:
    lab = 'engine="0",model_name="m"'
    text = "".join(
        f"# TYPE vllm:spec_decode_num_{n}_total counter\nvllm:spec_decode_num_{n}_total{{{lab}}} {v}\n"
        for n, v in (("drafts", drafts), ("draft_tokens", 4 * drafts), ("accepted_tokens", accepted))
    )
    return parse_exposition(text)


def test_faults_once_alerts_once_and_retention(tmp_path: Path) -> None:
    # drafts/accepted per window: healthy, low, low, (server down x3), low, healthy x3
    script: list[Scrape | None] = [
        _counters(0, 0),
        _counters(100, 300),
        _counters(200, 340),
        _counters(300, 380),
        None,
        None,
        None,
        _counters(400, 420),
        _counters(500, 460),
        _counters(600, 760),
        _counters(700, 1060),
        _counters(800, 1360),
    ]
    clock = iter(float(i) for i in range(100))
    calls = iter(script)

    def fetch(url: str) -> Scrape:
        value = next(calls)
        if value is None:
            raise SpecwiseError("scrape failed: ConnectError")
        return value

    log = io.StringIO()
    store = MonitorStore(tmp_path / "m.sqlite", retention_s=4.5)
    target = Target("http://t/metrics", alerts=AlertState(clear_after=2))
    for _ in script:
        evaluate_once(
            [target], Thresholds(min_drafts=50), store, json_lines(log), clock=lambda: next(clock), fetch=fetch
        )
    events = [json.loads(line) for line in log.getvalue().splitlines()]
    kinds = [(e["event"], e.get("rule")) for e in events]
    assert kinds == [
        ("alert", "low_acceptance_rate"),
        ("alert", "low_acceptance_length"),
        ("target_down", None),
        ("target_up", None),
        ("resolved", "low_acceptance_rate"),
        ("resolved", "low_acceptance_length"),
    ]
    windows = store.windows("http://t/metrics")
    assert windows and all(t >= windows[-1][0] - 4.5 for t, _ in windows)  # older windows pruned
    assert [a[2] for a in store.alerts()][-2:] == ["resolved", "resolved"]
    assert target.previous is not None  # the only scrape kept in memory


def test_loop_cli_against_mock(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with mock_with_traffic() as server:
        code = main(
            [
                "monitor",
                "--url",
                server.url + "/metrics",
                "--interval",
                "0.3",
                "--duration",
                "1.5",
                "--min-drafts",
                "1",
                "--db",
                str(tmp_path / "m.sqlite"),
            ]
        )
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    alerts = [e for e in events if e["event"] == "alert"]
    assert code == 1 and [a["rule"] for a in alerts].count("low_acceptance_rate") == 1
    store = MonitorStore(tmp_path / "m.sqlite", retention_s=3600)
    assert len(store.windows(server.url + "/metrics")) >= 2


def test_window_spans_several_scrapes_and_keeps_only_those() -> None:
    script = [_counters(100 * i, 50 * i) for i in range(8)]
    calls = iter(script)
    clock = iter(float(5 * i) for i in range(100))
    target = Target("http://t/metrics", window_scrapes=3)
    for _ in script:
        evaluate_once([target], Thresholds(), None, None, clock=lambda: next(clock), fetch=lambda url: next(calls))
    assert target.last is not None
    assert target.last.window_s == 15.0  # three intervals back: the oldest of the 3 kept scrapes
    assert target.last.drafts == 300
    assert len(target.history) == 3


def test_live_terminal_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with mock_with_traffic() as server:
        code = main(
            [
                "monitor",
                "--url",
                server.url + "/metrics",
                "--live",
                "--interval",
                "0.3",
                "--duration",
                "1.5",
                "--min-drafts",
                "1",
                "--db",
                str(tmp_path / "m.sqlite"),
            ]
        )
    out = capsys.readouterr().out
    assert code == 1  # the mock accepts 0.25 of drafts: an alert is open at the end
    assert "specwise monitor: last 0.3 s per server" in out and server.url in out
    assert "low_acceptance_rate" in out and '"event": "alert"' in out


def test_loop_says_what_it_watches_and_why_it_exits(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Loop mode is not silent (review 7 #8): a start line and a closing summary on stderr; with --json one JSON line
    per judged window on stdout, beside the events."""
    db = tmp_path / "m.sqlite"
    with mock_with_traffic() as server:
        url = server.url + "/metrics"
        argv = ["monitor", "--url", url, "--interval", "0.3", "--duration", "1.5", "--min-drafts", "1"]
        code = main([*argv, "--db", str(db), "--json"])
    captured = capsys.readouterr()
    lines = [json.loads(line) for line in captured.out.splitlines()]
    windows = [e for e in lines if e["event"] == "window"]
    assert code == 1 and len(windows) >= 2 and all(w["url"] == url for w in windows)
    assert windows[-1]["stats"]["acceptance_rate"] == pytest.approx(0.25) and windows[-1]["alerts"]
    assert [e.get("rule") for e in lines if e["event"] == "alert"].count("low_acceptance_rate") == 1  # events too
    start, end = captured.err.strip().splitlines()
    assert start == f"specwise monitor: watching 1 target every 0.3 s (windows of 0.3 s) for 1.5 s; history in {db}"
    assert f"{len(windows)} windows judged over 1 target; exit 1: low_acceptance_rate open on {url}" in end


@pytest.mark.parametrize("signal_name", ["Ctrl-C", "SIGTERM"])
def test_ctrl_c_still_prints_the_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, signal_name: str
) -> None:
    import time
    import types

    import specwise.cli.monitor as cli_monitor
    from specwise.cli.common import Terminated

    def interrupt(_: float) -> None:  # SIGTERM raises Terminated in the main thread (review s60: called "Ctrl-C")
        raise Terminated if signal_name == "SIGTERM" else KeyboardInterrupt

    clock = types.SimpleNamespace(sleep=interrupt, monotonic=time.monotonic, time=time.time)
    monkeypatch.setattr(cli_monitor, "time", clock)
    with mock_with_traffic() as server:
        argv = ["monitor", "--url", server.url + "/metrics", "--interval", "0.3", "--db", str(tmp_path / "m.sqlite")]
        code = main(argv)
    err = capsys.readouterr().err
    assert code == 0  # one scrape, no window judged: nothing open
    assert "Ctrl-C stops" in err and f"({signal_name}): 0 windows judged over 1 target; exit 0: no alert open" in err
    assert "(no window completed: nothing was judged)" in err  # exit 0 is not a clean bill of health here


def test_live_table_names_servers_by_host_and_port_at_80_columns() -> None:
    """At 80 columns every row used to read ``http:…`` (review 7 #11): the host:port is shown whole; --wide shows
    the whole URL."""
    from rich.console import Console

    from specwise.report.monitor import live_table

    targets = [Target("http://10.0.0.5:8000/metrics"), Target("http://user:pw@10.0.0.6:8001/metrics")]
    targets[1].failing = "connection refused"

    def shown(wide: bool, width: int = 80) -> str:
        out = Console(width=width, record=True, color_system=None)
        out.print(live_table(targets, 5.0, wide))
        return out.export_text()

    narrow = shown(False)
    assert "10.0.0.5:8000" in narrow and "10.0.0.6:8001" in narrow and "…" not in narrow
    assert "pw" not in narrow and "pw" not in shown(True)
    assert "http://10.0.0.5:8000/metrics" in shown(True, 160) and "http://10.0.0.5:8000/metrics" not in narrow
    assert "…" not in shown(True)  # folded, never cut
