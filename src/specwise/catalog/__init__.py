"""The offline catalog of models and GPUs, and resolution of what a user names.

Model entries are shipped as trimmed ``config.json`` contents (``data/models/*.json``) and go
through the same parser as a local model directory, so a catalog model and a downloaded one give
the same :class:`ModelSpec`. Nothing here reaches the Hugging Face Hub.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from specwise.errors import SpecwiseError
from specwise.methods import LOOKUP_METHODS
from specwise.specs.derived import mtp_draft_spec
from specwise.specs.draft import DraftChoice
from specwise.specs.gpu import GpuSpec
from specwise.specs.hf_config import load_hf_model_dir, spec_from_hf_config
from specwise.specs.model import ModelSpec, TokenizerRef


@dataclass(frozen=True)
class CatalogModel:
    id: str
    family: str
    roles: tuple[str, ...]
    config: dict[str, Any]
    tokenizer_family: str | None
    tokenizer_tokens: int | None
    published: dict[str, Any]
    draft_for: tuple[str, ...] = ()
    config_source: str = ""  # where its config.json comes from: the entry's own note, else its catalog file's

    @property
    def source(self) -> str:
        """Where the entry's figures come from: the published parameter counts' source, else (a head with no
        published count, whose figures are derived from its config alone) its config's."""
        return str(self.published.get("source") or self.config_source)


def _data_dir() -> Any:
    return resources.files("specwise.catalog").joinpath("data")


@cache
def catalog_models() -> dict[str, CatalogModel]:
    """All catalog models by exact Hugging Face id."""
    models: dict[str, CatalogModel] = {}
    for item in sorted(_data_dir().joinpath("models").iterdir(), key=lambda p: p.name):
        if not item.name.endswith(".json"):
            continue
        doc = json.loads(item.read_text(encoding="utf-8"))
        for entry in doc["models"]:
            tok = entry.get("tokenizer") or {}
            model = CatalogModel(
                id=entry["id"],
                family=doc["family"],
                roles=tuple(entry.get("roles", ())),
                config=entry["config"],
                tokenizer_family=tok.get("family"),
                tokenizer_tokens=tok.get("num_tokens"),
                published=entry.get("published", {}),
                draft_for=tuple(entry.get("draft_for", ())),
                config_source=entry.get("config_source") or doc.get("config_source", ""),
            )
            if model.id in models:
                raise RuntimeError(f"catalog: duplicate model id {model.id} in {item.name}")
            models[model.id] = model
    return models


@cache
def catalog_gpus() -> dict[str, GpuSpec]:
    """All catalog GPUs by canonical name."""
    doc = json.loads(_data_dir().joinpath("gpus.json").read_text(encoding="utf-8"))
    gpus: dict[str, GpuSpec] = {}
    for g in doc["gpus"]:
        gpus[g["name"]] = GpuSpec(
            name=g["name"],
            vendor=g["vendor"],
            memory_bytes=int(g["memory_bytes"]),
            memory_bandwidth_bytes_per_s=float(g["memory_bandwidth_bytes_per_s"]),
            dense_bf16_flops_per_s=float(g["dense_bf16_flops_per_s"]),
            dense_fp8_flops_per_s=g["dense_fp8_flops_per_s"],
            dense_int8_ops_per_s=g["dense_int8_ops_per_s"],
            interconnect_bytes_per_s=float(g["interconnect_bytes_per_s"]),
            interconnect=g["interconnect"],
            aliases=tuple(g["aliases"]),
            source=g["source"],
            device_names=tuple(g.get("device_names", ())),
            segment=g.get("segment", "datacenter"),
            compute_capability=g.get("compute_capability"),
        )
    return gpus


def _device_key(name: str) -> str:
    """A GPU name as words, lower case, without the vendor: ``NVIDIA A100-SXM4-80GB`` -> ``a100 sxm4 80gb`` (older
    drivers print ``GeForce RTX 3090`` without ``NVIDIA``)."""
    words = [w for w in re.split(r"[\s_-]+", name.strip().lower()) if w]
    return " ".join(words[1:] if words and words[0] in ("nvidia", "amd") else words)


@cache
def _gpus_by_device() -> dict[str, GpuSpec]:
    by_key: dict[str, GpuSpec] = {}
    for gpu in catalog_gpus().values():
        for name in (*gpu.device_names, gpu.name, *gpu.aliases):
            other = by_key.setdefault(_device_key(name), gpu)
            if other.name != gpu.name:
                raise RuntimeError(f"catalog: {name!r} names both {other.name} and {gpu.name}")
    return by_key


