"""Samples a window must never see: non-finite values, and counters that no live server can report.

* A non-finite gauge (NaN, +/-Inf) is dropped: the window reads that gauge as missing.
* A non-finite or negative counter (counters only grow from 0) makes the whole scrape unusable for windows: it is
  not windowed and not kept as a base, so the next good scrape is windowed against the last good one (a counter
  going to -1e6 and back is one longer window, never a negative or absurd rate).

* A malformed series -- a sample the page repeats (same name and labels; Prometheus refuses such a scrape), a
  per-position counter whose ``position`` is not a draft position, a histogram bucket whose ``le`` is not a
  number -- makes the scrape unusable the same way: which of two values is the counter, or what a bucket bounds,
  cannot be known.

Each problem is a fault kind with a one-line detail; the loop reports each kind once per episode.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from specwise.engines.vllm import METRICS as VLLM
from specwise.metrics.exposition import (
    MAX_DRAFT_POSITIONS,
    NON_FINITE,
    Labels,
    Sample,
    Scrape,
    bucket_bound,
    draft_position,
)
from specwise.monitor.rules import Finding
from specwise.monitor.window import COUNTER_SAMPLES, IMPOSSIBLE_COUNTER, INFO_SAMPLES, WINDOW_SAMPLES

# Every fault kind, as a closing line or a ``specwise_alert_active`` series names it; like an alert, a fault still
# reported when the loop stops makes its exit status 1 (as ``--once`` raises each as an alert).
MALFORMED_SERIES = "malformed_series"
FAULTS = {
    IMPOSSIBLE_COUNTER: "impossible counters",
    NON_FINITE: "non-finite samples",
    MALFORMED_SERIES: "malformed series",
}
__all__ = [
    "FAULTS",
    "IMPOSSIBLE_COUNTER",
    "MALFORMED_SERIES",
    "NON_FINITE",
    "Vetted",
    "fault_alert",
    "first_of_each_kind",
    "value_fault",
    "vet",
]


@dataclass(frozen=True)
class Vetted:
    scrape: Scrape | None  # None: a counter is impossible; do not window this scrape
    faults: tuple[tuple[str, str], ...] = ()  # (kind, detail)


def value_fault(name: str, value: float) -> str | None:
    """The fault kind of one value of the window sample ``name`` (a scraped sample, or a Prometheus answer for that
    family), or None when it is usable: non-finite (NaN, +/-Inf), or a counter below 0."""
    if not math.isfinite(value):
        return NON_FINITE
    return IMPOSSIBLE_COUNTER if value < 0 and name in COUNTER_SAMPLES else None


def fault_alert(kind: str, detail: str) -> Finding:
    """A fault in what a server reported (``impossible_counter``, ``non_finite_sample``) as a --once alert."""
    return Finding(kind, "warning", f"{kind.replace('_', ' ')}: {detail}")


def first_of_each_kind(faults: Iterable[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    """(kind, detail) once per kind, with the kind's first detail, in order of first appearance."""
    kinds: dict[str, str] = {}
    for kind, detail in faults:
        kinds.setdefault(kind, detail)
    return tuple(kinds.items())


def malformed(s: Sample, seen: set[tuple[str, Labels]]) -> str | None:
    """Why the window sample ``s`` is not a series a window can use (``seen``: the series before it on the page,
    to which it is added), or None."""
    if (s.name, s.labels) in seen:
        return f"{s.where} appears twice on the page (Prometheus refuses a scrape with duplicate series)"
    seen.add((s.name, s.labels))
    if s.name == VLLM.spec_accepted_per_pos and draft_position(s.label("position")) is None:
        return f"{s.where}: position {s.label('position')!r} is not a draft position (0 to {MAX_DRAFT_POSITIONS - 1})"
    if s.name.endswith("_bucket") and bucket_bound(s.label("le")) is None:
        return f"{s.where}: le {s.label('le')!r} is not a bucket bound (a number or +Inf)"
    return None


def vet(scrape: Scrape) -> Vetted:
    """The window's samples of ``scrape`` with bad gauges dropped; None for the scrape when a counter is bad or a
    series malformed."""
    kept: list[Sample] = []
    bad_gauge = bad_counter = negative = None
    seen: set[tuple[str, Labels]] = set()
    bad_series: str | None = None
    for s in scrape.samples:
        if s.name not in WINDOW_SAMPLES:
            continue
        if s.name in INFO_SAMPLES:  # read for a note only, whatever its value (V0's NaN gauge is no fault)
            kept.append(s)
            continue
        bad_series = bad_series or malformed(s, seen)
        kind = value_fault(s.name, s.value)
        if kind is None:
            kept.append(s)
        elif kind == IMPOSSIBLE_COUNTER:
            negative = negative or s
        elif s.name in COUNTER_SAMPLES:
            bad_counter = bad_counter or s
        else:
            bad_gauge = bad_gauge or s
    faults = []
    unusable = "scrape not windowed; the next good scrape is windowed against the last good one"
    if bad_gauge is not None or bad_counter is not None:
        where = bad_gauge or bad_counter
        assert where is not None
        consequence = "dropped" if where is bad_gauge else unusable
        faults.append((NON_FINITE, f"{where.where} = {where.value}: {consequence}"))
    if negative is not None:
        faults.append((IMPOSSIBLE_COUNTER, f"counter {negative.where} = {negative.value} < 0: {unusable}"))
    if bad_series is not None:
        faults.append((MALFORMED_SERIES, f"{bad_series}: {unusable}"))
    if bad_counter is not None or negative is not None or bad_series is not None:
        return Vetted(None, tuple(faults))
    if len(kept) == len(scrape.samples):
        return Vetted(scrape, tuple(faults))
    return Vetted(Scrape(tuple(kept), scrape.types), tuple(faults))
