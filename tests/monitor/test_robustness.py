"""Issue 13, the monitor part: a total deadline per scrape, a body cap, concurrent scrapes, non-finite samples and
impossible counters, --duration with a hung server, exit 2 when nobody answers, and the lean fetcher's HTTP."""

from __future__ import annotations

import base64
import gzip
import io
import json
import math
import threading
import time
import tracemalloc
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import httpx
import pytest

from specwise.cli import main
from specwise.errors import SpecwiseError
from specwise.metrics import parse_exposition
from specwise.metrics.exposition import Scrape
from specwise.monitor.dashboard import Dashboard
from specwise.monitor.fake_servers import ServersThread
from specwise.monitor.fetch import Scraper, Slot, endpoint, redact, redact_url
from specwise.monitor.loop import Target, evaluate_once, findings, window_parser
from specwise.monitor.predicted import slowdown_model
from specwise.monitor.rules import Thresholds
from specwise.monitor.sinks import json_lines
from specwise.monitor.window import WindowStats
from specwise.scenario import load_scenario

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "vllm_metrics"
PAGE = (FIXTURES / "ngram_after.txt").read_text()
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "llama70b-4xh100.toml"


@pytest.fixture(scope="module")
def fakes() -> Iterator[dict[str, str]]:
    with ServersThread(["healthy", "slowloris", "huge", "badvalues"], PAGE) as urls:
        yield urls


def test_a_trickling_server_is_cut_at_the_deadline_and_delays_nobody(fakes: dict[str, str]) -> None:
    scraper = Scraper(window_parser())
    arrived: dict[int, tuple[float, Scrape | SpecwiseError]] = {}
    jobs = [(endpoint(fakes["slowloris"]), Slot()), (endpoint(fakes["healthy"]), Slot())]
    t0 = time.monotonic()
    try:
        scraper.round(jobs, lambda i, r: arrived.setdefault(i, (time.monotonic() - t0, r)), deadline_s=1.5)
    finally:
        scraper.close()
    slow_t, slow = arrived[0]
    fast_t, fast = arrived[1]
    assert isinstance(slow, SpecwiseError) and "no complete answer within 1.5 s" in str(slow)
    assert 1.4 <= slow_t < 3.0  # the total deadline, although a byte arrives every second
    assert isinstance(fast, Scrape) and fast.samples and fast_t < 1.0  # handed on as it arrived


def test_a_50_mb_page_is_refused_with_memory_bounded(fakes: dict[str, str]) -> None:
    scraper = Scraper(window_parser(), max_bytes=1 << 20)
    tracemalloc.start()
    try:
        results = scraper.fetch_all([fakes["huge"], fakes["huge"]], deadline_s=20)  # with and without Length
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        scraper.close()
    messages = [str(r) for r in results]
    assert all(isinstance(r, SpecwiseError) and "1048576-byte cap: refused" in str(r) for r in results), messages
    assert any("page of 52428800 bytes" in m for m in messages)  # the announced one is refused before reading
    assert peak < 8 << 20, f"peak {peak / 2**20:.1f} MiB while refusing a 50 MB page"


def _scripted(pages: list[str | None]) -> Any:
    calls = iter(pages)

    def fetch(url: str) -> Scrape:
        text = next(calls)
        if text is None:
            raise SpecwiseError(f"{url}: scrape failed: ReadTimeout")
        return parse_exposition(text, url)

    return fetch


def _page(generated: float, running: str = "3", ttft_inf: float = 9.0) -> str:
    return (
        "# TYPE vllm:generation_tokens_total counter\n"
        f'vllm:generation_tokens_total{{model_name="m"}} {generated}\n'
        f'vllm:num_requests_running{{model_name="m"}} {running}\n'
        f'vllm:time_to_first_token_seconds_bucket{{le="0.1",model_name="m"}} {ttft_inf / 2}\n'
        f'vllm:time_to_first_token_seconds_bucket{{le="+Inf",model_name="m"}} {ttft_inf}\n'
        f'vllm:time_to_first_token_seconds_count{{model_name="m"}} {ttft_inf}\n'
    )


def test_a_counter_going_to_minus_1e6_and_back_is_one_longer_window() -> None:
    pages = [_page(100), _page(-1e6), _page(300), _page(float("inf")), _page(400), _page(500)]
    target = Target("http://t/metrics")
    log = io.StringIO()
    clock = iter(float(10 * i) for i in range(100))
    fetch = _scripted(pages)
    windows = []
    for _ in pages:
        last = target.last
        evaluate_once([target], Thresholds(), None, json_lines(log), clock=lambda: next(clock), fetch=fetch)
        if target.last is not last and target.last is not None:
            windows.append((target.last.window_s, target.last.generation_tokens_per_s))
    assert windows == [(20.0, 10.0), (20.0, 5.0), (10.0, 10.0)]  # bad scrapes skipped: good to good, never < 0
    events = [(e["event"], e["fault"]) for e in map(json.loads, log.getvalue().splitlines())]
    assert events == [
        ("fault", "impossible_counter"),
        ("fault", "non_finite_sample"),
        ("fault_cleared", "impossible_counter"),  # after three clean scrapes
    ]


