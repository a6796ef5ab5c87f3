"""A tiny GET-only HTTP server in a daemon thread, shared by the monitor's /metrics exporter and its dashboard."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Route = Callable[[str], tuple[int, str, bytes]]  # path -> (status, content type, body)


class _ServerV6(ThreadingHTTPServer):
    address_family = socket.AF_INET6


class GetServer:
    def __init__(self, host: str, port: int, route: Route, extra_headers: dict[str, str] | None = None) -> None:
        headers = extra_headers or {}

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_GET(self) -> None:
                code, ctype, body = route(self.path)
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(body)

        server = _ServerV6 if ":" in host else ThreadingHTTPServer  # an IPv6 address such as ::1
        self.httpd = server((host, port), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def base_url(self) -> str:
        host, port = self.httpd.server_address[:2]
        shown = f"[{host!s}]" if ":" in str(host) else str(host)
        return f"http://{shown}:{port}"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
