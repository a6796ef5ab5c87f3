"""Serving-engine adapters: each owns its serve command, its form of a speculation setting, its launch command
and its metric names. vLLM is the default; SGLang and llama.cpp fit the same interface."""

from __future__ import annotations

from specwise.engines.base import Deployment, Engine, SpecMetricNames, Speculation
from specwise.engines.llamacpp import LlamaCppEngine
from specwise.engines.sglang import SglangEngine
from specwise.engines.vllm import VllmEngine
from specwise.engines.vllm_versions import VllmVersion
from specwise.errors import SpecwiseError

ENGINES: dict[str, Engine] = {e.name: e for e in (VllmEngine(), SglangEngine(), LlamaCppEngine())}


def get_engine(name: str, version: str | None = None) -> Engine:
    """The adapter for ``name``; ``version`` (vLLM only) picks the config form that version takes."""
    if version is not None:
        if name != "vllm":
            raise SpecwiseError(f"--vllm-version applies to the vllm engine, not {name!r}")
        return VllmEngine(VllmVersion.parse(version))
    try:
        return ENGINES[name]
    except KeyError:
        raise SpecwiseError(f"unknown serving engine {name!r} (known: {', '.join(ENGINES)})") from None


__all__ = ["ENGINES", "Deployment", "Engine", "SpecMetricNames", "Speculation", "get_engine"]
