"""Weight bytes of a model under a dtype and a weight quantization scheme."""

from __future__ import annotations

import math

from specwise.specs.model import ModelSpec
from specwise.specs.quant import Quantization


def weight_bytes(spec: ModelSpec, dtype_bytes: float, quantization: Quantization | None) -> int:
    """Bytes of all weights. ``quantization=None`` means "as the checkpoint stores them".

    For a GGUF file kept as it is, that is the file's tensor-data size (exact). Otherwise the
    linear-layer weights (or only the experts, for an ``experts`` scope) take the scheme's bytes per
    weight and everything else (embeddings, LM head, norms, router) the model dtype; see
    :mod:`specwise.specs.quant` for the per-scheme overheads.
    """
    if quantization is None:
        if spec.file_weight_bytes is not None:
            return spec.file_weight_bytes
        quantization = spec.native_quantization
    p = spec.params
    quantized = p.quantizable(quantization.scope) if quantization.is_quantized else 0
    rest = p.total - quantized
    return math.ceil(rest * dtype_bytes + quantized * quantization.bytes_per_weight(dtype_bytes))


def weight_bytes_per_gpu(spec: ModelSpec, total_bytes: int, dtype_bytes: float, tp: int) -> int:
    """Bytes on one of ``tp`` GPUs: everything is sharded except the norms/small vectors (replicated)."""
    replicated = spec.params.norms_and_other * dtype_bytes
    sharded = max(0.0, total_bytes - replicated)
    return math.ceil(sharded / tp + replicated)
