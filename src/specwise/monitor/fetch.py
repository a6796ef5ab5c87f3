"""A lean /metrics fetcher: HTTP/1.1 GET on asyncio, one kept-alive connection per target, every target at once.

Each fetch has a total deadline -- connect, request, headers and body together, so a server trickling one byte a
second is cut off at the deadline instead of being kept alive by each byte -- and a body cap: a ``Content-Length``
over it is refused before anything is read, a body without one is read up to the cap and then refused, so memory
stays bounded whatever the server sends. Targets are fetched concurrently and each result is handed on as it
arrives, so a slow target never holds back the others. Failures are one :class:`SpecwiseError` line naming the
target by its redacted URL (:func:`redact_url`: credentials never reach a message).

What does not change between rounds is built once per target (:class:`Endpoint`: the parsed URL and the request
bytes, with any Basic credentials from the URL's userinfo) and once per fetcher (the TLS context, the event loop).
"""

from __future__ import annotations

import asyncio
import base64
import logging
import ssl
import weakref
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit, urlunsplit

from specwise.errors import SpecwiseError, redact_text, redact_url
from specwise.metrics.exposition import Scrape
from specwise.metrics.families import FamilyParser

_log = logging.getLogger("specwise.monitor")

DEFAULT_MAX_BYTES = 16 * 1024 * 1024
_MAX_HEADER_BYTES = 64 * 1024


def with_metrics_path(url: str) -> str | None:
    """``http://host:8000`` (no path at all) -> ``http://host:8000/metrics``, where vLLM serves its metrics
    (None: the URL has a path, used as given)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    if parts.path or not parts.netloc:
        return None
    return urlunsplit((parts.scheme, parts.netloc, "/metrics", parts.query, parts.fragment))


def failure_words(exc: BaseException, host: str = "") -> str:
    """A connection failure in words (``connection refused``, ``cannot resolve host 'x'``, ``timed out``), never an
    exception class name; httpx's errors are read through the OS error they wrap."""
    import socket

    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, socket.gaierror):
            return f"cannot resolve host {host!r}" if host else "cannot resolve the host"
        if isinstance(cause, ConnectionRefusedError):
            return "connection refused"
        if isinstance(cause, ConnectionResetError):
            return "connection reset by the server"
        if isinstance(cause, TimeoutError):
            return "timed out"
        if isinstance(cause, ssl.SSLError):
            return f"TLS failed ({cause.reason or 'handshake'})"
        cause = cause.__cause__ or cause.__context__
    text = str(exc).lower()
    for needle, words in (
        ("refused", "connection refused"),
        ("name or service not known", f"cannot resolve host {host!r}"),
        ("nodename nor servname", f"cannot resolve host {host!r}"),
        ("temporary failure in name resolution", f"cannot resolve host {host!r}"),
        ("timed out", "timed out"),
        ("timeout", "timed out"),
    ):
        if needle in text:
            return words
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror.lower()
    return "connection failed"


redact = redact_text  # every URL userinfo in free text, as the bench client masks it too


@dataclass(frozen=True)
class Endpoint:
    display: str  # the URL as reported (credentials redacted)
    host: str
    port: int
    tls: bool
    request: bytes


def endpoint(url: str) -> Endpoint:
    """Parse ``url`` once; the request bytes carry Basic credentials when the URL has userinfo."""
    display = redact_url(url)
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise SpecwiseError(f"{display}: not a valid URL") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise SpecwiseError(f"{display}: expected http://HOST:PORT/metrics")
    tls = parts.scheme == "https"
    host_header = parts.netloc.rpartition("@")[2]
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    lines = [
        f"GET {path} HTTP/1.1",
        f"Host: {host_header}",
        "User-Agent: specwise-monitor",
        "Accept: text/plain",
        "Accept-Encoding: gzip, identity",
    ]
    if parts.username is not None:
        cred = f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()
        lines.append("Authorization: Basic " + base64.b64encode(cred).decode())
    request = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    return Endpoint(display, parts.hostname, port or (443 if tls else 80), tls, request)


class _Fault(Exception):
    """Why a response could not be read (the message of the target's error)."""


