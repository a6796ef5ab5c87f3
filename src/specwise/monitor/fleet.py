"""A fleet's spec decoding from Prometheus (pure): the PromQL the monitor sends -- one query per metric family,
``increase()`` over the window evaluated on the server, grouped ``by (model_name, instance)`` -- the parsing of
the answers (the HTTP API's ``vector`` and ``matrix`` results), each replica's window, and the per-model roll-up.

Roll-up: the counters' increases are summed over a model's replicas first and the rates derived from the sums,
with vLLM's definitions (``vllm/v1/spec_decode/metrics.py``; :class:`~specwise.acceptance.counts.SpecDecodeCounts`):
acceptance rate = accepted tokens / draft tokens, AL = 1 + accepted tokens / drafts -- never a mean of per-replica
rates, which would weigh an idle replica like a busy one. Issue 15 ("Beyond one server").

``increase()`` is Prometheus' own: counter resets handled, and extrapolated to the window's edges, so counts are
not integers. The extrapolation scales a replica's counters alike (they share its scrape timestamps), so its
acceptance rate and AL are its counter-delta ratios -- except for a series younger than the window: Prometheus
stops extrapolating at a counter's zero point (``extrapolatedRate`` in promql/functions.go), which depends on each
counter's own first value, so a replica started just before the window is off by a few percent (review s47a F6:
0.1051 for 0.1000 on a 1-minute window of 15 s scrapes).

The answers are vetted by the rules ``--url`` applies to a scrape (:mod:`specwise.monitor.vet`,
:func:`specwise.metrics.spec_decode.spec_decode_delta`): a non-finite or negative increase, or more tokens accepted
than drafted, is a fault of that replica (``non_finite_sample`` / ``impossible_counter``); a replica missing one of
the spec-decode families gets a note. Either way it stays listed, without acceptance, and is left out of the roll-up.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from specwise.acceptance.counts import SpecDecodeCounts
from specwise.engines.vllm import METRICS as VLLM
from specwise.errors import SpecwiseError
from specwise.metrics.exposition import draft_position
from specwise.metrics.spec_decode import NO_DRAFTS_NOTE, V0_NOTE, SpecDecodeCounters, spec_decode_delta
from specwise.monitor.vet import IMPOSSIBLE_COUNTER, first_of_each_kind, value_fault
from specwise.monitor.window import WindowStats

BY = ("model_name", "instance")


@dataclass(frozen=True)
class Family:
    """One metric family the monitor reads: a counter (its ``increase()`` over the window) or a gauge (its latest
    value), summed ``by (model_name, instance)`` plus ``extra_by``."""

    key: str
    metric: str
    counter: bool = True
    extra_by: tuple[str, ...] = ()


FAMILIES = (
    Family("drafts", VLLM.spec_drafts),
    Family("draft_tokens", VLLM.spec_draft_tokens),
    Family("accepted_tokens", VLLM.spec_accepted),
    Family("accepted_per_position", VLLM.spec_accepted_per_pos, extra_by=("position",)),
    Family("generation_tokens", VLLM.generation_tokens),
    Family("requests", VLLM.request_success),
    Family("running", VLLM.running, counter=False),
    Family("waiting", VLLM.waiting, counter=False),
    Family("emitted_v0", VLLM.spec_emitted_v0),  # only vLLM V0 exports it: tells its replicas (no counts)
)
METRIC_OF = {f.key: f.metric for f in FAMILIES}
SPEC_KEYS = ("drafts", "draft_tokens", "accepted_tokens")  # a replica needs all three for its acceptance...
NO_DRAFTS_KEYS = ("draft_tokens", "accepted_tokens")  # ...but vLLM V1 before 0.8.5 has no drafts counter: its rate only
LEFT_OUT = "acceptance not computed; left out of the roll-up"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')


def matchers(instances: Sequence[str] = ()) -> str:
    """A label matcher restricting the queries to these instances (all when empty)."""
    if not instances:
        return ""
    alternatives = "|".join(_escape(_regex_quote(i)) for i in instances)
    return f'instance=~"{alternatives}"'


def _regex_quote(text: str) -> str:
    """``text`` as a literal inside a PromQL (RE2) regular expression."""
    return "".join("\\" + c if c in r".^$*+?()[]{}|\\" else c for c in text)


def duration(seconds: float) -> str:
    """A PromQL range duration in whole milliseconds (``1500ms``), the finest unit every Prometheus accepts."""
    ms = max(1, round(seconds * 1000))
    return f"{ms // 1000}s" if ms % 1000 == 0 else f"{ms}ms"


def family_query(family: Family, window_s: float, where: str = "") -> str:
    """``sum by (model_name, instance[, position]) (increase(METRIC{where}[WINDOW]))`` (gauges: no increase)."""
    by = ", ".join((*BY, *family.extra_by))
    series = f"{family.metric}{{{where}}}" if where else family.metric
    inner = f"increase({series}[{duration(window_s)}])" if family.counter else series
    return f"sum by ({by}) ({inner})"


@dataclass(frozen=True)
class Point:
    """One series of a query answer at one time."""

    labels: tuple[tuple[str, str], ...]
    at_s: float
    value: float

    def label(self, name: str) -> str:
        return dict(self.labels).get(name, "")


def _sample(labels: tuple[tuple[str, str], ...], pair: object, where: str) -> Point:
    try:
        if not isinstance(pair, list) or len(pair) != 2:
            raise TypeError
        return Point(labels, float(pair[0]), float(pair[1]))
    except (TypeError, ValueError):
        raise SpecwiseError(f"{where}: malformed sample {str(pair)[:60]!r}") from None


def parse_answer(body: object, where: str) -> tuple[Point, ...]:
    """The points of a Prometheus HTTP API answer (``/api/v1/query``: a vector; ``/api/v1/query_range``: a
    matrix), non-finite values (NaN, +/-Inf) included: :func:`replica_windows` reports them. ``where`` names the
    server in errors."""
    if not isinstance(body, dict) or body.get("status") != "success":
        error = body.get("error") if isinstance(body, dict) else None
        raise SpecwiseError(f"{where}: Prometheus query failed: {error or 'not an API answer'}")
    data = body.get("data")
    kind = data.get("resultType") if isinstance(data, dict) else None
    rows = data.get("result") if isinstance(data, dict) else None
    if kind not in ("vector", "matrix") or not isinstance(rows, list):
        raise SpecwiseError(f"{where}: expected a vector or matrix answer, got {kind!r}")
    out: list[Point] = []
    for row in rows:
        metric = row.get("metric") if isinstance(row, dict) else None
        if not isinstance(metric, dict):
            raise SpecwiseError(f"{where}: malformed series {str(row)[:60]!r}")
        labels = tuple(sorted((str(k), str(v)) for k, v in metric.items()))
        pairs = [row.get("value")] if kind == "vector" else row.get("values")
        if not isinstance(pairs, list):
            raise SpecwiseError(f"{where}: malformed series {str(row)[:60]!r}")
        out += [_sample(labels, pair, where) for pair in pairs]
    return tuple(out)


@dataclass(frozen=True)
class ReplicaWindow:
    """One replica (``instance``) serving one ``model_name`` over the window: counter increases, latest gauges.
    ``counts`` is None when its spec-decode increases cannot be used (``faults``: (kind, detail) as
    :class:`~specwise.monitor.window.WindowStats` carries them; ``notes``: a missing family)."""

    model_name: str
    instance: str
    counts: SpecDecodeCounts | None
    generation_tokens: float | None = None
    requests: float | None = None
    running: float | None = None
    waiting: float | None = None
    faults: tuple[tuple[str, str], ...] = ()
    notes: tuple[str, ...] = ()
    drafts_counted: bool = True  # False: no drafts counter (vLLM V1 before 0.8.5): ``counts.drafts`` is 0, not a count
    missing_series: bool = False  # a spec-decode family it needs did not answer (named in ``notes``)

    @property
    def acceptance_rate(self) -> float | None:
        return self.counts.acceptance_rate if self.counts is not None else None

    @property
    def mean_acceptance_length(self) -> float | None:
        return self.counts.mean_acceptance_length if self.counts is not None else None

    def to_json(self) -> dict[str, object]:
        c = self.counts
        return {
            "model_name": self.model_name,
            "instance": self.instance,
            "drafts": c.drafts if c and self.drafts_counted else None,
            "draft_tokens": c.draft_tokens if c else None,
            "accepted_tokens": c.accepted_tokens if c else None,
            "accepted_per_position": list(c.accepted_per_position) if c else [],
            "acceptance_rate": self.acceptance_rate,
            "mean_acceptance_length": self.mean_acceptance_length,
            "per_position_acceptance": list(c.per_position_rates) if c else [],
            "generation_tokens": self.generation_tokens,
            "requests": self.requests,
            "running": self.running,
            "waiting": self.waiting,
            "faults": [list(f) for f in self.faults],
            "notes": list(self.notes),
        }


def pooled(counts: Sequence[SpecDecodeCounts], drafts_counted: bool = True) -> SpecDecodeCounts:
    """The counts summed (per position too); rates derived from the sums. ``drafts_counted`` False (vLLM V1 before 0.8.5
    replica among them): drafts 0 and no per-position counts, as a sum of the others' would be a wrong count."""
    if not drafts_counted:
        return SpecDecodeCounts(0.0, sum(c.draft_tokens for c in counts), sum(c.accepted_tokens for c in counts), ())
    width = max((len(c.accepted_per_position) for c in counts), default=0)
    per_pos = [0.0] * width
    for c in counts:
        for i, v in enumerate(c.accepted_per_position):
            per_pos[i] += v
    return SpecDecodeCounts(
        sum(c.drafts for c in counts),
        sum(c.draft_tokens for c in counts),
        sum(c.accepted_tokens for c in counts),
        tuple(per_pos),
    )