def gpu_for_device(name: str) -> GpuSpec | None:
    """The catalog GPU a device is, by the name its driver reports (``NVIDIA H100 80GB HBM3``: ``device_names`` in
    gpus.json) or a catalog name or alias; None for any other card. Whole names only: ``NVIDIA L40S`` is not the L4,
    nor ``NVIDIA H100 PCIe`` the H100 SXM."""
    return _gpus_by_device().get(_device_key(name))


def _near(name: str, candidates: list[str], n: int = 4) -> list[str]:
    """Catalog names closest to ``name``: shared words (``qwen3``, ``8b``) first, then spelling."""
    tail = name.lower().rsplit("/", 1)[-1]
    words = [w for w in re.split(r"[-_/. ]+", name.lower()) if w]

    def score(candidate: str) -> float:
        cand = candidate.lower()
        cand_tail = cand.rsplit("/", 1)[-1]
        found = sum(1 for w in words if w in cand) / len(words) if words else 0.0
        spelling = difflib.SequenceMatcher(None, tail, cand_tail).ratio()
        return found + 0.5 * spelling

    ranked = sorted(candidates, key=lambda c: (-score(c), c))
    return [c for c in ranked if score(c) >= 0.6][:n]


def catalog_model_spec(model_id: str) -> ModelSpec:
    """The :class:`ModelSpec` of a catalog model, by exact id (case-insensitive; org may be omitted)."""
    entry = _lookup_model(model_id)
    return spec_from_hf_config(
        entry.config,
        name=entry.id,
        source="catalog",
        tokenizer=TokenizerRef(family=entry.tokenizer_family, num_tokens=entry.tokenizer_tokens),
        where=f"catalog entry {entry.id}",
    )


def catalog_source(spec: ModelSpec) -> str | None:
    """Where a catalog model's figures come from (:attr:`CatalogModel.source`); None for a model read from a local
    directory or file, whose ``source`` names it."""
    return _lookup_model(spec.name).source if spec.source == "catalog" else None


def _lookup_model(model_id: str) -> CatalogModel:
    models = catalog_models()
    if model_id in models:
        return models[model_id]
    by_lower = {k.lower(): v for k, v in models.items()}
    if model_id.lower() in by_lower:
        return by_lower[model_id.lower()]
    by_tail = [v for k, v in models.items() if k.rsplit("/", 1)[-1].lower() == model_id.lower()]
    if len(by_tail) == 1:
        return by_tail[0]
    near = _near(model_id, list(models))
    hint = f"; did you mean {', '.join(near)}?" if near else "; run 'specwise models' to list the catalog"
    raise SpecwiseError(f"unknown model {model_id!r}: not a local path and not in the catalog{hint}")


def catalog_id(name: str) -> str:
    """The catalog id a model name resolves to, as :func:`resolve_model` resolves it (``llama-3.1-70b-instruct`` ->
    ``meta-llama/Llama-3.1-70B-Instruct``), or ``name`` itself when it is a local checkpoint or in no catalog (the
    error is raised where the name is resolved, naming its field). What a command for a server carries: vLLM
    downloads the Hugging Face repository it is given, organisation and case included."""
    try:
        spec = resolve_model(name)
    except SpecwiseError:
        return name
    return spec.name if spec.source == "catalog" else name


MAX_NAME_CHARS = 4096  # PATH_MAX; no catalog id or path is longer


def resolve_model(name_or_path: str, field: str = "model") -> ModelSpec:
    """A local HF directory / config.json / GGUF file, else a catalog id; ``field``: how an empty name's message
    names what was given (``--target``, ``draft``, ...)."""
    if not name_or_path or not name_or_path.strip():
        raise SpecwiseError(f"{field}: empty name; give a catalog id (see 'specwise models') or a local path")
    if len(name_or_path) > MAX_NAME_CHARS or "\x00" in name_or_path:
        shown = name_or_path[:60].replace("\x00", "\\0")
        raise SpecwiseError(f"model {shown!r}...: not a model name or path (too long or a NUL byte)")
    path = Path(name_or_path).expanduser()
    try:
        local = path.exists()
    except OSError as exc:  # a name no file system holds (a component over NAME_MAX, ...): not a path
        if name_or_path.startswith((".", "/", "~")):
            raise SpecwiseError(f"{name_or_path[:60]}...: not a usable path ({exc.strerror})") from None
        local = False
    if local:
        return load_local_model(path)
    if name_or_path.endswith((".gguf", ".json")) or name_or_path.startswith((".", "/", "~")):
        raise SpecwiseError(f"{name_or_path}: no such file or directory")
    return catalog_model_spec(name_or_path)