def test_non_finite_gauges_never_crash_the_perf_model_or_the_dashboard() -> None:
    target = Target("http://t/metrics")
    pages = [_page(100, "NaN"), _page(200, "NaN"), _page(300, "+Inf"), _page(400, "-Inf")]
    fetch = _scripted(pages)
    slowdown = slowdown_model(load_scenario(EXAMPLE), k=4)
    clock = iter(float(i) for i in range(100))
    board = Dashboard(history=10)
    log = io.StringIO()
    try:
        for i in range(len(pages)):
            evaluate_once(
                [target], Thresholds(min_drafts=0), None, json_lines(log), clock=lambda: next(clock), fetch=fetch,
                slowdown=slowdown,
            )  # fmt: skip
            board.update([target], float(i))
        assert target.last is not None and target.last.running is None
        nan_stats = WindowStats(1.0, 100.0, math.nan, math.inf, (), None, None, None, None, math.nan, None, None, None)
        findings(nan_stats, Thresholds(min_drafts=0), slowdown)  # never raises
        target.last = nan_stats
        target.previous_t = 99.0
        board.update([target], 99.0)
        text = httpx.get(board.url + "api/state", timeout=5).text
    finally:
        board.close()

    def refuse(name: str) -> Any:
        raise AssertionError(f"/api/state carries {name}")

    state = json.loads(text, parse_constant=refuse)  # what the dashboard's JSON.parse needs
    assert state["targets"][0]["series"]["acceptance_rate"][-1] is None
    lines = [json.loads(line, parse_constant=refuse) for line in log.getvalue().splitlines()]
    assert [e["event"] for e in lines] == ["fault"]  # reported once, although every scrape had one


def test_faults_clear_once_after_clean_scrapes() -> None:
    pages = [_page(100, "NaN"), _page(200), _page(300), _page(400), _page(500, "NaN")]
    target = Target("http://t/metrics")
    log = io.StringIO()
    clock = iter(float(i) for i in range(100))
    fetch = _scripted(pages)
    for _ in pages:
        evaluate_once([target], Thresholds(), None, json_lines(log), clock=lambda: next(clock), fetch=fetch)
    events = [json.loads(line)["event"] for line in log.getvalue().splitlines()]
    assert events == ["fault", "fault_cleared", "fault"]


def test_duration_is_honoured_while_a_scrape_hangs(fakes: dict[str, str], tmp_path: Path) -> None:
    t0 = time.monotonic()
    code = main(
        ["monitor", "--url", fakes["slowloris"], "--url", fakes["healthy"], "--interval", "1", "--duration", "2",
         "--scrape-timeout", "60", "--db", str(tmp_path / "m.sqlite")]
    )  # fmt: skip
    assert time.monotonic() - t0 < 4.0
    assert code in (0, 1)


