"""Frozen specs of models, GPUs and quantization schemes (pure; no I/O beyond the loaders)."""

from specwise.specs.gpu import GpuSpec
from specwise.specs.model import AttentionSpec, ModelSpec, MoeSpec, ParamBreakdown, SpecialTokens, TokenizerRef
from specwise.specs.quant import Quantization

__all__ = [
    "AttentionSpec",
    "GpuSpec",
    "ModelSpec",
    "MoeSpec",
    "ParamBreakdown",
    "Quantization",
    "SpecialTokens",
    "TokenizerRef",
]