def _sum_opt(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) if present else None


def _by_replica(answers: Mapping[str, Sequence[Point]]) -> dict[tuple[str, str], dict[str, list[Point]]]:
    """Each (model_name, instance)'s points per family key."""
    out: dict[tuple[str, str], dict[str, list[Point]]] = {}
    for key, points in answers.items():
        for p in points:
            if key == "accepted_per_position" and draft_position(p.label("position")) is None:
                continue
            out.setdefault((p.label("model_name"), p.label("instance")), {}).setdefault(key, []).append(p)
    return out


def _point_fault(key: str, p: Point) -> tuple[str, str] | None:
    """The fault of one answer's value by ``--url``'s rule for that sample (:func:`value_fault`), or None."""
    kind = value_fault(METRIC_OF[key], p.value)
    if kind is None:
        return None
    labels = ",".join(f'{k}="{v}"' for k, v in p.labels)
    consequence = LEFT_OUT if key in (*SPEC_KEYS, "accepted_per_position") else "dropped"
    return kind, f"{METRIC_OF[key]}{{{labels}}} = {p.value:g} over the window: {consequence}"


def _impossible(counts: SpecDecodeCounts) -> str | None:
    """Why increases no server can produce (more accepted than drafted, a position accepted more often than there
    were drafts), or None: ``--url``'s rule, an increase being the delta from zero."""
    zero = SpecDecodeCounters(0.0, 0.0, 0.0, ())
    c = SpecDecodeCounters(counts.drafts, counts.draft_tokens, counts.accepted_tokens, counts.accepted_per_position)
    return spec_decode_delta(zero, c).impossible


