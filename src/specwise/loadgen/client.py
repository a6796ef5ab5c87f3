"""Async streaming client for OpenAI-compatible ``/v1/completions`` and ``/v1/chat/completions``.

Token counts per chunk come from the server's usage stats when it sends them (vLLM:
``stream_options: {"include_usage": true, "continuous_usage_stats": true}``), so a chunk carrying
several speculated tokens is counted as several; without them each text chunk counts as one token
and the record says ``tokens_exact=False``. The API key is read from an environment variable and only
ever placed in the request header: records and logs never see it, nor a server's echo of it or of the URL's
credentials (:func:`scrub`).

Transport: aiohttp (as ``vllm bench serve``'s client). Measured against httpx on the zero-latency mock
(bench/client_overhead.py): httpx's connection pool and per-request machinery cost several times aiohttp's CPU per
request, which capped the harness near 340 req/s on two cores.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
import os
import re
import time
from array import array
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import unquote, urlsplit

import aiohttp

from specwise.errors import SpecwiseError, redact_text, redact_url
from specwise.loadgen.records import PROCESS_SESSION, RequestRecord
from specwise.loadgen.sse import (
    DONE,
    MAX_LINE_BYTES,
    MalformedStream,
    chunk_text,
    completion_tokens,
    prompt_tokens,
    sse_payload,
)
from specwise.prompts.items import ChatMessage, PromptItem

_log = logging.getLogger("specwise.loadgen")

ERROR_BODY_BYTES = 16 * 1024  # of an HTTP error's body, enough for the message; the rest is not read
MAX_USAGE_TOKENS = 10_000_000  # a usage count above this is garbage (calibrate refuses the same)


@dataclass(frozen=True)
class RequestSpec:
    request_id: str
    prompt: str
    max_tokens: int
    temperature: float = 0.0
    workload_class: str | None = None
    ignore_eos: bool = False
    history: tuple[ChatMessage, ...] = ()  # earlier turns of a conversation, sent before ``prompt``

    def completion_prompt(self) -> str:
        """The text of a ``/v1/completions`` request: the turns' contents, blank-line separated."""
        return PromptItem(self.prompt, history=self.history).raw_text()

    def chat_messages(self) -> list[dict[str, str]]:
        """The ``messages`` of a ``/v1/chat/completions`` request: the history, then the user turn."""
        return [{"role": m.role, "content": m.content} for m in (*self.history, ChatMessage("user", self.prompt))]


@dataclass(frozen=True)
class ClientConfig:
    base_url: str
    model: str
    endpoint: Literal["completions", "chat"] = "completions"
    api_key_env: str | None = "OPENAI_API_KEY"
    request_timeout_s: float = 120.0
    read_timeout_s: float | None = None  # no bytes for this long ends the request; None: ``request_timeout_s``
    continuous_usage: bool = True

    @property
    def no_bytes_timeout_s(self) -> float:
        """The read timeout in force: never longer than the whole request's (a longer one could not fire)."""
        if self.read_timeout_s is None:
            return self.request_timeout_s
        return min(self.read_timeout_s, self.request_timeout_s)

    @property
    def url(self) -> str:
        path = "/v1/completions" if self.endpoint == "completions" else "/v1/chat/completions"
        return self.base_url.rstrip("/") + path

    @property
    def models_url(self) -> str:
        """The server's model list (``GET /v1/models``)."""
        return self.base_url.rstrip("/") + "/v1/models"


def _body(cfg: ClientConfig, req: RequestSpec) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": cfg.model,
        "max_tokens": req.max_tokens,
        "temperature": req.temperature,
        "stream": True,
    }
    if cfg.endpoint == "completions":
        body["prompt"] = req.completion_prompt()
    else:
        body["messages"] = req.chat_messages()
    if cfg.continuous_usage:
        body["stream_options"] = {"include_usage": True, "continuous_usage_stats": True}
    if req.ignore_eos:
        body["ignore_eos"] = True
    return body


def api_key_from(env: str | None) -> str | None:
    """The API key a request sends: ``$env``'s value; None where no variable is named, or it is unset or empty."""
    return (os.environ.get(env) or None) if env else None


