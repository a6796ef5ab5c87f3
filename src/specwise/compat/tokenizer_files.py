"""Tokenizer files at the I/O edge: token tables from ``tokenizer.json`` or GGUF, sample encodings.

``tokenizer.json`` is read as JSON and, for encoding, by the ``tokenizers`` library (Rust, no code
execution). GGUF token tables come from ``tokenizer.ggml.tokens``. Nothing is downloaded.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from specwise.errors import SpecwiseError
from specwise.extras import missing_extra
from specwise.specs.gguf import read_gguf
from specwise.specs.model import TokenizerRef

# Strings that exercise what differs between tokenizers: prose, code, digits, whitespace runs,
# non-Latin scripts and emoji (byte fallback), chat markup.
SAMPLE_STRINGS: tuple[str, ...] = (
    "The quick brown fox jumps over the lazy dog.",
    "def fibonacci(n: int) -> int:\n    return n if n < 2 else fibonacci(n - 1) + fibonacci(n - 2)\n",
    "Speculative decoding: 3.14159, 2026-11-30, $1,234.56 and 0x7fff_ffff.",
    "    indented\ttabs\t\tand   multiple   spaces\n\n\n",
    "Übersetzung: naïve café, 東京の天気は晴れです。 Привет, мир! 😀🚀",
    "<|im_start|>user\nSummarise this document.<|im_end|>",
)


@dataclass(frozen=True)
class TokenTable:
    """Token strings by id, and the merge rules when the file has them."""

    source: str
    tokens: tuple[str | None, ...]
    merges: tuple[str, ...] | None = None


def load_token_table(ref: TokenizerRef) -> TokenTable | None:
    if ref.gguf_path:
        md = read_gguf(Path(ref.gguf_path)).metadata
        tokens = md.get("tokenizer.ggml.tokens")
        if not isinstance(tokens, list):
            return None
        merges = md.get("tokenizer.ggml.merges")
        return TokenTable(ref.gguf_path, tuple(tokens), tuple(merges) if isinstance(merges, list) else None)
    if ref.tokenizer_json:
        return _table_from_tokenizer_json(Path(ref.tokenizer_json))
    return None


def _table_from_tokenizer_json(path: Path) -> TokenTable:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SpecwiseError(f"{path}: cannot read tokenizer.json: {exc}") from None
    model = doc.get("model") if isinstance(doc, dict) else None
    vocab = model.get("vocab") if isinstance(model, dict) else None
    by_id: dict[int, str] = {}
    if isinstance(vocab, dict):
        by_id.update({int(i): str(t) for t, i in vocab.items()})
    elif isinstance(vocab, list):  # Unigram: [[piece, score], ...]
        by_id.update({i: str(item[0]) for i, item in enumerate(vocab)})
    else:
        raise SpecwiseError(f"{path}: tokenizer.json has no model.vocab")
    for added in doc.get("added_tokens") or []:
        if isinstance(added, dict) and "id" in added and "content" in added:
            by_id[int(added["id"])] = str(added["content"])
    size = max(by_id) + 1 if by_id else 0
    merges_raw = model.get("merges") if isinstance(model, dict) else None
    merges = None
    if isinstance(merges_raw, list):
        merges = tuple(m if isinstance(m, str) else " ".join(m) for m in merges_raw)
    return TokenTable(str(path), tuple(by_id.get(i) for i in range(size)), merges)


def encode_samples(tokenizer_json: str, samples: tuple[str, ...] = SAMPLE_STRINGS) -> list[list[int]]:
    """Token ids of each sample string (no special tokens added)."""
    try:
        from tokenizers import Tokenizer
    except ImportError:  # an optional extra (issue 14)
        raise missing_extra("tokenizers", "encoding the tokenizers' sample strings") from None
    try:
        tok = Tokenizer.from_file(tokenizer_json)
    except Exception as exc:  # the Rust side raises plain Exception on a bad file
        raise SpecwiseError(f"{tokenizer_json}: cannot load tokenizer: {exc}") from None
    return [list(tok.encode(s, add_special_tokens=False).ids) for s in samples]


@dataclass(frozen=True)
class TokenizerEvidence:
    """What comparing two tokenizers' files showed (computed here, judged in :mod:`compat.pair`)."""

    target_source: str
    draft_source: str
    target_tokens: int
    draft_tokens: int
    common_ids: int
    mismatched_ids: int
    first_mismatch: tuple[int, str | None, str | None] | None
    merges_equal: bool | None
    samples_compared: int
    samples_agreeing: int


def gather_tokenizer_evidence(
    target: TokenizerRef, draft: TokenizerRef, *, encode: bool = True
) -> TokenizerEvidence | None:
    """Compare token tables (and, with ``encode``, sample encodings when both have tokenizer.json: this needs
    the ``tokenizers`` extra); None without files."""
    t_table, d_table = load_token_table(target), load_token_table(draft)
    if t_table is None or d_table is None:
        return None
    common = min(len(t_table.tokens), len(d_table.tokens))
    mismatched = 0
    first: tuple[int, str | None, str | None] | None = None
    for i in range(common):
        a, b = t_table.tokens[i], d_table.tokens[i]
        if a != b:
            mismatched += 1
            if first is None:
                first = (i, a, b)
    merges_equal = None
    if t_table.merges is not None and d_table.merges is not None:
        merges_equal = t_table.merges == d_table.merges
    compared = agreeing = 0
    if encode and target.tokenizer_json and draft.tokenizer_json:
        t_ids = encode_samples(target.tokenizer_json)
        d_ids = encode_samples(draft.tokenizer_json)
        compared = len(t_ids)
        agreeing = sum(1 for a, b in zip(t_ids, d_ids, strict=True) if a == b)
    return TokenizerEvidence(
        target_source=t_table.source,
        draft_source=d_table.source,
        target_tokens=len(t_table.tokens),
        draft_tokens=len(d_table.tokens),
        common_ids=common,
        mismatched_ids=mismatched,
        first_mismatch=first,
        merges_equal=merges_equal,
        samples_compared=compared,
        samples_agreeing=agreeing,
    )
