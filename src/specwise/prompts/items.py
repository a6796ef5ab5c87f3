"""What a prompt source yields: conversations (turns with roles) and the requests replayed from them.

A :class:`Conversation` is one dataset record: its turns in order (optionally a system turn first, then user and
assistant turns), its category, and optional per-record ``max_tokens``/``temperature``. :func:`replay` turns it
into :class:`PromptItem` requests: one per user turn, each carrying every earlier turn -- the dataset's own
assistant answers included -- as its history, as vLLM's multi-turn ShareGPT benchmark replays a conversation
(``benchmarks/multi_turn/benchmark_serving_multi_turn.py``). ``turns="first"`` keeps the first user turn only, as
``vllm bench serve --dataset-name sharegpt`` does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

ROLES = ("system", "user", "assistant")
TURN_MODES = ("first", "all")


@dataclass(frozen=True)
class ChatMessage:
    role: str  # one of ROLES
    content: str


@dataclass(frozen=True)
class Conversation:
    turns: tuple[ChatMessage, ...]
    category: str | None = None
    max_tokens: int | None = None
    temperature: float | None = None


@dataclass(frozen=True)
class PromptItem:
    """One request: the user turn ``prompt`` after ``history`` (earlier turns; empty for a single-turn prompt)."""

    prompt: str
    workload_class: str | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    history: tuple[ChatMessage, ...] = ()

    def messages(self) -> tuple[ChatMessage, ...]:
        """The chat messages of the request: the history, then the user turn."""
        return (*self.history, ChatMessage("user", self.prompt))

    @property
    def multi_turn(self) -> bool:
        """The request carries earlier turns of its conversation (a user or assistant turn before its own); a
        system prompt alone is not an earlier turn."""
        return any(m.role != "system" for m in self.history)

    def raw_text(self) -> str:
        """The request as plain text (no chat template): the turns' contents, blank-line separated."""
        if not self.history:
            return self.prompt
        return "\n\n".join(m.content for m in self.messages())

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "prompt": self.prompt,
            "workload_class": self.workload_class,
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
        }
        if self.history:
            out["history"] = [{"role": m.role, "content": m.content} for m in self.history]
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PromptItem:
        """The stored form (:meth:`to_json`); raises KeyError/TypeError on a malformed one."""
        history = tuple(ChatMessage(str(m["role"]), str(m["content"])) for m in data.get("history") or ())
        return cls(data["prompt"], data.get("workload_class"), data.get("max_tokens"), data.get("temperature"), history)


def replay(conv: Conversation, turns: str = "all") -> list[PromptItem]:
    """A conversation's requests: one per user turn whose earlier turns are all known. An empty user turn, or one
    that follows another user turn (the answer between missing), ends the replay: Spec-Bench's second MT-bench turns
    need the model's own first answer, which a dataset does not hold."""
    out: list[PromptItem] = []
    for i, turn in enumerate(conv.turns):
        if turn.role != "user":
            continue
        history = conv.turns[:i]
        if not turn.content or (history and history[-1].role == "user"):
            break
        out.append(PromptItem(turn.content, conv.category, conv.max_tokens, conv.temperature, history))
        if turns == "first":
            break
    return out
