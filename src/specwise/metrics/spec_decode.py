"""Speculative-decoding statistics from vLLM's counters, with vLLM's definitions.

* acceptance rate = accepted tokens / draft tokens
* mean acceptance length = 1 + accepted tokens / drafts (includes the bonus token; vLLM PR #17908)
* per-position rate i = accepted_per_pos[i] / drafts; consistency: AL = 1 + sum of per-position rates

PromQL for the same over a window (from vLLM's ``v1/spec_decode/metrics.py`` docstring)::

    rate(vllm:spec_decode_num_accepted_tokens_total[5m]) / rate(vllm:spec_decode_num_draft_tokens_total[5m])
    1 + rate(vllm:spec_decode_num_accepted_tokens_total[5m]) / rate(vllm:spec_decode_num_drafts_total[5m])

Counters only grow while a server lives. A restart shows as a counter going *down*, as a new
``..._created`` timestamp (vLLM exports one per counter), or as an impossible delta (more accepted
than drafted tokens: the counters restarted and overtook their old values between scrapes). Then,
like Prometheus' ``increase()``, the delta is the new value (counted since the restart) and the
result says ``reset=True`` -- never a negative or impossible count.
"""

from __future__ import annotations

from dataclasses import dataclass

from specwise.metrics import names
from specwise.metrics.exposition import Scrape

SeriesKey = tuple[str, str]  # (model_name, engine)


@dataclass(frozen=True)
class SpecDecodeCounters:
    """Cumulative counter values of one engine's series at one scrape."""

    drafts: float
    draft_tokens: float
    accepted_tokens: float
    accepted_per_position: tuple[float, ...]
    created: float | None = None  # vLLM's ..._num_drafts_created: the counter's birth (Unix time)


@dataclass(frozen=True)
class SpecDecodeStats:
    """Counts over an interval, and the rates derived from them."""

    drafts: float
    draft_tokens: float
    accepted_tokens: float
    accepted_per_position: tuple[float, ...]

    @property
    def acceptance_rate(self) -> float | None:
        return self.accepted_tokens / self.draft_tokens if self.draft_tokens > 0 else None

    @property
    def mean_acceptance_length(self) -> float | None:
        return 1.0 + self.accepted_tokens / self.drafts if self.drafts > 0 else None

    @property
    def per_position_rates(self) -> tuple[float, ...]:
        if self.drafts <= 0:
            return ()
        return tuple(a / self.drafts for a in self.accepted_per_position)

    @property
    def mean_draft_length(self) -> float | None:
        """Draft tokens per draft: k when it is fixed."""
        return self.draft_tokens / self.drafts if self.drafts > 0 else None

    def to_dict(self) -> dict[str, object]:
        """Field names as ``vllm bench serve`` writes them (``spec_decode_*``)."""
        return {
            "spec_decode_num_drafts": self.drafts,
            "spec_decode_draft_tokens": self.draft_tokens,
            "spec_decode_accepted_tokens": self.accepted_tokens,
            "spec_decode_acceptance_rate": self.acceptance_rate,
            "spec_decode_acceptance_length": self.mean_acceptance_length,
            "spec_decode_per_position_acceptance_rates": list(self.per_position_rates),
        }


@dataclass(frozen=True)
class CounterDelta:
    stats: SpecDecodeStats
    reset: bool


def _series(labels: tuple[tuple[str, str], ...]) -> SeriesKey:
    d = dict(labels)
    return d.get("model_name", ""), d.get("engine", "")


def spec_decode_counters(scrape: Scrape) -> dict[SeriesKey, SpecDecodeCounters]:
    """vLLM's spec-decode counters per (model_name, engine); empty when the server does not speculate."""
    totals: dict[SeriesKey, dict[str, float]] = {}
    per_pos: dict[SeriesKey, dict[int, float]] = {}
    created = {_series(s.labels): s.value for s in scrape.named(names.VLLM_SPEC_DRAFTS_CREATED)}
    for field_name, metric in (
        ("drafts", names.VLLM_SPEC_DRAFTS),
        ("draft_tokens", names.VLLM_SPEC_DRAFT_TOKENS),
        ("accepted_tokens", names.VLLM_SPEC_ACCEPTED),
    ):
        for s in scrape.named(metric):
            totals.setdefault(_series(s.labels), {})[field_name] = s.value
    for s in scrape.named(names.VLLM_SPEC_ACCEPTED_PER_POS):
        position = s.label("position")
        if position is not None and position.isdigit():
            per_pos.setdefault(_series(s.labels), {})[int(position)] = s.value
    out = {}
    for key, t in totals.items():
        if {"drafts", "draft_tokens", "accepted_tokens"} <= set(t):
            positions = per_pos.get(key, {})
            width = max(positions) + 1 if positions else 0
            per_position = tuple(positions.get(i, 0.0) for i in range(width))
            out[key] = SpecDecodeCounters(
                t["drafts"], t["draft_tokens"], t["accepted_tokens"], per_position, created.get(key)
            )
    return out


def spec_decode_delta(before: SpecDecodeCounters, after: SpecDecodeCounters) -> CounterDelta:
    """Counts between two scrapes of one series, resets detected (any counter going down)."""
    fields = [
        (before.drafts, after.drafts),
        (before.draft_tokens, after.draft_tokens),
        (before.accepted_tokens, after.accepted_tokens),
    ]
    width = max(len(before.accepted_per_position), len(after.accepted_per_position))
    b_pos = before.accepted_per_position + (0.0,) * (width - len(before.accepted_per_position))
    a_pos = after.accepted_per_position + (0.0,) * (width - len(after.accepted_per_position))
    reset = any(a < b for b, a in [*fields, *zip(b_pos, a_pos, strict=True)])
    if before.created is not None and after.created is not None and after.created != before.created:
        reset = True
    drafts = after.drafts - before.drafts
    accepted = after.accepted_tokens - before.accepted_tokens
    if accepted > after.draft_tokens - before.draft_tokens or any(
        a - b > drafts for b, a in zip(b_pos, a_pos, strict=True)
    ):
        reset = True  # impossible as a delta: the counters restarted and overtook their old values
    if reset:  # the server restarted: everything counts from zero again
        return CounterDelta(SpecDecodeStats(after.drafts, after.draft_tokens, after.accepted_tokens, a_pos), True)
    return CounterDelta(
        SpecDecodeStats(
            after.drafts - before.drafts,
            after.draft_tokens - before.draft_tokens,
            after.accepted_tokens - before.accepted_tokens,
            tuple(a - b for b, a in zip(b_pos, a_pos, strict=True)),
        ),
        False,
    )


def total_delta(
    before: dict[SeriesKey, SpecDecodeCounters], after: dict[SeriesKey, SpecDecodeCounters]
) -> CounterDelta | None:
    """Deltas of every engine series summed (a reset in any series flags the total); None without series."""
    if not after:
        return None
    reset = False
    drafts = draft_tokens = accepted = 0.0
    per_pos: list[float] = []
    for key, a in after.items():
        delta = spec_decode_delta(before.get(key, SpecDecodeCounters(0.0, 0.0, 0.0, (), a.created)), a)
        reset = reset or delta.reset
        drafts += delta.stats.drafts
        draft_tokens += delta.stats.draft_tokens
        accepted += delta.stats.accepted_tokens
        per_pos += [0.0] * (len(delta.stats.accepted_per_position) - len(per_pos))
        for i, v in enumerate(delta.stats.accepted_per_position):
            per_pos[i] += v
    return CounterDelta(SpecDecodeStats(drafts, draft_tokens, accepted, tuple(per_pos)), reset)
