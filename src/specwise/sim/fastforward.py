"""Several pure-decode steps at once, while nothing else can happen.

Valid while no request arrives (the horizon), none is waiting or prefilling, and none can finish or reach its last
tokens (each request owes at least one step's maximum emission + 1 tokens before every step taken). Step times are
evaluated at the first and last step of the window and interpolated linearly in between (exact while step time is
linear in context, as it is without sliding windows). The acceptance draws come from the drafting shape, the
times from the step cost, so this knows neither method nor model.
"""

from __future__ import annotations

import numpy as np

from specwise.perfmodel.batch import BatchShape
from specwise.sim.drafting import DraftShape, Uniforms
from specwise.sim.state import SimState
from specwise.sim.stepcost import StepCost
from specwise.traffic import IntArray

MAX_FAST_STEPS = 256


def fast_forward(st: SimState, decoding: IntArray, k: int, cost: StepCost, shape: DraftShape, rng: Uniforms) -> bool:
    """Advance ``st`` by as many decode steps as may run unchanged; False when none qualifies (the general step
    then handles it)."""
    b = decoding.size
    q = int(shape.query_tokens(np.full(1, k, dtype=np.int64))[0])
    remaining = st.out_len[decoding] - st.generated[decoding]
    # A step may run here only if every request still owes q + 1 tokens before it (so the cap on k never binds and
    # nobody finishes); each step emits at least one token per request.
    max_steps = min(MAX_FAST_STEPS, int(remaining.min()) - q)
    if max_steps < 1:
        return False
    horizon_s = st.next_arrival_s()
    ctx0 = st.computed[decoding]
    q_arr = np.full(b, q, dtype=np.int64)
    t_first = cost.decode_step_s(BatchShape(q_arr, ctx0, logit_rows=b * q), st.last_q[decoding], ctx0, k)
    if np.isfinite(horizon_s):  # steps only lengthen as context grows: no more start before the arrival
        max_steps = max(1, min(max_steps, int((horizon_s - st.now) / t_first) + 1))
    if k > 0:
        draw = shape.draw_steps(rng, st.cls[decoding], k, max_steps)
        mask, emitted = draw.mask, draw.accepted + 1
    else:
        mask = np.zeros((max_steps, b, 1), dtype=np.int64)
        emitted = np.ones((max_steps, b), dtype=np.int64)
    cum_before = np.cumsum(emitted, axis=0) - emitted
    allowed = (remaining[None, :] - cum_before >= q + 1).all(axis=1)
    max_steps = int(allowed.size if allowed.all() else np.argmin(allowed))  # >= 1: step 0 is always allowed
    emitted, mask = emitted[:max_steps], mask[:max_steps]
    if max_steps == 1:
        durations = np.array([t_first])
    else:
        ctx_last = ctx0 + emitted[:-1].sum(axis=0)
        t_last = cost.decode_step_s(BatchShape(q_arr, ctx_last, logit_rows=b * q), emitted[-2], ctx_last, k)
        durations = np.linspace(t_first, t_last, max_steps)
    ends = st.now + np.cumsum(durations)
    steps = max(1, int(np.count_nonzero(ends - durations < horizon_s)))  # a step starting after an arrival admits it
    emitted, mask, durations = emitted[:steps], mask[:steps], durations[:steps]
    _apply(st, decoding, k, emitted, mask, durations, float(ends[0]), float(ends[steps - 1]))
    return True


def _apply(
    st: SimState,
    decoding: IntArray,
    k: int,
    emitted: IntArray,
    mask: IntArray,
    durations: np.ndarray,
    first_end_s: float,
    last_end_s: float,
) -> None:
    steps, b = emitted.shape
    gaps = np.repeat(durations[:, None], b, axis=1)
    gaps[0] = first_end_s - st.last_emit[decoding]
    t = st.tally
    t.steps += steps
    if k > 0:
        t.drafts += steps * b
        t.draft_tokens += steps * b * k
        t.accepted += int(mask.sum())
        t.per_position[:k] += mask.sum(axis=(0, 1))
    t.inter_token(gaps.ravel(), emitted.ravel(), np.tile(st.cls[decoding], steps))
    total = emitted.sum(axis=0)
    st.generated[decoding] += total
    st.computed[decoding] += total
    st.last_q[decoding] = emitted[-1]
    st.last_emit[decoding] = last_end_s
    st.elapse(last_end_s - st.now)
    st.last_step_s = float(durations[-1])
