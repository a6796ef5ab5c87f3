"""Latency and throughput summaries of a simulation (guidellm-style token-normalised metrics).

* TTFT = first token - arrival; E2E = finish - arrival.
* TPOT = (finish - first token) / (output tokens - 1), per request (requests with one token excluded).
* ITL: a step that emits m tokens for a request after a gap g contributes m samples of g / m, so a
  verification step accepting several tokens is not counted as one long gap.
* Goodput: requests per second that meet their class's TTFT and TPOT SLOs (vLLM bench's definition).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from specwise.sim.engine import SimResult
from specwise.sim.workload import WorkloadClass
from specwise.stats import Percentiles


@dataclass(frozen=True)
class LatencySummary:
    requests: int
    ttft_s: Percentiles
    tpot_s: Percentiles
    itl_s: Percentiles
    e2e_s: Percentiles
    output_tokens_per_s: float
    request_rate_per_s: float
    goodput_per_s: float | None
    slo_attainment: float | None
    preemptions: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class SimSummary:
    overall: LatencySummary
    by_class: dict[str, LatencySummary]
    acceptance_rate: float | None
    mean_acceptance_length: float | None
    steps: int
    duration_s: float


def summarize(result: SimResult, classes: Sequence[WorkloadClass], warmup_fraction: float = 0.0) -> SimSummary:
    req = result.requests
    keep = np.ones(req.size, dtype=bool)
    if warmup_fraction > 0:
        keep[: int(req.size * warmup_fraction)] = False
    span = float(np.nanmax(result.finish_s) - req.arrival_s[keep].min()) if keep.any() else 0.0
    overall = _summary(result, keep, classes, None, span)
    by_class = {
        c.name: _summary(result, keep & (req.class_index == i), classes, i, span) for i, c in enumerate(classes)
    }
    rate = result.accepted_tokens / result.draft_tokens if result.draft_tokens else None
    al = 1.0 + result.accepted_tokens / result.drafts if result.drafts else None
    return SimSummary(overall, by_class, rate, al, result.steps, result.end_s)


def _summary(
    result: SimResult, mask: np.ndarray, classes: Sequence[WorkloadClass], cls: int | None, span_s: float
) -> LatencySummary:
    req = result.requests
    arrival = req.arrival_s[mask]
    first = result.first_token_s[mask]
    finish = result.finish_s[mask]
    out = req.output_tokens[mask]
    ttft = first - arrival
    e2e = finish - arrival
    multi = out > 1
    tpot = (finish[multi] - first[multi]) / (out[multi] - 1)
    itl_mask = np.ones(result.itl_s.size, dtype=bool) if cls is None else result.itl_class == cls
    tokens = float(out.sum())
    good = None
    attainment = None
    slo_ttft = np.array([classes[c].slo_ttft_s or np.inf for c in req.class_index[mask]])
    slo_tpot = np.array([classes[c].slo_tpot_s or np.inf for c in req.class_index[mask]])
    if np.isfinite(slo_ttft).any() or np.isfinite(slo_tpot).any():
        tpot_all = np.where(out > 1, (finish - first) / np.maximum(out - 1, 1), 0.0)
        met = (ttft <= slo_ttft) & (tpot_all <= slo_tpot)
        attainment = float(met.mean()) if met.size else None
        good = float(met.sum() / span_s) if span_s > 0 else None
    return LatencySummary(
        requests=int(mask.sum()),
        ttft_s=Percentiles.of(ttft),
        tpot_s=Percentiles.of(tpot),
        itl_s=Percentiles.of(result.itl_s[itl_mask], result.itl_weight[itl_mask]),
        e2e_s=Percentiles.of(e2e),
        output_tokens_per_s=tokens / span_s if span_s > 0 else 0.0,
        request_rate_per_s=float(mask.sum()) / span_s if span_s > 0 else 0.0,
        goodput_per_s=good,
        slo_attainment=attainment,
        preemptions=int(result.preemptions[mask].sum()),
    )
