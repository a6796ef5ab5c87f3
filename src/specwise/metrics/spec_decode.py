"""Speculative-decoding statistics from vLLM's counters, with vLLM's definitions.

* acceptance rate = accepted tokens / draft tokens
* mean acceptance length = 1 + accepted tokens / drafts (includes the bonus token; vLLM PR #17908)
* per-position rate i = accepted_per_pos[i] / drafts; consistency: AL = 1 + sum of per-position rates

PromQL for the same over a window (from vLLM's ``v1/spec_decode/metrics.py`` docstring)::

    rate(vllm:spec_decode_num_accepted_tokens_total[5m]) / rate(vllm:spec_decode_num_draft_tokens_total[5m])
    1 + rate(vllm:spec_decode_num_accepted_tokens_total[5m]) / rate(vllm:spec_decode_num_drafts_total[5m])

Counters only grow while a server lives. A restart shows as a new ``..._created`` timestamp (vLLM exports
one per counter: the series' birth, Unix time) or, where a server exports no ``_created``, as a counter going
*down*. Then, like Prometheus' ``increase()``, the delta is the new value (counted since the restart) and the
result says ``reset=True`` -- never a negative count. With ``_created`` present and unchanged there was no
restart: counters going back are a fault of the server, not a restart. So is any window in which more tokens
were accepted than drafted (acceptance rate > 1) or a position accepted more often than there were drafts: the
result carries an ``impossible`` detail and its counts must not be used (the monitor reports an
``impossible_counter`` fault).

vLLM's V0 engine (to 0.9, ``vllm/engine/metrics.py``) exports the draft-token and accepted-token counters under
the same names but no drafts counter: its series are read with ``drafts_counted=False`` (drafts 0), so the
acceptance rate is computed and AL and the per-position rates are not (None / empty), never made up.
"""

from __future__ import annotations

from dataclasses import dataclass

from specwise.acceptance.counts import SpecDecodeCounts
from specwise.engines.vllm import METRICS as VLLM
from specwise.metrics.exposition import Scrape, draft_position

# (model_name, engine, every other label but position): one series of a page. A page that federates several servers
# (an ``instance`` label) has a series per server, summed like a data-parallel server's engines, never one
# overwriting another.
SeriesKey = tuple[str, str, tuple[tuple[str, str], ...]]


@dataclass(frozen=True)
class SpecDecodeCounters(SpecDecodeCounts):
    """Cumulative counter values of one engine's series at one scrape: the counts since the server started."""

    created: float | None = None  # vLLM's ..._num_drafts_created: the counter's birth (Unix time)
    drafts_counted: bool = True  # False: a V0 page (no drafts counter); ``drafts`` is 0, not a count


@dataclass(frozen=True)
class CounterDelta:
    stats: SpecDecodeCounts
    reset: bool
    impossible: str | None = None  # why these counts cannot be right (then they must not be used)
    drafts_counted: bool = True  # False: a V0 page (no drafts counter); ``stats.drafts`` is 0, not a count


V0_NOTE = (
    f"vLLM V0 metric names (draft and accepted token counters, no {VLLM.spec_drafts}): acceptance rate only; "
    "mean acceptance length and per-position rates need the drafts count"
)


def _series(labels: tuple[tuple[str, str], ...]) -> SeriesKey:
    d = dict(labels)
    rest = tuple((k, v) for k, v in labels if k not in ("model_name", "engine", "position"))
    return d.get("model_name", ""), d.get("engine", ""), rest


def spec_decode_counters(scrape: Scrape) -> dict[SeriesKey, SpecDecodeCounters]:
    """vLLM's spec-decode counters per (model_name, engine); empty when the server does not speculate. A series
    with draft and accepted tokens but no drafts counter (vLLM V0) has ``drafts_counted=False``."""
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
        position = draft_position(s.label("position"))
        if position is not None:  # another label is no position (monitor's vet reports a malformed series)
            per_pos.setdefault(_series(s.labels), {})[position] = s.value
    out = {}
    for key, t in totals.items():
        if {"draft_tokens", "accepted_tokens"} <= set(t):
            positions = per_pos.get(key, {})
            width = max(positions) + 1 if positions else 0
            per_position = tuple(positions.get(i, 0.0) for i in range(width))
            counted = "drafts" in t
            out[key] = SpecDecodeCounters(
                t.get("drafts", 0.0), t["draft_tokens"], t["accepted_tokens"], per_position, created.get(key), counted
            )
    return out


