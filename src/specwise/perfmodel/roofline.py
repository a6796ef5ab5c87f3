"""An analytic roofline step-time predictor for one model on ``tp`` GPUs.

``t = max(bytes / (bandwidth * eff_mem), flops / (peak * eff_compute)) + all-reduce + overhead``

* **bytes**: the weights each GPU reads once per pass (MoE: only the experts the batch's tokens
  route to; with T tokens choosing ``top_k`` of E experts a layer touches
  ``E * (1 - (1 - top_k/E)^T)`` experts in expectation), plus the KV cache read by attention
  (context + new tokens of every sequence, sliding-window layers capped at the window).
* **flops**: ``2 * active linear params`` per query token (Kaplan et al. 2020's ``2N``), the LM
  head for the logit rows only, and attention ``4 * heads * head_dim * q * context`` per layer.
* **all-reduce**: two per layer under tensor parallelism (after attention and after the MLP), a ring
  moving ``2 (tp-1)/tp * T * hidden * 2 B`` over the per-direction interconnect, plus a latency.
* **overhead**: a fixed per-pass cost (kernel launches with CUDA graphs, input preparation).

Decode at small batch is bandwidth-bound (weights dominate); verification of ``k+1`` tokens per
sequence turns compute-bound as the batch grows, which is where speculation stops paying; with
long contexts the KV reads dominate and extra query tokens ride along almost free.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from specwise.perfmodel.batch import BatchShape
from specwise.specs.gpu import GpuSpec
from specwise.specs.model import ModelSpec
from specwise.specs.quant import Quantization
from specwise.units import DTYPE_BYTES


@dataclass(frozen=True)
class Efficiency:
    """Achieved fractions of peak. Defaults: ~80% of HBM bandwidth for weight streaming and ~60% of
    dense tensor-core peak for serving-size GEMMs (llm-analysis separates ideal and realistic the same
    way); per-pass overhead 0.3 ms; all-reduce latency 10 us."""

    memory: float = 0.8
    compute: float = 0.6
    interconnect: float = 0.7
    pass_overhead_s: float = 3e-4
    allreduce_latency_s: float = 1e-5

    def __post_init__(self) -> None:
        for name in ("memory", "compute", "interconnect"):
            if not 0.0 < getattr(self, name) <= 1.0:
                raise ValueError(f"Efficiency.{name}: must be in (0, 1]")
        if self.pass_overhead_s < 0 or self.allreduce_latency_s < 0:
            raise ValueError("Efficiency: overheads must be >= 0")


class PassGeometry:
    """What one forward pass of ``model`` on ``tp`` GPUs moves and computes, per GPU: the weights it streams (MoE:
    the experts its tokens touch), the KV it reads, its linear and attention FLOPs, and its all-reduce traffic.
    Shared by every predictor that prices a pass from the hardware (the roofline here, the published-fit model in
    :mod:`specwise.perfmodel.v2`)."""

    def __init__(
        self,
        model: ModelSpec,
        gpu: GpuSpec,
        *,
        tp: int = 1,
        dtype: str = "bf16",
        quantization: Quantization | None = None,
        kv_dtype: str | None = None,
    ) -> None:
        self.model, self.gpu, self.tp = model, gpu, tp
        dtype_bytes = DTYPE_BYTES[dtype]
        self.act_bytes = dtype_bytes
        kv_bytes = DTYPE_BYTES[kv_dtype or dtype]
        p = model.params
        moe = model.moe
        dense_bytes, expert_bytes = self._bytes_streamed(model, dtype_bytes, quantization)
        self._dense_bytes = dense_bytes / tp
        self._expert_bytes_each = (expert_bytes / (moe.num_experts * moe.moe_layers) if moe else 0.0) / tp
        self._moe = moe
        # FLOPs per query token of linear layers without the LM head (active experts only).
        active_linear = p.attention + p.mlp + p.shared_experts + p.router + p.experts * p.expert_active_fraction
        self._flops_per_token = 2.0 * active_linear / tp
        self._flops_per_logit_row = 2.0 * _lm_head_params(model) / tp
        a = model.attention
        self._kv_bytes_per_token_layer = a.kv_elements_per_token_layer(tp) * kv_bytes
        windows: dict[int | None, int] = {}
        for w in a.layer_windows:
            windows[w] = windows.get(w, 0) + 1
        self._window_groups = tuple(windows.items())
        self._all_global = tuple(windows) == (None,)
        # Without sliding windows a pass depends on the batch only through its totals (perfmodel/predictor.py).
        self.totals_exact = self._all_global
        self._layers = self._window_groups[0][1] if self._all_global else 0
        heads_per_gpu = max(1, a.num_heads // tp)
        qk_dim = a.head_dim if a.kind == "gqa" else a.kv_lora_rank + a.qk_rope_head_dim
        self._attn_flops_per_pair_layer = 4.0 * heads_per_gpu * qk_dim
        uses_fp8 = (quantization or model.native_quantization).method == "fp8" and gpu.dense_fp8_flops_per_s
        self.peak_flops = float(gpu.dense_fp8_flops_per_s if uses_fp8 else gpu.dense_bf16_flops_per_s)  # type: ignore[arg-type]

    @staticmethod
    def _bytes_streamed(model: ModelSpec, dtype_bytes: float, quantization: Quantization | None) -> tuple[float, float]:
        """(bytes every pass streams, bytes of all routed experts), each part at its own bytes per weight.

        Streamed every pass: everything but the input embedding table (a gather of a few rows), the routed experts
        (priced per expert touched, :meth:`weight_bytes`) and a vision tower. A tied table *is* the LM head, which
        the logits GEMM reads in full (``tie_word_embeddings``); an EAGLE-1 head computes its logits with the
        target's LM head (vLLM ``EagleProposer`` shares ``lm_head`` with the target), which its checkpoint does not
        hold. Quantized linear layers (``scope == "linear"``: attention, MLP, shared experts; and the experts under
        either scope) take the scheme's bytes per weight, the rest the model dtype, as
        :func:`specwise.memory.weights.weight_bytes` counts them -- not an average over the two, which priced
        gpt-oss's bf16 attention and LM head at its MXFP4 experts' ~0.5 B. A GGUF file kept as stored has only
        its total size: its average bytes per parameter."""
        p = model.params
        dense = p.total - p.embedding - p.experts - p.vision
        if model.tie_word_embeddings:
            dense += p.embedding
        shared_head = _lm_head_params(model) if model.draft_head == "eagle" and p.lm_head == 0 else 0
        if quantization is None and model.file_weight_bytes is not None:
            per_param = model.file_weight_bytes / max(1, p.total)
            return (dense + shared_head) * per_param, p.experts * per_param
        q = quantization or model.native_quantization
        per_quantized = q.bytes_per_weight(dtype_bytes)
        dense_quantized = p.attention + p.mlp + p.shared_experts if q.is_quantized and q.scope == "linear" else 0
        dense_bytes = dense_quantized * per_quantized + (dense - dense_quantized + shared_head) * dtype_bytes
        return dense_bytes, p.experts * per_quantized

    def step_time_s(self, batch: BatchShape) -> float:
        """One pass's time: the subclass's ``_time`` law on this batch's tokens, logit rows and attention sums."""
        if batch.num_seqs == 0:
            return 0.0
        read, pairs = self.attention_sums(batch)
        return self._time(batch.batched_tokens, batch.logit_rows, read, pairs)

    def _time(self, tokens: int, logit_rows: int, read: float, pairs: float) -> float:
        raise NotImplementedError  # each predictor prices a pass its own way

    def attention_sums(self, batch: BatchShape) -> tuple[float, float]:
        """(KV tokens read summed over layers, query x context pairs summed over layers)."""
        q, ctx = batch.query_tokens, batch.context_tokens
        if self._all_global:  # no sliding windows: sums only
            layers = self._window_groups[0][1]
            q_sum = int(q.sum())
            return layers * float(int(ctx.sum()) + q_sum), layers * float(np.dot(q, ctx + (q + 1) // 2))
        seen = ctx + q
        mid = ctx + (q + 1) // 2  # causal: a query token of a chunk sees on average half the chunk
        read = pairs = 0.0
        for window, layers in self._window_groups:
            if window is None:
                read += layers * float(seen.sum())
                pairs += layers * float(np.dot(q, mid))
            else:
                read += layers * float(np.minimum(seen, window).sum())
                pairs += layers * float(np.dot(q, np.minimum(mid, window)))
        return read, pairs

    def weight_bytes(self, batched_tokens: int) -> float:
        weights = self._dense_bytes
        if self._moe is not None:
            e, k = self._moe.num_experts, self._moe.experts_per_token
            touched = e * (1.0 - (1.0 - k / e) ** batched_tokens)
            weights += self._expert_bytes_each * touched * self._moe.moe_layers
        return weights

    def kv_read_bytes(self, read_token_layers: float) -> float:
        return read_token_layers * self._kv_bytes_per_token_layer

    def linear_flops(self, batched_tokens: int, logit_rows: int) -> float:
        return self._flops_per_token * batched_tokens + self._flops_per_logit_row * logit_rows

    def attention_flops(self, pairs: float) -> float:
        return self._attn_flops_per_pair_layer * pairs

    def allreduce_ops_and_bytes(self, batched_tokens: int) -> tuple[int, float]:
        """(all-reduces per pass, bytes each moves per GPU): two per layer under TP, a ring of
        ``2 (tp-1)/tp * T * hidden`` activations."""
        if self.tp == 1:
            return 0, 0.0
        per = 2.0 * (self.tp - 1) / self.tp * batched_tokens * self.model.hidden_size * self.act_bytes
        return 2 * self.model.num_layers, per


class RooflinePredictor(PassGeometry):
    """Step time of ``model`` on ``tp`` x ``gpu`` (dtype and quantization as deployed)."""

    def __init__(
        self,
        model: ModelSpec,
        gpu: GpuSpec,
        *,
        tp: int = 1,
        dtype: str = "bf16",
        quantization: Quantization | None = None,
        kv_dtype: str | None = None,
        efficiency: Efficiency | None = None,
    ) -> None:
        super().__init__(model, gpu, tp=tp, dtype=dtype, quantization=quantization, kv_dtype=kv_dtype)
        self.eff = efficiency or Efficiency()
        # The products _time and _allreduce_for form, for step_time_totals (the same floats, formed once).
        self._memory_rate = self.gpu.memory_bandwidth_bytes_per_s * self.eff.memory
        self._compute_rate = self.peak_flops * self.eff.compute
        self._link_rate = self.gpu.interconnect_bytes_per_s * self.eff.interconnect
        self._ring_factor = 2.0 * (self.tp - 1) / self.tp
        self._ar_ops = 2 * self.model.num_layers

    def memory_bytes(self, batch: BatchShape) -> float:
        read, _ = self.attention_sums(batch)
        return self.weight_bytes(batch.batched_tokens) + self.kv_read_bytes(read)

    def _allreduce_for(self, batched_tokens: int) -> float:
        ops, per = self.allreduce_ops_and_bytes(batched_tokens)
        if ops == 0:
            return 0.0
        return ops * (per / self._link_rate + self.eff.allreduce_latency_s)

    def step_time_totals(
        self, num_seqs: int, batched_tokens: int, kv_tokens: int, pairs: int, logit_rows: int
    ) -> float:
        """:meth:`step_time_s` from the batch's totals (``totals_exact`` models only), bit for bit."""
        if num_seqs == 0:
            return 0.0
        layers = self._layers  # _time, inlined with its constants (this runs ~10^5 times per simulated run)
        tokens = batched_tokens
        weights = self._dense_bytes if self._moe is None else self.weight_bytes(tokens)
        mem = weights + layers * float(kv_tokens) * self._kv_bytes_per_token_layer
        flops = self._flops_per_token * tokens + self._flops_per_logit_row * logit_rows
        flops = flops + self._attn_flops_per_pair_layer * (layers * float(pairs))
        t_mem, t_compute = mem / self._memory_rate, flops / self._compute_rate
        allreduce = 0.0
        if self.tp != 1:
            per = self._ring_factor * tokens * self.model.hidden_size * self.act_bytes
            allreduce = self._ar_ops * (per / self._link_rate + self.eff.allreduce_latency_s)
        return max(t_mem, t_compute) + allreduce + self.eff.pass_overhead_s

    def _time(self, tokens: int, logit_rows: int, read: float, pairs: float) -> float:
        mem = self.weight_bytes(tokens) + self.kv_read_bytes(read)
        flops = self.linear_flops(tokens, logit_rows) + self.attention_flops(pairs)
        t_mem = mem / (self.gpu.memory_bandwidth_bytes_per_s * self.eff.memory)
        t_compute = flops / (self.peak_flops * self.eff.compute)
        return max(t_mem, t_compute) + self._allreduce_for(tokens) + self.eff.pass_overhead_s


def _lm_head_params(model: ModelSpec) -> int:
    """Parameters of the LM head a pass of ``model`` multiplies each logit row by: its own, its tied embedding
    table, or -- for an EAGLE-1 head, which keeps none -- the target's (``vocab x hidden``; vLLM's EAGLE proposer
    computes every draft step's logits with the target's ``lm_head``)."""
    p = model.params
    if p.lm_head:
        return p.lm_head
    if model.tie_word_embeddings:
        return p.embedding
    if model.draft_head == "eagle":
        return model.vocab_size * model.hidden_size
    return 0
