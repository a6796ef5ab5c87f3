"""Several pure-decode steps at once, while nothing else can happen.

Valid while no request arrives (the horizon), none is waiting or prefilling, and none can finish or reach its last
tokens (each request owes at least one step's maximum emission + 1 tokens before every step taken). Step times are
evaluated at the first and last step of the window and interpolated linearly in between (exact without speculation
while step time is linear in context, as it is without sliding windows, and while an overlapping engine's
``max(GPU, engine work)`` keeps one side through the window; with a draft model a step's cost also depends
on the last step's accepted tokens, which the interpolation averages: 0.3-1.1% of k=4 E2E p50 in review s46a's
check). The acceptance draws come from the drafting shape, the times from the step cost, so this knows neither method
nor model.
"""

from __future__ import annotations

import numpy as np

from specwise.perfmodel.batch import BatchShape
from specwise.sim.drafting import DraftShape, Uniforms
from specwise.sim.state import SimState
from specwise.sim.stepcost import StepCost
from specwise.traffic import FloatArray, IntArray

MAX_FAST_STEPS = 256


def fast_forward(st: SimState, decoding: IntArray, k: int, cost: StepCost, shape: DraftShape, rng: Uniforms) -> bool:
    """Advance ``st`` by as many decode steps as may run unchanged; False when none qualifies (the general step
    then handles it)."""
    b = decoding.size
    q = int(shape.query_tokens(np.full(1, k, dtype=np.int64))[0])
    remaining = st.out_len[decoding] - st.generated[decoding]
    # A step may run here only if every request still owes q + 1 tokens before it (so no token is cut at max_tokens
    # and nobody finishes); each step emits at least one token per request.
    max_steps = min(MAX_FAST_STEPS, int(remaining.min()) - q)
    if max_steps < 1:
        return False
    horizon_s = st.next_arrival_s()
    ctx0 = st.computed[decoding]
    t_first = _step(cost, decoding.size, q, ctx0, st.last_q[decoding], k)
    if np.isfinite(horizon_s):  # steps only lengthen as context grows: no more start before the arrival
        max_steps = max(1, min(max_steps, int((horizon_s - st.now) / t_first) + 1))
    proposes = np.ones(max_steps, dtype=np.int64)
    if k > 0:
        draw = shape.draw_steps(rng, st.cls[decoding], k, max_steps)
        if not shape.always_proposes:  # shared draws: the whole batch drafts, or none of it
            proposes = shape.proposes_steps(rng, int(st.cls[decoding[0]]), max_steps)
        mask = draw.mask * proposes[:, None, None]
        emitted = mask.sum(axis=2) + 1
    else:
        mask = np.zeros((max_steps, b, 1), dtype=np.int64)
        emitted = np.ones((max_steps, b), dtype=np.int64)
    cum_before = np.cumsum(emitted, axis=0) - emitted
    allowed = (remaining[None, :] - cum_before >= q + 1).all(axis=1)
    max_steps = int(allowed.size if allowed.all() else np.argmin(allowed))  # >= 1: step 0 is always allowed
    emitted, mask, proposes = emitted[:max_steps], mask[:max_steps], proposes[:max_steps]
    durations = _durations(cost, st, decoding, k, q, emitted, t_first)
    if not proposes.all():  # steps without a draft verify nothing: priced as plain decode steps
        durations = np.where(proposes > 0, durations, _durations(cost, st, decoding, 0, 1, emitted, None))
    ends = st.now + np.cumsum(durations)
    steps = max(1, int(np.count_nonzero(ends - durations < horizon_s)))  # a step starting after an arrival admits it
    emitted, durations = emitted[:steps], durations[:steps]
    drafted = int(proposes[:steps].sum()) if k > 0 else 0
    _apply(st, decoding, k, q, emitted, durations, float(ends[0]), float(ends[steps - 1]), drafted)
    return True


def _step(cost: StepCost, b: int, q: int, ctx: IntArray, draft_q: IntArray, k: int) -> float:
    if cost.totals:
        draft_pairs = int(np.dot(draft_q, ctx + (draft_q + 1) // 2)) if k > 0 else 0
        return cost.uniform_step_totals(b, q, int(ctx.sum()), k, int(draft_q.sum()), draft_pairs)
    return cost.decode_step_s(BatchShape(np.full(b, q, dtype=np.int64), ctx, logit_rows=b * q), draft_q, ctx, k)


def _durations(
    cost: StepCost, st: SimState, decoding: IntArray, k: int, q: int, emitted: IntArray, t_first: float | None
) -> np.ndarray:
    """Step times over the window, evaluated at its first and last step and interpolated linearly between."""
    b, ctx0 = decoding.size, st.computed[decoding]
    first = t_first if t_first is not None else _step(cost, b, q, ctx0, st.last_q[decoding], k)
    if emitted.shape[0] == 1:
        return np.array([first])
    ctx_last = ctx0 + emitted[:-1].sum(axis=0)
    last = _step(cost, b, q, ctx_last, emitted[-2], k)
    return linspace(first, last, emitted.shape[0])


def _apply(
    st: SimState,
    decoding: IntArray,
    k: int,
    q: int,
    emitted: IntArray,
    durations: np.ndarray,
    first_end_s: float,
    last_end_s: float,
    drafted_steps: int,
) -> None:
    steps, b = emitted.shape
    gaps = np.repeat(durations, b)
    gaps[:b] = first_end_s - st.last_emit[decoding]
    t = st.tally
    t.steps += steps
    if k > 0:
        t.drafts += drafted_steps * b
        t.draft_tokens += drafted_steps * b * k
        t.add_accepted(emitted - 1)
    flat = emitted.ravel()
    t.itl.add_arrays(gaps / flat, flat, np.tile(st.cls[decoding], steps) if t.itl.with_classes else None)
    total = emitted.sum(axis=0)
    st.generated[decoding] += total
    st.computed[decoding] += total
    st.last_q[decoding] = emitted[-1]
    st.last_emit[decoding] = last_end_s
    # the window's last step, its largest: b sequences feeding q tokens over what they had before it
    st.tally.reach(b, b * q, int(st.computed[decoding].sum()) - int(emitted[-1].sum()) + b * q)
    st.elapse(last_end_s - st.now)
    st.last_step_s = float(durations[-1])


def linspace(first: float, last: float, n: int) -> FloatArray:
    """``numpy.linspace(first, last, n)`` (n >= 2), bit for bit, without its per-call overhead."""
    step = (last - first) / (n - 1)
    if step == 0:
        out: FloatArray = np.arange(n, dtype=np.float64) / (n - 1) * (last - first) + first
    else:
        out = np.arange(n, dtype=np.float64) * step + first
    out[-1] = last
    return out
