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

from specwise.acceptance.counts import SpecDecodeCounts
from specwise.engines.vllm import METRICS as VLLM
from specwise.metrics.exposition import Scrape

SeriesKey = tuple[str, str]  # (model_name, engine)


@dataclass(frozen=True)
class SpecDecodeCounters(SpecDecodeCounts):
    """Cumulative counter values of one engine's series at one scrape: the counts since the server started."""

    created: float | None = None  # vLLM's ..._num_drafts_created: the counter's birth (Unix time)


@dataclass(frozen=True)
class CounterDelta:
    stats: SpecDecodeCounts
    reset: bool


def _series(labels: tuple[tuple[str, str], ...]) -> SeriesKey:
    d = dict(labels)
    return d.get("model_name", ""), d.get("engine", "")


def spec_decode_counters(scrape: Scrape) -> dict[SeriesKey, SpecDecodeCounters]:
    """vLLM's spec-decode counters per (model_name, engine); empty when the server does not speculate."""
    totals: dict[SeriesKey, dict[str, float]] = {}
    per_pos: dict[SeriesKey, dict[int, float]] = {}
    created = {_series(s.labels): s.value for s in scrape.named(VLLM.spec_drafts_created)}
    for field_name, metric in (
        ("drafts", VLLM.spec_drafts),
        ("draft_tokens", VLLM.spec_draft_tokens),
        ("accepted_tokens", VLLM.spec_accepted),
    ):
        for s in scrape.named(metric):
            totals.setdefault(_series(s.labels), {})[field_name] = s.value
    for s in scrape.named(VLLM.spec_accepted_per_pos):
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
        return CounterDelta(SpecDecodeCounts(after.drafts, after.draft_tokens, after.accepted_tokens, a_pos), True)
    return CounterDelta(
        SpecDecodeCounts(
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
    return CounterDelta(SpecDecodeCounts(drafts, draft_tokens, accepted, tuple(per_pos)), reset)
