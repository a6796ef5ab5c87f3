"""Load a causal LM for profiling (torch + transformers, at the edge).

A directory with ``config.json`` + ``*.safetensors`` loads directly; a ``.gguf`` file is dequantised once into
the specwise cache (:mod:`specwise.weights.convert`). Only safetensors are read (never pickles) and
``trust_remote_code`` is never passed. Weights are held in float32: the profiler compares probabilities.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from specwise.errors import SpecwiseError
from specwise.weights.convert import cached_hf_dir, gguf_to_hf

_BYTES_PER_PARAM = 4  # float32


@dataclass(frozen=True)
class ModelFiles:
    """A model resolved to an HF directory, with what the profiler needs before loading it."""

    path: Path
    source: str  # what the user named
    vocab_size: int
    num_params: int
    num_layers: int
    hidden_size: int
    max_positions: int | None = None  # max_position_embeddings (None: not in the config)


def resolve(path_text: str, cache_dir: Path | None = None) -> ModelFiles:
    path = Path(path_text).expanduser()
    if not path.exists():
        raise SpecwiseError(f"{path_text}: no such model file or directory")
    if path.is_file():
        if path.suffix != ".gguf":
            raise SpecwiseError(f"{path_text}: a model is an HF directory (config.json + safetensors) or a .gguf file")
        path = gguf_to_hf(path, cached_hf_dir(path, cache_dir))
    cfg_path = path / "config.json"
    if not cfg_path.is_file():
        raise SpecwiseError(f"{path_text}: no config.json in the directory")
    if not any(path.glob("*.safetensors")):
        found = sorted(p.name for p in path.iterdir() if p.suffix in (".bin", ".pt", ".pth"))
        hint = f" (found {', '.join(found)}: pickled weights are never loaded)" if found else ""
        raise SpecwiseError(f"{path_text}: no *.safetensors weights{hint}")
    try:
        cfg = json.loads(cfg_path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise SpecwiseError(f"{cfg_path}: unreadable config.json ({exc})") from None
    text_cfg = cfg.get("text_config", cfg) if isinstance(cfg, dict) else None
    if not isinstance(text_cfg, dict):
        where = "text_config" if isinstance(cfg, dict) else "the file"
        raise SpecwiseError(f"{cfg_path}: {where}: expected a JSON object (a model's configuration)")
    if not isinstance(cfg.get("model_type"), str):
        raise SpecwiseError(f"{cfg_path}: no model_type: transformers picks the architecture by it")
    values = {}
    for key in ("vocab_size", "num_hidden_layers", "hidden_size"):
        value = text_cfg.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise SpecwiseError(f"{cfg_path}: {key}: expected a positive integer, got {value!r}")
        values[key] = value
    _check_shards(path)
    params = _safetensors_params(path)
    _check_tokenizer(path, path_text)
    positions = text_cfg.get("max_position_embeddings")
    positions = positions if isinstance(positions, int) and not isinstance(positions, bool) and positions > 0 else None
    return ModelFiles(
        path, path_text, values["vocab_size"], params, values["num_hidden_layers"], values["hidden_size"], positions
    )


def _check_shards(path: Path) -> None:
    """A sharded checkpoint's index names files that are all there (a partial download is refused, not crashed on)."""
    index = path / "model.safetensors.index.json"
    if not index.is_file():
        return
    try:
        weight_map = json.loads(index.read_text()).get("weight_map")
        shards = sorted({str(v) for v in weight_map.values()})
    except (OSError, ValueError, AttributeError) as exc:
        raise SpecwiseError(f"{index}: unreadable index ({exc})") from None
    missing = [name for name in shards if not (path / name).is_file()]
    if missing:
        more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
        raise SpecwiseError(f"{index}: names {missing[0]}{more}, not in {path}: an incomplete download?")


TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "vocab.json", "tokenizer_config.json")


def _check_tokenizer(path: Path, path_text: str) -> None:
    if not any((path / name).is_file() for name in TOKENIZER_FILES):
        raise SpecwiseError(f"{path_text}: no tokenizer ({', '.join(TOKENIZER_FILES)}): the model's tokenizer files")