def _headers(key: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"} if key else {}


_SECRETISH = re.compile(r"(?i)(bearer\s+|basic\s+|api[_-]?key[\"':=\s]+|sk-)[A-Za-z0-9._~+/=-]{6,}")
MIN_BARE_SECRET_CHARS = 4  # a shorter bare password is masked only inside its user:password pair and Basic form


def url_secrets(url: str) -> tuple[str, ...]:
    """The forms a URL's ``user:password@`` takes in a server's echo of what it refused: ``user:password`` and the
    base64 of it that aiohttp sends as ``Authorization: Basic`` (``aiohttp.helpers.BasicAuth.from_url``: the
    percent-decoded user and password, latin-1 encoded; RFC 7617 section 2), and the password alone (the user alone
    when there is no password: it is then the credential), each as written and percent-decoded."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return ()
    raw_user, raw_password = parts.username or "", parts.password or ""
    out: set[str] = set()
    for user, password in ((raw_user, raw_password), (unquote(raw_user), unquote(raw_password))):
        pair = f"{user}:{password}"
        out.add(pair)
        for encoding in ("latin-1", "utf-8"):
            with contextlib.suppress(UnicodeEncodeError):
                out.add(base64.b64encode(pair.encode(encoding)).decode("ascii"))
        bare = password or user
        if len(bare) >= MIN_BARE_SECRET_CHARS:
            out.add(bare)
    return tuple(sorted(out, key=len, reverse=True))  # longest first: a pair before the password inside it


def scrub(text: str, *secrets: str | None) -> str:
    """``text`` (a server's error body) with each of ``secrets`` (the API key, :func:`url_secrets`), URL userinfo,
    and anything shaped like a key, a bearer token or a Basic credential masked: servers echo the credentials they
    rejected ("Incorrect API key provided: sk-...", "bad key: Basic Ym9i...") and records are kept."""
    for secret in sorted((s for s in secrets if s), key=len, reverse=True):
        text = text.replace(secret, "***")
    return redact_text(_SECRETISH.sub(lambda m: m.group(1) + "***", text))


class HttpSession:
    """The bench's HTTP client for one run: an aiohttp session whose connection pool holds up to
    ``max_connections``, the request headers (API key read once) and timeouts built once, not per request."""

    def __init__(self, cfg: ClientConfig, max_connections: int) -> None:
        self.cfg = cfg
        self.max_connections = max_connections
        self.api_key = api_key_from(cfg.api_key_env)
        if self.api_key and "@" in urlsplit(cfg.base_url).netloc:
            raise SpecwiseError(
                f"the URL carries user:password and ${cfg.api_key_env} holds an API key: both would be the "
                "Authorization header; give one (unset the variable, name another with --api-key-env, or drop "
                "the userinfo)"
            )
        self.headers = {"Content-Type": "application/json", **_headers(self.api_key)}
        self.secrets = (*url_secrets(cfg.base_url), *([self.api_key] if self.api_key else []))  # scrub() masks
        self.timeout = aiohttp.ClientTimeout(total=None, sock_connect=10.0, sock_read=cfg.no_bytes_timeout_s)
        self._session: aiohttp.ClientSession | None = None

    @property
    def session(self) -> aiohttp.ClientSession:
        assert self._session is not None, "use HttpSession as an async context manager"
        return self._session

    async def __aenter__(self) -> HttpSession:
        connector = aiohttp.TCPConnector(limit=self.max_connections, limit_per_host=0, ttl_dns_cache=300)
        self._session = aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=None))
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        if exc_type is GeneratorExit:  # the run's coroutine closed unfinished (its loop gone): nothing may be awaited
            self.session.detach()  # its connections go with the loop
            return
        await self.session.close()

    async def get_text(self, url: str, timeout_s: float = 10.0) -> str:
        """GET ``url`` as text (a /metrics page); HTTP errors are one :class:`SpecwiseError`, transport errors
        raise ``aiohttp.ClientError`` / ``TimeoutError``. Bytes that are not text in the page's charset become
        U+FFFD: the exposition parser then reports the page as it does any other invalid text (a bad page never
        costs the run), and a stray byte in a HELP comment leaves the counters readable."""
        async with self.session.get(url, timeout=aiohttp.ClientTimeout(total=timeout_s)) as resp:
            _log.debug("GET %s: HTTP %s", redact_url(url), resp.status)
            if resp.status >= 400:
                raise SpecwiseError(f"{redact_url(url)}: HTTP {resp.status}")
            return await resp.text(errors="replace")


MAX_MODELS_PAGE_BYTES = 1 << 20  # a GET /v1/models answer read at most this far (a list of a few model cards)


async def _served_root(cfg: ClientConfig, timeout_s: float) -> str | None:
    async with HttpSession(cfg, 1) as http:
        timeout = aiohttp.ClientTimeout(total=timeout_s)
        async with http.session.get(cfg.models_url, headers=http.headers, timeout=timeout) as resp:
            if resp.status >= 400:
                return None
            page = await resp.content.read(MAX_MODELS_PAGE_BYTES + 1)
    if len(page) > MAX_MODELS_PAGE_BYTES:
        return None
    cards = json.loads(page).get("data")
    for card in cards if isinstance(cards, list) else ():
        if isinstance(card, dict) and card.get("id") == cfg.model:
            root = card.get("root")
            return (root.strip() or None) if isinstance(root, str) else None
    return None


def served_root(cfg: ClientConfig, timeout_s: float = 5.0) -> str | None:
    """The checkpoint the server loaded for ``cfg.model``: the ``root`` of that model's card in ``GET /v1/models``
    (vLLM: ``ModelCard(id=<served name>, root=<the path or hub id given to vllm serve>)``,
    ``vllm/entrypoints/openai/serving_models.py``, ``show_available_models``). So a run against a server that serves
    its model under an alias (``--served-model-name``) still says which checkpoint it measured. None whenever the
    server does not say: another server, no such card, an error or a timeout -- never a failed bench."""
    try:
        return asyncio.run(_served_root(cfg, timeout_s))
    except (aiohttp.ClientError, TimeoutError, OSError, ValueError, AttributeError, SpecwiseError):
        return None


class _Stream:
    """What one response has delivered so far: token chunks (arrival times and token counts, in two typed arrays:
    no object per chunk), the first token's time, the running token count (exact while the server sends usage
    with every chunk), the server's last usage count, and how it ended."""

    __slots__ = (
        "counts",
        "error",
        "exact",
        "first",
        "max_tokens",
        "prompt_tokens",
        "status",
        "times",
        "tokens",
        "usage",
    )

    def __init__(self, max_tokens: int | None = None) -> None:
        self.times = array("d")
        self.counts = array("q")
        self.first: float | None = None
        self.tokens = 0
        self.exact = True
        self.usage: int | None = None  # the last usage ``completion_tokens`` (cumulative, as vLLM sends it)
        self.max_tokens = max_tokens
        self.prompt_tokens: int | None = None
        self.status: int | None = None
        self.error: str | None = None

    def add(self, payload: dict[str, Any], now: float) -> None:
        """One SSE chunk received at ``now``."""
        prompt = prompt_tokens(payload)
        if prompt is not None and not 0 <= prompt <= MAX_USAGE_TOKENS:
            raise MalformedStream(f"usage prompt_tokens {prompt} is outside 0..{MAX_USAGE_TOKENS}")
        self.prompt_tokens = prompt or self.prompt_tokens
        text = chunk_text(payload)
        usage_total = completion_tokens(payload)
        if usage_total is not None:
            self._check_usage(usage_total)
            self.usage = usage_total
        if usage_total is not None and self.exact:
            n = usage_total - self.tokens
            self.tokens = usage_total
        elif text:
            self.exact = False
            n = 1
            self.tokens += 1
        else:
            n = 0
        if n > 0 or text:
            if self.first is None:
                self.first = now
            if n > 0:
                self.times.append(now)
                self.counts.append(n)

    def _check_usage(self, total: int) -> None:
        """A usage count is cumulative, so it never goes down, and never exceeds what was asked for."""
        bound = MAX_USAGE_TOKENS if self.max_tokens is None else min(self.max_tokens, MAX_USAGE_TOKENS)
        if total < 0 or total > bound:
            limit = "max_tokens" if bound == self.max_tokens else "the sanity bound"
            raise MalformedStream(f"usage completion_tokens {total} is outside 0..{bound} ({limit})")
        if self.usage is not None and total < self.usage:
            raise MalformedStream(f"usage completion_tokens went down from {self.usage} to {total}")

    def output_tokens(self) -> int:
        """The request's output tokens: the per-chunk count while exact, else the server's final usage count
        when it sent one (vLLM's last ``include_usage`` chunk), else one per text chunk."""
        if not self.exact and self.usage is not None:
            return max(self.usage, self.tokens)  # a count sent before the per-chunk usage stopped is stale
        return self.tokens

    def chunks(self) -> tuple[tuple[float, int], ...]:
        return tuple(zip(self.times, self.counts, strict=True))


async def _read(
    resp: aiohttp.ClientResponse, stream: _Stream, clock: Callable[[], float], secrets: tuple[str, ...] = ()
) -> None:
    """The response into ``stream``: an HTTP error's text (its first 16 KiB, secrets masked), or the SSE chunks up
    to ``[DONE]`` (read on to the end of the body, so a kept-alive connection can be reused). A line longer than
    :data:`MAX_LINE_BYTES` without a newline ends the request as malformed instead of growing without bound."""
    stream.status = resp.status
    if resp.status >= 400:
        text = (await resp.content.read(ERROR_BODY_BYTES)).decode("utf-8", "replace")
        stream.error = f"http {resp.status}: {scrub(' '.join(text.split()), *secrets)[:160]}"
        return
    done = False
    rest = b""
    async for data in resp.content.iter_any():
        if done:
            continue
        buf = rest + data if rest else data
        start = 0
        while (end := buf.find(b"\n", start)) >= 0:
            payload = sse_payload(buf[start:end])
            start = end + 1
            if payload is None:
                continue
            if payload is DONE:
                done = True
                break
            stream.add(payload, clock())  # type: ignore[arg-type]
        rest = buf[start:]
        if len(rest) > MAX_LINE_BYTES:
            raise MalformedStream(f"an event line longer than {MAX_LINE_BYTES:,} bytes without a newline")
    if not done and rest.strip():
        payload = sse_payload(rest)
        done = payload is DONE
        if isinstance(payload, dict):
            stream.add(payload, clock())
    if not done:
        stream.error = "incomplete: stream ended before [DONE]"


def _failure(exc: BaseException, cfg: ClientConfig) -> str:
    """The record's ``error`` for an exception that ended the request."""
    if isinstance(exc, aiohttp.ServerTimeoutError):
        return f"timeout: {type(exc).__name__}: no bytes for {cfg.no_bytes_timeout_s:g} s"
    if isinstance(exc, TimeoutError):
        return f"timeout: no completion within {cfg.request_timeout_s:g} s"
    if isinstance(exc, MalformedStream):
        return f"malformed: {exc}"
    return f"connection: {type(exc).__name__}: {redact_text(str(exc))[:120]}"


async def send_request(
    http: HttpSession,
    cfg: ClientConfig,
    req: RequestSpec,
    *,
    run_id: str,
    level: int,
    scheduled_s: float,
    clock: Callable[[], float] = time.perf_counter,
) -> RequestRecord:
    """Send one streaming request; every failure becomes a record with ``error`` set, never an exception."""
    start = clock()
    stream = _Stream(req.max_tokens)
    body = json.dumps(_body(cfg, req)).encode()
    try:
        async with asyncio.timeout(cfg.request_timeout_s):
            async with http.session.post(cfg.url, data=body, headers=http.headers, timeout=http.timeout) as resp:
                await _read(resp, stream, clock, http.secrets)
    except (TimeoutError, MalformedStream, aiohttp.ClientError, OSError) as exc:
        stream.error = _failure(exc, cfg)
    end = clock()
    if _log.isEnabledFor(logging.DEBUG):  # -v: each request, its URL masked, its error already masked
        outcome = stream.error or f"{stream.output_tokens()} tokens"
        _log.debug("POST %s %s: HTTP %s in %.3f s, %s", redact_url(cfg.url), req.request_id, stream.status,
                   end - start, outcome)  # fmt: skip
    return RequestRecord(
        run_id=run_id,
        level=level,
        request_id=req.request_id,
        workload_class=req.workload_class,
        scheduled_s=scheduled_s,
        start_s=start,
        end_s=end,
        first_token_s=stream.first,
        output_tokens=stream.output_tokens(),
        prompt_tokens=stream.prompt_tokens,
        chunks=stream.chunks(),
        error=stream.error,
        status_code=stream.status,
        tokens_exact=stream.exact,
        session=PROCESS_SESSION,
    )
