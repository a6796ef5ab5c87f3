"""Several servers behind one router (a fleet): each replica's /metrics read on its own, then pooled.

Counters are per process, so a level's reading is taken per replica -- each one's deltas, each one's restart
detection -- and the deltas are summed into the pooled reading (vLLM's definitions over the sums: acceptance
rate = sum accepted / sum draft tokens, AL = 1 + sum accepted / sum drafts, per position from the summed
per-position counts). A replica whose own counters go back restarted; nothing is ever compared across replicas.

One ``--metrics-url`` that reaches several servers (the router's, say) is caught by the counters' birth times
(vLLM's ``..._created``): a second scrape a moment after the first whose counters were born at another time, and
*before* the first scrape was sent (so not a restart in between), or an after-scrape born before the
before-scrape's counters, are two servers, not a restart. So are scrapes whose spec-decode series carry other
labels (replicas serving under other model names): each would otherwise count as a series new to the level, its
whole lifetime taken for the level's deltas.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from specwise.acceptance.counts import SpecDecodeCounts
from specwise.contracts.bench import ReplicaReading, SpecDecodeReading
from specwise.errors import SpecwiseError, redact_url
from specwise.metrics import parse_exposition, spec_decode_counters
from specwise.metrics.spec_decode import SeriesKey, SpecDecodeCounters

MANY_SERVERS = (
    "metrics URL {url} reaches more than one server (its counters' birth times or labels differ between scrapes, "
    "so the counters are not one server's); give --metrics-url per replica"
)


@dataclass(frozen=True)
class LevelReading:
    """A level's speculation: pooled over the replicas, and each replica's own (empty for one server)."""

    spec_decode: SpecDecodeReading | None
    counter_reset: bool
    replicas: tuple[ReplicaReading, ...] = ()


def _counters(text: str | None) -> dict[SeriesKey, SpecDecodeCounters]:
    if text is None:
        return {}
    try:
        return spec_decode_counters(parse_exposition(text))
    except SpecwiseError:
        return {}


def _births(counters: dict[SeriesKey, SpecDecodeCounters]) -> dict[SeriesKey, float]:
    return {k: c.created for k, c in counters.items() if c.created is not None}


def _other_series(a: dict[SeriesKey, SpecDecodeCounters], b: dict[SeriesKey, SpecDecodeCounters]) -> bool:
    """Two scrapes with spec-decode series under other labels (another served model name, other engines): vLLM
    creates a server's labelled counters once, at start (``SpecDecodingProm``), so these are two servers."""
    return bool(a) and bool(b) and a.keys() != b.keys()


def born_elsewhere(before: str, probe: str, scraped_at: float) -> bool:
    """Whether ``probe`` (scraped right after ``before``, which was sent at Unix time ``scraped_at``) came from
    another server that was already up: other series, or birth times that differ and predate the first scrape."""
    b, p = _counters(before), _counters(probe)
    born_b, born_p = _births(b), _births(p)
    return _other_series(b, p) or any(
        k in born_p and born_p[k] != t and born_p[k] < scraped_at for k, t in born_b.items()
    )


def reaches_many_servers(before: str | None, probe: str | None, after: str | None) -> bool:
    """Whether scrapes of one URL came from different servers: ``probe`` (kept only when :func:`born_elsewhere`
    said so) has other series or birth times, or ``after`` has other series or counters born earlier than
    ``before``'s (a restart only makes them later)."""
    b, p, a = _counters(before), _counters(probe), _counters(after)
    born_b, born_p, born_a = _births(b), _births(p), _births(a)
    return (
        _other_series(b, p)
        or _other_series(b, a)
        or any(k in born_p and born_p[k] != t for k, t in born_b.items())
        or any(k in born_a and born_a[k] < t for k, t in born_b.items())
    )


def _pad(c: SpecDecodeCounts, width: int) -> SpecDecodeCounts:
    pos = c.accepted_per_position + (0.0,) * (width - len(c.accepted_per_position))
    return SpecDecodeCounts(c.drafts, c.draft_tokens, c.accepted_tokens, pos)


def pool_readings(readings: Sequence[SpecDecodeReading]) -> SpecDecodeReading | None:
    """The replicas' counter deltas summed; None when there is nothing to sum (gauges are readings, not counts)."""
    if not readings:
        return None
    counts = [r.counts for r in readings if r.counts is not None]
    if len(counts) == len(readings):
        width = max(len(c.accepted_per_position) for c in counts)
        return SpecDecodeReading(readings[0].engine, SpecDecodeCounts.total(width, [_pad(c, width) for c in counts]))
    drafted = [r.draft_tokens for r in readings if r.draft_tokens is not None]
    accepted = [r.accepted_tokens for r in readings if r.accepted_tokens is not None]
    if len(drafted) == len(accepted) == len(readings):
        d, a = sum(drafted), sum(accepted)
        rate = a / d if d > 0 else None
        return SpecDecodeReading(readings[0].engine, acceptance_rate=rate, draft_tokens=d, accepted_tokens=a)
    return None


def pooled_level(urls: Sequence[str], per_replica: Sequence[tuple[SpecDecodeReading | None, bool]]) -> LevelReading:
    """One server: its reading as is. Several: the pooled reading, and each replica's own."""
    if len(per_replica) <= 1:
        reading, reset = per_replica[0] if per_replica else (None, False)
        return LevelReading(reading, reset)
    replicas = tuple(
        ReplicaReading(redact_url(url), reading, reset) for url, (reading, reset) in zip(urls, per_replica, strict=True)
    )
    present = [r.spec_decode for r in replicas if r.spec_decode is not None]
    return LevelReading(pool_readings(present), any(r.counter_reset for r in replicas), replicas)


RESTART_SIGN = "its spec-decode counters were born again (new _created) or went back"


def restart_note(reading: LevelReading, urls: Sequence[str]) -> list[str]:
    """What a counter reset means, said for the replica that restarted (never the fleet as a whole). A restart is
    seen by new ``_created`` birth times (the counts need not go back: a busy server's may pass the old ones), or,
    without birth times, by counts that went back."""
    if not reading.counter_reset:
        return []
    if not reading.replicas:
        return [f"the server restarted during this level ({RESTART_SIGN}); acceptance counts only since the restart"]
    return [
        f"replica {i} ({r.url}): it restarted during this level ({RESTART_SIGN}); "
        "its acceptance counts only since the restart"
        for i, r in enumerate(reading.replicas)
        if r.counter_reset
    ]
