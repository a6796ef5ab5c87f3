"""Workload classes and the request table a simulation runs on."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from specwise.acceptance.model import AcceptanceModel
from specwise.errors import SpecError
from specwise.traffic import Arrivals, FloatArray, IntArray, LengthDist


@dataclass(frozen=True)
class WorkloadClass:
    """One kind of traffic: its share of requests, lengths, acceptance, temperature and SLOs.

    ``proposal_rate``: the fraction of decode steps in which the proposer drafts at all. A draft model always does
    (1.0); a lookup (n-gram, suffix) drafts only where it finds a match -- elsewhere vLLM schedules the sequence
    as a plain one-token decode, verifying nothing (``vllm/v1/spec_decode/ngram_proposer.py``). ``acceptance`` is
    then per proposal, as vLLM's counters count it (accepted_per_pos / drafts).
    """

    name: str
    share: float
    prompt_tokens: LengthDist
    output_tokens: LengthDist
    acceptance: AcceptanceModel
    temperature: float = 0.0
    slo_ttft_s: float | None = None
    slo_tpot_s: float | None = None
    proposal_rate: float = 1.0

    def __post_init__(self) -> None:
        if not 0.0 < self.proposal_rate <= 1.0:
            raise SpecError(f"workload {self.name!r}: proposal_rate must be in (0, 1], got {self.proposal_rate}")
        if not self.share > 0:
            raise SpecError(f"workload {self.name!r}: share must be > 0, got {self.share}")
        if self.temperature < 0:
            raise SpecError(f"workload {self.name!r}: temperature must be >= 0, got {self.temperature}")
        for name in ("slo_ttft_s", "slo_tpot_s"):
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise SpecError(f"workload {self.name!r}: {name} must be > 0, got {value}")


@dataclass(frozen=True, eq=False)
class RequestTable:
    """Column arrays, one row per request, sorted by arrival. With ``users`` (a closed loop, as load generators
    that keep N requests in flight do), the first ``users`` requests arrive at their ``arrival_s`` and each later
    one when an earlier one finishes; its ``arrival_s`` is ignored."""

    arrival_s: FloatArray
    prompt_tokens: IntArray
    output_tokens: IntArray
    class_index: IntArray
    users: int | None = None

    @property
    def size(self) -> int:
        return int(self.arrival_s.size)


def admit(requests: RequestTable, max_model_len: int) -> RequestTable:
    """The requests vLLM serves, as it serves them: a prompt of ``max_model_len`` tokens or more is rejected
    before it is scheduled (``vllm/v1/engine/input_processor.py``: "The decoder prompt (length N) is longer than
    the maximum model length"), and a sequence stops once it holds ``max_model_len`` tokens
    (``vllm/v1/core/sched/utils.py`` check_stop: FINISHED_LENGTH_CAPPED), so its output is cut there. A closed
    loop keeps its table's size: its over-long prompts are cut to ``max_model_len - 1`` instead."""
    fits = requests.prompt_tokens < max_model_len
    if fits.all() and (requests.prompt_tokens + requests.output_tokens <= max_model_len).all():
        return requests
    if not fits.any():
        raise SpecError(f"every request's prompt is at least max_model_len ({max_model_len}) tokens: vLLM rejects all")
    if requests.users is not None:
        fits = np.ones(requests.size, dtype=bool)
    prompt = np.minimum(requests.prompt_tokens[fits], max_model_len - 1)
    output = np.minimum(requests.output_tokens[fits], max_model_len - prompt)
    return RequestTable(requests.arrival_s[fits], prompt, output, requests.class_index[fits], requests.users)


def generate_requests(
    classes: Sequence[WorkloadClass], arrivals: Arrivals, num_requests: int, rng: np.random.Generator
) -> RequestTable:
    """Arrival times at the total rate; each request's class drawn by share, lengths by class."""
    if num_requests < 1:
        raise SpecError(f"num_requests: must be >= 1, got {num_requests}")
    if not classes:
        raise SpecError("workload: at least one class is needed")
    times = arrivals.times(rng, num_requests)
    n = times.size
    shares = np.array([c.share for c in classes], dtype=np.float64)
    cls = rng.choice(len(classes), size=n, p=shares / shares.sum()).astype(np.int64)
    prompt = np.empty(n, dtype=np.int64)
    output = np.empty(n, dtype=np.int64)
    for i, c in enumerate(classes):
        mask = cls == i
        count = int(mask.sum())
        prompt[mask] = c.prompt_tokens.sample(rng, count)
        output[mask] = c.output_tokens.sample(rng, count)
    return RequestTable(times, prompt, output, cls)