class _Conn(asyncio.Protocol):
    """One HTTP/1.1 connection: writes a request, parses the response as bytes arrive."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.transport: asyncio.Transport | None = None
        self.buf = bytearray()
        self.waiter: asyncio.Future[bytes] | None = None
        self.closed = False
        self.reusable = False
        self._eof = False
        self._reset()

    def _reset(self) -> None:
        self.status = 0
        self.location = ""  # a redirect's Location header
        self.body_start = -1
        self.mode = ""
        self.length = 0
        self.keep_alive = False
        self.encoding = ""
        self.pos = 0
        self.parts: list[bytes] = []
        self.size = 0

    # asyncio callbacks
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        if self.waiter is None or self.waiter.done():
            self.close()  # bytes nobody asked for: the connection is not in a state to reuse
            return
        self.buf += data
        self._advance()

    def eof_received(self) -> bool:
        self._eof = True
        self._advance()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._eof = True
        self._advance()
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(ConnectionResetError("connection closed"))

    def close(self) -> None:
        self.closed = True
        self.reusable = False
        self.buf = bytearray()  # a refused page's bytes go now, not when a reference cycle is collected
        self.parts = []
        if self.transport is not None:
            self.transport.abort()

    async def get(self, request: bytes) -> bytes:
        assert self.transport is not None
        self.reusable = False
        self.buf.clear()
        self._reset()
        self.waiter = asyncio.get_running_loop().create_future()
        self.transport.write(request)
        return await self.waiter

    # response parsing
    def _advance(self) -> None:
        waiter = self.waiter
        if waiter is None or waiter.done():
            return
        try:
            body = self._body()
        except _Fault as exc:
            self.close()
            waiter.set_exception(exc)
            return
        if body is None:
            return
        self.buf.clear()
        self.parts = []
        self.reusable = self.keep_alive and not self.closed and self._eof is False
        if not self.reusable:
            self.close()
        if self.status >= 400:
            waiter.set_exception(_Fault(f"HTTP {self.status}"))
        elif self.status >= 300:  # a redirect's body is no metrics page; it is not followed (it could leave loopback)
            to = f" to {redact_url(self.location)}" if self.location else ""
            waiter.set_exception(_Fault(f"HTTP {self.status} redirect{to} (not followed: give the URL it names)"))
        else:
            waiter.set_result(body)

    def _body(self) -> bytes | None:
        if self.body_start < 0 and not self._headers():
            return None
        if self.mode == "length":
            if len(self.buf) - self.body_start < self.length:
                if self._eof:
                    raise _Fault("connection closed mid-page")
                return None
            if len(self.buf) - self.body_start > self.length:
                self.keep_alive = False
            return self._decoded(bytes(self.buf[self.body_start : self.body_start + self.length]))
        if self.mode == "chunked":
            return self._chunked()
        if len(self.buf) - self.body_start > self.max_bytes:
            raise _Fault(f"page over the {self.max_bytes}-byte cap: refused")
        return self._decoded(bytes(self.buf[self.body_start :])) if self._eof else None

    def _headers(self) -> bool:
        end = self.buf.find(b"\r\n\r\n")
        if end < 0:
            if len(self.buf) > _MAX_HEADER_BYTES:
                raise _Fault("response headers over 64 KiB")
            if self._eof:
                raise _Fault("connection closed before the response headers")
            return False
        lines = bytes(self.buf[:end]).decode("latin-1").split("\r\n")
        status = lines[0].split(None, 2)
        if len(status) < 2 or not status[0].startswith("HTTP/") or not status[1].isdigit():
            raise _Fault("not an HTTP response")
        if 100 <= int(status[1]) < 200:  # an interim response: the real one follows
            del self.buf[: end + 4]
            return self._headers()
        headers = {}
        for line in lines[1:]:
            key, _, value = line.partition(":")
            headers[key.strip().lower()] = value.strip()
        self.status, self.body_start = int(status[1]), end + 4
        self.location = headers.get("location", "")
        self.encoding = headers.get("content-encoding", "identity").lower()
        self.keep_alive = status[0] == "HTTP/1.1" and headers.get("connection", "").lower() != "close"
        if "chunked" in headers.get("transfer-encoding", "").lower():
            self.mode, self.pos = "chunked", self.body_start
        elif "content-length" in headers:
            try:
                self.mode, self.length = "length", int(headers["content-length"])
            except ValueError:
                raise _Fault("bad Content-Length") from None
            if self.length > self.max_bytes:
                raise _Fault(f"page of {self.length} bytes is over the {self.max_bytes}-byte cap: refused")
        else:
            self.mode, self.keep_alive = "eof", False
        return True

    def _chunked(self) -> bytes | None:
        buf = self.buf
        while True:
            line_end = buf.find(b"\r\n", self.pos)
            if line_end < 0:
                if len(buf) - self.pos > 1024 or self._eof:
                    raise _Fault("malformed chunked body")
                return None
            try:
                size = int(bytes(buf[self.pos : line_end]).split(b";")[0], 16)
            except ValueError:
                raise _Fault("malformed chunked body") from None
            start = line_end + 2
            if size == 0:
                if buf.startswith(b"\r\n", start) or buf.find(b"\r\n\r\n", start - 2) >= 0:
                    return self._decoded(b"".join(self.parts))
                if self._eof:
                    raise _Fault("malformed chunked body")
                return None
            if len(buf) < start + size + 2:
                if self._eof:
                    raise _Fault("connection closed mid-page")
                if self.size + len(buf) - start > self.max_bytes:
                    raise _Fault(f"page over the {self.max_bytes}-byte cap: refused")
                return None
            self.size += size
            if self.size > self.max_bytes:
                raise _Fault(f"page over the {self.max_bytes}-byte cap: refused")
            self.parts.append(bytes(buf[start : start + size]))
            self.pos = start + size + 2

    def _decoded(self, body: bytes) -> bytes:
        if self.encoding in ("identity", ""):
            return body
        if self.encoding != "gzip":
            raise _Fault(f"unsupported Content-Encoding {self.encoding!r}")
        inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            out = inflate.decompress(body, self.max_bytes + 1)
        except zlib.error:
            raise _Fault("corrupt gzip body") from None
        if len(out) > self.max_bytes:
            raise _Fault(f"page over the {self.max_bytes}-byte cap once decompressed: refused")
        return out


class Slot:
    """A target's kept-alive connection between rounds (owned by the target, used by one fetch at a time)."""

    def __init__(self) -> None:
        self.conn: _Conn | None = None

    def drop(self) -> None:
        if self.conn is not None:
            self.conn.close()
        self.conn = None


