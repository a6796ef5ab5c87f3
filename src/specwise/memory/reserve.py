"""Memory vLLM keeps out of the KV cache besides weights: activations, CUDA graphs, non-torch.

vLLM V1 sizes the KV cache as ``total * gpu_memory_utilization - weights - peak activations -
non-torch memory - CUDA graph memory`` (``vllm/v1/worker/gpu_worker.py``,
``determine_available_memory``; ``vllm/utils/mem_utils.py``, ``memory_profiling``). It measures
those by a profiling forward pass; specwise estimates them:

* **Peak activations** of one forward pass over ``max_num_batched_tokens`` tokens: the MLP's
  gate/up output and activation (``3 * intermediate / tp`` values per token, MoE: the routed
  experts' ``top_k * expert_intermediate``), four hidden-size buffers (residual, norm output,
  attention output, MLP output), all in the activation dtype; plus fp32 logits and probabilities
  for the sampled rows (``max_num_seqs * (k + 1)`` rows with speculation).
* **CUDA graphs**: 0.5 GiB, and 0.25 GiB more for the draft's graphs -- the range vLLM logs as
  ``Graph capturing finished in N secs, took 0.3-1.0 GiB`` for the default capture sizes.
* **Non-torch memory** (cuBLAS workspaces, NCCL and custom all-reduce buffers): 0.25 GiB, and
  0.5 GiB more with tensor parallelism.

These are estimates; ``--reserve-gib`` replaces their sum with a figure read from vLLM's log.
"""

from __future__ import annotations

from dataclasses import dataclass

from specwise.specs.model import ModelSpec
from specwise.units import GIB

CUDA_GRAPH_BYTES = int(0.5 * GIB)
DRAFT_CUDA_GRAPH_BYTES = int(0.25 * GIB)
NON_TORCH_BYTES = int(0.25 * GIB)
TP_COMM_BUFFER_BYTES = int(0.5 * GIB)
_HIDDEN_BUFFERS = 4
_LOGIT_BYTES = 4 * 2  # fp32 logits + fp32 probabilities


@dataclass(frozen=True)
class ReserveBreakdown:
    activation_bytes: int
    cuda_graph_bytes: int
    non_torch_bytes: int
    overridden: bool = False

    @property
    def total_bytes(self) -> int:
        return self.activation_bytes + self.cuda_graph_bytes + self.non_torch_bytes


def _mlp_width(spec: ModelSpec) -> int:
    if spec.moe is None:
        return spec.intermediate_size
    routed = spec.moe.experts_per_token * spec.moe.expert_intermediate_size
    shared = spec.moe.num_shared_experts * spec.moe.expert_intermediate_size
    dense = spec.intermediate_size if spec.moe.moe_layers < spec.num_layers else 0
    return max(routed + shared, dense)


def activation_bytes(
    spec: ModelSpec, *, tp: int, act_dtype_bytes: float, max_num_batched_tokens: int, logit_rows: int
) -> int:
    per_token = (3 * _mlp_width(spec) / tp + _HIDDEN_BUFFERS * spec.hidden_size) * act_dtype_bytes
    logits = logit_rows * spec.vocab_size * _LOGIT_BYTES
    return int(max_num_batched_tokens * per_token + logits)


def estimate_reserve(
    target: ModelSpec,
    draft: ModelSpec | None,
    *,
    tp: int,
    draft_tp: int,
    act_dtype_bytes: float,
    max_num_batched_tokens: int,
    max_num_seqs: int,
    num_speculative_tokens: int,
) -> ReserveBreakdown:
    rows = max_num_seqs * (1 + (num_speculative_tokens if draft is not None else 0))
    act = activation_bytes(
        target, tp=tp, act_dtype_bytes=act_dtype_bytes, max_num_batched_tokens=max_num_batched_tokens, logit_rows=rows
    )
    if draft is not None:
        # The draft's pass runs after the target's; the peak is the larger of the two.
        act = max(
            act,
            activation_bytes(
                draft,
                tp=draft_tp,
                act_dtype_bytes=act_dtype_bytes,
                max_num_batched_tokens=max_num_batched_tokens,
                logit_rows=rows,
            ),
        )
    graphs = CUDA_GRAPH_BYTES + (DRAFT_CUDA_GRAPH_BYTES if draft is not None else 0)
    non_torch = NON_TORCH_BYTES + (TP_COMM_BUFFER_BYTES if tp > 1 else 0)
    return ReserveBreakdown(act, graphs, non_torch)
