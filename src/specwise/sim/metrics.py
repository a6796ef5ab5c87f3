"""Latency and throughput summaries of a simulation, in the one summary type (:mod:`specwise.latency`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from specwise.acceptance.counts import acceptance_rate, mean_acceptance_length
from specwise.latency import LatencySummary
from specwise.sim.engine import SimResult
from specwise.sim.workload import WorkloadClass


@dataclass(frozen=True)
class SimLatencySummary(LatencySummary):
    """The shared summary plus what only a simulation knows: SLO attainment and preemptions."""

    slo_attainment: float | None = None
    preemptions: int = 0


@dataclass(frozen=True)
class SimSummary:
    overall: SimLatencySummary
    by_class: dict[str, SimLatencySummary]
    acceptance_rate: float | None
    mean_acceptance_length: float | None
    steps: int
    duration_s: float
    peak_seqs: int = 0  # the largest step simulated (SimResult.peak_*): what a calibration's range is checked against
    peak_batched_tokens: int = 0
    peak_kv_tokens: int = 0


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
    rate = acceptance_rate(result.accepted_tokens, result.draft_tokens)
    al = mean_acceptance_length(result.accepted_tokens, result.drafts)
    return SimSummary(
        overall,
        by_class,
        rate,
        al,
        result.steps,
        result.end_s,
        result.peak_seqs,
        result.peak_batched_tokens,
        result.peak_kv_tokens,
    )


def _summary(
    result: SimResult, mask: np.ndarray, classes: Sequence[WorkloadClass], cls: int | None, span_s: float
) -> SimLatencySummary:
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
    met = None
    attainment = None
    slo_ttft = np.array([classes[c].slo_ttft_s or np.inf for c in req.class_index[mask]])
    slo_tpot = np.array([classes[c].slo_tpot_s or np.inf for c in req.class_index[mask]])
    # whether SLOs apply is the workload's to say, not the sample's: a run that drew no request of the one class with
    # SLOs meets them with every request (review s46a: goodput None in every row, and "no request met the SLOs")
    judged = classes if cls is None else [classes[cls]]
    if any(c.slo_ttft_s or c.slo_tpot_s for c in judged):
        tpot_all = np.where(out > 1, (finish - first) / np.maximum(out - 1, 1), 0.0)
        ok = (ttft <= slo_ttft) & (tpot_all <= slo_tpot)
        attainment = float(ok.mean()) if ok.size else None
        met = int(ok.sum())
    fields = LatencySummary.fields(
        requests=int(mask.sum()),
        ttft_s=ttft,
        tpot_s=tpot,
        itl_s=result.itl_s[itl_mask],
        itl_weights=result.itl_weight[itl_mask],
        e2e_s=e2e,
        output_tokens=float(out.sum()),
        completed=int(mask.sum()),
        span_s=span_s,
        met_slo=met,
    )
    return SimLatencySummary(**fields, slo_attainment=attainment, preemptions=int(result.preemptions[mask].sum()))
