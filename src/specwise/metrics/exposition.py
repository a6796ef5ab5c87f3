"""Prometheus text exposition -> typed samples, via ``prometheus_client``'s parser."""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property

from prometheus_client.parser import text_string_to_metric_families

from specwise.errors import SpecwiseError

Labels = tuple[tuple[str, str], ...]


def labels_key(labels: Mapping[str, str]) -> Labels:
    return tuple(sorted(labels.items()))


@dataclass(frozen=True)
class Sample:
    name: str
    labels: Labels
    value: float

    def label(self, key: str) -> str | None:
        for k, v in self.labels:
            if k == key:
                return v
        return None

    @property
    def where(self) -> str:
        """``name{label="value",...}``, as a fault names the sample."""
        labels = ",".join(f'{k}="{v}"' for k, v in self.labels)
        return f"{self.name}{{{labels}}}" if labels else self.name


@dataclass(frozen=True)
class Scrape:
    """One scrape: every sample, and each family's declared type (``counter``, ``gauge``, ...)."""

    samples: tuple[Sample, ...]
    types: Mapping[str, str] = field(default_factory=dict)

    @cached_property
    def _by_name(self) -> dict[str, list[Sample]]:
        index: dict[str, list[Sample]] = {}
        for s in self.samples:
            index.setdefault(s.name, []).append(s)
        return index

    @cached_property
    def derived(self) -> dict[str, object]:
        """Values readers derive from this scrape, kept with it (a scrape is windowed as the end of one window and
        the start of the next: each is derived once)."""
        return {}

    def named(self, name: str) -> list[Sample]:
        """Samples with exactly this name (never a prefix match)."""
        return list(self._by_name.get(name, ()))

    def has(self, name: str) -> bool:
        return name in self._by_name


# vLLM labels a per-position counter ``position="0"`` .. ``num_speculative_tokens - 1``
# (``vllm/v1/spec_decode/metrics.py``, SpecDecodingProm); no config drafts this many tokens a step. A label past it,
# or one that is not a decimal number, is not a position (and a table as long as its value is never built).
MAX_DRAFT_POSITIONS = 1024


def draft_position(label: str | None) -> int | None:
    """A ``position`` label's draft position, or None when it is not one: absent, not plain ASCII digits as ``str(i)``
    writes them (``int`` takes ``"²"``, ``" 1"`` and ``"01"``, vLLM writes none) or not below
    :data:`MAX_DRAFT_POSITIONS`."""
    if label is None or not (label.isascii() and label.isdigit()) or len(label) > 6 or label[:1] == "0" != label:
        return None  # "01" is no label vLLM writes: it would merge with "1"
    position = int(label)
    return position if position < MAX_DRAFT_POSITIONS else None


def bucket_bound(label: str | None) -> float | None:
    """A histogram bucket's ``le`` label as its upper bound (``+Inf`` as infinity), or None when it is not a number
    (the Prometheus text format requires one: a bucket without it is no bucket)."""
    if label is None:
        return None
    try:
        bound = float(label)
    except ValueError:
        return None
    return None if math.isnan(bound) else bound


# The fault of a NaN or infinite sample among those a reader uses (``monitor``: :mod:`specwise.monitor.vet`;
# ``bench``: the spec-decode samples of a level's scrapes): never a number to compute with.
NON_FINITE = "non_finite_sample"


def first_non_finite(scrape: Scrape, names: Collection[str]) -> Sample | None:
    """The first sample named in ``names`` whose value is NaN or infinite, or None."""
    return next((s for s in scrape.samples if s.name in names and not math.isfinite(s.value)), None)


def parse_exposition(text: str, source: str = "metrics") -> Scrape:
    """Parse exposition text; anything the parser rejects is one :class:`SpecwiseError` line."""
    if not text.strip():
        raise SpecwiseError(f"{source}: empty metrics response")
    try:
        families = list(text_string_to_metric_families(text))
        samples = _samples(families)
    except (ValueError, TypeError, IndexError, KeyError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise SpecwiseError(f"{source}: not valid Prometheus exposition text ({first[:200]})") from None
    types = {f.name: f.type for f in families}
    return Scrape(tuple(samples), types)


def _samples(families: Iterable[object]) -> list[Sample]:
    out = []
    for family in families:
        for s in family.samples:  # type: ignore[attr-defined]
            value = float(s.value)
            out.append(Sample(str(s.name), labels_key(s.labels), value))
    return out
