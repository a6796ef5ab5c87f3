"""Review 11: every alert (and fault) the monitor raises reaches --serve-metrics (#4); a loop whose target only ever
served unusable metrics exits 1 as --once does (#8); a window too thin to judge keeps each alert as it is (#9); one
AL-collapse threshold for the monitor and the exported rules, and position_collapse documented (#10); a loop keeps
polling a target down at the start and says so at the end (#13)."""

from __future__ import annotations

import io
import json
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from specwise.cli import main
from specwise.export.rules import build_rule_groups, render_rules
from specwise.metrics import parse_exposition
from specwise.metrics.exposition import Scrape
from specwise.monitor.fake_servers import MovingPage
from specwise.monitor.loop import Target, evaluate_once
from specwise.monitor.predicted import slowdown_model
from specwise.monitor.rules import (
    MIN_ACCEPTANCE_LENGTH,
    RULES,
    AlertState,
    Finding,
    Thresholds,
    held_rules,
)
from specwise.monitor.sinks import MetricsExporter, json_lines
from specwise.monitor.vet import FAULTS, NON_FINITE
from specwise.monitor.window import WindowStats
from specwise.scenario import load_scenario

ROOT = Path(__file__).resolve().parents[2]
PAGE = (ROOT / "tests" / "fixtures" / "vllm_metrics" / "ngram_after.txt").read_text()
EXAMPLE = ROOT / "examples" / "llama70b-4xh100.toml"


def _counters(drafts: float, accepted: float, running: float | None = None) -> Scrape:
    lab = 'engine="0",model_name="m"'
    text = "".join(
        f"# TYPE vllm:spec_decode_num_{n}_total counter\nvllm:spec_decode_num_{n}_total{{{lab}}} {v}\n"
        for n, v in (("drafts", drafts), ("draft_tokens", 4 * drafts), ("accepted_tokens", accepted))
    )
    if running is not None:
        text += f"# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{{{lab}}} {running}\n"
    return parse_exposition(text)


def _run(
    target: Target, script: list[Scrape], thresholds: Thresholds, t0: float = 0.0, **kw: object
) -> list[dict[str, object]]:
    calls, clock, log = iter(script), iter(t0 + 10 * i for i in range(1000)), io.StringIO()
    for _ in script:
        evaluate_once(
            [target], thresholds, None, json_lines(log), clock=lambda: next(clock), fetch=lambda url: next(calls),
            **kw,  # type: ignore[arg-type]
        )  # fmt: skip
    return [json.loads(line) for line in log.getvalue().splitlines()]


@contextmanager
def _page_server(body: Callable[[], bytes], port: int = 0) -> Iterator[str]:
    """A loopback /metrics server answering ``body()``; yields its URL."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            data = body()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/metrics"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


# --- #4: --serve-metrics has a series for every alert the monitor can raise ---------------------------------------


def test_exporter_has_a_series_for_every_rule_and_fault_and_the_restarts() -> None:
    exporter = MetricsExporter()
    try:
        t = Target("http://a/metrics")
        exporter.update([t])
        before = parse_exposition(httpx.get(exporter.url, timeout=5).text)
        t.alerts.active["predicted_net_slowdown"] = Finding("predicted_net_slowdown", "warning", "x")
        t.alerts.active["class_drag:lora-b"] = Finding("class_drag:lora-b", "warning", "x")
        t.faults.active[NON_FINITE] = Finding(NON_FINITE, "warning", "x")
        t.restarts = 2
        exporter.update([t])
        during = parse_exposition(httpx.get(exporter.url, timeout=5).text)
        del t.alerts.active["class_drag:lora-b"]
        exporter.update([t])
        after = parse_exposition(httpx.get(exporter.url, timeout=5).text)
    finally:
        exporter.close()

    def alerts(scrape: Scrape) -> dict[str, float]:
        return {dict(s.labels)["rule"]: s.value for s in scrape.samples if s.name == "specwise_alert_active"}

    assert alerts(before) == dict.fromkeys([*RULES, *FAULTS], 0.0)
    assert {"predicted_net_slowdown", "class_drag:lora-b", "position_collapse"} <= set(alerts(during))
    assert {rule for rule, v in alerts(during).items() if v == 1} == {
        "predicted_net_slowdown",
        "class_drag:lora-b",
        NON_FINITE,
    }
    assert alerts(after)["class_drag:lora-b"] == 0  # cleared: 0, not a series that vanishes
    assert [s.value for s in during.samples if s.name == "specwise_server_restarts"] == [2]


def test_the_predicted_slowdown_a_loop_raises_reaches_the_exporter() -> None:
    """The rule name the perf model's finding carries is one the exporter shows (no second list to forget)."""
    slowdown = slowdown_model(load_scenario(EXAMPLE), k=4)
    target = Target("http://a/metrics")
    script = [_counters(1000 * i, 600 * i, running=256) for i in range(3)]  # AL 1.6 at batch 256
    events = _run(
        target, script, Thresholds(min_acceptance_rate=0.0, min_mean_acceptance_length=1.0), slowdown=slowdown
    )
    assert [e["rule"] for e in events if e["event"] == "alert"] == ["predicted_net_slowdown"]
    exporter = MetricsExporter()
    try:
        exporter.update([target])
        scrape = parse_exposition(httpx.get(exporter.url, timeout=5).text)
    finally:
        exporter.close()
    active = [dict(s.labels)["rule"] for s in scrape.samples if s.name == "specwise_alert_active" and s.value == 1]
    assert active == ["predicted_net_slowdown"]