def _spec_counts(points: Mapping[str, Sequence[Point]]) -> SpecDecodeCounts:
    """The spec-decode increases of one replica whose spec families all answered (one with no drafts counter: drafts
    0, no per-position counts; vLLM V1 before 0.8.5 exports neither)."""
    if "drafts" not in points:
        return SpecDecodeCounts(0.0, points["draft_tokens"][-1].value, points["accepted_tokens"][-1].value, ())
    per_position = points.get("accepted_per_position", ())  # positions checked by _by_replica
    positions = {pos: p.value for p in per_position if (pos := draft_position(p.label("position"))) is not None}
    width = max(positions) + 1 if positions else 0
    drafts, draft_tokens, accepted = (points[k][-1].value for k in SPEC_KEYS)
    return SpecDecodeCounts(drafts, draft_tokens, accepted, tuple(positions.get(i, 0.0) for i in range(width)))


def _replica(model_name: str, instance: str, points: Mapping[str, Sequence[Point]]) -> ReplicaWindow:
    """One replica's window; its spec-decode counts only when every spec family answered usable values (draft and
    accepted tokens without a drafts counter, vLLM V1 before 0.8.5: its acceptance rate, with
    :data:`NO_DRAFTS_NOTE`). A vLLM V0 replica (its emitted-tokens counter) has none: its counters add lifetime
    totals (:data:`V0_NOTE`)."""
    found = [(k, f) for k, ps in points.items() for p in ps if (f := _point_fault(k, p)) is not None]
    bad = {k for k, _ in found}
    faults = [f for _, f in found]
    v0 = "emitted_v0" in points
    no_drafts = "drafts" not in points and set(NO_DRAFTS_KEYS) <= set(points) and not v0
    missing = tuple(
        f"no {METRIC_OF[k]} series over the window: {LEFT_OUT}"
        for k in SPEC_KEYS
        if k not in points and not (no_drafts or v0)
    )
    notes = missing + ((NO_DRAFTS_NOTE,) if no_drafts else ()) + ((f"{V0_NOTE}: {LEFT_OUT}",) if v0 else ())
    unusable = v0 or missing or bad & {*SPEC_KEYS, "accepted_per_position"}
    counts = None if unusable else _spec_counts(points)
    impossible = _impossible(counts) if counts is not None else None
    if impossible is not None:
        faults.append((IMPOSSIBLE_COUNTER, f"{impossible}: {LEFT_OUT}"))
        counts = None

    def extra(key: str) -> float | None:
        return points[key][-1].value if key in points and key not in bad else None

    return ReplicaWindow(
        model_name,
        instance,
        counts,
        generation_tokens=extra("generation_tokens"),
        requests=extra("requests"),
        running=extra("running"),
        waiting=extra("waiting"),
        faults=first_of_each_kind(faults),  # one detail per kind, as vet reports a scrape's
        notes=notes,
        drafts_counted=not no_drafts,
        missing_series=bool(missing),
    )


