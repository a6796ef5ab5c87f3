"""Server-sent events as OpenAI-compatible servers stream them: ``data: {json}`` lines, ``data: [DONE]``.

:func:`sse_payload` reads one line as bytes straight off the socket (no decode, no event object: the JSON
object, :data:`DONE`, or None); :func:`parse_sse_line` is the same for a text line, wrapped in a
:class:`StreamEvent`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final


class MalformedStream(Exception):
    """A line that is not a valid SSE ``data:`` JSON event."""


@dataclass(frozen=True)
class StreamEvent:
    done: bool
    payload: dict[str, Any] | None = None


class _Done:
    """The ``data: [DONE]`` sentinel."""


DONE: Final = _Done()
MAX_LINE_BYTES: Final = 4 * 1024 * 1024  # one SSE line; a chunk of a few tokens is well under 1 KiB
_FIELDS = (b"event", b"id", b"retry")


def sse_payload(line: bytes) -> dict[str, Any] | _Done | None:
    """One line of the stream -> its JSON object, :data:`DONE`, or None for blank lines, comments and other SSE
    fields; anything else raises :class:`MalformedStream` (a server error event too)."""
    line = line.strip()
    if not line or line[:1] == b":":
        return None
    if not line.startswith(b"data:"):
        if line.split(b":", 1)[0] in _FIELDS:
            return None
        raise MalformedStream(f"unexpected line in event stream: {line[:80].decode('utf-8', 'replace')!r}")
    data = line[5:].strip()
    if data == b"[DONE]":
        return DONE
    try:
        payload = json.loads(data)
    except ValueError:  # JSONDecodeError, or bytes that are not UTF-8
        raise MalformedStream(f"event is not JSON: {data[:80].decode('utf-8', 'replace')!r}") from None
    if not isinstance(payload, dict):
        raise MalformedStream(f"event is not a JSON object: {data[:80].decode('utf-8', 'replace')!r}")
    if "error" in payload and "choices" not in payload:
        message = payload["error"].get("message") if isinstance(payload["error"], dict) else payload["error"]
        raise MalformedStream(f"server error in stream: {str(message)[:120]}")
    return payload


def parse_sse_line(line: str) -> StreamEvent | None:
    """One line of the stream -> an event, or None for blank lines, comments and other SSE fields."""
    payload = sse_payload(line.encode())
    if payload is None:
        return None
    if payload is DONE:
        return StreamEvent(done=True)
    assert isinstance(payload, dict)
    return StreamEvent(done=False, payload=payload)


def chunk_text(payload: dict[str, Any]) -> str:
    """Generated text of a completions or chat chunk ('' for usage-only chunks)."""
    choices = payload.get("choices") or []
    if not choices or not isinstance(choices[0], dict):
        return ""
    c = choices[0]
    if isinstance(c.get("text"), str):
        return str(c["text"])
    delta = c.get("delta")
    if isinstance(delta, dict):
        return str(delta.get("content") or delta.get("reasoning_content") or "")
    return ""


def _usage_count(payload: dict[str, Any], name: str) -> int | None:
    usage = payload.get("usage")
    value = usage.get(name) if isinstance(usage, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def completion_tokens(payload: dict[str, Any]) -> int | None:
    """The chunk's usage ``completion_tokens`` (cumulative: vLLM's ``continuous_usage_stats`` send the count so far
    with every chunk, its ``include_usage`` the total in a last chunk without choices); None when absent."""
    return _usage_count(payload, "completion_tokens")


def prompt_tokens(payload: dict[str, Any]) -> int | None:
    return _usage_count(payload, "prompt_tokens")
