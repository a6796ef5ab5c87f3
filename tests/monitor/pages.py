"""A loopback server for monitor tests: ``GET /NAME/metrics`` answers the pages of ``NAME`` in order, then the last
one again; ``POST`` anywhere is a webhook, its JSON bodies kept in ``hooked``. A test module subclasses
:class:`Pages` for more routes (a Prometheus API) and makes its ``serve`` fixture with :func:`serve_pages`."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar


class Pages(BaseHTTPRequestHandler):
    pages: ClassVar[dict[str, list[str]]] = {}
    served: ClassVar[dict[str, int]] = {}
    hooked: ClassVar[list[dict[str, Any]]] = []
    lock = threading.Lock()

    def log_message(self, format: str, *args: Any) -> None:
        return

    def send_body(self, body: bytes, kind: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        name = self.path.strip("/").split("/")[0]
        with self.lock:
            i = self.served.get(name, 0)
            self.served[name] = i + 1
        seq = self.pages[name]
        self.send_body(seq[min(i, len(seq) - 1)].encode(), "text/plain; version=0.0.4")

    def do_POST(self) -> None:  # the webhook
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        with self.lock:
            self.hooked.append(json.loads(body))
        self.send_response(204)
        self.end_headers()


def serve_pages(handler: type[Pages]) -> Iterator[Any]:
    """``serve(name, *pages)`` -> that sequence's metrics URL; ``serve.base``: the server's base URL (webhook POSTs,
    and whatever else ``handler`` answers). Fresh pages, counts and webhook bodies each time."""
    handler.protocol_version = "HTTP/1.1"
    handler.pages, handler.served, handler.hooked = {}, {}, []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{httpd.server_address[1]}"

    def add(name: str, *pages: str) -> str:
        handler.pages[name] = list(pages)
        return f"{base}/{name}/metrics"

    add.base = base  # type: ignore[attr-defined]
    try:
        yield add
    finally:
        httpd.shutdown()
        httpd.server_close()


# vLLM's V0 engine's spec-decode families (``vllm/engine/metrics.py`` of vllm 0.8.5, read in the wheel): the token
# counters under V1's names, an emitted-tokens counter and two gauges; no drafts counter, no per-position counts.
_V0_SPEC = (
    ("vllm:spec_decode_draft_acceptance_rate", "gauge", "Speulative token acceptance rate.", "rate"),
    ("vllm:spec_decode_efficiency", "gauge", "Speculative decoding system efficiency.", "efficiency"),
    ("vllm:spec_decode_num_accepted_tokens_total", "counter", "Number of accepted tokens.", "accepted"),
    ("vllm:spec_decode_num_draft_tokens_total", "counter", "Number of draft tokens.", "draft_tokens"),
    ("vllm:spec_decode_num_emitted_tokens_total", "counter", "Number of emitted tokens.", "emitted"),
)


def v0_page(
    recorded: str, draft_tokens: float, accepted: float, emitted: float, rate: float | None = None, v0: bool = True
) -> str:
    """A vLLM V0 engine's /metrics page made from a recorded V1 one (tests/fixtures/vllm_metrics): every
    ``spec_decode`` family replaced by V0's (:data:`_V0_SPEC`), no ``_created`` samples (V0 calls
    ``prometheus_client.disable_created_metrics()``) and no ``engine`` label (V0 labels model_name only). ``rate``:
    the lifetime acceptance-rate gauge (default: accepted / draft tokens). ``v0=False``: the two token counters only,
    as vLLM V1 before 0.8.5 exported them (real counts, no drafts counter)."""
    kept = [
        line.replace('engine="0",', "")
        for line in recorded.splitlines()
        if "spec_decode" not in line and "_created" not in line
    ]
    values = {"rate": accepted / draft_tokens if rate is None else rate, "efficiency": 0.5, "accepted": accepted}
    values |= {"draft_tokens": draft_tokens, "emitted": emitted}
    for name, kind, help_text, key in _V0_SPEC:
        if not v0 and key not in ("accepted", "draft_tokens"):
            continue
        kept += [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}", f'{name}{{model_name="smollm2"}} {values[key]}']
    return "\n".join(kept) + "\n"
