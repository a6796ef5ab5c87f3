"""The streaming client against servers that misbehave in ways the mock does not: an endless SSE line, an error
body that echoes the API key, an error body of many megabytes (issue 13). Loopback only, bounded in time."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from specwise.loadgen.client import ClientConfig, HttpSession, RequestSpec, scrub, send_request, url_secrets
from specwise.loadgen.records import RequestRecord
from specwise.loadgen.sse import MAX_LINE_BYTES

KEY = "sk-canary-7f3kQ9zzTop"


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        mode = self.server.mode  # type: ignore[attr-defined]
        if mode == "echo-key":
            auth = self.headers.get("Authorization", "")
            body = f'{{"error": {{"message": "Incorrect API key provided: {auth.removeprefix("Bearer ")}"}}}}'
            self._send(401, body.encode())
        elif mode == "huge-error":
            self._send(500, b"x" * (64 * 1024 * 1024))
        elif mode == "endless-line":
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            chunk = b"data: " + b"a" * (1 << 20)
            with contextlib.suppress(OSError):
                for _ in range(MAX_LINE_BYTES // len(chunk) + 4):
                    self.wfile.write(chunk)

    def _send(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        with contextlib.suppress(OSError):
            self.wfile.write(body)


@pytest.fixture
def server() -> Iterator[ThreadingHTTPServer]:
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    srv.daemon_threads = True
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def _one(srv: ThreadingHTTPServer, mode: str, monkeypatch: pytest.MonkeyPatch) -> RequestRecord:
    srv.mode = mode  # type: ignore[attr-defined]
    monkeypatch.setenv("SPECWISE_TEST_KEY", KEY)
    host, port = srv.server_address[:2]
    cfg = ClientConfig(
        base_url=f"http://{host!s}:{port}", model="m", api_key_env="SPECWISE_TEST_KEY", request_timeout_s=20
    )

    async def go() -> RequestRecord:
        async with HttpSession(cfg, 4) as http:
            return await send_request(http, cfg, RequestSpec("r", "hi", 8), run_id="x", level=0, scheduled_s=0.0)

    return asyncio.run(go())


def test_an_endless_event_line_ends_the_request_as_malformed(
    server: ThreadingHTTPServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    rec = _one(server, "endless-line", monkeypatch)
    assert rec.error is not None and rec.error.startswith("malformed") and "without a newline" in rec.error


def test_an_error_body_never_carries_the_key_into_the_record(
    server: ThreadingHTTPServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    rec = _one(server, "echo-key", monkeypatch)
    assert rec.error is not None and rec.error.startswith("http 401") and "Incorrect API key" in rec.error
    assert KEY not in rec.error and "canary" not in rec.error
    assert KEY not in str(rec.to_json())


def test_a_huge_error_body_is_read_only_as_far_as_the_message(
    server: ThreadingHTTPServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    rec = _one(server, "huge-error", monkeypatch)
    assert rec.error is not None and rec.error.startswith("http 500") and len(rec.error) < 200


@pytest.mark.parametrize(
    "text",
    [
        "Incorrect API key provided: sk-abcdef123456",
        "header was Bearer abc.def-ghi_jkl",
        '{"api_key": "zz9988776655"}',
        "API-KEY=qwertyuiop",
        "bad key: Basic Ym9iOlBhU3NXMHJkWlo=",
        "authorization: basic Ym9iOlBhU3NXMHJkWlo",
    ],
)
def test_scrub_masks_key_shaped_text(text: str) -> None:
    out = scrub(text, None)
    assert "***" in out
    for secret in ("abcdef123456", "abc.def-ghi_jkl", "zz9988776655", "qwertyuiop", "Ym9iOlBhU3NXMHJkWlo"):
        assert secret not in out


def test_url_secrets_are_every_form_a_server_echoes() -> None:
    """Review 17: the URL's credentials as Basic auth sends them (base64 of the decoded pair), the pair and the
    password, written and percent-decoded; nothing for a URL without userinfo; a short bare password is left to its
    pair (masking every "ab" would garble the message)."""
    secrets = url_secrets("http://bob:PaSs%40W0rd@127.0.0.1:8000/v1")
    assert {"Ym9iOlBhU3NAVzByZA==", "bob:PaSs@W0rd", "bob:PaSs%40W0rd", "PaSs@W0rd", "PaSs%40W0rd"} <= set(secrets)
    assert url_secrets("http://127.0.0.1:8000") == ()
    assert "ab" not in url_secrets("http://bob:ab@h") and "bob:ab" in url_secrets("http://bob:ab@h")
    assert "tok3nAsUser" in url_secrets("http://tok3nAsUser@h")  # no password: the user is the credential
    echoed = "rejected Basic Ym9iOlBhU3NAVzByZA== for bob:PaSs@W0rd (PaSs%40W0rd) from http://bob:PaSs%40W0rd@h/"
    out = scrub(echoed, *secrets)
    assert "PaSs" not in out and "Ym9i" not in out and "bob:" not in out
