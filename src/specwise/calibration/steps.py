"""Engine step times recovered from streamed request timings (pure).

vLLM streams one chunk per engine step to every running request (a chunk carries the step's accepted tokens
plus the bonus/corrected one), so the gap between a request's consecutive chunks is one step's duration as the
client saw it. For each gap the batch that step ran is reconstructed from all requests of the level:

* decode sequences: requests whose first token came before the gap's midpoint and whose last chunk after it;
  each feeds ``query_per_seq`` tokens (1 without speculation; 1 + draft tokens per request-step with it, from
  the level's spec-decode counters) over its context (prompt + tokens streamed so far);
* prefill: a request whose first token arrived at the gap's end was prefilled in that step (its prompt tokens).

Each gap is one :class:`StepTiming`; they are averaged per (config, level, decode batch size, prefill present,
context length to a factor of 2) into one point each (:func:`class_points`) -- the (kv tokens, batched tokens,
seconds) form the linear predictor (:mod:`specwise.perfmodel.calibrated`) fits. A chunk with more tokens than one
step can emit (the server merged two steps) is skipped. Chunks a busy client read back to back (the gap under
``SAME_STEP_S`` and under a quarter of the step before it) are not steps of their own: they join the gap before
them, which spans them all, into one interval of that many steps, each its mean.

Timings the step-time law cannot explain (an engine stall, or a step that also ran a chunk of a prompt not yet
answered) are left out by the fit (:func:`specwise.calibration.fit.fit`), through ``keep``.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import pairwise

import numpy as np

from specwise.contracts.calibration import StepPoint
from specwise.loadgen.records import RequestRecord

SAME_STEP_S = 0.002  # chunks of one step reach the client within this of each other
BACK_TO_BACK_SHARE = 0.25  # ... and a read this far under the step before it is not a step of its own


MeasuredStep = StepPoint  # the mean of observed steps of one shape class


@dataclass(frozen=True)
class StepTiming:
    """One request's view of ``steps`` engine steps in a row (1 unless the client read chunks back to back): the
    batch each ran, per step, and the seconds each took."""

    num_seqs: int
    prefill_tokens: float
    kv_tokens: float
    batched_tokens: float
    time_s: float
    steps: int

    def shape_class(self) -> tuple[int, bool, int]:
        """(decode batch, prefill present, log2 of the KV tokens per sequence): steps whose mean is one point."""
        return self.num_seqs, self.prefill_tokens > 0, int(math.log2(max(self.kv_tokens / self.num_seqs, 1.0)))


def query_per_seq(draft_tokens: float | None, request_steps: int) -> float:
    """Tokens each decode sequence feeds the target per step: 1 + draft tokens per request-step."""
    if not draft_tokens or request_steps <= 0:
        return 1.0
    return 1.0 + draft_tokens / request_steps


def request_steps(records: Sequence[RequestRecord]) -> int:
    """Decode steps summed over requests: every chunk after the first is one."""
    return sum(max(0, len(r.chunks) - 1) for r in records if r.ok)


def _back_to_back(gap_s: float, step_s: float) -> bool:
    """A read ``gap_s`` after the one before it, beside a step of ``step_s``: the client read both at once."""
    return gap_s < SAME_STEP_S and gap_s < BACK_TO_BACK_SHARE * step_s


def step_intervals(chunks: Sequence[tuple[float, int]], max_tokens_per_step: int) -> list[tuple[float, float, int]]:
    """(start, end, steps) of the steps a request's chunks show: one per gap, except that a chunk read back to back
    with the one before it (:func:`_back_to_back` beside the interval's step) joins that interval as one step more.
    A back-to-back read with no interval to join (after a merged chunk, or the first) is dropped when the step after
    it shows it was one; a steady run of short gaps (a fast engine) stays. A chunk with no token or more than one
    step's tokens ends the interval and is not one; nor is a gap of 0 with nothing to join."""
    out: list[tuple[float, float, int]] = []
    joinable = False  # out[-1] ends at this gap's start
    for (t0, _), (t1, n) in pairwise(chunks):
        gap = t1 - t0
        if not (1 <= n <= max_tokens_per_step and gap >= 0):
            joinable = False
            continue
        if joinable:
            start, end, steps = out[-1]
            if _back_to_back(gap, (end - start) / steps):
                out[-1] = (start, t1, steps + 1)
                continue
            if steps == 1 and _back_to_back(end - start, gap):
                out.pop()  # it was read back to back with a step this request did not see as one
        joinable = gap > 0
        if joinable:
            out.append((t0, t1, 1))
    return out


def step_timings(records: Sequence[RequestRecord], q_per_seq: float, max_tokens_per_step: int) -> list[StepTiming]:
    """Every step (or back-to-back run of steps) each request of one level saw, with the batch it ran."""
    ok = [r for r in records if r.ok and r.first_token_s is not None and r.prompt_tokens and len(r.chunks) >= 2]
    if not ok:
        return []
    first = np.array([r.first_token_s for r in ok], dtype=np.float64)
    last = np.array([r.chunks[-1][0] for r in ok], dtype=np.float64)
    prompt = np.array([r.prompt_tokens for r in ok], dtype=np.float64)
    times = [np.array([t for t, _ in r.chunks]) for r in ok]
    cumulative = [np.cumsum([n for _, n in r.chunks]) for r in ok]
    out = []
    for r in ok:
        for t0, t1, steps in step_intervals(r.chunks, max_tokens_per_step):
            mid = 0.5 * (t0 + t1)
            running = np.nonzero((first < mid) & (last > mid))[0]
            if running.size == 0:
                continue
            context = sum(float(prompt[i]) + float(cumulative[i][np.searchsorted(times[i], mid) - 1]) for i in running)
            prefilled = (first > t0 + SAME_STEP_S) & (first <= t1 + SAME_STEP_S)
            prefill = float(prompt[prefilled].sum()) / steps  # one of the steps prefilled them
            batched = running.size * q_per_seq + prefill
            kv = context + running.size * q_per_seq + prefill
            out.append(StepTiming(int(running.size), prefill, kv, batched, (t1 - t0) / steps, steps))
    return out


def class_points(
    timings: Sequence[StepTiming],
    config: str,
    level: int,
    keep: Callable[[StepTiming], bool] | None = None,
    median: bool = False,
) -> tuple[list[MeasuredStep], int]:
    """One point per shape class (:meth:`StepTiming.shape_class`): the mean shape and the mean (or ``median``) step
    time of the timings ``keep`` keeps, weighted by their steps; the others are counted as the point's ``outliers``.
    A class ``keep`` empties gives no point (one stalled engine step is a class of its own when its batch size is
    rare); the second value counts its timings."""
    classes: defaultdict[tuple[int, bool, int], list[StepTiming]] = defaultdict(list)
    for t in timings:
        classes[t.shape_class()].append(t)
    out = []
    emptied = 0
    for (num_seqs, _, _), members in sorted(classes.items()):
        kept = [t for t in members if keep is None or keep(t)]
        if not kept:
            emptied += sum(t.steps for t in members)
            continue
        w = np.array([t.steps for t in kept], dtype=np.float64)
        shape = np.array([(t.prefill_tokens, t.kv_tokens, t.batched_tokens, t.time_s) for t in kept])
        prefill, kv, batched, seconds = np.average(shape, axis=0, weights=w)
        if median:
            seconds = float(np.median(shape[:, 3]))
        samples = int(w.sum())
        outliers = sum(t.steps for t in members) - samples
        point = (float(prefill), float(kv), float(batched), float(seconds), samples, outliers)
        out.append(MeasuredStep(config, level, num_seqs, *point))
    return out, emptied


def decode_steps(
    records: Sequence[RequestRecord], config: str, level: int, q_per_seq: float, max_tokens_per_step: int
) -> list[MeasuredStep]:
    """One level's class points, every timing kept (:func:`step_timings`, :func:`class_points`)."""
    return class_points(step_timings(records, q_per_seq, max_tokens_per_step), config, level)[0]