def _impossible(stats: SpecDecodeCounts) -> str | None:
    """Why counts over a window cannot be right, or None: vLLM accepts at most the tokens it drafted, and each
    position at most once per draft (``vllm/v1/spec_decode/metrics.py``)."""
    if stats.accepted_tokens > stats.draft_tokens:
        return f"{stats.accepted_tokens:g} tokens accepted of {stats.draft_tokens:g} drafted (acceptance rate > 1)"
    for i, v in enumerate(stats.accepted_per_position):
        if v > stats.drafts:
            return f"position {i} accepted {v:g} times in {stats.drafts:g} drafts"
    return None


_FIELDS = (VLLM.spec_drafts, VLLM.spec_draft_tokens, VLLM.spec_accepted)


def spec_decode_delta(before: SpecDecodeCounters, after: SpecDecodeCounters) -> CounterDelta:
    """Counts between two scrapes of one series. A restart is a changed ``_created`` (without one on both sides:
    any counter going down); counters going down with ``_created`` unchanged, or counts no server can produce
    (:func:`_impossible`), make the delta ``impossible``."""
    fields = [
        (before.drafts, after.drafts),
        (before.draft_tokens, after.draft_tokens),
        (before.accepted_tokens, after.accepted_tokens),
    ]
    width = max(len(before.accepted_per_position), len(after.accepted_per_position))
    b_pos = before.accepted_per_position + (0.0,) * (width - len(before.accepted_per_position))
    a_pos = after.accepted_per_position + (0.0,) * (width - len(after.accepted_per_position))
    names = [*_FIELDS, *(f'{VLLM.spec_accepted_per_pos}{{position="{i}"}}' for i in range(width))]
    pairs = [*fields, *zip(b_pos, a_pos, strict=True)]
    back = [(name, b, a) for name, (b, a) in zip(names, pairs, strict=True) if a < b]
    known = before.created is not None and after.created is not None
    reset = after.created != before.created if known else bool(back)
    if reset:  # the server restarted: everything counts from zero again
        stats = SpecDecodeCounts(after.drafts, after.draft_tokens, after.accepted_tokens, a_pos)
        return CounterDelta(stats, True, _impossible(stats), after.drafts_counted)
    counted = before.drafts_counted and after.drafts_counted
    stats = SpecDecodeCounts(
        after.drafts - before.drafts,
        after.draft_tokens - before.draft_tokens,
        after.accepted_tokens - before.accepted_tokens,
        tuple(a - b for b, a in zip(b_pos, a_pos, strict=True)),
    )
    if back:
        name, b, a = back[0]
        went_back = f"{name} went back ({b:g} -> {a:g}) with _created unchanged: not a restart"
        return CounterDelta(stats, False, went_back, counted)
    return CounterDelta(stats, False, _impossible(stats), counted)


def total_delta(
    before: dict[SeriesKey, SpecDecodeCounters], after: dict[SeriesKey, SpecDecodeCounters]
) -> CounterDelta | None:
    """Deltas of every engine series summed (a reset in any series flags the total, so does an impossible one,
    named, and a series without a drafts counter: then the summed drafts are 0, not a count); None without
    series."""
    if not after:
        return None
    reset = False
    counted = True
    impossible: str | None = None
    drafts = draft_tokens = accepted = 0.0
    per_pos: list[float] = []
    for key, a in after.items():
        delta = spec_decode_delta(
            before.get(key, SpecDecodeCounters(0.0, 0.0, 0.0, (), a.created, a.drafts_counted)), a
        )
        reset = reset or delta.reset
        counted = counted and delta.drafts_counted
        impossible = impossible or (delta.impossible and f"{_name(key)}: {delta.impossible}")
        drafts += delta.stats.drafts
        draft_tokens += delta.stats.draft_tokens
        accepted += delta.stats.accepted_tokens
        per_pos += [0.0] * (len(delta.stats.accepted_per_position) - len(per_pos))
        for i, v in enumerate(delta.stats.accepted_per_position):
            per_pos[i] += v
    if not counted:  # some series' drafts are unknown: a sum of the others' would be a wrong count
        drafts = 0.0
    return CounterDelta(SpecDecodeCounts(drafts, draft_tokens, accepted, tuple(per_pos)), reset, impossible, counted)


def _name(key: SeriesKey) -> str:
    return ",".join(f'{k}="{v}"' for k, v in (("model_name", key[0]), ("engine", key[1]), *key[2]))
