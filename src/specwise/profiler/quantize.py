"""Weight-only quantisation what-if: round-to-nearest, then dequantise in place (the matmuls stay float32, so
the logits change exactly as far as the rounding of the weights changes them).

* ``int8``: symmetric per output channel (scale = max|w| / 127), as in W8A16 / LLM.int8 weight storage.
* ``int4``: asymmetric groups of 128 along the input dimension (scale + zero point; GPTQ/AWQ storage layout,
  without their error compensation: RTN is the pessimistic case).
* ``fp8``: float8 e4m3 with a per-output-channel scale (vLLM's fp8 weight quantisation, dynamic activation
  scale aside).

Only the decoder's linear layers are quantised; embeddings, norms and the LM head stay as they are (as the
common weight-only schemes do).
"""

from __future__ import annotations

from typing import Any

import torch

from specwise.errors import SpecwiseError
from specwise.profiler.quantize_spec import SCHEMES


@torch.no_grad()
def rtn(weight: torch.Tensor, scheme: str, group_size: int = 128) -> torch.Tensor:
    """The dequantised copy of a [out, in] weight under ``scheme``."""
    w = weight.float()
    if scheme == "int8":
        scale = w.abs().amax(dim=1, keepdim=True).clamp(min=1e-12) / 127.0
        return (torch.round(w / scale).clamp(-127, 127) * scale).to(weight.dtype)
    if scheme == "int4":
        out_f, in_f = w.shape
        pad = (-in_f) % group_size
        wp = torch.nn.functional.pad(w, (0, pad)) if pad else w
        g = wp.reshape(out_f, -1, group_size)
        lo, hi = g.amin(dim=-1, keepdim=True), g.amax(dim=-1, keepdim=True)
        scale = ((hi - lo) / 15.0).clamp(min=1e-12)
        zero = torch.round(-lo / scale)
        deq = (torch.round(g / scale + zero).clamp(0, 15) - zero) * scale
        return deq.reshape(out_f, -1)[:, :in_f].to(weight.dtype)
    if scheme == "fp8":
        fmax = torch.finfo(torch.float8_e4m3fn).max
        scale = w.abs().amax(dim=1, keepdim=True).clamp(min=1e-12) / fmax
        return ((w / scale).to(torch.float8_e4m3fn).float() * scale).to(weight.dtype)
    raise SpecwiseError(f"unknown quantisation scheme {scheme!r}; known: {', '.join(SCHEMES)}")


@torch.no_grad()
def quantize_model(model: Any, scheme: str) -> int:
    """Quantise every decoder ``nn.Linear`` weight in place; returns how many were changed."""
    head = model.get_output_embeddings()
    count = 0
    for module in model.modules():
        if isinstance(module, torch.nn.Linear) and module is not head:
            module.weight.copy_(rtn(module.weight, scheme))
            count += 1
    return count
