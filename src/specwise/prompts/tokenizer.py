"""A model's ``tokenizer.json``, found offline and read with the ``tokenizers`` library (Rust; no code runs).

``--tokenizer`` names a model directory, a ``tokenizer.json`` file, or a Hugging Face model id already in the local
hub cache (``$HF_HUB_CACHE``, else ``$HF_HOME/hub``, else ``~/.cache/huggingface/hub``: the layout
``models--ORG--NAME/snapshots/REVISION/`` that ``huggingface_hub`` writes). Nothing is downloaded.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specwise.errors import SpecwiseError
from specwise.extras import require


def hub_cache() -> Path:
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"])
    home = os.environ.get("HF_HOME")
    return (Path(home) if home else Path.home() / ".cache" / "huggingface") / "hub"


def find_tokenizer_json(name: str, cache: Path | None = None) -> Path:
    path = Path(name).expanduser()
    if path.is_file():
        return path
    if path.is_dir():
        if (path / "tokenizer.json").is_file():
            return path / "tokenizer.json"
        raise SpecwiseError(f"{name}: no tokenizer.json in the directory")
    if name.count("/") == 1 and not name.startswith((".", "/")):
        repo = (cache or hub_cache()) / f"models--{name.replace('/', '--')}"
        ref = repo / "refs" / "main"
        revisions = [ref.read_text().strip()] if ref.is_file() else []
        snapshots = repo / "snapshots"
        revisions += sorted(p.name for p in snapshots.iterdir()) if snapshots.is_dir() else []
        for rev in revisions:
            if (snapshots / rev / "tokenizer.json").is_file():
                return snapshots / rev / "tokenizer.json"
        raise SpecwiseError(
            f"{name}: not in the local Hugging Face cache ({repo}); give a model directory or tokenizer.json "
            "(nothing is downloaded)"
        )
    raise SpecwiseError(f"{name}: no such file or directory, and not an ORG/NAME model id")


@dataclass(frozen=True)
class TokenizerFile:
    """``encode``/``decode`` without special tokens (a prompt's own tokens)."""

    path: Path
    tokenizer: Any

    def encode(self, text: str) -> list[int]:
        try:
            return list(self.tokenizer.encode(text, add_special_tokens=False).ids)
        except Exception as exc:  # a file that loads but cannot encode (e.g. an unk_token missing from its vocab)
            raise SpecwiseError(f"{self.path}: this tokenizer cannot encode text ({str(exc)[:200]})") from None

    def decode(self, ids: list[int]) -> str:
        try:
            return str(self.tokenizer.decode(ids, skip_special_tokens=False))
        except Exception as exc:
            raise SpecwiseError(f"{self.path}: this tokenizer cannot decode ids ({str(exc)[:200]})") from None


def load_tokenizer(name: str, cache: Path | None = None) -> TokenizerFile:
    path = find_tokenizer_json(name, cache)
    require("tokenizers", "counting tokens (--synthetic-tokens, --tokenizer)")
    from tokenizers import Tokenizer

    try:
        return TokenizerFile(path, Tokenizer.from_file(str(path)))
    except Exception as exc:  # tokenizers raises a bare Exception on a malformed file
        raise SpecwiseError(f"{path}: not a readable tokenizer.json ({str(exc)[:200]})") from None
