"""Server-sent events as OpenAI-compatible servers stream them: ``data: {json}`` lines, ``data: [DONE]``."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


class MalformedStream(Exception):
    """A line that is not a valid SSE ``data:`` JSON event."""


@dataclass(frozen=True)
class StreamEvent:
    done: bool
    payload: dict[str, Any] | None = None


def parse_sse_line(line: str) -> StreamEvent | None:
    """One line of the stream -> an event, or None for blank lines, comments and other SSE fields."""
    line = line.strip()
    if not line or line.startswith(":"):
        return None
    if not line.startswith("data:"):
        if line.split(":", 1)[0] in ("event", "id", "retry"):
            return None
        raise MalformedStream(f"unexpected line in event stream: {line[:80]!r}")
    data = line[5:].strip()
    if data == "[DONE]":
        return StreamEvent(done=True)
    try:
        payload = json.loads(data)
    except json.JSONDecodeError:
        raise MalformedStream(f"event is not JSON: {data[:80]!r}") from None
    if not isinstance(payload, dict):
        raise MalformedStream(f"event is not a JSON object: {data[:80]!r}")
    if "error" in payload and "choices" not in payload:
        message = payload["error"].get("message") if isinstance(payload["error"], dict) else payload["error"]
        raise MalformedStream(f"server error in stream: {str(message)[:120]}")
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


def completion_tokens(payload: dict[str, Any]) -> int | None:
    usage = payload.get("usage")
    if isinstance(usage, dict) and isinstance(usage.get("completion_tokens"), int):
        return int(usage["completion_tokens"])
    return None


def prompt_tokens(payload: dict[str, Any]) -> int | None:
    usage = payload.get("usage")
    if isinstance(usage, dict) and isinstance(usage.get("prompt_tokens"), int):
        return int(usage["prompt_tokens"])
    return None
