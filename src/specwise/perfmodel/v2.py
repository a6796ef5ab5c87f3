"""Step-time model v2: an additive roofline with per-pass floors, its free coefficients fitted to published vLLM
measurements (``scripts/fit_published.py``; ``specwise validate`` shows fit and held-back sources apart).

Per forward pass of a model on ``tp`` GPUs, per GPU::

    t = W(T) / (BW * eff_weights)                     weights streamed (MoE: the experts T tokens touch)
      + KV / (BW * eff_kv)                            KV cache read by attention
      + F_lin(T, rows) / (peak * eff_gemm)            2 N_active FLOPs per batched token, LM head per logit row
      + F_attn / (peak * eff_gemm)                    4 heads head_dim FLOPs per query x context pair
      + n_ar * (allreduce_latency + bytes / (link * eff_link))   two all-reduces per layer under TP
      + pass_floor + per_layer * layers               kernel launches and input preparation

*Additive, not max()*: SpecDecode-Bench's law fitted to vLLM on an H100 (Liu et al. 2026, "Speculative Decoding:
Performance or Illusion?", arXiv 2601.11580; ``simulator/predictor.py``, Llama-3.1-8B) is
``t = 3.93e-8 KV + 2.10e-5 batched + 5.89 ms``: the weight read plus a cost per batched token from the first
token on. A GEMM at small M does not hide its FLOPs under the weight stream, so a k = 4 verification costs
~1.15x a plain step at batch 16 and ~1.4x at batch 64. Under a max() roofline the extra verification tokens are
free until ~220 batched tokens (a 70B on 4 x H100) and speculation cannot lose under load.

*Pass floor*: small models are launch- and CPU-bound. SpecDecode-Bench measured a draft pass at ~12.5% of a 70B
target pass (TP 4) and Qwen3-0.6B at ~37.5% of Qwen3-8B's, far above their share of bytes and FLOPs; a floor per
pass plus one per layer charges a 28-layer 0.6B draft, run k times per step, what it really costs.

The efficiencies and floors are :class:`GpuEfficiency`; the per-step engine costs (scheduler, sampler, rejection
sampler) are not a pass's and live in :class:`specwise.perfmodel.profiles.EngineOverhead`.

Where each term comes from (the geometry is :class:`specwise.perfmodel.roofline.PassGeometry`'s):

- *weights*: a decode pass reads every weight once per step, whatever the batch: the memory-bound side of the
  roofline (Williams, Waterman and Patterson, "Roofline", CACM 52(4), 2009), as Pope et al. account LLM decoding
  ("Efficiently Scaling Transformer Inference", arXiv 2211.05102, section 2). For a mixture of experts, only the
  experts the batch's T tokens are routed to are read: ``E (1 - (1 - k/E)^T)`` of E experts with k per token, the
  expected number of distinct experts under uniform, independent routing (an assumption: a skewed router touches
  fewer);
- *KV*: attention reads each running sequence's cached keys and values, ``2 x layers x kv_heads x head_dim`` elements
  per token (PagedAttention, Kwon et al., SOSP 2023, arXiv 2309.06180; MLA's compressed latent for DeepSeek-style
  attention);
- *GEMM*: ``2 N`` FLOPs per batched token for the N active non-embedding parameters (Kaplan et al., "Scaling Laws
  for Neural Language Models", arXiv 2001.08361, section 2.1), and the LM head's ``2 x hidden x vocab`` only for the
  rows whose logits are computed: vLLM computes logits at the sampled positions only (``compute_logits`` on the
  ``logits_indices``, vllm/v1/worker/gpu_model_runner.py), one per sequence without speculation, ``k + 1`` when
  verifying k draft tokens;
- *attention*: ``4 x heads x head_dim`` FLOPs per query token and context token per layer, QK^T and PV at 2 FLOPs
  per multiply-add each (Kaplan et al., Table 1: ``2 n_layer n_ctx d_attn`` per token, forward);
- *all-reduce*: tensor parallelism all-reduces the activations twice per layer in the forward pass, after the
  attention and after the MLP (Shoeybi et al., "Megatron-LM", arXiv 1909.08053, section 3); each costs a latency
  plus its bytes over the link (the alpha-beta model, Hockney, Parallel Computing 20(3), 1994), a ring moving
  ``2 (tp - 1) / tp`` of the activations per GPU (Thakur, Rabenseifner and Gropp, "Optimization of Collective
  Communication Operations in MPICH", IJHPCA 19(1), 2005);
- *floor*: the SpecDecode-Bench draft-pass measurements above; the per-layer part charges a deep, thin model its
  kernel launches.
"""

from __future__ import annotations

from dataclasses import dataclass

from specwise.errors import SpecError
from specwise.perfmodel.batch import BatchShape
from specwise.perfmodel.roofline import PassGeometry
from specwise.specs.gpu import GpuSpec
from specwise.specs.model import ModelSpec
from specwise.specs.quant import Quantization


