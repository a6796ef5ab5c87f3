"""A mock OpenAI-compatible server with vLLM-style spec-decode metrics, for tests and client benchmarks.

Configured by time to first token, time between chunks and tokens per chunk (guidellm's mock server
idea); faults are injected by request number: HTTP 500/429, a dropped connection mid-stream, a hung
stream, malformed SSE; ``/metrics`` can be made garbage or reset its counters. Binds 127.0.0.1 only.
A threaded ``http.server``; /metrics written by prometheus_client, as vLLM's is.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client.core import CounterMetricFamily, Metric
from prometheus_client.exposition import generate_latest
from prometheus_client.registry import Collector, CollectorRegistry


@dataclass
class MockBehaviour:
    ttft_s: float = 0.01
    chunk_interval_s: float = 0.002
    tokens_per_chunk: int = 3  # with k=4: 2 accepted + bonus per verification step
    num_speculative_tokens: int = 4
    fail_500_every: int = 0  # every Nth request answers 500
    fail_429_every: int = 0
    drop_every: int = 0  # every Nth request: connection closed after 2 chunks
    hang_every: int = 0  # every Nth request: stream stops sending (client must time out)
    malformed_every: int = 0  # every Nth request: a broken SSE line
    metrics_mode: str = "ok"  # ok | garbage | truncated
    reset_at_scrape: int = 0  # the Nth /metrics request first resets the counters (a server restart)
    hang_s: float = 30.0
    model_name: str = "mock"  # the ``model_name`` label of /metrics (vLLM's served model name)
    model_root: str | None = None  # GET /v1/models' card ``root`` (vLLM: the checkpoint loaded); None: model_name


MAX_KEPT_BODIES = 1000  # what tests inspect; a client benchmark's millions of requests are not kept


@dataclass
class MockState:
    requests: int = 0
    in_flight: int = 0
    max_in_flight: int = 0
    scrapes: int = 0
    drafts: int = 0
    draft_tokens: int = 0
    accepted: int = 0
    accepted_per_pos: list[int] = field(default_factory=lambda: [0] * 8)
    bodies: list[dict[str, Any]] = field(default_factory=list)  # the first MAX_KEPT_BODIES request bodies
    created: float = field(default_factory=time.time)
    lock: threading.Lock = field(default_factory=threading.Lock)


class _Handler(BaseHTTPRequestHandler):
    server: _MockHTTPServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return

    def _send(self, code: int, body: str, ctype: str = "application/json") -> None:
        data = body.encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _chunk(self, data: bytes) -> None:
        """One HTTP/1.1 chunk (empty data: the terminating chunk)."""
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def do_GET(self) -> None:
        if self.path == "/health":
            self._send(200, "{}")
        elif self.path == "/metrics":
            self._send(200, self.server.metrics_text(), "text/plain; version=0.0.4")
        elif self.path == "/v1/models":  # vLLM's shape (serving_models.show_available_models), one card
            b = self.server.behaviour
            card = {"id": b.model_name, "object": "model", "root": b.model_root or b.model_name}
            self._send(200, json.dumps({"object": "list", "data": [card]}))
        else:
            self._send(404, '{"error": "not found"}')

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(length) or b"{}")
        if self.path not in ("/v1/completions", "/v1/chat/completions"):
            self._send(404, '{"error": "not found"}')
            return
        st = self.server.state
        with st.lock:
            st.requests += 1
            n = st.requests
            st.in_flight += 1
            st.max_in_flight = max(st.max_in_flight, st.in_flight)
            if len(st.bodies) < MAX_KEPT_BODIES:
                st.bodies.append(body)
        self._finished = False
        try:
            self._complete(body, n)
        finally:
            self._finish()

    def _finish(self) -> None:
        """The request leaves ``in_flight`` once (before its last bytes go out: a client that has read them may
        send its next request at once, and a closed loop of N must never count N + 1)."""
        if not self._finished:
            self._finished = True
            with self.server.state.lock:
                self.server.state.in_flight -= 1

    def _complete(self, body: dict[str, Any], n: int) -> None:
        b = self.server.behaviour
        if b.fail_500_every and n % b.fail_500_every == 0:
            self._send(500, '{"error": {"message": "internal error"}}')
            return
        if b.fail_429_every and n % b.fail_429_every == 0:
            self._send(429, '{"error": {"message": "rate limited"}}')
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")  # as uvicorn streams; a drop is then detectable
        self.send_header("Connection", "close")
        self.end_headers()
        chat = self.path.endswith("chat/completions")
        max_tokens = int(body.get("max_tokens", 16))
        time.sleep(b.ttft_s)
        produced = 0
        chunk_no = 0
        try:
            while produced < max_tokens:
                step = 1 if produced == 0 else min(b.tokens_per_chunk, max_tokens - produced)
                if produced > 0:
                    self.server.count_verification(step)
                produced += step
                chunk_no += 1
                text = " tok" * step
                choice = {"index": 0, "delta": {"content": text}} if chat else {"index": 0, "text": text}
                event = {"choices": [choice], "usage": {"prompt_tokens": 5, "completion_tokens": produced}}
                if b.malformed_every and n % b.malformed_every == 0 and chunk_no == 2:
                    self._chunk(b"data: {not json\n\n")
                    self._chunk(b"")
                    return
                self._chunk(f"data: {json.dumps(event)}\n\n".encode())
                if b.drop_every and n % b.drop_every == 0 and chunk_no == 2:
                    self.connection.shutdown(2)
                    return
                if b.hang_every and n % b.hang_every == 0 and chunk_no == 2:
                    time.sleep(b.hang_s)
                    return
                time.sleep(b.chunk_interval_s)
            self._finish()
            self._chunk(b"data: [DONE]\n\n")
            self._chunk(b"")
        except (BrokenPipeError, ConnectionResetError, OSError):
            return


class _MockHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # listen backlog: the default 5 refuses connections under load

    def __init__(self, behaviour: MockBehaviour) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.behaviour = behaviour
        self.state = MockState()

    def count_verification(self, emitted: int) -> None:
        """One verification step that emitted ``emitted`` tokens: ``emitted - 1`` drafts accepted."""
        k = self.behaviour.num_speculative_tokens
        accepted = min(k, emitted - 1)
        st = self.state
        with st.lock:
            st.drafts += 1
            st.draft_tokens += k
            st.accepted += accepted
            for i in range(accepted):
                st.accepted_per_pos[i] += 1

    def metrics_text(self) -> str:
        b, st = self.behaviour, self.state
        if b.metrics_mode == "garbage":
            return "<html><body>oops</body></html>"
        with st.lock:
            st.scrapes += 1
            if st.scrapes == b.reset_at_scrape:
                st.drafts = st.draft_tokens = st.accepted = 0
                st.accepted_per_pos = [0] * 8
                st.created = time.time()
            text = exposition(b, st)
        if b.metrics_mode == "truncated":
            return text[: len(text) // 2]
        return text


def exposition(b: MockBehaviour, st: MockState) -> str:
    """vLLM's spec-decode counters as vLLM exposes them: prometheus_client counters labelled ``model_name`` and
    ``engine`` (per position also ``position``), each with its ``..._created`` birth time (vLLM
    ``v1/spec_decode/metrics.py``, ``SpecDecodingProm``)."""
    labels, values = ["model_name", "engine"], [b.model_name, "0"]
    families = []
    for name, doc, value in (
        ("drafts", "Number of spec decoding drafts.", st.drafts),
        ("draft_tokens", "Number of draft tokens.", st.draft_tokens),
        ("accepted_tokens", "Number of accepted tokens.", st.accepted),
    ):
        family = CounterMetricFamily(f"vllm:spec_decode_num_{name}", doc, labels=labels)
        family.add_metric(values, float(value), created=st.created)
        families.append(family)
    per_pos = CounterMetricFamily(
        "vllm:spec_decode_num_accepted_tokens_per_pos",
        "Accepted tokens per draft position.",
        labels=[*labels, "position"],
    )
    for i in range(b.num_speculative_tokens):
        per_pos.add_metric([*values, str(i)], float(st.accepted_per_pos[i]), created=st.created)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Families([*families, per_pos]))
    return generate_latest(registry).decode()


class _Families(Collector):
    def __init__(self, families: list[Metric]) -> None:
        self.families = families

    def collect(self) -> Iterable[Metric]:
        return self.families


class MockServer:
    """Context manager: ``with MockServer(MockBehaviour(...)) as url: ...``."""

    def __init__(self, behaviour: MockBehaviour | None = None) -> None:
        self.httpd = _MockHTTPServer(behaviour or MockBehaviour())
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def state(self) -> MockState:
        return self.httpd.state

    @property
    def behaviour(self) -> MockBehaviour:
        return self.httpd.behaviour

    def __enter__(self) -> MockServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def main() -> None:  # pragma: no cover - used by bench/client_overhead.py
    """``python -m specwise.loadgen.mock_server [TTFT_S] [CHUNK_INTERVAL_S]``: serve until killed."""
    import argparse

    p = argparse.ArgumentParser(
        prog="python -m specwise.loadgen.mock_server",
        description="An OpenAI-compatible mock server with vLLM-style spec-decode /metrics, on 127.0.0.1; prints "
        "its URL and serves until killed.",
    )
    p.add_argument("ttft_s", nargs="?", type=float, default=0.0, help="seconds to the first token (default 0)")
    p.add_argument("chunk_interval_s", nargs="?", type=float, default=0.0, help="seconds between chunks (default 0)")
    args = p.parse_args()
    server = MockServer(MockBehaviour(ttft_s=args.ttft_s, chunk_interval_s=args.chunk_interval_s))
    print(server.url, flush=True)
    server.httpd.serve_forever()


if __name__ == "__main__":  # pragma: no cover
    main()
