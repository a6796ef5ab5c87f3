"""GGUF -> safetensors (one dequantisation, cached), and a layer-truncated self-speculative draft.

transformers reads GGUF (dequantising every tensor); that takes minutes and several GB for a 1.5B model, so it
is done once and the result saved as safetensors next to a marker naming the source sha256.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

from specwise.errors import SpecwiseError

_MARKER = "specwise-source.json"


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 22):
            h.update(chunk)
    return h.hexdigest()


def default_cache_dir() -> Path:
    base = os.environ.get("SPECWISE_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "specwise"
    )
    return Path(base) / "weights"


def gguf_to_hf(gguf: Path, out_dir: Path, dtype: str = "bfloat16") -> Path:
    """Dequantise ``gguf`` into an HF directory (config, tokenizer, model.safetensors); reuse it when present."""
    marker = out_dir / _MARKER
    if marker.exists() and (out_dir / "model.safetensors").exists():
        return out_dir
    if not gguf.is_file():
        raise SpecwiseError(f"{gguf}: no such GGUF file")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tmp = out_dir.with_name(out_dir.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=dtype)
        model.hf_quantizer = None  # type: ignore[assignment]  # the GGUF loader's quantizer state must not be saved
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        tmp.mkdir(parents=True)
        model.save_pretrained(tmp, safe_serialization=True)
        tok.save_pretrained(tmp)
        (tmp / _MARKER).write_text(json.dumps({"gguf": gguf.name, "sha256": file_sha256(gguf), "dtype": dtype}))
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    shutil.rmtree(out_dir, ignore_errors=True)
    tmp.replace(out_dir)
    return out_dir


def cached_hf_dir(gguf: Path, cache_dir: Path | None = None) -> Path:
    """Where the converted copy of ``gguf`` lives: keyed by content hash, so a changed file converts anew."""
    key = file_sha256(gguf)[:16]
    return (cache_dir or default_cache_dir()) / f"{gguf.stem}-{key}"


def truncate_layers(src: Path, out_dir: Path, num_layers: int) -> Path:
    """A self-speculative draft: the first ``num_layers`` decoder layers of ``src`` with its embeddings and head."""
    from safetensors.torch import load_file, save_file

    cfg = json.loads((src / "config.json").read_text())
    if not 1 <= num_layers < int(cfg["num_hidden_layers"]):
        raise SpecwiseError(f"truncate: num_layers must be in [1, {cfg['num_hidden_layers'] - 1}], got {num_layers}")
    weights = load_file(str(src / "model.safetensors"))
    keep = {k: v for k, v in weights.items() if not k.startswith("model.layers.") or int(k.split(".")[2]) < num_layers}
    out_dir.mkdir(parents=True, exist_ok=True)
    for f in src.iterdir():
        if f.is_file() and f.name not in ("model.safetensors", "config.json", _MARKER):
            shutil.copy2(f, out_dir / f.name)
    cfg["num_hidden_layers"] = num_layers
    for key in ("layer_types",):
        if isinstance(cfg.get(key), list):
            cfg[key] = cfg[key][:num_layers]
    (out_dir / "config.json").write_text(json.dumps(cfg, indent=2))
    save_file(keep, str(out_dir / "model.safetensors"), metadata={"format": "pt"})
    return out_dir
