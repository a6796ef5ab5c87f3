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
A chunk with more tokens than one step can emit (the client merged two steps) is skipped.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import numpy as np

from specwise.contracts.calibration import StepPoint
from specwise.loadgen.records import RequestRecord

SAME_STEP_S = 0.002  # chunks of one step reach the client within this of each other


MeasuredStep = StepPoint  # the mean of observed steps of one shape class


def query_per_seq(draft_tokens: float | None, request_steps: int) -> float:
    """Tokens each decode sequence feeds the target per step: 1 + draft tokens per request-step."""
    if not draft_tokens or request_steps <= 0:
        return 1.0
    return 1.0 + draft_tokens / request_steps


def request_steps(records: Sequence[RequestRecord]) -> int:
    """Decode steps summed over requests: every chunk after the first is one."""
    return sum(max(0, len(r.chunks) - 1) for r in records if r.ok)


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
    bins: defaultdict[tuple[int, bool], list[tuple[float, float, float, float]]] = defaultdict(list)
    for r in ok:
        for (t0, _), (t1, n) in zip(r.chunks, r.chunks[1:], strict=False):
            if n < 1 or n > max_tokens_per_step or t1 <= t0:
                continue
            mid = 0.5 * (t0 + t1)
            running = np.nonzero((first < mid) & (last > mid))[0]
            if running.size == 0:
                continue
            context = sum(float(prompt[i]) + float(cumulative[i][np.searchsorted(times[i], mid) - 1]) for i in running)
            prefilled = (first > t0 + SAME_STEP_S) & (first <= t1 + SAME_STEP_S)
            prefill_tokens = float(prompt[prefilled].sum())
            batched = running.size * q_per_seq + prefill_tokens
            kv = context + running.size * q_per_seq + prefill_tokens
            bins[(int(running.size), prefill_tokens > 0)].append((kv, batched, prefill_tokens, t1 - t0))
    out = []
    for (num_seqs, _), rows in sorted(bins.items()):
        a = np.array(rows)
        kv, batched, prefill, seconds = a.mean(axis=0)
        out.append(
            MeasuredStep(config, level, num_seqs, float(prefill), float(kv), float(batched), float(seconds), len(rows))
        )
    return out