Result = Scrape | SpecwiseError
OnResult = Callable[[int, Result], None]


class Scraper:
    """Fetches and parses /metrics pages on a private event loop (kept between rounds, with the connections)."""

    def __init__(self, parser: FamilyParser, timeout_s: float = 10.0, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.parser, self.timeout_s, self.max_bytes = parser, timeout_s, max_bytes
        self.loop = asyncio.new_event_loop()
        self._tls: ssl.SSLContext | None = None
        self._conns: weakref.WeakSet[_Conn] = weakref.WeakSet()

    def close(self) -> None:
        """Close every connection still open and the event loop."""
        for conn in list(self._conns):
            conn.close()
        self.loop.run_until_complete(asyncio.sleep(0))  # let the transports finish closing
        self.loop.close()

    def round(
        self, jobs: Sequence[tuple[Endpoint, Slot]], on_result: OnResult, deadline_s: float | None = None
    ) -> None:
        """Fetch every job at once; ``on_result(index, result)`` runs (in this thread) as each one finishes."""
        if jobs:
            self.loop.run_until_complete(self._round(jobs, on_result, deadline_s or self.timeout_s))

    def fetch_all(self, urls: Sequence[str], deadline_s: float | None = None) -> list[Result]:
        """One fetch of each URL (fresh connections), results in URL order."""
        out: list[Result] = [SpecwiseError("not fetched")] * len(urls)
        jobs: list[tuple[Endpoint, Slot]] = []
        for url in urls:
            jobs.append((endpoint(url), Slot()))

        def keep(i: int, r: Result) -> None:
            out[i] = r

        try:
            self.round(jobs, keep, deadline_s)
        finally:
            for _, slot in jobs:
                slot.drop()
        return out

    async def _round(self, jobs: Sequence[tuple[Endpoint, Slot]], on_result: OnResult, deadline_s: float) -> None:
        async def one(i: int, ep: Endpoint, slot: Slot) -> None:
            on_result(i, await self._scrape(ep, slot, deadline_s))

        await asyncio.gather(*(one(i, ep, slot) for i, (ep, slot) in enumerate(jobs)))

    async def _scrape(self, ep: Endpoint, slot: Slot, deadline_s: float) -> Result:
        result = await self._scrape_once(ep, slot, deadline_s)
        if _log.isEnabledFor(logging.DEBUG):  # -v: each scrape, its URL masked (ep.display)
            _log.debug("%s", result if isinstance(result, SpecwiseError) else f"GET {ep.display}: ok")
        return result

    async def _scrape_once(self, ep: Endpoint, slot: Slot, deadline_s: float) -> Result:
        try:
            async with asyncio.timeout(deadline_s):
                body = await self._get(ep, slot)
        except TimeoutError:
            slot.drop()
            return SpecwiseError(f"{ep.display}: scrape failed: no complete answer within {deadline_s:g} s")
        except _Fault as exc:
            slot.drop()
            return SpecwiseError(f"{ep.display}: scrape failed: {exc}")
        except (OSError, ssl.SSLError, asyncio.IncompleteReadError) as exc:
            slot.drop()
            return SpecwiseError(f"{ep.display}: scrape failed: {failure_words(exc, ep.host)}")
        try:
            return self.parser.parse(body.decode("utf-8", "replace"), ep.display)
        except SpecwiseError as exc:
            return exc

    async def _get(self, ep: Endpoint, slot: Slot) -> bytes:
        conn = slot.conn
        if conn is not None and conn.reusable and not conn.closed:
            try:
                return await conn.get(ep.request)
            except ConnectionResetError:
                if conn.buf:
                    raise
                slot.drop()  # the server closed the idle connection: one retry on a fresh one
        slot.drop()
        conn = await self._connect(ep)
        slot.conn = conn
        return await conn.get(ep.request)

    async def _connect(self, ep: Endpoint) -> _Conn:
        ctx = None
        if ep.tls:
            if self._tls is None:
                self._tls = ssl.create_default_context()
            ctx = self._tls
        _, conn = await self.loop.create_connection(
            lambda: _Conn(self.max_bytes), ep.host, ep.port, ssl=ctx, server_hostname=ep.host if ctx else None
        )
        self._conns.add(conn)
        return conn
