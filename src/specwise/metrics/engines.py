"""Acceptance from engines other than vLLM: llama.cpp counters and SGLang gauges (pure).

vLLM's counters (:mod:`specwise.metrics.spec_decode`) give the full picture; llama.cpp gives drafted and
accepted token counters (acceptance rate only); SGLang gives the current acceptance rate and length as gauges
(averaged over its series; a gauge is a reading, not a window).
"""

from __future__ import annotations

from specwise.metrics import names
from specwise.metrics.exposition import Scrape


def _first_sum(scrape: Scrape, candidates: tuple[str, ...]) -> float | None:
    for name in candidates:
        samples = scrape.named(name)
        if samples:
            return sum(s.value for s in samples)
    return None


def llamacpp_acceptance(before: Scrape, after: Scrape) -> dict[str, object] | None:
    """Acceptance rate over the window from llama.cpp's counters; None when it does not expose them."""
    d0, d1 = _first_sum(before, names.LLAMACPP_DRAFTED), _first_sum(after, names.LLAMACPP_DRAFTED)
    a0, a1 = _first_sum(before, names.LLAMACPP_ACCEPTED), _first_sum(after, names.LLAMACPP_ACCEPTED)
    if d1 is None or a1 is None:
        return None
    reset = d0 is None or a0 is None or d1 < d0 or a1 < a0
    drafted, accepted = (d1, a1) if reset else (d1 - d0, a1 - a0)  # type: ignore[operator]
    if accepted > drafted:
        drafted, accepted, reset = d1, a1, True
    return {
        "engine": "llama.cpp",
        "spec_decode_draft_tokens": drafted,
        "spec_decode_accepted_tokens": accepted,
        "spec_decode_acceptance_rate": accepted / drafted if drafted > 0 else None,
        "spec_decode_acceptance_length": None,
        "counter_reset": reset and d0 is not None,
    }


def sglang_acceptance(after: Scrape) -> dict[str, object] | None:
    rate = [s.value for s in after.named(names.SGLANG_ACCEPT_RATE)]
    length = [s.value for s in after.named(names.SGLANG_ACCEPT_LENGTH)]
    if not rate and not length:
        return None
    return {
        "engine": "sglang",
        "spec_decode_acceptance_rate": sum(rate) / len(rate) if rate else None,
        "spec_decode_acceptance_length": sum(length) / len(length) if length else None,
        "counter_reset": False,
    }
