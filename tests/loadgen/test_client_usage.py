"""Review 10 on ``specwise bench``'s client: a /metrics page that is not UTF-8 (it crashed the run), a server that
sends usage only in its last chunk (tokens, TPOT and tok/s were per chunk, silently), a hidden 30 s read timeout
under ``--request-timeout``, error bodies never shown (and 401 with the generic hint), and impossible usage counts
taken as measurements. A stdlib server on loopback; every request ends within a second or two."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from specwise.cli import main
from specwise.loadgen.client import ClientConfig, HttpSession, RequestSpec, send_request
from specwise.loadgen.plan import RunConfig, plan_from_config
from specwise.loadgen.records import RequestRecord, all_failed_hint
from specwise.loadgen.store import ResultStore
from specwise.prompts.items import PromptItem

KEY = "sk-canary-7f3kQ9zzTop"
BAD_METRICS = b"# HELP vllm:x caf\xe9 \xff\xfe\nvllm:\xff 1\n"  # Latin-1 and bytes no charset decodes
METRICS_OK = b"# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 0\n"
CHUNK_S = 0.02
# the first chunk carries 1 token, the next four 3 each (a speculative server): 13 tokens in 5 chunks
TOKENS = (1, 3, 3, 3, 3)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"  # the body ends when the connection closes: no chunked framing to write

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        bad = self.server.mode == "bad-metrics"  # type: ignore[attr-defined]
        self._send(200, BAD_METRICS if bad else METRICS_OK, "text/plain; version=0.0.4")

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        mode: str = self.server.mode  # type: ignore[attr-defined]
        if mode == "echo-key":
            key = self.headers.get("Authorization", "").removeprefix("Bearer ")
            self._send(401, json.dumps({"error": {"message": f"Incorrect API key provided: {key}"}}).encode())
            return
        if mode == "500":
            self._send(500, b'{"error": {"message": "internal boom"}}')
            return
        if mode == "401":
            self._send(401, b'{"error": {"message": "unauthorized"}}')
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        with contextlib.suppress(OSError):
            time.sleep(self.server.first_byte_s)  # type: ignore[attr-defined]
            for event in _events(mode, self.server.usage):  # type: ignore[attr-defined]
                self.wfile.write(b"data: " + json.dumps(event).encode() + b"\n\n")
                self.wfile.flush()
                time.sleep(CHUNK_S)
            self.wfile.write(b"data: [DONE]\n\n")

    def _send(self, status: int, body: bytes, ctype: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        with contextlib.suppress(OSError):
            self.wfile.write(body)


def _events(mode: str, usage: tuple[int, ...]) -> Iterator[dict[str, Any]]:
    """``continuous``: usage with every chunk (vLLM's continuous_usage_stats); ``final``: only in a last chunk
    without choices (include_usage alone); ``none``: no usage; ``usage``: the server's ``usage`` counts as given."""
    if mode == "usage":
        for n in usage:
            yield {"choices": [{"text": "ab"}], "usage": {"prompt_tokens": 3, "completion_tokens": n}}
        return
    done = 0
    for n in TOKENS:
        done += n
        event: dict[str, Any] = {"choices": [{"text": "x" * n}]}
        if mode == "continuous":
            event["usage"] = {"prompt_tokens": 3, "completion_tokens": done}
        yield event
    if mode == "final":
        yield {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": done, "total_tokens": done + 3}}


@pytest.fixture
def server() -> Iterator[ThreadingHTTPServer]:
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    srv.daemon_threads = True
    srv.mode, srv.usage, srv.first_byte_s = "continuous", (), 0.0  # type: ignore[attr-defined]
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def _url(srv: ThreadingHTTPServer) -> str:
    host, port = srv.server_address[:2]
    return f"http://{host!s}:{port}"


def _bench(srv: ThreadingHTTPServer, tmp_path: Path, *extra: str) -> tuple[int, list[RequestRecord]]:
    """``specwise bench`` against the server (its /metrics scraped): exit code, stdout, the stored records."""
    db = tmp_path / "r.sqlite"
    argv = ["bench", "--url", _url(srv), "--model", "m", "--rates", "50", "--requests-per-level", "3"]
    code = main([*argv, "--max-tokens", "16", "--request-timeout", "5", "--run-id", "t", "--db", str(db), *extra])
    store = ResultStore(db)
    try:
        return code, store.records("t")
    finally:
        store.close()


def test_a_metrics_page_that_is_not_utf8_is_a_scrape_error_not_a_crash(
    server: ThreadingHTTPServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server.mode = "bad-metrics"  # type: ignore[attr-defined]
    code, records = _bench(server, tmp_path)
    out = capsys.readouterr().out
    assert code == 0 and len(records) == 3 and all(r.ok for r in records)
    assert "not valid Prometheus exposition text" in out


def test_a_metrics_page_in_latin1_reads_as_text(server: ThreadingHTTPServer) -> None:
    server.mode = "bad-metrics"  # type: ignore[attr-defined]
    cfg = ClientConfig(base_url=_url(server), model="m", request_timeout_s=5)

    async def go() -> str:
        async with HttpSession(cfg, 2) as http:
            return await http.get_text(_url(server) + "/metrics", 5.0)

    assert "\ufffd" in asyncio.run(go())


def test_the_final_usage_count_is_the_output_count(
    server: ThreadingHTTPServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server.mode = "final"  # type: ignore[attr-defined]
    code, records = _bench(server, tmp_path)
    out = capsys.readouterr().out
    assert code == 0 and len(records) == 3
    for r in records:
        assert r.ok and r.output_tokens == sum(TOKENS) and not r.tokens_exact
        assert len(r.chunks) == len(TOKENS)  # one per streamed chunk: ITL per chunk
        assert r.first_token_s is not None and r.tpot_s is not None
        assert r.tpot_s == pytest.approx((r.chunks[-1][0] - r.first_token_s) / (sum(TOKENS) - 1))
        assert r.tpot_s < CHUNK_S / 2  # per token: about a third of the chunk interval, not the whole of it
    assert "3 of 3 requests streamed no per-chunk usage" in out and "ITL is per streamed chunk" in " ".join(out.split())


def test_no_usage_at_all_is_said_under_the_table(
    server: ThreadingHTTPServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server.mode = "none"  # type: ignore[attr-defined]
    code, records = _bench(server, tmp_path)
    out = " ".join(capsys.readouterr().out.split())
    assert code == 0 and all(r.ok and r.output_tokens == len(TOKENS) and not r.tokens_exact for r in records)
    assert "3 of 3 requests streamed no usage counts: each text chunk was counted as one token" in out


def test_exact_usage_needs_no_note(
    server: ThreadingHTTPServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, records = _bench(server, tmp_path)
    out = capsys.readouterr().out
    assert code == 0 and all(r.output_tokens == sum(TOKENS) and r.tokens_exact for r in records)
    # no note about how tokens were counted (a busy machine may still add the schedule-lag note, which is not this)
    notes = [line for line in " ".join(out.split()).split("note:")[1:] if "went out at" not in line]
    assert not notes and "failure" not in out and "streamed no" not in out


@pytest.mark.parametrize(
    ("usage", "fragment"),
    [
        ((5, 3, 7), "went down from 5 to 3"),
        ((1, -2), "completion_tokens -2 is outside"),
        ((1, 10**12), "completion_tokens 1000000000000 is outside 0..16 (max_tokens)"),
        ((4, 17), "completion_tokens 17 is outside 0..16 (max_tokens)"),
    ],
    ids=["down", "negative", "absurd", "over-max-tokens"],
)
def test_impossible_usage_counts_make_the_request_malformed(
    server: ThreadingHTTPServer, tmp_path: Path, usage: tuple[int, ...], fragment: str
) -> None:
    server.mode, server.usage = "usage", usage  # type: ignore[attr-defined]
    code, records = _bench(server, tmp_path)
    assert code == 2 and len(records) == 3
    for r in records:
        assert r.error is not None and r.error.startswith("malformed: ") and fragment in r.error


def test_plausible_usage_counts_are_kept(server: ThreadingHTTPServer, tmp_path: Path) -> None:
    server.mode, server.usage = "usage", (1, 4, 4, 16)  # type: ignore[attr-defined]
    code, records = _bench(server, tmp_path)
    assert code == 0 and all(r.ok and r.output_tokens == 16 and r.tokens_exact for r in records)


def test_the_read_timeout_follows_request_timeout() -> None:
    config = RunConfig(url="http://127.0.0.1:1", model="m", prompts=(PromptItem("hi"),), request_timeout_s=100.0)
    client = plan_from_config(config).client
    assert HttpSession(client, 1).timeout.sock_read == 100.0  # was min(30, --request-timeout), hidden
    assert client.no_bytes_timeout_s == 100.0
    # a read timeout set on its own can only shorten the request's
    assert ClientConfig("http://x", "m", request_timeout_s=0.5, read_timeout_s=5.0).no_bytes_timeout_s == 0.5


def test_a_slow_first_byte_within_request_timeout_succeeds_and_a_late_one_names_the_limit(
    server: ThreadingHTTPServer,
) -> None:
    server.first_byte_s = 0.6  # type: ignore[attr-defined]
    config = RunConfig(url=_url(server), model="m", prompts=(PromptItem("hi"),), request_timeout_s=0.3)

    async def one(timeout_s: float) -> RequestRecord:
        cfg = plan_from_config(
            RunConfig(url=config.url, model="m", prompts=config.prompts, request_timeout_s=timeout_s)
        ).client
        async with HttpSession(cfg, 2) as http:
            return await send_request(http, cfg, RequestSpec("r", "hi", 16), run_id="x", level=0, scheduled_s=0.0)

    late = asyncio.run(one(0.3))
    assert late.error is not None and late.error.startswith("timeout") and "0.3 s" in late.error
    assert asyncio.run(one(3.0)).ok


def test_error_bodies_are_shown_masked_with_the_key_hint(
    server: ThreadingHTTPServer, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SPECWISE_TEST_KEY", KEY)
    server.mode = "echo-key"  # type: ignore[attr-defined]
    code, _ = _bench(server, tmp_path, "--api-key-env", "SPECWISE_TEST_KEY")
    captured = capsys.readouterr()
    out = " ".join(captured.out.split())
    assert code == 2
    assert 'first http 401 failure: {"error": {"message": "Incorrect API key provided: ***"}}' in out
    assert "$SPECWISE_TEST_KEY" in out and "--api-key-env" in out
    assert KEY not in captured.out + captured.err and "canary" not in captured.out + captured.err


def test_a_server_error_body_is_shown_once_per_kind(
    server: ThreadingHTTPServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server.mode = "500"  # type: ignore[attr-defined]
    code, _ = _bench(server, tmp_path)
    out = capsys.readouterr().out
    assert code == 2
    assert out.count("first http 500 failure: ") == 1 and "internal boom" in out
    assert "--api-key-env" not in out


def test_the_all_failed_hint_names_the_key_for_a_refused_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the requests carried decides what to change (review s45a, 9): a key that is set was refused (check its
    value), an unset variable sent none (set it), a URL's user:password@ were the credentials refused."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert "$OPENAI_API_KEY is not set, so no API key was sent; set it" in all_failed_hint({"http 401": 3})
    assert "--api-key-env" in all_failed_hint(["http 403"])
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong")
    assert "the API key in $OPENAI_API_KEY was refused; check its value" in all_failed_hint({"http 401": 3})
    said = all_failed_hint({"http 401": 3}, url="http://***@127.0.0.1:8000")
    assert "the URL's user:password@; check them" in said and "OPENAI_API_KEY" not in said
    assert all_failed_hint({"timeout": 2}) == "raise --request-timeout"
    assert all_failed_hint({"http 401": 1, "connection": 1}) == "check --url, --model and the server"


def test_a_named_but_unset_key_variable_is_refused_before_any_request(
    server: ThreadingHTTPServer, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Review 17, finding 6: ``--api-key-env VAR`` with VAR unset sent no key without a word; the user meant to send
    one. Refused in one line (exit 2) before the database is made; ``--api-key-env ''`` still sends no key."""
    monkeypatch.delenv("SPECWISE_UNSET_KEY", raising=False)
    db = tmp_path / "r.sqlite"
    argv = ["bench", "--url", _url(server), "--model", "m", "--rates", "50", "--requests-per-level", "2"]
    assert main([*argv, "--db", str(db), "--api-key-env", "SPECWISE_UNSET_KEY"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("specwise bench: error: argument --api-key-env: $SPECWISE_UNSET_KEY is not set")
    assert len(err.splitlines()) == 1 and not db.exists()
    monkeypatch.setenv("SPECWISE_EMPTY_KEY", "")
    assert main([*argv, "--db", str(db), "--api-key-env", "SPECWISE_EMPTY_KEY"]) == 2
    assert "$SPECWISE_EMPTY_KEY is not set (or empty)" in capsys.readouterr().err
    assert main([*argv, "--db", str(db), "--api-key-env", ""]) == 0


@pytest.mark.parametrize(
    ("flag", "says"),
    [("SPECWISE_TEST_KEY", "the API key in $SPECWISE_TEST_KEY was refused; check its value"), ("", "no API key")],
)
def test_the_final_401_error_names_the_variable_configured(
    server: ThreadingHTTPServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    flag: str,
    says: str,
) -> None:
    """Review 17, finding 6: every request refused, the last line named $OPENAI_API_KEY whatever --api-key-env said."""
    monkeypatch.setenv("SPECWISE_TEST_KEY", KEY)
    server.mode = "401"  # type: ignore[attr-defined]
    code, records = _bench(server, tmp_path, "--api-key-env", flag)
    err = capsys.readouterr().err
    assert code == 2 and len(records) == 3
    last = err.strip().splitlines()[-1]
    assert last.startswith("specwise bench: error: all 3 requests failed (3 http 401)") and says in last
    assert "OPENAI_API_KEY" not in err


def test_a_refused_url_credential_is_named_as_such(
    server: ThreadingHTTPServer, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "")
    server.mode = "401"  # type: ignore[attr-defined]
    url = _url(server).replace("http://", "http://bench:pw@")
    argv = ["bench", "--url", url, "--model", "m", "--rates", "50", "--requests-per-level", "2"]
    assert main([*argv, "--db", str(tmp_path / "r.sqlite"), "--api-key-env", ""]) == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert "they were the URL's user:password@; check them" in last and "pw@" not in last
