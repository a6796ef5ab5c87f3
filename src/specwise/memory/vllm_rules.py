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


# Releases whose VllmConfig takes one token slot per sequence out of each step's budget beside a separate draft
# model (``_set_max_num_scheduled_tokens``: ``max_num_batched_tokens - max_num_new_slots_for_drafting *
# max_num_seqs``, where ``SpeculativeConfig.max_num_new_slots_for_drafting`` is 1 for a draft model, "since we do
# not slice the draft tokens"): read in the 0.17.0, 0.17.1, 0.18.0, 0.20.0, 0.22.0, 0.24.0 and 0.26.0 wheels
# (vllm/config/vllm.py); 0.15.0 and 0.16.0 have no such rule, and 0.28.0 schedules the whole budget
# (``max_num_scheduled_tokens = max_num_batched_tokens``). 0.27 was not read: taken as 0.26 (review s48a F4).
DRAFT_SLOTS_RESERVED = (VllmVersion(0, 17), VllmVersion(0, 28))


def scheduled_tokens(version: VllmVersion | None, method: str, max_num_batched_tokens: int, max_num_seqs: int) -> int:
    """The tokens vLLM ``version`` (None: the current one) schedules in a step of a ``method`` server: the budget,
    less one slot per sequence beside a separate draft model on :data:`DRAFT_SLOTS_RESERVED`'s releases."""
    lo, hi = DRAFT_SLOTS_RESERVED
    if method != "draft_model" or version is None or not lo <= version < hi:
        return max_num_batched_tokens
    return max_num_batched_tokens - max_num_seqs


def draft_slots_refusal(
    version: VllmVersion | None, method: str, max_num_batched_tokens: int, max_num_seqs: int
) -> str | None:
    """Why vLLM ``version`` cannot serve a draft model with this budget (:func:`scheduled_tokens` leaves no token to
    schedule: 0.20 on raise "max_num_scheduled_tokens is set to ... which does not allow any tokens to be
    scheduled"; 0.17 and 0.18 read the 0 as unset and schedule the whole budget, leaving the draft's slots no room
    -- review s48c F7). None: it can."""
    left = scheduled_tokens(version, method, max_num_batched_tokens, max_num_seqs)
    if left > 0:
        return None
    return (
        f"vLLM {version} keeps one token slot per sequence out of each step beside a draft model, so "
        f"max_num_batched_tokens {max_num_batched_tokens} - max_num_seqs {max_num_seqs} leaves {left} tokens to "
        "schedule (vllm/config/vllm.py, _set_max_num_scheduled_tokens): raise max_num_batched_tokens above "
        "max_num_seqs, or lower max_num_seqs"
    )