def test_one_server_with_impossible_counters_is_an_alert_not_bad_input(
    fakes: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Review 7: alone, a server answering with impossible counters exited 2 ("no server answered"); beside a
    healthy one the same server was an alert (exit 1). It answered: exit 1 either way; a down server alone stays 2."""
    code = main(["monitor", "--url", fakes["badvalues"], "--once", "--interval", "0.2"])
    out = capsys.readouterr().out
    assert code == 1 and "impossible" in out
    assert main(["monitor", "--url", "http://127.0.0.1:9/metrics", "--once", "--interval", "0.2"]) == 2
    assert "connection refused" in capsys.readouterr().err


def test_loop_with_no_server_answering_reports_it_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        ["monitor", "--url", "http://127.0.0.1:9/metrics", "--interval", "0.2", "--duration", "0.6",
         "--db", str(tmp_path / "m.sqlite")]
    )  # fmt: skip
    start, end = capsys.readouterr().err.strip().splitlines()  # the loop's start line, then its closing line
    assert code == 1 and start.startswith("specwise monitor: watching 1 target")  # review 11 #13: polled, then told
    assert "exit 1: http://127.0.0.1:9/metrics never answered (scrape failed: connection refused)" in end


class _Recorder(BaseHTTPRequestHandler):
    """Answers /chunked, /gzip, /eof (HTTP/1.0, no length), /500 and anything else plainly; records headers."""

    seen: ClassVar[list[dict[str, str]]] = []
    body = b"vllm:num_requests_running 4\n"

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_GET(self) -> None:
        _Recorder.seen.append(dict(self.headers))
        if self.path in ("/500", "/302"):
            self.send_response(int(self.path[1:]))
            if self.path == "/302":  # an HTTP -> HTTPS ingress
                self.send_header("Location", "https://user:pw@example.com/metrics?token=abc")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(200)
        if self.path == "/chunked":
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for piece in (self.body[:5], self.body[5:]):
                self.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
            self.wfile.write(b"0\r\n\r\n")
            return
        data = gzip.compress(self.body) if self.path == "/gzip" else self.body
        if self.path == "/gzip":
            self.send_header("Content-Encoding", "gzip")
        if self.path != "/eof":
            self.send_header("Content-Length", str(len(data)))
        else:
            self.close_connection = True
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture()
def recorder() -> Iterator[str]:
    _Recorder.protocol_version = "HTTP/1.1"
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_fetcher_speaks_http(recorder: str) -> None:
    scraper = Scraper(window_parser())
    try:
        urls = [f"http://u%40x:s3cr%3At@{recorder}/{p}" for p in ("plain", "chunked", "gzip", "eof", "500")]
        results = scraper.fetch_all(urls, deadline_s=5)
        target = Target(f"http://{recorder}/plain")
        for _ in range(3):  # kept alive between rounds
            evaluate_once([target], Thresholds(), None, None, scraper=scraper)
    finally:
        scraper.close()
    for r in results[:4]:
        assert isinstance(r, Scrape) and [(s.name, s.value) for s in r.samples] == [("vllm:num_requests_running", 4.0)]
    assert isinstance(results[4], SpecwiseError) and "HTTP 500" in str(results[4]) and "s3cr" not in str(results[4])
    assert str(results[4]).startswith(f"http://***@{recorder}/500")
    auth = _Recorder.seen[0]["Authorization"]
    assert base64.b64decode(auth.split()[1]).decode() == "u@x:s3cr:t"
    assert target.last is not None and target.last.running == 4.0


def test_a_redirect_is_named_not_read_as_an_empty_page(recorder: str) -> None:
    """Review 12 #7: a 302 (an HTTP -> HTTPS ingress) was "empty metrics response"; it is said as a redirect, where
    to (redacted), and not followed (it could lead off loopback)."""
    scraper = Scraper(window_parser())
    try:
        (result,) = scraper.fetch_all([f"http://{recorder}/302"], deadline_s=5)
    finally:
        scraper.close()
    assert isinstance(result, SpecwiseError)
    said = str(result)
    assert "HTTP 302 redirect to https://***@example.com/metrics?token=***" in said and "pw" not in said, said
    assert "not followed" in said


def test_redaction() -> None:
    assert redact_url("http://h/metrics?bearer=SECRETKEY5&jwt=x.y.z") == "http://h/metrics?bearer=***&jwt=***"
    assert redact_url("http://h/cb#access_token=abc&x=1") == "http://h/cb#access_token=***&x=1"  # an OAuth fragment
    assert redact_url("https://user:pa55@h:1/metrics") == "https://***@h:1/metrics"
    assert redact_url("http://h/metrics") == "http://h/metrics"
    assert redact("a http://u:p@h/x and https://v@k/y") == "a http://***@h/x and https://***@k/y"
    assert Target("http://u:p@h/metrics").url == "http://***@h/metrics"
    assert Target("http://u:p@h/metrics").source == "http://u:p@h/metrics"


def test_connection_failures_are_words_not_exception_class_names() -> None:
    """Review 7 #16: ``scrape failed: ConnectionRefusedError`` / ``gaierror`` / ``ConnectError`` read as words."""
    from specwise.monitor.events import TargetUp
    from specwise.monitor.prometheus_source import api_get
    from specwise.monitor.sinks import webhook

    scraper = Scraper(window_parser())
    try:
        refused, unknown = scraper.fetch_all(["http://127.0.0.1:9/metrics", "http://no-such-host.invalid/metrics"], 5)
    finally:
        scraper.close()
    assert str(refused) == "http://127.0.0.1:9/metrics: scrape failed: connection refused"
    assert (
        str(unknown) == "http://no-such-host.invalid/metrics: scrape failed: cannot resolve host 'no-such-host.invalid'"
    )
    with pytest.raises(SpecwiseError, match=r"Prometheus query failed: connection refused$"):
        api_get("http://127.0.0.1:9", "query", {"query": "up"}, 5)
    failed: list[object] = []
    webhook("http://127.0.0.1:9/hook", retries=1, on_failure=failed.append)(TargetUp(1.0, "u"))
    assert [f.error for f in failed] == ["connection refused"]  # type: ignore[attr-defined]
