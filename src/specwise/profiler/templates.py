"""``profile --chat-template auto|none|FILE``: the text the target sees, as a chat server would build it.

A chat server (vLLM's ``/v1/chat/completions``) renders the conversation with the model's chat template (the
``chat_template`` of ``tokenizer_config.json``, or ``chat_template.jinja`` beside it) and tokenizes the result
without adding special tokens again (vLLM's ``ChatCompletionRequest.add_special_tokens`` defaults to False: the
template places them). The template is rendered by transformers' ``apply_chat_template``, which compiles it in
jinja2's ``ImmutableSandboxedEnvironment`` (``transformers/utils/chat_template_utils.py``): a template cannot reach
Python objects. ``none`` sends the raw text (a ``/v1/completions`` request); ``auto`` uses the model's template
when it has one, else raw text; ``FILE`` renders with the user's Jinja template. Which was used is recorded in the
profile (``prompts.chat_template``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from specwise.errors import SpecwiseError
from specwise.fileio import read_text_bounded
from specwise.prompts.items import PromptItem

if TYPE_CHECKING:
    from specwise.profiler.runner import Prompt

MODES = ("auto", "none")
MAX_TEMPLATE_BYTES = 1 << 20


class ChatTokenizer(Protocol):
    """What rendering needs of a transformers tokenizer: its own template and ``apply_chat_template``."""

    chat_template: str | dict[str, str] | None

    def apply_chat_template(self, conversation: list[dict[str, str]], **kwargs: Any) -> Any: ...


@dataclass(frozen=True)
class TemplateChoice:
    """What the user asked for: ``auto``, ``none``, or a template file."""

    mode: str
    path: Path | None = None

    @classmethod
    def parse(cls, text: str) -> TemplateChoice:
        if text in MODES:
            return cls(text)
        path = Path(text)
        if not path.is_file():
            raise SpecwiseError(f"--chat-template {text!r}: expected auto, none or a Jinja template file")
        return cls("file", path)


@dataclass(frozen=True)
class AppliedTemplate:
    """The template a profile used (``used``: model, file or none), where it came from, and its sha256."""

    used: str
    source: str | None = None
    sha256: str | None = None
    text: str | None = None

    def to_json(self) -> dict[str, str | None]:
        return {"used": self.used, "source": self.source, "sha256": self.sha256}


def _applied(used: str, source: str, text: str) -> AppliedTemplate:
    return AppliedTemplate(used, source, hashlib.sha256(text.encode()).hexdigest(), text)


def model_template(tokenizer: ChatTokenizer, model_dir: Path) -> AppliedTemplate | None:
    """The model's own template (transformers reads ``chat_template.jinja`` or ``tokenizer_config.json``)."""
    text = getattr(tokenizer, "chat_template", None)
    if isinstance(text, dict):  # named templates (older tokenizer_config.json): the default one
        text = text.get("default")
    if not isinstance(text, str) or not text.strip():
        return None
    jinja = model_dir / "chat_template.jinja"
    return _applied("model", str(jinja if jinja.is_file() else model_dir / "tokenizer_config.json"), text)


def resolve(choice: TemplateChoice, tokenizer: ChatTokenizer, model_dir: Path) -> AppliedTemplate:
    if choice.mode == "none":
        return AppliedTemplate("none")
    if choice.mode == "file":
        assert choice.path is not None
        return _applied("file", str(choice.path), read_text_bounded(choice.path, MAX_TEMPLATE_BYTES, "chat template"))
    return model_template(tokenizer, model_dir) or AppliedTemplate("none", "the model has no chat template")


@dataclass(frozen=True)
class RenderedPrompt:
    text: str
    add_special_tokens: bool  # False for templated text: the template placed them


def render(items: Sequence[PromptItem], template: AppliedTemplate, tokenizer: ChatTokenizer) -> list[RenderedPrompt]:
    if template.text is None:
        return [RenderedPrompt(item.raw_text(), True) for item in items]
    out = []
    for i, item in enumerate(items, start=1):
        messages = [{"role": m.role, "content": m.content} for m in item.messages()]
        try:
            text = tokenizer.apply_chat_template(
                messages, tokenize=False, add_generation_prompt=True, chat_template=template.text
            )
        except Exception as exc:  # jinja2.TemplateError and what a template raises (raise_exception)
            raise SpecwiseError(
                f"chat template {template.source}: failed on prompt {i} ({type(exc).__name__}: {str(exc)[:200]})"
            ) from None
        out.append(RenderedPrompt(str(text), False))
    return out


def rendered_prompts(items: list[PromptItem], template: AppliedTemplate, tokenizer: ChatTokenizer) -> list[Prompt]:
    """The prompts as the profile feeds them: each rendered with ``template`` (or raw), its workload class kept."""
    from specwise.profiler.runner import Prompt

    texts = render(items, template, tokenizer)
    return [Prompt(t.text, i.workload_class, t.add_special_tokens) for t, i in zip(texts, items, strict=True)]