def replica_windows(answers: Mapping[str, Sequence[Point]]) -> tuple[ReplicaWindow, ...]:
    """Each (model_name, instance) with a spec-decode counter in the window, from one answer per family key
    (:data:`FAMILIES`), sorted by model then instance; one whose counts cannot be used is kept, with its fault or
    note and no counts (never silently dropped)."""
    by_replica = _by_replica(answers)
    return tuple(_replica(*key, by_replica[key]) for key in sorted(by_replica) if set(SPEC_KEYS) & set(by_replica[key]))


@dataclass(frozen=True)
class ModelRollup:
    """One model_name across its replicas: pooled counts (of ``replicas`` replicas; ``left_out``: the instances
    whose counts could not be used) and the replicas with the lowest acceptance first."""

    model_name: str
    replicas: int
    counts: SpecDecodeCounts
    worst: tuple[ReplicaWindow, ...]
    left_out: tuple[str, ...] = ()
    drafts_counted: bool = True  # False: one with no drafts counter among them (drafts unknown; the rate only)

    def to_json(self) -> dict[str, object]:
        c = self.counts
        return {
            "model_name": self.model_name,
            "replicas": self.replicas,
            "left_out": list(self.left_out),
            "drafts": c.drafts if self.drafts_counted else None,
            "draft_tokens": c.draft_tokens,
            "accepted_tokens": c.accepted_tokens,
            "acceptance_rate": c.acceptance_rate,
            "mean_acceptance_length": c.mean_acceptance_length,
            "per_position_acceptance": list(c.per_position_rates),
            "worst": [
                {
                    "instance": r.instance,
                    "acceptance_rate": r.acceptance_rate,
                    "mean_acceptance_length": r.mean_acceptance_length,
                }
                for r in self.worst
            ],
        }


def _badness(r: ReplicaWindow) -> tuple[float, float, str]:
    """Sort key: lowest acceptance rate, then lowest AL; replicas without drafts last."""
    rate, al = r.acceptance_rate, r.mean_acceptance_length
    return (math.inf if rate is None else rate, math.inf if al is None else al, r.instance)


def usable_counts(rows: Sequence[ReplicaWindow]) -> list[SpecDecodeCounts]:
    """The spec-decode counts of the replicas whose counts can be used (no fault, no missing family)."""
    return [r.counts for r in rows if r.counts is not None]


def drafts_counted(rows: Sequence[ReplicaWindow]) -> bool:
    """Whether every usable replica counted its drafts (none lacks a drafts counter)."""
    return all(r.drafts_counted for r in rows if r.counts is not None)