@dataclass(frozen=True)
class GpuEfficiency:
    """Achieved fractions of datasheet peaks, and the per-pass floors (fitted; see the module docstring)."""

    weights: float = 0.85
    kv: float = 0.7
    gemm: float = 0.7
    link: float = 0.7
    allreduce_latency_s: float = 1.0e-5
    pass_floor_s: float = 2.0e-4
    per_layer_s: float = 1.0e-5

    def __post_init__(self) -> None:
        for name in ("weights", "kv", "gemm", "link"):
            if not 0.0 < getattr(self, name) <= 1.5:
                raise SpecError(f"GpuEfficiency.{name}: must be in (0, 1.5], got {getattr(self, name)}")
        for name in ("allreduce_latency_s", "pass_floor_s", "per_layer_s"):
            if not 0.0 <= getattr(self, name) < 1.0:
                raise SpecError(f"GpuEfficiency.{name}: must be in [0, 1) s, got {getattr(self, name)}")


class StepModelV2(PassGeometry):
    """Seconds of one forward pass of ``model`` on ``tp`` x ``gpu`` under :class:`GpuEfficiency`."""

    def __init__(
        self,
        model: ModelSpec,
        gpu: GpuSpec,
        efficiency: GpuEfficiency,
        *,
        tp: int = 1,
        dtype: str = "bf16",
        quantization: Quantization | None = None,
        kv_dtype: str | None = None,
    ) -> None:
        super().__init__(model, gpu, tp=tp, dtype=dtype, quantization=quantization, kv_dtype=kv_dtype)
        self.eff = efficiency
        bw = gpu.memory_bandwidth_bytes_per_s
        self._s_per_weight_byte = 1.0 / (bw * efficiency.weights)
        self._s_per_kv_byte = 1.0 / (bw * efficiency.kv)
        self._s_per_flop = 1.0 / (self.peak_flops * efficiency.gemm)
        self._s_per_link_byte = 1.0 / (gpu.interconnect_bytes_per_s * efficiency.link)
        self._floor_s = efficiency.pass_floor_s + efficiency.per_layer_s * model.num_layers
        # Hot-path constants (step_time_s runs ~10^5 times per simulated minute of light traffic).
        self._s_per_kv_token_layer = self.kv_read_bytes(1.0) * self._s_per_kv_byte
        self._s_per_token = self._flops_per_token * self._s_per_flop
        self._s_per_logit_row = self._flops_per_logit_row * self._s_per_flop
        self._s_per_pair = self._attn_flops_per_pair_layer * self._s_per_flop
        self._dense_weights_s = self._dense_bytes * self._s_per_weight_byte
        ops, per_token = self.allreduce_ops_and_bytes(1)
        self._ar_ops, self._ar_s_per_token = ops, per_token * self._s_per_link_byte

    def terms_s(self, batch: BatchShape) -> dict[str, float]:
        """Each term of the pass, in seconds (what the step is made of; for tests and explanations)."""
        read, pairs = self.attention_sums(batch)
        tokens = batch.batched_tokens
        ops, per = self.allreduce_ops_and_bytes(tokens)
        return {
            "weights": self.weight_bytes(tokens) * self._s_per_weight_byte,
            "kv": self.kv_read_bytes(read) * self._s_per_kv_byte,
            "gemm": self.linear_flops(tokens, batch.logit_rows) * self._s_per_flop,
            "attention": self.attention_flops(pairs) * self._s_per_flop,
            "allreduce": ops * (self.eff.allreduce_latency_s + per * self._s_per_link_byte),
            "floor": self._floor_s,
        }

    def step_time_totals(
        self, num_seqs: int, batched_tokens: int, kv_tokens: int, pairs: int, logit_rows: int
    ) -> float:
        """:meth:`step_time_s` from the batch's totals (``totals_exact`` models only), bit for bit."""
        if num_seqs == 0:
            return 0.0
        layers = self._layers  # _time, inlined (this runs ~10^5 times per simulated run)
        read, pairs_f = layers * float(kv_tokens), layers * float(pairs)
        if self._moe is None:
            weights = self._dense_weights_s
        else:
            weights = self.weight_bytes(batched_tokens) * self._s_per_weight_byte
        t = weights + read * self._s_per_kv_token_layer + pairs_f * self._s_per_pair + self._floor_s
        t += batched_tokens * self._s_per_token + logit_rows * self._s_per_logit_row
        if self._ar_ops:
            t += self._ar_ops * (self.eff.allreduce_latency_s + batched_tokens * self._ar_s_per_token)
        return t

    def _time(self, tokens: int, logit_rows: int, read: float, pairs: float) -> float:
        weights = self._dense_weights_s if self._moe is None else self.weight_bytes(tokens) * self._s_per_weight_byte
        t = weights + read * self._s_per_kv_token_layer + pairs * self._s_per_pair + self._floor_s
        t += tokens * self._s_per_token + logit_rows * self._s_per_logit_row
        if self._ar_ops:
            t += self._ar_ops * (self.eff.allreduce_latency_s + tokens * self._ar_s_per_token)
        return t
