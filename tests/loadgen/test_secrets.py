"""No credential a user gives bench -- URL userinfo, the API key -- reaches anything it writes: stdout, stderr, the
results database (with its WAL), the JSONL export, the calibration or lock files (issue 13)."""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from specwise.cli import main
from specwise.loadgen.mock_server import MockBehaviour, MockServer

URL_SECRET = "Cnry7f3kQurlpass"
KEY_SECRET = "sk-Cnry9zzKeyValue"


def test_credentials_never_reach_outputs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SPECWISE_CANARY_KEY", KEY_SECRET)
    with MockServer(MockBehaviour(fail_429_every=3)) as server:
        # the key against the plain URL, the URL's userinfo (Basic auth) without a key: each reaches the server
        plain = ["--url", server.url, "--api-key-env", "SPECWISE_CANARY_KEY"]
        userinfo = ["--url", server.url.replace("http://", f"http://bench:{URL_SECRET}@"), "--api-key-env", ""]
        common = ["--model", "m", "--rates", "20,40", "--requests-per-level", "6", "--db", str(tmp_path / "r.sqlite")]
        export = ["--export-jsonl", str(tmp_path / "r.jsonl")]
        assert main(["bench", *plain, *common, *export, "--run-id", "key", "--json"]) == 0
        assert main(["bench", *userinfo, *common, "--run-id", "userinfo"]) == 0
        # a complete run is printed, not re-run: its URL's credentials (never stored) are not asked for (review s59)
        assert main(["bench", "--resume", "userinfo", "--db", str(tmp_path / "r.sqlite"), "--json"]) == 0
    out, err = capsys.readouterr()
    written = {p.name: p.read_bytes().decode("latin-1") for p in tmp_path.iterdir() if p.is_file()}
    assert {"r.sqlite", "r.jsonl"} <= set(written)
    for name, text in {"stdout": out, "stderr": err, **written}.items():
        assert URL_SECRET not in text, name
        assert KEY_SECRET not in text and "Cnry9zz" not in text, name
    assert "***@" in out  # the URL is shown, redacted


def test_url_credentials_and_an_api_key_together_are_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SPECWISE_CANARY_KEY", KEY_SECRET)
    with MockServer(MockBehaviour()) as server:
        url = server.url.replace("http://", f"http://bench:{URL_SECRET}@")
        argv = ["bench", "--url", url, "--model", "m", "--rates", "20", "--requests-per-level", "2",
                "--api-key-env", "SPECWISE_CANARY_KEY", "--db", str(tmp_path / "r.sqlite")]  # fmt: skip
        assert main(argv) == 2
        assert server.state.requests == 0
    err = capsys.readouterr().err
    assert "both would be the Authorization header" in err and URL_SECRET not in err and KEY_SECRET not in err


class _EchoAuth(BaseHTTPRequestHandler):
    """Answers every completion 400 with the credentials it got, three ways: the Authorization header as sent
    (``Basic <base64>``), that base64 decoded (``user:password``) and the password alone (review 17, finding 1)."""

    protocol_version = "HTTP/1.0"

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self._send(200, b"# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 0\n")

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        auth = self.headers.get("Authorization", "")
        pair = base64.b64decode(auth.removeprefix("Basic ")).decode("latin-1") if auth.startswith("Basic ") else ""
        message = f"bad key: {auth} (user {pair}, password {pair.partition(':')[2]})"
        self._send(400, json.dumps({"error": {"message": message}}).encode())

    def _send(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def echo_server() -> Iterator[str]:
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _EchoAuth)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


@pytest.mark.parametrize(("written", "password"), [(URL_SECRET, URL_SECRET), ("Cnry%40pass%2F7f3k", "Cnry@pass/7f3k")])
def test_url_credentials_a_server_echoes_are_masked(
    echo_server: str, written: str, password: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A server that echoes the Basic credential it refused: neither the base64 nor the pair nor the password reaches
    the terminal, the database or the exports (before, the key was masked and URL credentials were not)."""
    url = f"http://bench:{written}@{echo_server}"
    argv = ["bench", "--url", url, "--model", "m", "--rates", "20", "--requests-per-level", "2", "--max-tokens", "4"]
    out_files = ["--output", str(tmp_path / "o.json"), "--export-jsonl", str(tmp_path / "r.jsonl")]
    assert main([*argv, "--request-timeout", "5", "--db", str(tmp_path / "r.sqlite"), *out_files]) == 2  # all 400
    out, err = capsys.readouterr()
    token = base64.b64encode(f"bench:{password}".encode("latin-1")).decode()
    written_files = {p.name: p.read_bytes().decode("latin-1") for p in tmp_path.iterdir() if p.is_file()}
    assert {"r.sqlite", "r.jsonl", "o.json"} <= set(written_files)
    for name, text in {"stdout": out, "stderr": err, **written_files}.items():
        for secret in (token, f"bench:{password}", password, written):
            assert secret not in text, (name, secret)
    assert "first http 400 failure" in out and "bad key: Basic ***" in out


class _Forbidden(BaseHTTPRequestHandler):
    """A /metrics behind a proxy that refuses it: 403."""

    protocol_version = "HTTP/1.0"

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self.send_response(403)
        self.send_header("Content-Length", "0")
        self.end_headers()


def test_a_refused_metrics_url_is_reported_without_its_credentials(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The scrape error names the /metrics URL, masked: its user:password and ?token= value reached the table and
    --json's scrape_errors (review s45a, 2)."""
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Forbidden)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    metrics = f"http://bob:{URL_SECRET}@127.0.0.1:{srv.server_address[1]}/metrics?token={KEY_SECRET}"
    try:
        with MockServer(MockBehaviour()) as server:
            argv = ["bench", "--url", server.url, "--metrics-url", metrics, "--model", "m", "--rates", "20"]
            argv += ["--requests-per-level", "2", "--db", str(tmp_path / "r.sqlite"), "--api-key-env", ""]
            assert main([*argv, "--json"]) == 0
    finally:
        srv.shutdown()
        srv.server_close()
    out, err = capsys.readouterr()
    doc = json.loads(out)
    errors = [e for level in doc["levels"] for e in level["scrape_errors"]]
    assert any("scrape failed: http://***@127.0.0.1" in e and "token=***: HTTP 403" in e for e in errors), errors
    for text in (out, err, (tmp_path / "r.sqlite").read_bytes().decode("latin-1")):
        assert URL_SECRET not in text and KEY_SECRET not in text
