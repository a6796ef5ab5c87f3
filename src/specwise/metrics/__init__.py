"""Server metrics: Prometheus exposition parsing, engine metric names, spec-decode stats (pure).

Parsing goes through ``prometheus_client``'s parser, never string prefixes (vLLM's
``..._accepted_tokens_per_pos_total`` contains ``accepted_tokens``). Stats are kept apart from
scraping and export, as in vLLM's ``v1/spec_decode/metrics.py``.
"""

from specwise.metrics.exposition import Sample, Scrape, parse_exposition
from specwise.metrics.histogram import HistogramSnapshot, histogram_quantile
from specwise.metrics.spec_decode import (
    CounterDelta,
    SpecDecodeCounters,
    spec_decode_counters,
    spec_decode_delta,
)

__all__ = [
    "CounterDelta",
    "HistogramSnapshot",
    "Sample",
    "Scrape",
    "SpecDecodeCounters",
    "histogram_quantile",
    "parse_exposition",
    "spec_decode_counters",
    "spec_decode_delta",
]
