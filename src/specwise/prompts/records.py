"""One dataset record -> a :class:`~specwise.prompts.items.Conversation`, whatever format it is in.

The record's keys say its format (a file may mix them):

* ``{"prompt": str}`` -- a single user turn (specwise's own JSONL; ``class`` or ``category`` labels it);
* ``{"messages": [{"role", "content"}, ...]}`` -- OpenAI chat messages (roles system, user, assistant);
* ``{"conversations": [{"from", "value"}, ...]}`` -- ShareGPT (``anon8231489123/ShareGPT_Vicuna_unfiltered``:
  ``from`` is ``human`` or ``gpt``; ``system``, and the ``user``/``assistant``/``chatgpt``/``bing``/``bard`` some
  copies use, are read too). Turns before the first user turn are dropped, as ShareGPT holds conversations that
  open with the assistant;
* ``{"turns": [str, ...], "category"}`` -- Spec-Bench's ``question.jsonl`` (Xia et al. 2024, "Unlocking
  Efficiency in Large Language Model Inference: A Comprehensive Survey of Speculative Decoding"; MT-bench's
  format): user turns, no answers.

Optional on every record: ``max_tokens`` (positive integer) and ``temperature`` (number >= 0). A malformed record
is one :class:`SpecwiseError` naming the file, the record and the field (``file: line 3.messages[1].role: ...``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from specwise.errors import SpecwiseError, as_written
from specwise.prompts.items import ROLES, ChatMessage, Conversation

SHAREGPT_ROLES = {
    "human": "user",
    "user": "user",
    "gpt": "assistant",
    "assistant": "assistant",
    "chatgpt": "assistant",
    "bing": "assistant",
    "bard": "assistant",
    "system": "system",
}
KINDS = ("prompt", "messages", "conversations", "turns")


class Record:
    """A record and where it is (``file``, ``where`` = "line 3" / "record 3" / "row 3"), for its errors."""

    def __init__(self, data: object, where: str, file: str) -> None:
        self.where, self.file = where, file
        if not isinstance(data, Mapping):
            raise self.error(f"expected an object with one of {', '.join(KINDS)}, got {_kind(data)}")
        self.data: Mapping[str, Any] = data

    def error(self, message: str) -> SpecwiseError:
        return SpecwiseError(f"{self.file}: {self.where}: {message}")

    def fail(self, key: str, message: str) -> SpecwiseError:
        return SpecwiseError(f"{self.file}: {self.where}: {key}: {message}")

    def text(self, value: object, key: str, *, empty: bool = False) -> str:
        if not isinstance(value, str) or (not empty and not value):
            raise self.fail(key, f"expected a {'' if empty else 'non-empty '}string, got {_kind(value)}")
        return value

    def items(self, key: str) -> list[Any]:
        value = self.data[key]
        if not isinstance(value, list):
            raise self.fail(key, f"expected a list, got {_kind(value)}")
        return value


def _kind(value: object) -> str:
    if isinstance(value, str):
        return "an empty string" if not value else "a string"
    if isinstance(value, bool):
        return f"{str(value).lower()}"
    if value is None:
        return "null"
    names = {dict: "an object", list: "a list", int: "a number", float: "a number"}
    return names.get(type(value), type(value).__name__)


def parse_record(data: object, where: str, file: str) -> Conversation | None:
    """The record's conversation; None for one with no usable user turn (an empty ShareGPT conversation, one of
    assistant turns only: ShareGPT holds both, and ``vllm bench serve`` skips them too)."""
    rec = Record(data, where, file)
    kind = next((k for k in KINDS if k in rec.data), None)
    if kind is None:
        keys = ", ".join(repr(str(k))[:40] for k in sorted(map(str, rec.data))[:6]) or "none"
        raise rec.error(f"no 'prompt', 'messages', 'conversations' or 'turns' field (keys: {keys})")
    if kind == "prompt":
        turns: tuple[ChatMessage, ...] = (ChatMessage("user", rec.text(rec.data["prompt"], "prompt")),)
    elif kind == "messages":
        turns = _messages(rec)
    elif kind == "conversations":
        turns = _sharegpt(rec)
    else:
        turns = tuple(ChatMessage("user", rec.text(t, f"turns[{i}]")) for i, t in enumerate(rec.items("turns")))
    turns = _from_first_user(turns)
    if not turns:
        return None
    return Conversation(turns, _category(rec), _max_tokens(rec), _temperature(rec))


def _messages(rec: Record) -> tuple[ChatMessage, ...]:
    out = []
    for i, m in enumerate(rec.items("messages")):
        key = f"messages[{i}]"
        if not isinstance(m, Mapping):
            raise rec.fail(key, f"expected an object with 'role' and 'content', got {_kind(m)}")
        role = m.get("role")
        if role not in ROLES:
            raise rec.fail(f"{key}.role", f"expected one of {', '.join(ROLES)}, got {as_written(role, 'json')}"[:200])
        out.append(ChatMessage(str(role), rec.text(m.get("content"), f"{key}.content", empty=True)))
    return tuple(out)


def _sharegpt(rec: Record) -> tuple[ChatMessage, ...]:
    out = []
    for i, m in enumerate(rec.items("conversations")):
        key = f"conversations[{i}]"
        if not isinstance(m, Mapping):
            raise rec.fail(key, f"expected an object with 'from' and 'value', got {_kind(m)}")
        who = m.get("from")
        role = SHAREGPT_ROLES.get(who) if isinstance(who, str) else None
        if role is None:
            raise rec.fail(f"{key}.from", f"expected one of human, gpt, system, got {as_written(who, 'json')}"[:200])
        out.append(ChatMessage(role, rec.text(m.get("value"), f"{key}.value", empty=True)))
    return tuple(out)


def _from_first_user(turns: tuple[ChatMessage, ...]) -> tuple[ChatMessage, ...]:
    """A leading system turn is kept; assistant turns before the first user turn are dropped."""
    system = turns[:1] if turns and turns[0].role == "system" else ()
    rest = turns[len(system) :]
    first = next((i for i, t in enumerate(rest) if t.role == "user" and t.content), None)
    return () if first is None else (*system, *rest[first:])


def _category(rec: Record) -> str | None:
    for key in ("class", "category"):
        value = rec.data.get(key)
        if value is not None:
            if not isinstance(value, str) or value == "":  # a number is refused as ``prompt`` refuses one
                raise rec.fail(key, f"expected a non-empty string, got {_kind(value)}")
            return value
    return None


def _max_tokens(rec: Record) -> int | None:
    value = rec.data.get("max_tokens")
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise rec.fail("max_tokens", f"expected a positive integer, got {as_written(value, 'json')}"[:200])
    return value


def _temperature(rec: Record) -> float | None:
    value = rec.data.get("temperature")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < float("inf"):
        raise rec.fail("temperature", f"expected a number >= 0, got {as_written(value, 'json')}"[:200])
    return float(value)