def rollup(replicas: Sequence[ReplicaWindow], worst: int = 3) -> tuple[ModelRollup, ...]:
    """Per model_name: the pooled counts of its replicas with usable counts (the others named in ``left_out``) and
    its ``worst`` replicas (with drafts) by acceptance."""
    by_model: dict[str, list[ReplicaWindow]] = {}
    for r in replicas:
        by_model.setdefault(r.model_name, []).append(r)
    return tuple(
        ModelRollup(
            model,
            len(usable_counts(rows)),
            pooled(usable_counts(rows), drafts_counted(rows)),
            tuple(
                sorted((r for r in rows if r.counts is not None and r.counts.draft_tokens > 0), key=_badness)[:worst]
            ),
            tuple(r.instance for r in rows if r.counts is None),
            drafts_counted(rows),
        )
        for model, rows in sorted(by_model.items())
    )


def instance_stats(rows: Sequence[ReplicaWindow], window_s: float) -> WindowStats:
    """One instance's window (every model_name it serves pooled; ``by_model`` when it serves several) in the
    monitor's :class:`WindowStats`, so the same rules (:mod:`specwise.monitor.rules`) judge it. Replicas whose
    counts cannot be used are left out of the pool; their faults and notes are the window's (no usable replica:
    no acceptance, as a scraped window with impossible counts)."""
    usable = usable_counts(rows)
    counted = drafts_counted(rows)
    c = pooled(usable, counted) if usable else None
    by_model: dict[str, dict[str, float | None]] = {}
    if len(rows) > 1:
        for r in rows:
            by_model[r.model_name] = {
                "drafts": r.counts.drafts if r.counts is not None and r.drafts_counted else None,
                "draft_tokens": r.counts.draft_tokens if r.counts is not None else None,
                "acceptance_rate": r.acceptance_rate,
                "mean_acceptance_length": r.mean_acceptance_length,
            }

    def per_s(total: float | None) -> float | None:
        return total / window_s if total is not None and window_s > 0 else None

    return WindowStats(
        window_s=window_s,
        drafts=c.drafts if c and counted else None,
        draft_tokens=c.draft_tokens if c else None,
        acceptance_rate=c.acceptance_rate if c else None,
        mean_acceptance_length=c.mean_acceptance_length if c else None,
        per_position_acceptance=c.per_position_rates if c else (),
        draft_tokens_per_s=per_s(c.draft_tokens if c else None),
        accepted_tokens_per_s=per_s(c.accepted_tokens if c else None),
        generation_tokens_per_s=per_s(_sum_opt([r.generation_tokens for r in rows])),
        requests_per_s=per_s(_sum_opt([r.requests for r in rows])),
        running=_sum_opt([r.running for r in rows]),
        waiting=_sum_opt([r.waiting for r in rows]),
        kv_cache_usage=None,
        preemptions_per_s=None,
        notes=tuple(n for r in rows for n in r.notes),
        by_model=by_model,
        faults=tuple(f for r in rows for f in r.faults),
    )


@dataclass(frozen=True)
class FleetWindow:
    """The fleet over the ``window_s`` seconds ending at ``end_s`` (Unix time), as Prometheus saw it."""

    end_s: float
    window_s: float
    replicas: tuple[ReplicaWindow, ...]
    queries: int = 0  # HTTP API queries it took

    @property
    def models(self) -> tuple[ModelRollup, ...]:
        return rollup(self.replicas)

    def instances(self) -> dict[str, tuple[ReplicaWindow, ...]]:
        out: dict[str, list[ReplicaWindow]] = {}
        for r in self.replicas:
            out.setdefault(r.instance, []).append(r)
        return {k: tuple(v) for k, v in sorted(out.items())}

    def to_json(self) -> dict[str, object]:
        return {
            "end_s": self.end_s,
            "window_s": self.window_s,
            "queries": self.queries,
            "models": [m.to_json() for m in self.models],
            "replicas": [r.to_json() for r in self.replicas],
        }


def windows_over_time(answers: Mapping[str, Sequence[Point]], window_s: float) -> tuple[FleetWindow, ...]:
    """``query_range`` answers (one per family) as one :class:`FleetWindow` per evaluation time, oldest first."""
    times = sorted({p.at_s for points in answers.values() for p in points})
    out = []
    for at in times:
        at_t = {k: [p for p in points if p.at_s == at] for k, points in answers.items()}
        out.append(FleetWindow(at, window_s, replica_windows(at_t)))
    return tuple(out)
