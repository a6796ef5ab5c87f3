"""One engine step's plan, vLLM V1-style (``vllm/v1/core/sched/scheduler.py`` semantics, simplified):

1. decoding requests each feed their verification tokens (``1 + k`` for a chain, the full k however few tokens a
   request still owes: vLLM drafts ``num_speculative_tokens`` for every request and cuts what passes ``max_tokens``
   after verification);
2. the rest of the ``max_num_batched_tokens`` budget goes to prefill chunks: running requests still in prefill
   first, then waiting requests in arrival order while ``max_num_seqs`` allows;
3. the KV blocks for all of it must fit ``kv_capacity_tokens``; when they do not, the most recently admitted
   request is preempted (recompute: its KV is freed and it re-prefills prompt + output so far).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from specwise.errors import SpecError
from specwise.perfmodel.profiles import LEGACY_OVERHEAD, EngineOverhead
from specwise.sim.drafting import DraftShape
from specwise.sim.state import SimState
from specwise.traffic import IntArray

# The largest batch limits a scenario or calibrate accepts: no server runs a million sequences in one step, and a
# typo costs the simulation dearly (calibrate replaying with max_num_seqs 10**8 took ~1 min and ~0.9 GB; 10**20 ran
# out of memory).
MAX_NUM_SEQS_LIMIT = 1_000_000
MAX_NUM_BATCHED_TOKENS_LIMIT = 2**31


@dataclass(frozen=True)
class EngineConfig:
    kv_capacity_tokens: int
    max_num_seqs: int = 256
    max_num_batched_tokens: int = 8192
    block_size: int = 16
    overhead: EngineOverhead = LEGACY_OVERHEAD  # the engine's own per-step costs (perfmodel/profiles.py)
    chunked_prefill: bool = True  # vLLM V0 with speculation: False (a step prefills or decodes, prompts first)
    batch_expansion_scorer: bool = False  # vLLM V0: verification scored as k + 1 sequences (sim/stepcost.py)

    @property
    def step_overhead_s(self) -> float:
        return self.overhead.base_s

    def __post_init__(self) -> None:
        for name in ("kv_capacity_tokens", "max_num_seqs", "max_num_batched_tokens", "block_size"):
            if getattr(self, name) < 1:
                raise SpecError(f"engine.{name}: must be >= 1, got {getattr(self, name)}")


@dataclass
class StepPlan:
    """What one step runs: decoding sequences with their query tokens and draft caps, and prefill chunks."""

    decoding: IntArray
    q_decode: IntArray
    k_each: IntArray
    chunk_ids: list[int]
    chunk_len: list[int]

    @property
    def empty(self) -> bool:
        return self.decoding.size == 0 and not self.chunk_ids


def ceil_blocks(tokens: int, block: int) -> int:
    return -(-tokens // block)


def _blocks(tokens: IntArray, block: int) -> int:
    return int((-(-tokens // block)).sum()) if tokens.size else 0


class Scheduler:
    def __init__(self, engine: EngineConfig, shape: DraftShape) -> None:
        self.engine, self.shape = engine, shape
        self.block = engine.block_size
        self.capacity_blocks = engine.kv_capacity_tokens // engine.block_size

    def plan(
        self, st: SimState, decoding: IntArray, prefilling: list[int], k: int, proposes: IntArray | None = None
    ) -> StepPlan:
        """``decoding``: the running requests past their prefill; ``prefilling``: the others, in running order."""
        if not self.engine.chunked_prefill and st.waiting:
            plan = self._prefill_only(st, decoding)
            if not plan.empty:
                return plan
        budget = self.engine.max_num_batched_tokens
        # the full k for every decoding request: vLLM's scheduler (vllm/v1/core/sched/scheduler.py, schedule()) caps a
        # request's new tokens by the token budget and max_model_len only, never by max_tokens; the tokens verified
        # past max_tokens are cut afterwards (check_stop in update_from_output), which emit() does here
        k_each = np.full(decoding.size, k, dtype=np.int64)
        if proposes is not None:
            k_each = k_each * proposes
        q_decode = self.shape.query_tokens(k_each)
        budget -= int(q_decode.sum())
        chunk_ids: list[int] = []
        chunk_len: list[int] = []
        if self.engine.chunked_prefill:
            for r in prefilling:
                if budget <= 0:
                    break
                c = min(st.prefill_len.item(r) - st.computed.item(r), budget)
                chunk_ids.append(r)
                chunk_len.append(c)
                budget -= c
        plan = StepPlan(decoding, q_decode, k_each, chunk_ids, chunk_len)
        kv_used = self._kv_blocks(st, plan, prefilling)
        if kv_used > self.capacity_blocks:
            kv_used, budget = self._preempt(st, plan, kv_used, budget)
        if self.engine.chunked_prefill:
            self._admit(st, plan, kv_used, budget)
        return plan

    def _prefill_only(self, st: SimState, decoding: IntArray) -> StepPlan:
        """Without chunked prefill (vLLM V0 with speculation): whole prompts of waiting requests, no decoding, as
        many as the token budget (at least one), ``max_num_seqs`` and the KV cache allow."""
        empty = np.zeros(0, dtype=np.int64)
        plan = StepPlan(empty, empty, empty, [], [])
        kv_used = _blocks(st.computed[decoding], self.block)
        budget = max(self.engine.max_num_batched_tokens, int(st.prefill_len[st.waiting[0]]))
        while st.waiting and len(st.running) < self.engine.max_num_seqs:
            r = st.waiting[0]
            need = ceil_blocks(int(st.prefill_len[r]) + 1, self.block)
            if int(st.prefill_len[r]) > budget or kv_used + need > self.capacity_blocks:
                break
            st.waiting.popleft()
            st.running.append(r)
            plan.chunk_ids.append(r)
            plan.chunk_len.append(int(st.prefill_len[r]))
            budget -= int(st.prefill_len[r])
            kv_used += need
        return plan

    def _kv_blocks(self, st: SimState, plan: StepPlan, prefilling: list[int]) -> int:
        block = self.block
        used = _blocks(st.computed[plan.decoding] + plan.q_decode, block)
        used += sum(
            ceil_blocks(st.computed.item(r) + c, block) for r, c in zip(plan.chunk_ids, plan.chunk_len, strict=True)
        )
        others = prefilling[len(plan.chunk_ids) :]  # chunks go to the prefilling requests in order
        return used + sum(ceil_blocks(st.computed.item(r), block) for r in others)

    def _preempt(self, st: SimState, plan: StepPlan, kv_used: int, budget: int) -> tuple[int, int]:
        """Preempt the newest requests while the step does not fit the KV cache (vLLM's recompute)."""
        while kv_used > self.capacity_blocks and len(st.running) > 1:
            victim = st.running.pop()
            kv_used -= ceil_blocks(int(st.computed[victim]) + _query_of(victim, plan), self.block)
            if victim in plan.chunk_ids:
                i = plan.chunk_ids.index(victim)
                budget += plan.chunk_len.pop(i)
                plan.chunk_ids.pop(i)
            keep = plan.decoding != victim
            if not keep.all():
                budget += int(plan.q_decode[~keep].sum())
                plan.decoding, plan.q_decode, plan.k_each = plan.decoding[keep], plan.q_decode[keep], plan.k_each[keep]
            st.prefill_len[victim] = st.prompt[victim] + st.generated[victim]
            st.computed[victim] = 0
            st.preempt[victim] += 1
            st.waiting.appendleft(victim)
        return kv_used, budget

    def _admit(self, st: SimState, plan: StepPlan, kv_used: int, budget: int) -> None:
        """Waiting requests join while the token budget, ``max_num_seqs`` and the KV cache allow."""
        block = self.block
        while st.waiting and budget > 0 and len(st.running) < self.engine.max_num_seqs:
            r = st.waiting[0]
            c = int(min(st.prefill_len[r], budget))
            need = ceil_blocks(c, block)
            if kv_used + need > self.capacity_blocks or (
                kv_used + ceil_blocks(int(st.prefill_len[r]) + 1, block) > self.capacity_blocks
            ):
                break
            st.waiting.popleft()
            st.running.append(r)
            plan.chunk_ids.append(r)
            plan.chunk_len.append(c)
            budget -= c
            kv_used += need


def _query_of(r: int, plan: StepPlan) -> int:
    hit = np.nonzero(plan.decoding == r)[0]
    if hit.size:
        return int(plan.q_decode[hit[0]])
    if r in plan.chunk_ids:
        return plan.chunk_len[plan.chunk_ids.index(r)]
    return 0