def load_local_model(path: Path) -> ModelSpec:
    from specwise.specs.gguf_spec import load_gguf_model

    if path.is_file() and path.suffix.lower() == ".gguf":
        return load_gguf_model(path)
    if path.is_dir() and not (path / "config.json").exists():
        ggufs = sorted(path.glob("*.gguf"))
        if len(ggufs) == 1:
            return load_gguf_model(ggufs[0])
        if len(ggufs) > 1:
            raise SpecwiseError(f"{path}: holds {len(ggufs)} GGUF files; name one of them")
    if path.is_file() and path.suffix.lower() != ".json":
        # Not obviously JSON: maybe a GGUF without the extension.
        with path.open("rb") as fh:
            if fh.read(4) == b"GGUF":
                return load_gguf_model(path)
        raise SpecwiseError(f"{path}: neither a GGUF file nor a config.json")
    return load_hf_model_dir(path)


def resolve_gpu(name: str) -> GpuSpec:
    """The catalog GPU ``name`` names: its catalog name, an alias, or the name its driver reports (``NVIDIA H100
    80GB HBM3``, what ``nvidia-smi --query-gpu=name`` prints: ``device_names`` in gpus.json), case, spaces, '-' and
    '_' ignored (:func:`gpu_for_device`); else a GPU file (``*.json`` or a path:
    :func:`~specwise.contracts.gpu_file.load_gpu_file`). The one lookup for ``--gpu`` and ``[deployment].gpu``."""
    gpu = gpu_for_device(name)
    if gpu is not None:
        return gpu
    from specwise.contracts.gpu_file import load_gpu_file, looks_like_gpu_file

    if looks_like_gpu_file(name):
        return load_gpu_file(Path(name).expanduser())
    gpus = catalog_gpus()
    near = _near_gpus(name)
    hint = f"; did you mean {', '.join(near)}?" if near else ""
    raise SpecwiseError(
        f"unknown GPU {name!r}{hint} (known: {', '.join(gpus)}); another card: a JSON file of its specs, as "
        "'specwise gpus --json' prints each (--gpu my-gpu.json)"
    )


def _near_gpus(name: str, n: int = 4) -> list[str]:
    """Catalog GPUs (by catalog name) closest to ``name``: the share of its words (``h100``, ``80gb``; the vendor
    left out) that one of the card's names holds -- its catalog name, an alias or a driver name -- then spelling.
    ``NVIDIA H100 80GB HBM3 SXM`` ranks the H100 SXM first, whose driver name holds every word but one, not the
    H100 NVL, which holds only ``h100``."""
    words = _device_key(name).split()
    if not words:
        return []

    def score(gpu: GpuSpec) -> float:
        best = 0.0
        for known in (gpu.name, *gpu.aliases, *gpu.device_names):
            key = _device_key(known)
            found = sum(1 for w in words if any(w in k for k in key.split())) / len(words)
            spelling = difflib.SequenceMatcher(None, " ".join(words), key).ratio()
            best = max(best, found + 0.5 * spelling)
        return best

    scored = [(score(g), g.name) for g in catalog_gpus().values()]
    return [g for s, g in sorted(scored, key=lambda x: (-x[0], x[1])) if s >= 0.6][:n]


def gpu_name(name: str) -> str:
    """The catalog name of the GPU ``name`` names (``h100`` -> ``H100-SXM-80GB``), or ``name`` itself when it
    names none (the error is raised where the name is resolved, naming its field)."""
    gpu = gpu_for_device(name)
    return gpu.name if gpu is not None else name


def resolve_draft(name_or_path: str, target: ModelSpec, field: str = "draft") -> tuple[DraftChoice, tuple[str, ...]]:
    """A draft given on the command line: ``ngram``, ``suffix``, ``mtp`` (the target's own MTP
    layers), a local path or a catalog id. Returns the choice and, for catalog EAGLE heads, the
    targets the head was trained for; ``field``: how an empty name's message names what was given."""
    key = name_or_path.strip().lower()
    if not key:
        model_free = ", ".join(LOOKUP_METHODS)
        raise SpecwiseError(
            f"{field}: empty name; give a catalog id (see 'specwise models'), a local path, {model_free} or mtp"
        )
    if key in LOOKUP_METHODS:
        return DraftChoice(kind=key), ()  # type: ignore[arg-type]
    if key == "mtp":
        return DraftChoice(kind="mtp", spec=mtp_draft_spec(target)), ()
    spec = resolve_model(name_or_path)
    trained_for: tuple[str, ...] = ()
    if spec.source == "catalog":
        trained_for = _lookup_model(spec.name).draft_for
    return DraftChoice(kind="model", spec=spec), trained_for
