"""Weight quantization schemes and their storage cost.

Bits per weight include the scale (and zero-point) overhead of the scheme:

* ``int4``  -- GPTQ/AWQ style, group size 128: 4-bit weights, one fp16 scale and one 4-bit zero
  point per group of 128 -> 4 + 16/128 + 4/128 = 4.156 bits. (GPTQ/AWQ kernels in vLLM:
  ``vllm/model_executor/layers/quantization/gptq_marlin.py``, ``awq_marlin.py``.)
* ``int8``  -- W8A8 per-channel: 8 bits plus one fp32 scale per output channel (negligible).
* ``fp8``   -- FP8 e4m3 with per-tensor/per-block scales; DeepSeek-V3's 128x128 fp32 block scales
  add 32/16384 bits per weight.
* ``mxfp4`` -- OCP microscaling FP4: 4-bit values plus one 8-bit shared exponent per 32 values
  -> 4.25 bits (gpt-oss experts, ``quantization_config.quant_method == "mxfp4"``).

Quantization applies to the weights of linear layers (attention projections, MLPs and experts);
embeddings, the LM head and norms stay in the model dtype, as vLLM loads them. A scheme with
``scope == "experts"`` quantizes only the routed-expert weights (gpt-oss's native MXFP4).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from specwise.errors import SpecError

Scope = Literal["linear", "experts"]

_BITS_PER_WEIGHT: dict[str, float] = {
    "none": 0.0,  # placeholder: "none" means the model dtype
    "fp8": 8.0 + 32.0 / (128 * 128),
    "int8": 8.0,
    "int4": 4.0 + 16.0 / 128 + 4.0 / 128,
    "mxfp4": 4.0 + 8.0 / 32,
}

QUANTIZATION_CHOICES = ("none", "fp8", "int8", "int4", "mxfp4")
QUANT_CHOICES = ("auto", *QUANTIZATION_CHOICES)
"""A weight quantization setting (``--quantization``, ``--draft-quantization``): auto is as the checkpoint stores it."""


@dataclass(frozen=True)
class Quantization:
    """A weight quantization scheme. ``method == "none"`` keeps weights in the model dtype."""

    method: str = "none"
    scope: Scope = "linear"

    def __post_init__(self) -> None:
        if self.method not in _BITS_PER_WEIGHT:
            raise SpecError(
                f"quantization: unknown method {self.method!r}; expected one of {', '.join(QUANTIZATION_CHOICES)}"
            )
        if self.scope not in ("linear", "experts"):
            raise SpecError(f"quantization.scope: expected 'linear' or 'experts', got {self.scope!r}")

    @property
    def is_quantized(self) -> bool:
        return self.method != "none"

    def bytes_per_weight(self, model_dtype_bytes: float) -> float:
        """Storage bytes per quantized weight (the model dtype when not quantized)."""
        if not self.is_quantized:
            return model_dtype_bytes
        return _BITS_PER_WEIGHT[self.method] / 8.0

    def label(self) -> str:
        if not self.is_quantized:
            return "none"
        return self.method if self.scope == "linear" else f"{self.method} (experts only)"


NO_QUANTIZATION = Quantization()


def quantization_setting(choice: str) -> Quantization | None:
    """A deployment's weight quantization setting (:data:`QUANT_CHOICES`) as the step-time models and the memory
    plan take it: ``auto`` (as the checkpoint stores the weights) is None."""
    return None if choice == "auto" else Quantization(choice)
