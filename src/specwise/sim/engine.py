"""The serving engine loop: vLLM V1-style continuous batching with chunked prefill and speculation.

Each engine step (``vllm/v1/core/sched/scheduler.py`` semantics, simplified):

1. Running requests that finished prefill decode: each feeds ``1 + k`` tokens (the last token and
   ``k`` draft tokens to verify; k from the batch-size schedule, capped by the tokens still owed).
2. The rest of the ``max_num_batched_tokens`` budget goes to prefill chunks: first running requests
   still in prefill, then waiting requests in arrival order while ``max_num_seqs`` allows.
3. KV blocks for all of it must fit ``kv_capacity_tokens``; when they do not, the most recently
   admitted request is preempted (recompute: its KV is freed and it re-prefills prompt + output).
4. The step takes: target forward pass over all of it + draft proposal (for the decode requests)
   + the draft's prefill of the chunks + rejection sampling + a fixed per-step overhead.
5. Each decode request accepts ``n ~ acceptance(class)`` draft tokens and emits ``n + 1``.

Arrivals and step ends are the two event kinds; the loop jumps idle time to the next arrival.
Everything random comes from the ``rng`` passed in, so a seed fixes the whole trace.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from specwise.errors import SpecError
from specwise.perfmodel.batch import BatchShape
from specwise.perfmodel.drafting import DraftCost
from specwise.perfmodel.predictor import StepTimePredictor
from specwise.sim.distributions import FloatArray, IntArray
from specwise.sim.workload import RequestTable, WorkloadClass

STEP_OVERHEAD_S = 1.207e-3  # SpecDecode-Bench's fitted per-step engine overhead (shared/reference)
REJECTION_SAMPLING_FRACTION = 0.015  # "< 1.7%" of runtime (SpecDecode-Bench)


@dataclass(frozen=True)
class EngineConfig:
    kv_capacity_tokens: int
    max_num_seqs: int = 256
    max_num_batched_tokens: int = 8192
    block_size: int = 16
    step_overhead_s: float = STEP_OVERHEAD_S

    def __post_init__(self) -> None:
        for name in ("kv_capacity_tokens", "max_num_seqs", "max_num_batched_tokens", "block_size"):
            if getattr(self, name) < 1:
                raise SpecError(f"engine.{name}: must be >= 1, got {getattr(self, name)}")


@dataclass(frozen=True)
class SpecConfig:
    """Speculation for a run: ``k`` tokens, or a ``schedule`` of (first_batch, last_batch, k)."""

    k: int
    draft_cost: DraftCost
    schedule: tuple[tuple[int, int, int], ...] = ()

    def __post_init__(self) -> None:
        if self.k < 0:
            raise SpecError(f"k: must be >= 0, got {self.k}")
        for start, end, k in self.schedule:
            if start < 1 or end < start or k < 0:
                raise SpecError(f"k schedule: bad entry [{start}, {end}, {k}]")

    def k_for_batch(self, batch: int) -> int:
        for start, end, k in self.schedule:
            if start <= batch <= end:
                return k
        return self.k if not self.schedule else 0


@dataclass
class SimResult:
    """Per-request outcomes plus token-normalised inter-token latency samples."""

    requests: RequestTable
    first_token_s: FloatArray
    finish_s: FloatArray
    preemptions: IntArray
    itl_s: FloatArray
    itl_weight: IntArray
    itl_class: IntArray
    steps: int
    drafts: int
    draft_tokens: int
    accepted_tokens: int
    accepted_per_position: IntArray
    end_s: float
    busy_s: float = field(default=0.0)


def _conditional_matrix(classes: Sequence[WorkloadClass], max_k: int) -> FloatArray:
    width = max(1, max_k)
    return np.array([[c.acceptance.conditional_at(i) for i in range(1, width + 1)] for c in classes])


def simulate(
    requests: RequestTable,
    classes: Sequence[WorkloadClass],
    engine: EngineConfig,
    target: StepTimePredictor,
    spec: SpecConfig | None,
    rng: np.random.Generator,
) -> SimResult:
    n = requests.size
    max_k = spec.k if spec else 0
    if spec:
        max_k = max([spec.k] + [k for _, _, k in spec.schedule])
    cond = _conditional_matrix(classes, max_k)
    arrival, prompt, out_len, cls = (
        requests.arrival_s,
        requests.prompt_tokens,
        requests.output_tokens,
        requests.class_index,
    )
    too_long = np.nonzero(prompt + out_len > engine.kv_capacity_tokens)[0]
    if too_long.size:
        raise SpecError(
            f"request {int(too_long[0])} needs {int(prompt[too_long[0]] + out_len[too_long[0]])} KV tokens but the "
            f"cache holds {engine.kv_capacity_tokens}; shorten the workload's lengths"
        )
    prefill_len = prompt.copy()  # grows to prompt + generated on preemption (recompute)
    computed = np.zeros(n, dtype=np.int64)  # tokens whose KV is cached
    generated = np.zeros(n, dtype=np.int64)
    last_q = np.ones(n, dtype=np.int64)  # tokens the draft must catch up on
    first_token = np.full(n, np.nan)
    finish = np.full(n, np.nan)
    last_emit = np.zeros(n)
    preempt = np.zeros(n, dtype=np.int64)
    itl_s: list[FloatArray] = []
    itl_w: list[IntArray] = []
    itl_c: list[IntArray] = []
    per_pos = np.zeros(max(1, max_k), dtype=np.int64)
    drafts = draft_tokens = accepted_total = steps = 0
    running: list[int] = []
    waiting: deque[int] = deque()
    next_arrival = 0
    now = busy = last_step_s = 0.0
    done = 0
    block = engine.block_size

    while done < n:
        while next_arrival < n and arrival[next_arrival] <= now:
            waiting.append(next_arrival)
            next_arrival += 1
        if not running and not waiting:
            now = float(arrival[next_arrival])
            continue

        run = np.array(running, dtype=np.int64)
        decoding = run[computed[run] >= prefill_len[run]] if run.size else run
        k = spec.k_for_batch(decoding.size) if spec else 0
        horizon = float(arrival[next_arrival]) if next_arrival < n else np.inf
        if not waiting and decoding.size == run.size and now + last_step_s < horizon:
            ff = _fast_forward(
                decoding,
                k,
                horizon,
                now,
                out_len,
                generated,
                computed,
                last_q,
                last_emit,
                cls,
                cond,
                target,
                spec,
                engine,
                rng,
            )
            if ff is not None:
                now, busy = now + ff.elapsed_s, busy + ff.elapsed_s
                steps += ff.steps
                drafts += ff.drafts
                draft_tokens += ff.draft_tokens
                accepted_total += ff.accepted
                per_pos[:k] += ff.per_position
                itl_s.append(ff.itl_s)
                itl_w.append(ff.itl_w)
                itl_c.append(ff.itl_c)
                last_step_s = ff.last_step_s
                continue
        budget = engine.max_num_batched_tokens
        # Decode requests: 1 + k tokens each, k capped by what is still owed.
        remaining = out_len[decoding] - generated[decoding]
        k_each = np.minimum(k, np.maximum(remaining - 1, 0))
        q_decode = 1 + k_each
        budget -= int(q_decode.sum())
        # Prefill: running requests mid-prefill, then admissions.
        chunk_ids: list[int] = []
        chunk_len: list[int] = []
        for r in running:
            if computed[r] < prefill_len[r] and budget > 0:
                c = int(min(prefill_len[r] - computed[r], budget))
                chunk_ids.append(r)
                chunk_len.append(c)
                budget -= c
        kv_used = _blocks(computed[decoding] + q_decode, block)
        kv_used += sum(_ceil(int(computed[r]) + c, block) for r, c in zip(chunk_ids, chunk_len, strict=True))
        others = [r for r in running if computed[r] < prefill_len[r] and r not in chunk_ids]
        kv_used += sum(_ceil(int(computed[r]), block) for r in others)
        capacity_blocks = engine.kv_capacity_tokens // block
        # Preempt newest requests while the step does not fit the KV cache.
        while kv_used > capacity_blocks and len(running) > 1:
            victim = running.pop()
            kv_used -= _ceil(int(computed[victim]) + _q_of(victim, decoding, q_decode, chunk_ids, chunk_len), block)
            if victim in chunk_ids:
                i = chunk_ids.index(victim)
                budget += chunk_len.pop(i)
                chunk_ids.pop(i)
            keep = decoding != victim
            if not keep.all():
                budget += int(q_decode[~keep].sum())
                decoding, q_decode, k_each = decoding[keep], q_decode[keep], k_each[keep]
            prefill_len[victim] = prompt[victim] + generated[victim]
            computed[victim] = 0
            preempt[victim] += 1
            waiting.appendleft(victim)
        while waiting and budget > 0 and len(running) < engine.max_num_seqs:
            r = waiting[0]
            c = int(min(prefill_len[r], budget))
            need = _ceil(c, block)
            if kv_used + need > capacity_blocks or kv_used + _ceil(int(prefill_len[r]) + 1, block) > capacity_blocks:
                break
            waiting.popleft()
            running.append(r)
            chunk_ids.append(r)
            chunk_len.append(c)
            budget -= c
            kv_used += need
        if decoding.size == 0 and not chunk_ids:
            # Nothing schedulable (KV full of prefills waiting on memory): advance to the next arrival.
            now = float(arrival[next_arrival]) if next_arrival < n else now + engine.step_overhead_s
            continue

        chunk_arr = np.array(chunk_ids, dtype=np.int64)
        chunk_q = np.array(chunk_len, dtype=np.int64)
        q_all = np.concatenate([q_decode, chunk_q])
        ctx_all = np.concatenate([computed[decoding], computed[chunk_arr]])
        completes = computed[chunk_arr] + chunk_q >= prefill_len[chunk_arr]
        batch = BatchShape(q_all, ctx_all, logit_rows=int(q_decode.sum() + completes.sum()))
        step = _step_time_s(batch, last_q[decoding], computed[decoding], k, target, spec, engine)
        if spec and chunk_ids and max_k > 0:
            step += spec.draft_cost.prefill_time_s(BatchShape(chunk_q, computed[chunk_arr]))
        now += step
        busy += step
        last_step_s = step
        steps += 1

        # Decode outcomes.
        if decoding.size:
            if k > 0:
                u = rng.random((decoding.size, k))
                ok = u < cond[cls[decoding], :k]
                ok &= np.arange(k) < k_each[:, None]
                acc_mask = np.cumprod(ok, axis=1)
                accepted = acc_mask.sum(axis=1)
                drafted = k_each > 0
                drafts += int(drafted.sum())
                draft_tokens += int(k_each.sum())
                accepted_total += int(accepted.sum())
                per_pos[:k] += acc_mask.sum(axis=0)
            else:
                accepted = np.zeros(decoding.size, dtype=np.int64)
            emitted = accepted + 1
            gaps = now - last_emit[decoding]
            itl_s.append(gaps / emitted)
            itl_w.append(emitted)
            itl_c.append(cls[decoding])
            generated[decoding] += emitted
            computed[decoding] += emitted
            last_q[decoding] = emitted
            last_emit[decoding] = now
        # Prefill outcomes.
        if chunk_ids:
            computed[chunk_arr] += chunk_q
            finished_prefill = chunk_arr[completes]
            is_fresh = np.isnan(first_token[finished_prefill])
            fresh, resumed = finished_prefill[is_fresh], finished_prefill[~is_fresh]
            first_token[fresh] = now
            if resumed.size:  # a preempted request's re-prefill emits its next token: one more ITL sample
                itl_s.append(now - last_emit[resumed])
                itl_w.append(np.ones(resumed.size, dtype=np.int64))
                itl_c.append(cls[resumed])
            generated[finished_prefill] += 1
            last_emit[finished_prefill] = now
            last_q[finished_prefill] = 1
        # Finished requests leave.
        touched = np.concatenate([decoding, chunk_arr[completes]]) if chunk_ids else decoding
        ended = touched[generated[touched] >= out_len[touched]]
        if ended.size:
            finish[ended] = now
            done += int(ended.size)
            gone = set(ended.tolist())
            running = [r for r in running if r not in gone]

    return SimResult(
        requests=requests,
        first_token_s=first_token,
        finish_s=finish,
        preemptions=preempt,
        itl_s=np.concatenate(itl_s) if itl_s else np.zeros(0),
        itl_weight=np.concatenate(itl_w) if itl_w else np.zeros(0, dtype=np.int64),
        itl_class=np.concatenate(itl_c) if itl_c else np.zeros(0, dtype=np.int64),
        steps=steps,
        drafts=drafts,
        draft_tokens=draft_tokens,
        accepted_tokens=accepted_total,
        accepted_per_position=per_pos,
        end_s=now,
        busy_s=busy,
    )


def _ceil(tokens: int, block: int) -> int:
    return -(-tokens // block)


def _blocks(tokens: IntArray, block: int) -> int:
    return int((-(-tokens // block)).sum()) if tokens.size else 0


def _q_of(r: int, decoding: IntArray, q_decode: IntArray, chunk_ids: list[int], chunk_len: list[int]) -> int:
    hit = np.nonzero(decoding == r)[0]
    if hit.size:
        return int(q_decode[hit[0]])
    if r in chunk_ids:
        return chunk_len[chunk_ids.index(r)]
    return 0


def _step_time_s(
    batch: BatchShape,
    draft_q: IntArray,
    draft_ctx: IntArray,
    k: int,
    target: StepTimePredictor,
    spec: SpecConfig | None,
    engine: EngineConfig,
) -> float:
    """Target pass + draft proposal + rejection sampling + engine overhead (prefill drafting apart)."""
    verify = target.step_time_s(batch)
    step = verify + engine.step_overhead_s
    if spec is not None and k > 0 and draft_q.size:
        step += spec.draft_cost.propose_time_s(BatchShape(draft_q, draft_ctx), k, verify)
        step += REJECTION_SAMPLING_FRACTION * verify
    return step


@dataclass(frozen=True)
class _FastForward:
    steps: int
    elapsed_s: float
    drafts: int
    draft_tokens: int
    accepted: int
    per_position: IntArray
    itl_s: FloatArray
    itl_w: IntArray
    itl_c: IntArray
    last_step_s: float


_MAX_FAST_STEPS = 256


def _fast_forward(
    decoding: IntArray,
    k: int,
    horizon_s: float,
    now: float,
    out_len: IntArray,
    generated: IntArray,
    computed: IntArray,
    last_q: IntArray,
    last_emit: FloatArray,
    cls: IntArray,
    cond: FloatArray,
    target: StepTimePredictor,
    spec: SpecConfig | None,
    engine: EngineConfig,
    rng: np.random.Generator,
) -> _FastForward | None:
    """Run several pure-decode steps at once while nothing else can happen.

    Valid while no request arrives (the horizon), none is waiting or prefilling, and none can finish
    or reach its last tokens (each request owes at least ``k + 2`` tokens before every step taken). Step
    times are evaluated at the first and last step of the window and interpolated linearly in
    between (exact while step time is linear in context, as it is without sliding windows). Updates the state
    arrays in place; returns None when no step qualifies (the general step then handles it).
    """
    q = k + 1
    remaining = out_len[decoding] - generated[decoding]
    # A step may run here only if every request still owes k + 2 tokens before it (so the cap on k
    # never binds and nobody finishes); each step emits at least one token per request.
    max_steps = min(_MAX_FAST_STEPS, int(remaining.min()) - (k + 1))
    if max_steps < 1:
        return None
    b = decoding.size
    ctx0 = computed[decoding]
    q_arr = np.full(b, q, dtype=np.int64)
    t_first = _step_time_s(BatchShape(q_arr, ctx0, logit_rows=b * q), last_q[decoding], ctx0, k, target, spec, engine)
    if np.isfinite(horizon_s):  # steps only lengthen as context grows: no more start before the arrival
        max_steps = max(1, min(max_steps, int((horizon_s - now) / t_first) + 1))
    if k > 0:
        ok = rng.random((max_steps, b, k)) < cond[cls[decoding], :k][None, :, :]
        acc_mask = np.cumprod(ok, axis=2)
        emitted = acc_mask.sum(axis=2) + 1
    else:
        acc_mask = np.zeros((max_steps, b, 1), dtype=np.int64)
        emitted = np.ones((max_steps, b), dtype=np.int64)
    cum_before = np.cumsum(emitted, axis=0) - emitted
    allowed = (remaining[None, :] - cum_before >= k + 2).all(axis=1)
    max_steps = int(allowed.size if allowed.all() else np.argmin(allowed))  # >= 1: step 0 is always allowed
    emitted, acc_mask = emitted[:max_steps], acc_mask[:max_steps]
    if max_steps == 1:
        durations = np.array([t_first])
    else:
        ctx_last = ctx0 + emitted[:-1].sum(axis=0)
        t_last = _step_time_s(
            BatchShape(q_arr, ctx_last, logit_rows=b * q), emitted[-2], ctx_last, k, target, spec, engine
        )
        durations = np.linspace(t_first, t_last, max_steps)
    ends = now + np.cumsum(durations)
    starts = ends - durations
    steps = max(1, int(np.count_nonzero(starts < horizon_s)))  # a step starting after an arrival must admit it
    emitted, acc_mask, durations = emitted[:steps], acc_mask[:steps], durations[:steps]
    gaps = np.repeat(durations[:, None], b, axis=1)
    gaps[0] = ends[0] - last_emit[decoding]
    total = emitted.sum(axis=0)
    generated[decoding] += total
    computed[decoding] += total
    last_q[decoding] = emitted[-1]
    last_emit[decoding] = ends[steps - 1]
    accepted = int(acc_mask.sum()) if k > 0 else 0
    return _FastForward(
        steps=steps,
        elapsed_s=float(ends[steps - 1] - now),
        drafts=steps * b if k > 0 else 0,
        draft_tokens=steps * b * k,
        accepted=accepted,
        per_position=acc_mask.sum(axis=(0, 1)) if k > 0 else np.zeros(0, dtype=np.int64),
        itl_s=(gaps / emitted).ravel(),
        itl_w=emitted.ravel(),
        itl_c=np.tile(cls[decoding], steps),
        last_step_s=float(durations[-1]),
    )
