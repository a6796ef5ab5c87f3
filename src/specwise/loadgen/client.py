"""Async streaming client for OpenAI-compatible ``/v1/completions`` and ``/v1/chat/completions``.

Token counts per chunk come from the server's usage stats when it sends them (vLLM:
``stream_options: {"include_usage": true, "continuous_usage_stats": true}``), so a chunk carrying
several speculated tokens is counted as several; without them each text chunk counts as one token
and the record says ``tokens_exact=False``. The API key is read from an environment variable and only
ever placed in the request header: records and logs never see it.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx

from specwise.loadgen.records import RequestRecord
from specwise.loadgen.sse import MalformedStream, chunk_text, completion_tokens, parse_sse_line, prompt_tokens


@dataclass(frozen=True)
class RequestSpec:
    request_id: str
    prompt: str
    max_tokens: int
    temperature: float = 0.0
    workload_class: str | None = None
    ignore_eos: bool = False


@dataclass(frozen=True)
class ClientConfig:
    base_url: str
    model: str
    endpoint: Literal["completions", "chat"] = "completions"
    api_key_env: str | None = "OPENAI_API_KEY"
    request_timeout_s: float = 120.0
    read_timeout_s: float = 30.0
    continuous_usage: bool = True

    @property
    def url(self) -> str:
        path = "/v1/completions" if self.endpoint == "completions" else "/v1/chat/completions"
        return self.base_url.rstrip("/") + path


def _body(cfg: ClientConfig, req: RequestSpec) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": cfg.model,
        "max_tokens": req.max_tokens,
        "temperature": req.temperature,
        "stream": True,
    }
    if cfg.endpoint == "completions":
        body["prompt"] = req.prompt
    else:
        body["messages"] = [{"role": "user", "content": req.prompt}]
    if cfg.continuous_usage:
        body["stream_options"] = {"include_usage": True, "continuous_usage_stats": True}
    if req.ignore_eos:
        body["ignore_eos"] = True
    return body


def _headers(cfg: ClientConfig) -> dict[str, str]:
    key = os.environ.get(cfg.api_key_env) if cfg.api_key_env else None
    return {"Authorization": f"Bearer {key}"} if key else {}


@dataclass
class _Stream:
    """What one response has delivered so far: token chunks (time, tokens), the first token's time, the running
    token count (exact while the server sends usage with every chunk), and how it ended."""

    chunks: list[tuple[float, int]] = field(default_factory=list)
    first: float | None = None
    tokens: int = 0
    exact: bool = True
    prompt_tokens: int | None = None
    status: int | None = None
    error: str | None = None

    def add(self, payload: dict[str, Any], now: float) -> None:
        """One SSE chunk received at ``now``."""
        self.prompt_tokens = prompt_tokens(payload) or self.prompt_tokens
        text = chunk_text(payload)
        usage_total = completion_tokens(payload)
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
                self.chunks.append((now, n))


async def _read(resp: httpx.Response, stream: _Stream, clock: Callable[[], float]) -> None:
    """The response into ``stream``: an HTTP error's text, or the SSE chunks up to ``[DONE]``."""
    stream.status = resp.status_code
    if resp.status_code >= 400:
        text = (await resp.aread()).decode("utf-8", "replace")
        stream.error = f"http {resp.status_code}: {' '.join(text.split())[:160]}"
        return
    async for line in resp.aiter_lines():
        event = parse_sse_line(line)
        if event is None:
            continue
        if event.done:
            return
        payload = event.payload or {}
        stream.add(payload, clock())
    stream.error = "incomplete: stream ended before [DONE]"


def _failure(exc: Exception, cfg: ClientConfig) -> str:
    """The record's ``error`` for an exception that ended the request."""
    if isinstance(exc, TimeoutError):
        return f"timeout: no completion within {cfg.request_timeout_s:g} s"
    if isinstance(exc, httpx.TimeoutException):
        return f"timeout: {type(exc).__name__}"
    if isinstance(exc, MalformedStream):
        return f"malformed: {exc}"
    return f"connection: {type(exc).__name__}: {str(exc)[:120]}"


async def send_request(
    client: httpx.AsyncClient,
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
    stream = _Stream()
    timeout = httpx.Timeout(connect=10.0, read=cfg.read_timeout_s, write=10.0, pool=None)
    try:
        async with asyncio.timeout(cfg.request_timeout_s):
            async with client.stream(
                "POST", cfg.url, json=_body(cfg, req), headers=_headers(cfg), timeout=timeout
            ) as resp:
                await _read(resp, stream, clock)
    except (TimeoutError, httpx.TimeoutException, MalformedStream, httpx.HTTPError) as exc:
        stream.error = _failure(exc, cfg)
    end = clock()
    return RequestRecord(
        run_id=run_id,
        level=level,
        request_id=req.request_id,
        workload_class=req.workload_class,
        scheduled_s=scheduled_s,
        start_s=start,
        end_s=end,
        first_token_s=stream.first,
        output_tokens=stream.tokens,
        prompt_tokens=stream.prompt_tokens,
        chunks=tuple(stream.chunks),
        error=stream.error,
        status_code=stream.status,
        tokens_exact=stream.exact,
    )
