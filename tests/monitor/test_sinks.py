"""Monitor sinks: a webhook that fails is retried and reported, never fatal; the exporter serves specwise_* gauges."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from specwise.cli import main
from specwise.metrics import parse_exposition
from specwise.monitor.events import AlertOpened, AlertResolved, MonitorEvent
from specwise.monitor.loop import Target
from specwise.monitor.rules import Finding
from specwise.monitor.sinks import MetricsExporter, webhook
from specwise.monitor.window import WindowStats
from tests.conftest import mock_with_traffic


class _Hook:
    """A local webhook receiver that answers ``codes`` in turn (then 200)."""

    def __init__(self, codes: list[int]) -> None:
        self.codes, self.received = list(codes), []  # type: ignore[var-annotated]
        hook = self

        class H(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                code = hook.codes.pop(0) if hook.codes else 200
                if code == 200:
                    hook.received.append(json.loads(body))
                self.send_response(code)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/hook"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def test_webhook_retries_then_delivers_once() -> None:
    hook = _Hook([500, 503])
    failures: list[MonitorEvent] = []
    alert = AlertOpened(1.0, "http://a/metrics", "x", "warning", "m")
    try:
        webhook(hook.url, on_failure=failures.append, sleep=lambda s: None)(alert)
    finally:
        hook.close()
    assert hook.received == [alert.to_json()] and failures == []
    assert alert.to_json() == {
        "at": 1.0,
        "url": "http://a/metrics",
        "event": "alert",
        "rule": "x",
        "severity": "warning",
        "message": "m",
    }


def test_webhook_failure_is_reported_not_raised() -> None:
    hook = _Hook([500, 500, 500])
    failures: list[MonitorEvent] = []
    try:
        webhook(hook.url, on_failure=failures.append, sleep=lambda s: None)(AlertResolved(1.0, "u", "x"))
        webhook("http://127.0.0.1:9/none", on_failure=failures.append, sleep=lambda s: None, timeout_s=0.5)(
            AlertOpened(2.0, "u", "x", "warning", "m")
        )
    finally:
        hook.close()
    assert [f.to_json() for f in failures] == [
        {"at": 1.0, "event": "webhook_failed", "error": "HTTP 500", "for": "resolved"},
        {"at": 2.0, "event": "webhook_failed", "error": "connection refused", "for": "alert"},
    ]


def test_exporter_serves_gauges() -> None:
    exporter = MetricsExporter()
    try:
        t = Target("http://a/metrics")
        t.last = WindowStats(5.0, 100.0, 0.42, 2.3, (0.7, 0.4), None, None, None, None, None, None, None, None)
        t.alerts.active["low_acceptance_rate"] = Finding("low_acceptance_rate", "warning", "x")
        exporter.update([t, Target("http://b/metrics", failing="down")])
        scrape = parse_exposition(httpx.get(exporter.url, timeout=5).text)
    finally:
        exporter.close()
    values = {(s.name, s.labels): s.value for s in scrape.samples}
    a = (("instance", "a:80"), ("model_name", ""), ("target", "http://a/metrics"))
    b = (("instance", "b:80"), ("model_name", ""), ("target", "http://b/metrics"))
    assert values[("specwise_acceptance_rate", a)] == pytest.approx(0.42)
    assert values[("specwise_target_up", b)] == 0
    assert values[("specwise_alert_active", (*a[:2], ("rule", "low_acceptance_rate"), a[2]))] == 1


def test_exporter_labels_join_vllm_series_and_never_carry_userinfo() -> None:
    """model_name and instance, as Prometheus labels the vLLM series of the same server (issue 15); the URL's
    credentials appear in no label, and a model_name that changes leaves no stale series behind."""
    exporter = MetricsExporter()
    try:
        t = Target("https://alice:s3cret@10.0.0.5:8443/metrics")
        t.model_name = "llama"
        t.last = WindowStats(5.0, 100.0, 0.42, 2.3, (0.7, 0.4), None, None, None, None, None, None, None, None)
        exporter.update([t])
        t.model_name = "llama-v2"
        exporter.update([t])
        text = httpx.get(exporter.url, timeout=5).text
    finally:
        exporter.close()
    assert "alice" not in text and "s3cret" not in text
    labels = {s.labels for s in parse_exposition(text).samples if s.name == "specwise_acceptance_rate"}
    assert labels == {
        (("instance", "10.0.0.5:8443"), ("model_name", "llama-v2"), ("target", "https://***@10.0.0.5:8443/metrics"))
    }


def test_exporter_binds_loopback_unless_allowed(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(
            [
                "monitor",
                "--url",
                "http://127.0.0.1:9/metrics",
                "--serve-metrics",
                "0.0.0.0:0",
                "--interval",
                "0.1",
                "--duration",
                "0.1",
            ]
        )
        == 2
    )
    assert "needs --allow-remote" in capsys.readouterr().err
    assert (
        main(
            [
                "monitor",
                "--url",
                "http://127.0.0.1:9/metrics",
                "--serve-metrics",
                "nonsense",
                "--interval",
                "0.1",
                "--duration",
                "0.1",
            ]
        )
        == 2
    )
    assert "expected HOST:PORT" in capsys.readouterr().err


def test_loop_with_webhook_and_exporter(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    hook = _Hook([500])  # first delivery fails once, then succeeds on retry
    try:
        with mock_with_traffic() as server:
            code = main(
                [
                    "monitor",
                    "--url",
                    server.url + "/metrics",
                    "--interval",
                    "0.3",
                    "--duration",
                    "1.2",
                    "--min-drafts",
                    "1",
                    "--db",
                    str(tmp_path / "m.sqlite"),
                    "--webhook",
                    hook.url,
                    "--serve-metrics",
                    "127.0.0.1:0",
                ]
            )
    finally:
        hook.close()
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert code == 1 and events[0]["event"] == "exporter"
    # 1 of 4 drafts accepted: low rate, and positions 2-4 collapsed; each delivered once despite a 500.
    assert sorted(e["rule"] for e in hook.received if e["event"] == "alert") == [
        "low_acceptance_rate",
        "position_collapse",
    ]


@pytest.mark.parametrize("value", ["[::1]:0", "::1:0"])
def test_the_ipv6_loopback_binds_without_allow_remote(value: str) -> None:
    """``--serve-metrics [::1]:0`` is loopback: it used to need --allow-remote (``[::1]`` was not in the list) and
    then failed to bind (an IPv4 socket for an IPv6 address). Review 7 #17."""
    from specwise.cli.monitor import _bind

    host, port = _bind("--serve-metrics", value, allow_remote=False)
    assert (host, port) == ("::1", 0)
    exporter = MetricsExporter(host, port)
    try:
        assert exporter.url.startswith("http://[::1]:")
        assert httpx.get(exporter.url, timeout=5).status_code == 200
    finally:
        exporter.close()


@pytest.mark.parametrize("value", ["[::]:0", "[2001:db8::1]:9400", "[::1:9400", "::1]:9400"])
def test_ipv6_beyond_loopback_or_half_bracketed_is_refused(value: str) -> None:
    from specwise.cli.monitor import _bind
    from specwise.errors import SpecwiseError

    with pytest.raises(SpecwiseError, match=r"needs --allow-remote|expected HOST:PORT"):
        _bind("--serve", value, allow_remote=False)