def _safetensors_params(path: Path) -> int:
    """Parameter count from the safetensors headers (no tensor data read); a file whose header is cut short or
    unreadable, or whose data section is not the size the header says, is refused in one line."""
    return sum(_safetensors_file_params(f) for f in sorted(path.glob("*.safetensors")))


def _safetensors_file_params(f: Path) -> int:
    """One file's parameter count. The layout (huggingface/safetensors README, "Format"): 8 bytes little-endian
    header size N, N bytes of JSON {name: {dtype, shape, data_offsets: [begin, end]}}, then the tensor data,
    which the offsets must cover exactly (the loader refuses the file otherwise: "file not fully covered")."""
    try:
        size = f.stat().st_size
        with f.open("rb") as fh:
            n = int.from_bytes(fh.read(8), "little")
            if n <= 0 or n > 100_000_000:
                raise SpecwiseError(f"{f}: not a safetensors file")
            raw = fh.read(n)
    except OSError as exc:
        raise SpecwiseError(f"{f}: cannot read ({exc.strerror or exc})") from None
    if len(raw) < n:
        _corrupt(f, f"its header is {n:,} bytes, the file holds {len(raw):,} after the 8-byte size")
    try:
        header = json.loads(raw)
        total, end = 0, 0
        for name, meta in header.items():
            if name == "__metadata__":
                continue
            count = 1
            for d in meta["shape"]:
                count *= int(d)
            total += count
            end = max(end, int(meta["data_offsets"][1]))
    except (ValueError, TypeError, KeyError, IndexError, AttributeError) as exc:
        _corrupt(f, f"unreadable header: {exc}")
    data = size - 8 - n
    if data != end:
        _corrupt(f, f"the header says {end:,} bytes of tensor data, the file holds {data:,}")
    return total


def _corrupt(f: Path, why: str) -> NoReturn:
    raise SpecwiseError(f"{f}: truncated or corrupt ({why}); download it again") from None


def available_memory_bytes() -> int:
    """MemAvailable from /proc/meminfo (Linux); a large number elsewhere (the check is then skipped)."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 1 << 62


def estimate_bytes(models: list[ModelFiles], max_seq_tokens: int, scored_tokens: int, batch: int) -> int:
    """Peak host memory: float32 weights of every loaded model (x2 when a quantised copy is loaded beside them),
    logits of the scored continuation (float32; target and draft logits plus p, q and temporaries: x6), the
    last-position logits of a generation batch, the target's logits kept from the sampling pass for the whole
    batch (float32, batch x scored tokens), a KV cache for generation (2 x layers x hidden x 4 B per token, an
    upper bound for GQA models), plus 1 GiB of runtime."""
    weights = sum(m.num_params * _BYTES_PER_PARAM for m in models)
    vocab = max(m.vocab_size for m in models)
    logits = (scored_tokens + 1) * vocab * 4 * 6 + batch * vocab * 4 * 4 + batch * scored_tokens * vocab * 4
    kv = sum(2 * m.num_layers * m.hidden_size * 4 * max_seq_tokens * batch for m in models)
    return weights + logits + kv + (1 << 30)


def check_memory(
    models: list[ModelFiles], max_seq_tokens: int, scored_tokens: int, batch: int, available: int | None = None
) -> int:
    need = estimate_bytes(models, max_seq_tokens, scored_tokens, batch)
    have = available_memory_bytes() if available is None else available
    if need > have:
        raise SpecwiseError(
            f"estimated peak memory {need / 2**30:.1f} GiB exceeds the {have / 2**30:.1f} GiB available; use fewer "
            "or shorter prompts (--max-new-tokens), a smaller --batch-size, or a machine with more memory"
        )
    return need


def check_vocab(target: ModelFiles, draft: ModelFiles, target_tokenizer: Any, draft_tokenizer: Any) -> None:
    """Draft and target must score the same token ids. Padding rows may differ (Qwen2.5 0.5B vs 7B); the
    tokenizers' defined vocabularies must not."""
    t_len, d_len = len(target_tokenizer), len(draft_tokenizer)
    t_vocab, d_vocab = target_tokenizer.get_vocab(), draft_tokenizer.get_vocab()
    if t_len != d_len or t_vocab != d_vocab:
        sizes = (
            f"target {target.source} has {t_len:,} tokens ({target.vocab_size:,} embedding rows), draft "
            f"{draft.source} has {d_len:,} ({draft.vocab_size:,} rows)"
        )
        differ = next((tok for tok, i in sorted(t_vocab.items(), key=lambda x: x[1]) if d_vocab.get(tok) != i), None)
        if t_len == d_len and differ is not None:  # as many tokens, other ids: the sizes alone would read as a match
            sizes = (
                f"token {differ!r} is id {t_vocab[differ]} in the target {target.source}, "
                f"{d_vocab.get(differ, 'absent')} in the draft {draft.source}"
            )
        raise SpecwiseError(f"draft and target vocabularies differ: {sizes}; speculative decoding needs one tokenizer")


