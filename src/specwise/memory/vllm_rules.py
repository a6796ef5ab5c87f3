"""What vLLM's configuration refuses of a deployment before any memory is counted, in one place for every caller
(a scenario, ``plan-memory``, the Python API): each rule returns why, in one line, or None when vLLM takes it.
The caller puts its own name for the setting in front (a flag, a file's field, a keyword)."""

from __future__ import annotations

from specwise.engines.vllm_versions import VllmVersion, draft_model_engine


def batched_tokens_refusal(
    max_num_seqs: int, max_num_batched_tokens: int, seqs_name: str = "max_num_seqs"
) -> str | None:
    """Why vLLM refuses a ``max_num_batched_tokens`` below ``max_num_seqs`` (``seqs_name``: how the caller names
    that setting): its ``SchedulerConfig`` checks ``max_num_batched_tokens >= max_num_seqs`` at start-up
    (``vllm/config/scheduler.py``, ``_verify_args``). None: vLLM takes it."""
    if max_num_batched_tokens >= max_num_seqs:
        return None
    return (
        f"must be at least {seqs_name} ({max_num_seqs}): vLLM's SchedulerConfig refuses less (vllm/config/scheduler.py)"
    )


def draft_model_tp_refusal(version: VllmVersion | None, draft_tp: int, tp: int, fix: str) -> str | None:
    """Why vLLM ``version`` (None: the current one) refuses a separate draft model (not an EAGLE head or MTP
    layers) at ``draft_tp`` beside a target at ``tp``: V1 (0.15 on) runs it only at the target's tensor parallelism
    (``vllm/v1/spec_decode/draft_model.py``, ``_raise_if_draft_tp_mismatch``: the ranks would share one
    torch.compile cache); V0 (before 0.10) ran it at any (:func:`~specwise.engines.vllm_versions.draft_model_engine`).
    ``fix``: the setting that fixes it, as the caller writes it (``draft_tp = 4``). None: vLLM takes it."""
    if draft_model_engine(version) != "v1" or draft_tp == tp:
        return None
    return (
        f"vLLM V1 runs a draft model only at the target's tensor parallelism ({tp}): set {fix} or leave it out "
        "(vllm/v1/spec_decode/draft_model.py refuses a mismatch)"
    )