# --- #8: a loop on a target whose metrics were unusable all run exits 1 --------------------------------------------


def test_loop_on_a_target_with_only_unusable_metrics_exits_1_and_says_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The real vLLM page with a NaN spec-decode counter on every scrape: no window can be judged. --once says
    non_finite_sample (exit 1); the loop used to end "0 windows judged ...; exit 0"."""
    bad = PAGE.replace('vllm:spec_decode_num_drafts_total{engine="0",model_name="smollm2"} 34.0', "X").replace(
        "X", 'vllm:spec_decode_num_drafts_total{engine="0",model_name="smollm2"} NaN'
    )
    assert "} NaN" in bad
    with _page_server(lambda: bad.encode()) as url:
        once = main(["monitor", "--url", url, "--once", "--interval", "0.2"])
        capsys.readouterr()
        code = main(["monitor", "--url", url, "--interval", "0.2", "--duration", "0.7", "--db", str(tmp_path / "m")])
    out, err = capsys.readouterr()
    assert once == 1 and code == 1
    assert [json.loads(line)["event"] for line in out.splitlines()] == ["fault"]  # reported once
    assert f"0 windows judged over 1 target; exit 1: non-finite samples on {url} (no window judged over the run)" in err


def test_a_fault_still_reported_at_the_end_keeps_the_target_alerting() -> None:
    target = Target("http://t/metrics")
    nan = parse_exposition(
        "# TYPE vllm:spec_decode_num_drafts_total counter\nvllm:spec_decode_num_drafts_total{} NaN\n"
    )
    _run(target, [_counters(0, 0), _counters(100, 300), nan], Thresholds())
    assert NON_FINITE in target.faults.active and target.alerting  # --once raises it as an alert too
    assert target.judged == 1


# --- #9: a window below --min-drafts neither fires nor resolves an alert -------------------------------------------


def test_idle_windows_keep_an_open_alert_open() -> None:
    low = [_counters(100 * i, 10 * i) for i in range(3)]  # acceptance 0.025, AL 1.1: two alerts open
    idle = [_counters(200, 20)] * 4  # no drafts: nothing to judge
    healthy = [_counters(200 + 100 * i, 20 + 300 * i) for i in range(1, 3)]
    target = Target("http://t/metrics", alerts=AlertState(clear_after=2))
    events = _run(target, low + idle, Thresholds(min_drafts=50))
    assert [(e["event"], e["rule"]) for e in events] == [
        ("alert", "low_acceptance_rate"),
        ("alert", "low_acceptance_length"),
    ]  # the idle windows resolved both after clear_after=2 of them
    assert set(target.alerts.active) == {"low_acceptance_rate", "low_acceptance_length"}
    assert target.last is not None and "acceptance rules not evaluated" in " ".join(target.last.notes)
    events = _run(target, healthy, Thresholds(min_drafts=50), t0=1000.0)
    assert [(e["event"], e["rule"]) for e in events] == [
        ("resolved", "low_acceptance_rate"),
        ("resolved", "low_acceptance_length"),
    ]  # judged healthy windows do clear them


def test_held_rules_per_model_and_for_the_slowdown_without_a_batch() -> None:
    stats = WindowStats(
        10.0, 500.0, 0.7, 3.8, (), None, None, None, None, None, None, None, None,
        by_model={"a": {"drafts": 480.0}, "b": {"drafts": 20.0}},
    )  # fmt: skip
    active = ["class_drag:a", "class_drag:b", "predicted_net_slowdown", "low_acceptance_rate"]
    assert held_rules(stats, Thresholds(min_drafts=50), active) == {"class_drag:b", "predicted_net_slowdown"}
    assert held_rules(stats, Thresholds(min_drafts=600), active) == set(active)


# --- #10: one AL-collapse threshold, position_collapse documented --------------------------------------------------


def test_monitor_and_exported_rules_share_the_al_collapse_threshold(capsys: pytest.CaptureFixture[str]) -> None:
    assert Thresholds().min_mean_acceptance_length == MIN_ACCEPTANCE_LENGTH
    text = render_rules(build_rule_groups())
    [collapse] = [line for line in text.splitlines() if "mean_acceptance_length:rate5m <" in line]
    assert f"< {MIN_ACCEPTANCE_LENGTH:g} and" in collapse
    with pytest.raises(SystemExit):
        main(["monitor", "--help"])
    assert "position_collapse" in " ".join(capsys.readouterr().out.split())


# --- #13: a loop keeps polling a target that is down at the start --------------------------------------------------


def test_loop_keeps_polling_a_target_down_at_the_start_until_it_answers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    port = _free_port()
    page = MovingPage(PAGE)
    started = threading.Event()
    holder: list[object] = []

    def come_up() -> None:
        cm = _page_server(page.render, port)
        cm.__enter__()
        holder.append(cm)
        started.set()

    timer = threading.Timer(0.5, come_up)
    timer.start()
    try:
        code = main(
            ["monitor", "--url", f"http://127.0.0.1:{port}/metrics", "--interval", "0.3", "--duration", "2.1",
             "--min-drafts", "0.001", "--db", str(tmp_path / "m"), "--json"]
        )  # fmt: skip
    finally:
        timer.cancel()
        if started.wait(5):
            holder[0].__exit__(None, None, None)  # type: ignore[attr-defined]
    out, err = capsys.readouterr()
    events = [json.loads(line)["event"] for line in out.splitlines()]
    assert events[:2] == ["target_down", "target_up"] and events.count("window") >= 2
    assert code in (0, 1) and "never answered" not in err and "error" not in err


def test_loop_on_a_target_that_never_answers_reports_at_the_end(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"http://127.0.0.1:{_free_port()}/metrics"
    code = main(["monitor", "--url", url, "--interval", "0.2", "--duration", "0.6", "--db", str(tmp_path / "m")])
    out, err = capsys.readouterr()
    assert [json.loads(line)["event"] for line in out.splitlines()] == ["target_down"]
    start, end = err.strip().splitlines()
    assert code == 1 and start.startswith("specwise monitor: watching 1 target")
    assert end.endswith(
        f"0 windows judged over 1 target; exit 1: {url} never answered (scrape failed: connection refused)"
    )
    assert main(["monitor", "--url", url, "--once", "--interval", "0.2"]) == 2  # --once: no server answered


def test_a_loop_stops_when_the_reader_of_its_output_has_gone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``monitor ... | head``: once a write found the pipe closed (cli.common.reader_gone), the loop stops at its
    next round, as a pipe's writer does, instead of watching for nobody (no --duration here)."""
    import specwise.cli.monitor as monitor_cli

    rounds: list[int] = []

    def gone() -> bool:
        rounds.append(1)
        return len(rounds) >= 2  # the reader goes after the first round

    monkeypatch.setattr(monitor_cli, "reader_gone", gone)
    with _page_server(lambda: PAGE.encode()) as url:
        code = main(["monitor", "--url", url, "--interval", "0.1", "--db", str(tmp_path / "m")])
    capsys.readouterr()
    assert code == 0 and len(rounds) == 2  # ended as a --duration run does: its summary, exit 0