def load(files: ModelFiles) -> tuple[Any, Any]:
    """(model in eval mode, float32, CPU; tokenizer). Offline; safetensors only; no remote code."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    from safetensors import SafetensorError
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    hf_logging.set_verbosity_error()  # type: ignore[no-untyped-call]
    _check_architecture(files)
    try:
        tok = AutoTokenizer.from_pretrained(files.path, trust_remote_code=False)
    except (OSError, ValueError) as exc:  # a broken tokenizer.json, a tokenizer class that needs missing files
        raise SpecwiseError(f"{files.path}: cannot load its tokenizer ({_first_line(exc)})") from None
    try:
        loaded: Any = AutoModelForCausalLM.from_pretrained(
            files.path, dtype=torch.float32, trust_remote_code=False, use_safetensors=True, output_loading_info=True
        )
        model, info = loaded
    except SafetensorError as exc:  # resolve() checked the layout; this is what the loader still finds wrong
        raise SpecwiseError(
            f"{files.path}: a safetensors file is truncated or corrupt ({exc}); download it again"
        ) from None
    except (OSError, ValueError) as exc:  # a config transformers cannot build the model from
        raise SpecwiseError(f"{files.path}: cannot load the model ({_first_line(exc)})") from None
    _check_loaded(files, info)
    model.eval()
    return model, tok


def _first_line(exc: Exception) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]


def _check_loaded(files: ModelFiles, info: dict[str, Any]) -> None:
    """Every weight the config asks for came from the checkpoint: transformers fills a missing one with random
    values (``missing_keys``, ``mismatched_keys`` in its loading info) and profiles noise without a word."""
    missing = [str(k) for k in info.get("missing_keys", ())]
    mismatched = [str(k[0]) if isinstance(k, tuple) else str(k) for k in info.get("mismatched_keys", ())]
    bad = missing + mismatched
    if bad:
        kind = "missing from" if missing else "of another shape in"
        raise SpecwiseError(
            f"{files.path}: {len(bad):,} weights the config asks for are {kind} the checkpoint (first: {bad[0]}); "
            "config.json does not describe these safetensors"
        )


def _check_architecture(files: ModelFiles) -> None:
    """A ``model_type`` transformers does not ship is refused in one line: its code would come from the checkpoint
    (``auto_map``), which specwise never runs (``trust_remote_code`` stays off)."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    config = Path(files.path) / "config.json"
    try:
        model_type = json.loads(config.read_text(encoding="utf-8")).get("model_type")
    except (OSError, ValueError, AttributeError):
        return  # the spec reader already refused an unreadable config; transformers says the rest
    if isinstance(model_type, str) and model_type not in CONFIG_MAPPING:
        raise SpecwiseError(
            f"{files.path}: model_type {model_type!r} is not an architecture transformers knows; its code would come "
            "from the checkpoint itself, which specwise does not run (trust_remote_code stays off)"
        )
