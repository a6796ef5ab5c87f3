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

A page with draft-token and accepted-token counters but no drafts counter is vLLM V1 before 0.8.5 (its
``SpecDecodingProm`` had only those two): its series are read with ``drafts_counted=False`` (drafts 0), so the
acceptance rate is computed and AL and the per-position rates are not (None / empty), never made up.

vLLM's V0 engine (to 0.9, ``vllm/engine/metrics.py``) exports the same two counters, but ``PrometheusStatLogger.log``
adds the *lifetime* totals to them at each local log interval (``self._log_counter(
counter_spec_decode_num_accepted_tokens, spec_decode_metrics.accepted_tokens)``, whose value
``vllm/spec_decode/metrics.py`` copies from the rejection sampler's running sums): their increase over a window is a
sum of lifetime totals, not the window's tokens (vLLM 0.8.5: a window at acceptance 0.2 after a long run at 0.8 reads
0.77). A V0 series is known by what only V0 exports beside them (``vllm:spec_decode_draft_acceptance_rate``,
``vllm:spec_decode_num_emitted_tokens_total``) and is not read as counts (:func:`spec_decode_counters` leaves it
out); what it does tell is its acceptance rate since the server started, the gauge (:func:`v0_acceptance_note`).
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
    drafts_counted: bool = True  # False: no drafts counter (vLLM V1 before 0.8.5); ``drafts`` is 0, not a count


@dataclass(frozen=True)
class CounterDelta:
    stats: SpecDecodeCounts
    reset: bool
    impossible: str | None = None  # why these counts cannot be right (then they must not be used)
    drafts_counted: bool = True  # False: no drafts counter (vLLM V1 before 0.8.5); ``stats.drafts`` is 0, not a count


NO_DRAFTS_NOTE = (
    f"draft and accepted token counters but no {VLLM.spec_drafts} (vLLM V1 before 0.8.5): acceptance rate only; "
    "mean acceptance length and per-position rates need the drafts count"
)
V0_NOTE = (
    "vLLM V0 metrics: its spec-decode counters add the lifetime totals at every log interval (vLLM's "
    "vllm/engine/metrics.py), so no window's acceptance can be read from them; a vLLM that runs the method on its V1 "
    "engine measures it"
)
# what only vLLM V0 exports beside its draft and accepted token counters: how its series are told from V1's
V0_ONLY = (VLLM.spec_acceptance_rate_v0, VLLM.spec_emitted_v0)


def v0_series(scrape: Scrape) -> list[SeriesKey]:
    """The page's vLLM V0 spec-decode series (:data:`V0_ONLY`), sorted."""
    return sorted({_series(s.labels) for name in V0_ONLY for s in scrape.named(name)})


def v0_acceptance_note(scrape: Scrape) -> str | None:
    """What the vLLM V0 series of a page say of acceptance, or None where there are none: that a window's
    acceptance cannot be read from their counters, and the acceptance rate since their server started (the mean of
    the page's ``vllm:spec_decode_draft_acceptance_rate`` gauges, one per model; absent, NaN -- as V0 sets it before
    any draft -- or out of [0, 1]: not given). Beside V1 series (a federated page) it names the V0 ones left out."""
    v0 = v0_series(scrape)
    if not v0:
        return None
    rates = [s.value for s in scrape.named(VLLM.spec_acceptance_rate_v0) if 0.0 <= s.value <= 1.0]
    since_start = (
        f"; its acceptance rate since the server started ({VLLM.spec_acceptance_rate_v0}): "
        f"{sum(rates) / len(rates):.3f}"
        if rates
        else ""
    )
    others = {_series(s.labels) for s in scrape.named(VLLM.spec_draft_tokens)} - set(v0)
    left_out = f" ({', '.join(_name(key) for key in v0)} left out of the window's counts)" if others else ""
    return V0_NOTE + left_out + since_start


def _series(labels: tuple[tuple[str, str], ...]) -> SeriesKey:
    d = dict(labels)
    rest = tuple((k, v) for k, v in labels if k not in ("model_name", "engine", "position"))
    return d.get("model_name", ""), d.get("engine", ""), rest


def spec_decode_counters(scrape: Scrape) -> dict[SeriesKey, SpecDecodeCounters]:
    """vLLM's spec-decode counters per (model_name, engine); empty when the server does not speculate. A series
    with draft and accepted tokens but no drafts counter (vLLM V1 before 0.8.5) has ``drafts_counted=False``; a
    vLLM V0 series (:func:`v0_series`) is left out: its counters are no counts (module docstring)."""
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
    v0 = set(v0_series(scrape))
    for key, t in totals.items():
        if key in v0:
            continue
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
    if reset:  # the server restarted: everything counts from zero again, over the new server's positions only
        stats = SpecDecodeCounts(after.drafts, after.draft_tokens, after.accepted_tokens, after.accepted_per_position)
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
    return ",".join(f'{k}="{v}"' for k, v in (("model_name", key[0]), ("engine", key[1]), *key[2]) if v)
