"""Engine step times recovered from streamed request timings (pure).

vLLM streams one chunk per engine step to every running request (a chunk carries the step's accepted tokens
plus the bonus/corrected one), so the gap between a request's consecutive chunks is one step's duration as the
client saw it. For each gap the batch that step ran is reconstructed from all requests of the level:

* decode sequences: requests whose first token came before the gap's midpoint and whose last chunk after it;
  each feeds ``query_per_seq`` tokens (1 without speculation; 1 + draft tokens per request-step with it, from
  the level's spec-decode counters) over its context (prompt + tokens streamed so far);
* prefill: a request whose first token arrived at the gap's end was prefilled in that step (its prompt tokens).

Gaps are averaged per (config, level, decode batch size, prefill present) into one point each -- the
(kv tokens, batched tokens, seconds) form the linear predictor (:mod:`specwise.perfmodel.calibrated`) fits.
A chunk with more tokens than one step can emit (the server merged two steps) is skipped. Two kinds of gap are
not one step, and are handled before averaging:

* chunks read back to back (within ``SAME_STEP_S``): a busy client read several steps' chunks at once, so the
  gap before them spans all those steps; the run is one interval of that many steps, each its mean;
* an engine stall: every running request waits, one gap each, many times a step (seen on a loaded 2-core CI
  machine: one stall of seconds among ~370 steps of ~0.1 s made the law's fit error 113% of the mean step);
  and, under chunked prefill, a step that also ran a chunk of a long prompt whose first token has not come yet
  (the reconstruction sees a decode step, too long for its shape).
  In a decode-only class of at least ``MIN_TRIM_SAMPLES`` steps, a step over ``STALL_FACTOR`` times the class's
  median is left out and counted (``StepPoint.outliers``). Classes with a prefill are not trimmed: they mix
  prompts of any length. On the CPU build the decode steps of a class stay within 2.4x of its median
  (three runs of the slow tier's SmolLM2 bench).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Sequence
from itertools import pairwise

import numpy as np

from specwise.contracts.calibration import StepPoint
from specwise.loadgen.records import RequestRecord

SAME_STEP_S = 0.002  # chunks of one step reach the client within this of each other
STALL_FACTOR = 4.0  # a decode step this many times its class's median is a stall, not the law's
MIN_TRIM_SAMPLES = 5  # a class's median needs this many steps to judge one


MeasuredStep = StepPoint  # the mean of observed steps of one shape class


def query_per_seq(draft_tokens: float | None, request_steps: int) -> float:
    """Tokens each decode sequence feeds the target per step: 1 + draft tokens per request-step."""
    if not draft_tokens or request_steps <= 0:
        return 1.0
    return 1.0 + draft_tokens / request_steps


def request_steps(records: Sequence[RequestRecord]) -> int:
    """Decode steps summed over requests: every chunk after the first is one."""
    return sum(max(0, len(r.chunks) - 1) for r in records if r.ok)


def step_intervals(chunks: Sequence[tuple[float, int]], max_tokens_per_step: int) -> Iterator[tuple[float, float, int]]:
    """(start, end, steps) of the steps a request's chunks show: one per gap, except that chunks read back to back
    (within ``SAME_STEP_S``) join the gap before them into one interval of as many steps. A chunk with no token or
    more than one step's tokens ends the interval and is not one."""
    open_: tuple[float, float, int] | None = None
    for (t0, _), (t1, n) in pairwise(chunks):
        one_step = 1 <= n <= max_tokens_per_step and t1 >= t0
        back_to_back = t1 - t0 < SAME_STEP_S
        if one_step and back_to_back and open_ is not None:
            open_ = (open_[0], t1, open_[2] + 1)
            continue
        if open_ is not None:
            yield open_
        open_ = (t0, t1, 1) if one_step and not back_to_back else None
    if open_ is not None:
        yield open_


Row = tuple[float, float, float, float, int]  # kv, batched, prefill tokens, seconds per step, steps


def _trimmed(rows: list[Row], prefill: bool) -> tuple[list[Row], int]:
    """The rows left after a decode-only class's stalls are left out, and how many steps were."""
    if prefill or sum(r[4] for r in rows) < MIN_TRIM_SAMPLES:
        return rows, 0
    limit = STALL_FACTOR * float(np.median([r[3] for r in rows]))
    kept = [r for r in rows if r[3] <= limit]
    return kept, sum(r[4] for r in rows) - sum(r[4] for r in kept)


def decode_steps(
    records: Sequence[RequestRecord], config: str, level: int, q_per_seq: float, max_tokens_per_step: int
) -> list[MeasuredStep]:
    ok = [r for r in records if r.ok and r.first_token_s is not None and r.prompt_tokens and len(r.chunks) >= 2]
    if not ok:
        return []
    first = np.array([r.first_token_s for r in ok], dtype=np.float64)
    last = np.array([r.chunks[-1][0] for r in ok], dtype=np.float64)
    prompt = np.array([r.prompt_tokens for r in ok], dtype=np.float64)
    times = [np.array([t for t, _ in r.chunks]) for r in ok]
    cumulative = [np.cumsum([n for _, n in r.chunks]) for r in ok]
    bins: defaultdict[tuple[int, bool], list[Row]] = defaultdict(list)
    for r in ok:
        for t0, t1, steps in step_intervals(r.chunks, max_tokens_per_step):
            mid = 0.5 * (t0 + t1)
            running = np.nonzero((first < mid) & (last > mid))[0]
            if running.size == 0:
                continue
            context = sum(float(prompt[i]) + float(cumulative[i][np.searchsorted(times[i], mid) - 1]) for i in running)
            prefilled = (first > t0 + SAME_STEP_S) & (first <= t1 + SAME_STEP_S)
            prefill_tokens = float(prompt[prefilled].sum()) / steps  # one of the steps prefilled them
            batched = running.size * q_per_seq + prefill_tokens
            kv = context + running.size * q_per_seq + prefill_tokens
            row = (kv, batched, prefill_tokens, (t1 - t0) / steps, steps)
            bins[(int(running.size), prefill_tokens > 0)].append(row)
    out = []
    for (num_seqs, prefill), rows in sorted(bins.items()):
        kept, outliers = _trimmed(rows, prefill)
        a = np.array([r[:4] for r in kept])
        w = np.array([r[4] for r in kept], dtype=np.float64)
        kv, batched, prefill_tokens, seconds = np.average(a, axis=0, weights=w)
        out.append(
            MeasuredStep(
                config,
                level,
                num_seqs,
                float(prefill_tokens),
                float(kv),
                float(batched),
                float(seconds),
                int(w.sum()),
                outliers,
            )
        )
    return out
