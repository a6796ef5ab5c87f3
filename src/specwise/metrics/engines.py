"""Acceptance from engines other than vLLM: llama.cpp counters and SGLang gauges (pure).

vLLM's counters (:mod:`specwise.metrics.spec_decode`) give the full picture; llama.cpp gives drafted and
accepted token counters (acceptance rate only); SGLang gives the current acceptance rate and length as gauges
(averaged over its series; a gauge is a reading, not a window). Metric names come from the engine adapters.
"""

from __future__ import annotations

from specwise.acceptance.counts import acceptance_rate
from specwise.contracts.bench import SpecDecodeReading
from specwise.engines.llamacpp import LlamaCppEngine
from specwise.engines.sglang import SglangEngine
from specwise.engines.vllm import METRICS as VLLM
from specwise.metrics.exposition import Sample, Scrape, first_non_finite

LLAMACPP = LlamaCppEngine.spec_metrics
SGLANG = SglangEngine.spec_metrics
# Every sample a bench level's speculation reading is computed from, whichever engine exported it.
SPEC_SAMPLES = frozenset(
    name
    for name in (
        VLLM.spec_drafts,
        VLLM.spec_draft_tokens,
        VLLM.spec_accepted,
        VLLM.spec_accepted_per_pos,
        VLLM.spec_drafts_created,
        *LLAMACPP.draft_tokens,
        *LLAMACPP.accepted_tokens,
        SGLANG.accept_rate_gauge,
        SGLANG.accept_length_gauge,
    )
    if name
)


def non_finite_spec_sample(scrape: Scrape) -> Sample | None:
    """A NaN or infinite sample among those the speculation reading is computed from (:data:`SPEC_SAMPLES`)."""
    return first_non_finite(scrape, SPEC_SAMPLES)


def _first_sum(scrape: Scrape, candidates: tuple[str, ...]) -> float | None:
    for name in candidates:
        samples = scrape.named(name)
        if samples:
            return sum(s.value for s in samples)
    return None


def llamacpp_acceptance(before: Scrape, after: Scrape) -> tuple[SpecDecodeReading, bool] | None:
    """Acceptance rate over the window from llama.cpp's counters, and whether they reset; None when it does not
    expose them."""
    d0, d1 = _first_sum(before, LLAMACPP.draft_tokens), _first_sum(after, LLAMACPP.draft_tokens)
    a0, a1 = _first_sum(before, LLAMACPP.accepted_tokens), _first_sum(after, LLAMACPP.accepted_tokens)
    if d1 is None or a1 is None:
        return None
    reset = d0 is None or a0 is None or d1 < d0 or a1 < a0
    drafted, accepted = (d1, a1) if reset else (d1 - d0, a1 - a0)  # type: ignore[operator]
    if accepted > drafted:
        drafted, accepted, reset = d1, a1, True
    reading = SpecDecodeReading(
        "llama.cpp",
        acceptance_rate=acceptance_rate(accepted, drafted),
        draft_tokens=drafted,
        accepted_tokens=accepted,
    )
    return reading, reset and d0 is not None


def sglang_acceptance(after: Scrape) -> SpecDecodeReading | None:
    assert SGLANG.accept_rate_gauge is not None and SGLANG.accept_length_gauge is not None
    rate = [s.value for s in after.named(SGLANG.accept_rate_gauge)]
    length = [s.value for s in after.named(SGLANG.accept_length_gauge)]
    if not rate and not length:
        return None
    return SpecDecodeReading(
        "sglang",
        acceptance_rate=sum(rate) / len(rate) if rate else None,
        acceptance_length=sum(length) / len(length) if length else None,
    )
