"""URL credentials (``http://user:pass@host``) never reach anything the monitor produces: a canary password, then a
grep over stdout, stderr, every file written (SQLite with its WAL), /api/state, the exporter's /metrics, the webhook
bodies and the --once JSON."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import httpx
import pytest

from specwise.monitor.fake_servers import ServersThread

CANARY = "Cnry7f3kQ"
PAGE = (Path(__file__).resolve().parents[1] / "fixtures" / "vllm_metrics" / "ngram_after.txt").read_text()


@pytest.fixture(scope="module")
def fakes() -> Iterator[dict[str, str]]:
    with ServersThread(["healthy", "slowloris"], PAGE) as urls:
        yield urls


def _with_secret(url: str) -> str:
    return url.replace("http://", f"http://monitor:{CANARY}@")


class _Hook(BaseHTTPRequestHandler):
    bodies: ClassVar[list[bytes]] = []

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_POST(self) -> None:
        _Hook.bodies.append(self.rfile.read(int(self.headers["Content-Length"])))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "specwise.cli", "monitor", *args]


def test_credentials_never_leave_the_monitor(fakes: dict[str, str], tmp_path: Path) -> None:
    hook = ThreadingHTTPServer(("127.0.0.1", 0), _Hook)
    threading.Thread(target=hook.serve_forever, daemon=True).start()
    urls = [_with_secret(fakes["healthy"]), _with_secret(fakes["slowloris"]), f"http://monitor:{CANARY}@127.0.0.1:9/m"]
    argv = [a for u in urls for a in ("--url", u)]
    argv += ["--interval", "0.5", "--duration", "4", "--db", str(tmp_path / "m.sqlite"), "--min-acceptance", "0.95"]
    argv += ["--min-drafts", "1", "--serve", "127.0.0.1:0", "--serve-metrics", "127.0.0.1:0"]
    argv += ["--webhook", f"http://127.0.0.1:{hook.server_address[1]}/hook"]
    seen: list[str] = []
    try:
        proc = subprocess.Popen(_cli(*argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert proc.stdout is not None
        served = {}
        while len(served) < 2:
            event = json.loads(proc.stdout.readline())
            served[event["event"]] = event["url"]
        time.sleep(2.0)
        seen.append(httpx.get(served["dashboard"] + "api/state", timeout=5).text)
        seen.append(httpx.get(served["exporter"], timeout=5).text)
        out, err = proc.communicate(timeout=30)
        once = subprocess.run(
            _cli(*[a for u in urls for a in ("--url", u)], "--once", "--interval", "0.3", "--json"),
            capture_output=True,
            text=True,
            timeout=60,
        )
        bad = subprocess.run(_cli("--url", f"monitor:{CANARY}@host/metrics"), capture_output=True, text=True)
    finally:
        hook.shutdown()
        hook.server_close()
    seen += [out, err, once.stdout, once.stderr, bad.stderr, *(b.decode() for b in _Hook.bodies)]
    seen += [p.read_bytes().decode("latin-1") for p in tmp_path.rglob("*") if p.is_file()]
    assert len([p for p in tmp_path.rglob("*") if p.is_file()]) >= 1
    assert _Hook.bodies and "***@" in out and "***@" in seen[0] and "***@" in once.stdout and bad.returncode == 2
    assert '"target_down"' in out  # the failing targets' errors were printed, redacted
    leaks = [text[max(0, text.find(CANARY) - 80) : text.find(CANARY) + 20] for text in seen if CANARY in text]
    assert not leaks, leaks


def test_a_secret_query_value_is_masked_and_the_line_stays_json() -> None:
    """A target URL with ?token=... (an authenticating proxy's): the value masked in the JSON line and the webhook
    body, and the line still JSON (review s45a: the mask ate the value's closing '",' and every line broke)."""
    from specwise.monitor.events import TargetDown
    from specwise.monitor.sinks import event_line

    url = f"http://127.0.0.1:9/metrics?model=m&auth_token={CANARY}&x=1"
    line = event_line(TargetDown(1.0, url, f"GET {url}: refused"))
    doc = json.loads(line)
    assert doc["url"] == "http://127.0.0.1:9/metrics?model=m&auth_token=***&x=1"
    assert doc["error"] == "GET http://127.0.0.1:9/metrics?model=m&auth_token=***&x=1: refused"
    assert CANARY not in line


def test_the_free_text_mask_stops_at_a_quote() -> None:
    from specwise.errors import redact_text

    text = json.dumps({"url": f"http://h/m?token={CANARY}", "next": 1})
    assert json.loads(redact_text(text)) == {"url": "http://h/m?token=***", "next": 1}
    # a single quote is legal inside a value: masked with it rather than leaving what follows (review s45d)
    assert CANARY not in redact_text(f"<a href='http://h/?sig={CANARY}'>")
    assert redact_text(f"http://h/?api_key=abc'{CANARY}&x=1") == "http://h/?api_key=***&x=1"


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        (f"http://h/?token=***{CANARY}", "http://h/?token=***"),  # *** is no mask unless the value ends there
        ("?monkey=1&turkey=2", "?monkey=1&turkey=2"),  # 'key' inside a word: not a credential
        (f"?session_id={CANARY}&sessionid={CANARY}", "?session_id=***&sessionid=***"),
        (f"?authToken={CANARY}&X-Amz-Signature={CANARY}", "?authToken=***&X-Amz-Signature=***"),
        ('["http://h","x@y"]', '["http://h","x@y"]'),  # userinfo never spans two JSON strings
    ],
)
def test_the_mask_takes_whole_values_of_credential_names_only(text: str, masked: str) -> None:
    from specwise.errors import redact_text

    assert redact_text(text) == masked


def test_masking_twice_changes_nothing() -> None:
    from specwise.errors import redact_text

    once = redact_text(f"GET http://u:p@h/m?token={CANARY}: HTTP 403")
    assert once == "GET http://***@h/m?token=***: HTTP 403" and redact_text(once) == once
