"""A small round-robin HTTP router for fleet tests: each request (``/metrics`` included) to the next backend in
turn, the body streamed through as it comes (chunked), as a load balancer in front of replicas would. Binds
127.0.0.1; every backend call is time-bounded."""

from __future__ import annotations

import http.client
import itertools
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

_HOP = {"connection", "transfer-encoding", "content-length", "keep-alive"}


class _RoundRobin(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128

    def __init__(self, backends: list[str], timeout_s: float) -> None:
        super().__init__(("127.0.0.1", 0), _Forward)
        self.next_backend = itertools.cycle(backends).__next__
        self.lock = threading.Lock()
        self.timeout_s = timeout_s

    def pick(self) -> str:
        with self.lock:
            return self.next_backend()


class _Forward(BaseHTTPRequestHandler):
    server: _RoundRobin
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_GET(self) -> None:
        self._forward(None)

    def do_POST(self) -> None:
        self._forward(self.rfile.read(int(self.headers.get("Content-Length", "0"))))

    def _forward(self, body: bytes | None) -> None:
        backend = urlsplit(self.server.pick())
        conn = http.client.HTTPConnection(backend.hostname or "", backend.port, timeout=self.server.timeout_s)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP}
        conn.request(self.command, self.path, body=body, headers=headers)
        resp = conn.getresponse()
        self.send_response(resp.status)
        for k, v in resp.getheaders():
            if k.lower() not in _HOP:
                self.send_header(k, v)
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Connection", "close")
        self.end_headers()
        while piece := resp.read1(65536):
            self.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        conn.close()


@contextmanager
def round_robin(backends: list[str], timeout_s: float = 10.0) -> Iterator[str]:
    """``with round_robin([url_a, url_b]) as url:`` a router that sends request n to ``backends[n % len]``."""
    proxy = _RoundRobin(backends, timeout_s)
    thread = threading.Thread(target=proxy.serve_forever, daemon=True)
    thread.start()
    try:
        host, port = proxy.server_address[:2]
        yield f"http://{host!s}:{port}"
    finally:
        proxy.shutdown()
        proxy.server_close()
