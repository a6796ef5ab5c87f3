"""A fleet's spec decoding from Prometheus (pure): the PromQL the monitor sends -- one query per metric family,
``increase()`` over the window evaluated on the server, grouped ``by (model_name, instance)`` -- the parsing of
the answers (the HTTP API's ``vector`` and ``matrix`` results), each replica's window, and the per-model roll-up.

Roll-up: the counters' increases are summed over a model's replicas first and the rates derived from the sums,
with vLLM's definitions (``vllm/v1/spec_decode/metrics.py``; :class:`~specwise.acceptance.counts.SpecDecodeCounts`):
acceptance rate = accepted tokens / draft tokens, AL = 1 + accepted tokens / drafts -- never a mean of per-replica
rates, which would weigh an idle replica like a busy one. Issue 15 ("Beyond one server").

``increase()`` is Prometheus' own: counter resets handled, and extrapolated to the window's edges, so counts are
not integers; the extrapolation scales every counter of one replica alike (they share its scrape timestamps), so a
replica's acceptance rate and AL are its exact counter-delta ratios.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from specwise.acceptance.counts import SpecDecodeCounts
from specwise.engines.vllm import METRICS as VLLM
from specwise.errors import SpecwiseError
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
)


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
    matrix); NaN values (a rate with nothing to divide) are dropped. ``where`` names the server in errors."""
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
        out += [p for p in (_sample(labels, pair, where) for pair in pairs) if not math.isnan(p.value)]
    return tuple(out)


@dataclass(frozen=True)
class ReplicaWindow:
    """One replica (``instance``) serving one ``model_name`` over the window: counter increases, latest gauges."""

    model_name: str
    instance: str
    counts: SpecDecodeCounts
    generation_tokens: float | None = None
    requests: float | None = None
    running: float | None = None
    waiting: float | None = None

    @property
    def acceptance_rate(self) -> float | None:
        return self.counts.acceptance_rate

    @property
    def mean_acceptance_length(self) -> float | None:
        return self.counts.mean_acceptance_length

    def to_json(self) -> dict[str, object]:
        c = self.counts
        return {
            "model_name": self.model_name,
            "instance": self.instance,
            "drafts": c.drafts,
            "draft_tokens": c.draft_tokens,
            "accepted_tokens": c.accepted_tokens,
            "accepted_per_position": list(c.accepted_per_position),
            "acceptance_rate": c.acceptance_rate,
            "mean_acceptance_length": c.mean_acceptance_length,
            "per_position_acceptance": list(c.per_position_rates),
            "generation_tokens": self.generation_tokens,
            "requests": self.requests,
            "running": self.running,
            "waiting": self.waiting,
        }


def pooled(counts: Sequence[SpecDecodeCounts]) -> SpecDecodeCounts:
    """The counts summed (per position too); rates derived from the sums."""
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


def replica_windows(answers: Mapping[str, Sequence[Point]]) -> tuple[ReplicaWindow, ...]:
    """Each (model_name, instance) with spec-decode counters in the window, from one answer per family key
    (:data:`FAMILIES`); sorted by model then instance."""
    values: dict[str, dict[tuple[str, str], float]] = {}
    per_pos: dict[tuple[str, str], dict[int, float]] = {}
    for key, points in answers.items():
        for p in points:
            rk = (p.label("model_name"), p.label("instance"))
            if key == "accepted_per_position":
                pos = p.label("position")
                if pos.isdigit():
                    per_pos.setdefault(rk, {})[int(pos)] = p.value
            else:
                values.setdefault(key, {})[rk] = p.value
    out = []
    spec = ("drafts", "draft_tokens", "accepted_tokens")
    for rk in sorted(set.intersection(*(set(values.get(k, {})) for k in spec))):
        positions = per_pos.get(rk, {})
        width = max(positions) + 1 if positions else 0
        drafts, draft_tokens, accepted = (values[k][rk] for k in spec)
        counts = SpecDecodeCounts(drafts, draft_tokens, accepted, tuple(positions.get(i, 0.0) for i in range(width)))
        extra = {k: values.get(k, {}).get(rk) for k in ("generation_tokens", "requests", "running", "waiting")}
        out.append(ReplicaWindow(rk[0], rk[1], counts, **extra))
    return tuple(out)


@dataclass(frozen=True)
class ModelRollup:
    """One model_name across its replicas: pooled counts and the replicas with the lowest acceptance first."""

    model_name: str
    replicas: int
    counts: SpecDecodeCounts
    worst: tuple[ReplicaWindow, ...]

    def to_json(self) -> dict[str, object]:
        c = self.counts
        return {
            "model_name": self.model_name,
            "replicas": self.replicas,
            "drafts": c.drafts,
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


def rollup(replicas: Sequence[ReplicaWindow], worst: int = 3) -> tuple[ModelRollup, ...]:
    """Per model_name: the pooled counts of its replicas and its ``worst`` replicas (with drafts) by acceptance."""
    by_model: dict[str, list[ReplicaWindow]] = {}
    for r in replicas:
        by_model.setdefault(r.model_name, []).append(r)
    return tuple(
        ModelRollup(
            model,
            len(rows),
            pooled([r.counts for r in rows]),
            tuple(sorted((r for r in rows if r.counts.drafts > 0), key=_badness)[:worst]),
        )
        for model, rows in sorted(by_model.items())
    )


def instance_stats(rows: Sequence[ReplicaWindow], window_s: float) -> WindowStats:
    """One instance's window (every model_name it serves pooled; ``by_model`` when it serves several) in the
    monitor's :class:`WindowStats`, so the same rules (:mod:`specwise.monitor.rules`) judge it."""
    c = pooled([r.counts for r in rows])
    by_model: dict[str, dict[str, float | None]] = {}
    if len(rows) > 1:
        for r in rows:
            by_model[r.model_name] = {
                "drafts": r.counts.drafts,
                "acceptance_rate": r.acceptance_rate,
                "mean_acceptance_length": r.mean_acceptance_length,
            }

    def per_s(total: float | None) -> float | None:
        return total / window_s if total is not None and window_s > 0 else None

    return WindowStats(
        window_s=window_s,
        drafts=c.drafts,
        acceptance_rate=c.acceptance_rate,
        mean_acceptance_length=c.mean_acceptance_length,
        per_position_acceptance=c.per_position_rates,
        draft_tokens_per_s=per_s(c.draft_tokens),
        accepted_tokens_per_s=per_s(c.accepted_tokens),
        generation_tokens_per_s=per_s(_sum_opt([r.generation_tokens for r in rows])),
        requests_per_s=per_s(_sum_opt([r.requests for r in rows])),
        running=_sum_opt([r.running for r in rows]),
        waiting=_sum_opt([r.waiting for r in rows]),
        kv_cache_usage=None,
        preemptions_per_s=None,
        by_model=by_model,
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
