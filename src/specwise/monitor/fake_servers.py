"""Loopback /metrics servers that misbehave on purpose, for the monitor's soak test and overhead benchmark.

``python -m specwise.monitor.fake_servers [KIND ...] [--page FILE]`` serves one server per KIND on 127.0.0.1
(standard library asyncio, HTTP/1.1 keep-alive) and prints one JSON line ``{"KIND": "http://127.0.0.1:PORT/metrics",
...}``; it serves until killed. Kinds:

* ``healthy``: a real vLLM page (``--page``, default the fixture ``ngram_after.txt`` when present) whose counters,
  histogram buckets and sums grow with time (the page's values times ``1 + t/100``), re-rendered once per 0.25 s;
* ``slowloris``: answers the status line, then one header byte per second, forever;
* ``huge``: a 50 MB page, alternately announced by ``Content-Length`` and streamed without one;
* ``badvalues``: the healthy page with ``vllm:num_requests_running`` NaN and ``vllm:kv_cache_usage_perc`` +Inf on
  every scrape, and on every other scrape ``vllm:generation_tokens_total`` -1e6 and
  ``vllm:request_success_total`` +Inf (a counter going to -1e6 and back).

Binds 127.0.0.1 only; every loop is bounded by the client's connection.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

HUGE_BYTES = 50 * 1024 * 1024
_FIXTURE = Path(__file__).resolve().parents[3] / "tests" / "fixtures" / "vllm_metrics" / "ngram_after.txt"
_COUNTERISH = ("_total", "_bucket", "_sum", "_count")


class MovingPage:
    """A real page whose counter-like values grow with time; rendered at most once per ``step_s``."""

    def __init__(self, text: str, step_s: float = 0.25) -> None:
        self.step_s, self.t0 = step_s, time.monotonic()
        self.lines: list[tuple[str, float | None]] = []
        for line in text.splitlines():
            name, _, value = line.rpartition(" ")
            scalable = not line.startswith("#") and "_created" not in name and name.split("{")[0].endswith(_COUNTERISH)
            try:
                self.lines.append((name, float(value)) if scalable else (line, None))
            except ValueError:
                self.lines.append((line, None))
        self._step = -1
        self._body = b""

    def render(self, edit: Callable[[str, float], float] | None = None) -> bytes:
        step = int((time.monotonic() - self.t0) / self.step_s)
        if edit is None and step == self._step:
            return self._body
        factor = 1.0 + step * self.step_s / 100.0
        out = []
        for head, value in self.lines:
            if value is None:
                out.append(head if edit is None else self._edit_gauge(head, edit))
            else:
                v = value * factor
                out.append(f"{head} {edit(head, v) if edit else v}")
        body = ("\n".join(out) + "\n").encode()
        if edit is None:
            self._step, self._body = step, body
        return body

    @staticmethod
    def _edit_gauge(line: str, edit: Callable[[str, float], float]) -> str:
        if line.startswith("#"):
            return line
        name, _, value = line.rpartition(" ")
        try:
            return f"{name} {edit(name, float(value))}"
        except ValueError:
            return line


async def _read_request(reader: asyncio.StreamReader) -> bool:
    """Consume one request's head; False when the client closed."""
    try:
        await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
        return False
    return True


def _response(body: bytes) -> bytes:
    head = f"HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {len(body)}\r\n\r\n"
    return head.encode() + body


Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


def healthy(page: MovingPage) -> Handler:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while await _read_request(reader):
                writer.write(_response(page.render()))
                await writer.drain()
        except (ConnectionError, asyncio.CancelledError):  # a closed client, or the servers shutting down
            pass
        finally:
            writer.close()

    return handle


def badvalues(page: MovingPage) -> Handler:
    count = [0]

    def edit(name: str, value: float) -> float:
        base = name.split("{")[0]
        if base == "vllm:num_requests_running":
            return float("nan")
        if base == "vllm:kv_cache_usage_perc":
            return float("inf")
        if count[0] % 2 and base == "vllm:generation_tokens_total":
            return -1e6
        if count[0] % 2 and base == "vllm:request_success_total":
            return float("inf")
        return value

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while await _read_request(reader):
                count[0] += 1
                writer.write(_response(page.render(edit)))
                await writer.drain()
        except (ConnectionError, asyncio.CancelledError):  # a closed client, or the servers shutting down
            pass
        finally:
            writer.close()

    return handle


async def slowloris(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        if await _read_request(reader):
            writer.write(b"HTTP/1.1 200 OK\r\nX-Slow: ")
            for _ in range(3600):  # bounded: one hour at most, or until the client gives up
                await asyncio.sleep(1.0)
                writer.write(b"a")
                await writer.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        writer.close()


def huge() -> Handler:
    count = [0]
    line = b"# a comment line repeated to make a very large page" + b"." * 960 + b"\n"
    block = line * 64  # 64 KiB

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            if not await _read_request(reader):
                return
            count[0] += 1
            announced = count[0] % 2 == 1
            length = f"Content-Length: {HUGE_BYTES}\r\n" if announced else ""
            writer.write(f"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n{length}\r\n".encode())
            sent = 0
            while sent < HUGE_BYTES:
                writer.write(block)
                sent += len(block)
                await writer.drain()
        except (ConnectionError, asyncio.CancelledError):  # a closed client, or the servers shutting down
            pass
        finally:
            writer.close()

    return handle


async def serve(kinds: list[str], page_text: str, servers: list[asyncio.Server] | None = None) -> dict[str, str]:
    page = MovingPage(page_text)
    handlers: dict[str, Handler] = {
        "healthy": healthy(page),
        "slowloris": slowloris,
        "huge": huge(),
        "badvalues": badvalues(MovingPage(page_text)),
    }
    urls = {}
    for kind in kinds:
        server = await asyncio.start_server(handlers[kind], "127.0.0.1", 0, backlog=2048)
        if servers is not None:
            servers.append(server)
        port = server.sockets[0].getsockname()[1]
        urls[kind] = f"http://127.0.0.1:{port}/metrics"
    return urls


class ServersThread:
    """The servers on an event loop in a daemon thread (for tests): ``with ServersThread([...]) as urls: ...``."""

    def __init__(self, kinds: list[str], page_text: str) -> None:
        self.kinds, self.page_text = kinds, page_text
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)

        self.servers: list[asyncio.Server] = []

    def __enter__(self) -> dict[str, str]:
        self.thread.start()
        return asyncio.run_coroutine_threadsafe(serve(self.kinds, self.page_text, self.servers), self.loop).result(10)

    async def _shutdown(self) -> None:
        for server in self.servers:
            server.close()
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self._shutdown(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        self.loop.close()


def main() -> None:  # pragma: no cover - run as a subprocess by bench/monitor_soak.py and the soak test
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("kinds", nargs="*", default=["healthy", "slowloris", "huge", "badvalues"])
    ap.add_argument("--page", type=Path, default=_FIXTURE)
    args = ap.parse_args()

    async def run() -> None:
        urls = await serve(args.kinds, args.page.read_text())
        print(json.dumps(urls), flush=True)
        await asyncio.Event().wait()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(run())


if __name__ == "__main__":  # pragma: no cover
    main()
