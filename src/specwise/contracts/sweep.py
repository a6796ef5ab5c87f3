"""``specwise.sweep/1``: a QPS x k simulation and the decisions drawn from it (``specwise simulate --json``).

Rows are per (QPS, k) cell with latency percentiles, throughput and speedups against k = 0 at the same QPS;
``schedule_results`` holds the k-by-batch-size schedule's rows. Best k and the crossover are judged on
``decision_metric`` (``speedup_<metric>``). In JSON, per-QPS maps are keyed by ``f"{qps:g}"``.

``capacity_per_s_by_k``: requests/s each k serves once saturated (k = 0: without speculation; measured by a
saturated run, :mod:`specwise.sim.saturation`); ``sustainable_qps`` is the baseline's. Every row and baseline point
says whether its load is above its capacity (``overloaded``: the queue grows without bound); a speedup at such a
load compares two growing queues, not two steady states. ``capacity_bound_qps``: the loads the deployment keeps up
with without speculation but with no k; their best speedup (k = 0) is an upper bound, the share of the load the
best k can serve (capacity / load), not a simulated cell (:func:`specwise.study.decide.decide`).

``best_speedup_by_qps`` is the speedup of the top speculative k at each load (the one with the highest speedup among
those that keep up), whether or not it pays: where it is 1 or below, ``best_k_by_qps`` is 0 (plain decoding) beside
it, and the speedup says by how much the best speculation would lose. The JSON says so itself: ``best_speedup_is``
is ``"top_speculative_k_paying_or_not"`` (:data:`BEST_SPEEDUP_IS`), as ``predictor.statistic`` says which statistic
``relative_error_p80`` holds.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from specwise.contracts.document import Fields, JsonObject, Schema
from specwise.latency import LatencySummary
from specwise.stats import Percentiles

SCHEMA = Schema("specwise.sweep", 1)
METRIC_KEYS = {
    "e2e": "speedup_e2e",
    "tpot": "speedup_tpot",
    "throughput": "speedup_throughput",
    "goodput": "speedup_goodput",
}


# What a band's number is (a predictor's ``statistic``; perfmodel.factory.BAND_STATISTICS words each)
P80_SPEEDUP_ERROR = "p80_abs_rel_speedup_error"  # 80th percentile of |predicted / measured speedup - 1|
P80_REPLAY_ERROR = "p80_abs_rel_speedup_replay_error"  # the same over a calibration's replayed levels
RMS_FIT_ERROR = "rms_step_time_fit_error"  # a calibration's step-time law, over the mean step: CV(RMSE)
DEFAULT_BAND = "default"  # nothing measured: its source says it is a default

# What ``best_speedup_by_qps`` holds (``best_speedup_is`` in JSON): the top speculative k's speedup, paying or not
BEST_SPEEDUP_IS = "top_speculative_k_paying_or_not"


def predictor_json(name: str, band: float, source: str, statistic: str) -> dict[str, str | float]:
    """The step-time predictor and its band. ``relative_error_p80`` keeps its name for the readers of earlier
    outputs; ``statistic`` says which statistic it holds (a calibration's band is its RMS step-time fit error when that
    exceeds its replay's 80th percentile error)."""
    return {"name": name, "relative_error_p80": band, "statistic": statistic, "source": source}


def qps_key(q: float) -> str:
    return f"{q:g}"


@dataclass(frozen=True)
class BaselinePoint:
    """k = 0 at one QPS."""

    qps: float
    tpot_p50_s: float
    ttft_p50_s: float
    e2e_p50_s: float
    output_tokens_per_s: float
    goodput_per_s: float | None
    overloaded: bool = False  # above the deployment's capacity: the queue grows without bound

    def to_json(self) -> dict[str, Any]:
        return dict(vars(self))

    @classmethod
    def from_json(cls, f: Fields) -> BaselinePoint:
        return cls(
            qps=f.number("qps", required=True) or 0.0,
            tpot_p50_s=_nan(f.number("tpot_p50_s")),
            ttft_p50_s=_nan(f.number("ttft_p50_s")),
            e2e_p50_s=_nan(f.number("e2e_p50_s")),
            output_tokens_per_s=f.number("output_tokens_per_s", 0.0) or 0.0,
            goodput_per_s=f.number("goodput_per_s"),
            overloaded=f.data.get("overloaded") is True,
        )


def _nan(x: float | None) -> float:
    return float("nan") if x is None else x


@dataclass(frozen=True)
class RowLatency(LatencySummary):
    """One cell's whole latency summary (:mod:`specwise.latency`, the simulator's), as the row's ``latency`` prints
    it: mean and p50/p90/p99 per metric, in seconds (NaN where no request gave a sample; null in JSON)."""

    slo_attainment: float | None = None
    preemptions: int = 0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, f: Fields) -> RowLatency:
        def pct(key: str) -> Percentiles:
            p = f.object(key) or Fields({}, f.at(key))
            return Percentiles(*(_nan(p.number(q)) for q in ("mean", "p50", "p90", "p99")))

        return cls(
            requests=f.integer("requests", 0) or 0,
            ttft_s=pct("ttft_s"),
            tpot_s=pct("tpot_s"),
            itl_s=pct("itl_s"),
            e2e_s=pct("e2e_s"),
            output_tokens_per_s=f.number("output_tokens_per_s", 0.0) or 0.0,
            request_rate_per_s=f.number("request_rate_per_s", 0.0) or 0.0,
            goodput_per_s=f.number("goodput_per_s"),
            slo_attainment=f.number("slo_attainment"),
            preemptions=f.integer("preemptions", 0) or 0,
        )


@dataclass(frozen=True)
class ClassLatency(RowLatency):
    """One workload class's latency summary in a cell (the row's ``by_class``), and its TPOT speedup against
    k = 0 at the same QPS (None where either TPOT is missing)."""

    speedup_tpot: float | None = None

    @classmethod
    def from_json(cls, f: Fields) -> ClassLatency:
        return cls(**vars(RowLatency.from_json(f)), speedup_tpot=f.number("speedup_tpot"))


def _classes(f: Fields) -> dict[str, ClassLatency]:
    """``by_class``: class name -> its summary (a non-object entry is refused with its path)."""
    raw = f.object("by_class")
    if raw is None:
        return {}
    out = {}
    for name in raw.data:
        entry = raw.object(str(name))
        if entry is None:
            raise raw.fail(str(name), "must be an object")
        out[str(name)] = ClassLatency.from_json(entry)
    return out


@dataclass(frozen=True)
class SweepRow:
    """One (QPS, k) cell; ``k`` None is the k-by-batch-size schedule."""

    qps: float
    k: int | None
    tpot_p50_s: float
    tpot_p90_s: float
    tpot_p99_s: float
    ttft_p50_s: float
    ttft_p99_s: float
    itl_p50_s: float
    e2e_p50_s: float
    e2e_p99_s: float
    output_tokens_per_s: float
    goodput_per_s: float | None
    speedup_tpot: float | None
    speedup_e2e: float | None
    speedup_throughput: float | None
    speedup_goodput: float | None
    acceptance_rate: float | None
    mean_acceptance_length: float | None
    preemptions: int
    latency: RowLatency | None = None  # the full latency summary, as printed (None: a row written without one)
    by_class: Mapping[str, ClassLatency] = field(default_factory=dict)  # per workload class
    overloaded: bool = False  # above this k's capacity: the queue grows without bound (latencies depend on n)

    def speedup(self, metric: str) -> float | None:
        value: float | None = getattr(self, METRIC_KEYS[metric])
        return value

    def to_json(self) -> dict[str, Any]:
        out = {k: v for k, v in vars(self).items() if k not in ("latency", "by_class")}
        out["k"] = self.k if self.k is not None else "schedule"
        out["latency"] = self.latency.to_json() if self.latency else {}
        out["by_class"] = {name: v.to_json() for name, v in self.by_class.items()}
        return out

    @classmethod
    def from_json(cls, f: Fields) -> SweepRow:
        raw_k = f.data.get("k")
        k = None if raw_k == "schedule" else f.integer("k", required=True)
        return cls(
            qps=f.number("qps", required=True) or 0.0,
            k=k,
            tpot_p50_s=_nan(f.number("tpot_p50_s")),
            tpot_p90_s=_nan(f.number("tpot_p90_s")),
            tpot_p99_s=_nan(f.number("tpot_p99_s")),
            ttft_p50_s=_nan(f.number("ttft_p50_s")),
            ttft_p99_s=_nan(f.number("ttft_p99_s")),
            itl_p50_s=_nan(f.number("itl_p50_s")),
            e2e_p50_s=_nan(f.number("e2e_p50_s")),
            e2e_p99_s=_nan(f.number("e2e_p99_s")),
            goodput_per_s=f.number("goodput_per_s"),
            speedup_tpot=f.number("speedup_tpot"),
            speedup_e2e=f.number("speedup_e2e"),
            speedup_throughput=f.number("speedup_throughput"),
            speedup_goodput=f.number("speedup_goodput"),
            acceptance_rate=f.number("acceptance_rate"),
            mean_acceptance_length=f.number("mean_acceptance_length"),
            output_tokens_per_s=f.number("output_tokens_per_s", 0.0) or 0.0,
            preemptions=f.integer("preemptions", 0) or 0,
            latency=RowLatency.from_json(lat) if (lat := f.object("latency")) and lat.data else None,
            by_class=_classes(f),
            overloaded=f.data.get("overloaded") is True,
        )


def speculative_choices(
    rows: Sequence[SweepRow], qps: float, metric: str, base_overloaded: bool
) -> tuple[list[SweepRow], list[SweepRow]]:
    """(the speculative rows at ``qps`` with a ``metric`` speedup, those of them a deployment can choose): a k that
    does not keep up with the load is no choice while plain decoding or another k does -- its queue grows without
    bound, so its steady-state speedup tends to 0 whatever a finite run measured; only where nothing keeps up is
    every k one (each finite run's speedup, compared as measured)."""
    rows_at = [r for r in rows if r.qps == qps and r.k and r.speedup(metric) is not None]
    keeping_up = [r for r in rows_at if not r.overloaded]
    return rows_at, keeping_up or (rows_at if base_overloaded else [])


def fastest(rows: Sequence[SweepRow], metric: str) -> SweepRow | None:
    """The row with the highest ``metric`` speedup (the first of equals; None: no rows)."""
    return max(rows, key=lambda r: r.speedup(metric) or 0.0, default=None)


@dataclass(frozen=True)
class SweepResult:
    scenario: str
    target: str
    gpu: str
    tp: int
    method: str
    draft: str | None
    kv_cache_tokens: int
    kv_cache_tokens_without_draft: int
    baseline: tuple[BaselinePoint, ...]
    results: tuple[SweepRow, ...]
    schedule_results: tuple[SweepRow, ...]
    decision_metric: str
    best_k_by_qps: Mapping[float, int]  # 0 where no speculative k pays (or keeps up)
    best_speedup_by_qps: Mapping[float, float]  # the top speculative k's, paying or not: BEST_SPEEDUP_IS
    crossover_qps: float | None
    warnings: tuple[str, ...] = ()
    predictor: str = "roofline"  # the step-time model the rows were simulated with
    band: float = 0.0  # its relative error on a speedup (80th percentile over measurements it was checked on)
    band_source: str = ""
    band_statistic: str = P80_SPEEDUP_ERROR  # which statistic ``band`` is
    capacity_per_s_by_k: Mapping[int, float] = field(default_factory=dict)  # k = 0: without speculation
    schedule_capacity_per_s: float | None = None
    capacity_bound_qps: tuple[float, ...] = ()  # loads whose best speedup is capacity / load, an upper bound
    # saturated runs behind each k's capacity where more than one (their mean: advise repeats the runs of a k whose
    # capacity a simulated load is near, study/replicates.capacity_replicates); a k not named: one run
    capacity_runs_by_k: Mapping[int, int] = field(default_factory=dict)
    # the two-sided 90% interval of each such mean (Student's t over its runs): a load inside it may or may not
    # overload the k, within the simulation's noise (advise's capacity-edge rule)
    capacity_interval_by_k: Mapping[int, tuple[float, float]] = field(default_factory=dict)

    @property
    def qps(self) -> tuple[float, ...]:
        return tuple(b.qps for b in self.baseline)

    @property
    def never_pays(self) -> bool:
        """No load where the top k's speedup clears 1, nor one where only speculation has any goodput (plain
        decoding's 0: :meth:`only_speculation_has_goodput`)."""
        defined = [s for q, s in self.best_speedup_by_qps.items() if not self.speedup_undefined(q)]
        return all(s <= 1.0 for s in defined) and not any(self.only_speculation_has_goodput(q) for q in self.qps)

    def only_speculation_has_goodput(self, qps: float) -> SweepRow | None:
        """Judged on goodput, at a load where plain decoding meets the SLOs for no request: the k with the most
        goodput there, if any k has some (None: none has, or the metric is another)."""
        if self.decision_metric != "goodput" or not self.speedup_undefined(qps):
            return None
        rows = [r for r in self.results if r.qps == qps and r.k and (r.goodput_per_s or 0.0) > 0]
        return max(rows, key=lambda r: r.goodput_per_s or 0.0, default=None)

    @property
    def k_values(self) -> tuple[int, ...]:
        return tuple(sorted({r.k for r in self.results if r.k is not None}))

    @property
    def overloaded_qps(self) -> tuple[float, ...]:
        """The loads the deployment without speculation cannot keep up with."""
        return tuple(b.qps for b in self.baseline if b.overloaded)

    @property
    def sustainable_qps(self) -> float | None:
        """Requests/s the deployment serves without speculation once saturated (None: not measured)."""
        return self.capacity_per_s_by_k.get(0)

    def sustainable_qps_with(self, k: int) -> float | None:
        """The same with speculation at ``k``."""
        return self.capacity_per_s_by_k.get(k)

    def baseline_at(self, qps: float) -> BaselinePoint | None:
        return next((b for b in self.baseline if b.qps == qps), None)

    def top_k(self, qps: float) -> int:
        """The speculative k with the highest speedup at ``qps`` whether or not it pays (0: none simulated): among
        the k that keep up with the load where plain decoding does, as ``best_speedup_by_qps`` chooses it
        (:func:`specwise.study.decide.decide`), else among all."""
        rows, keeping_up = speculative_choices(self.results, qps, self.decision_metric, qps in self.overloaded_qps)
        top = fastest(keeping_up or rows, self.decision_metric)
        return int(top.k) if top is not None and top.k else 0

    def speedup_undefined(self, qps: float) -> bool:
        """No speculative k has a ``decision_metric`` speedup at ``qps``: plain decoding's is 0 (goodput: no request
        met the SLOs), so a ratio to it means nothing; ``best_speedup_by_qps`` holds 0 there, JSON null."""
        return not any(r.qps == qps and r.k and r.speedup(self.decision_metric) is not None for r in self.results)

    def _best_speedup_json(self, qps: float, speedup: float) -> float | None:
        return None if self.speedup_undefined(qps) else speedup

    def row(self, qps: float, k: int) -> SweepRow | None:
        return next((r for r in self.results if r.qps == qps and r.k == k), None)

    def to_json(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "target": self.target,
            "gpu": self.gpu,
            "tp": self.tp,
            "method": self.method,
            "draft": self.draft,
            "kv_cache_tokens": self.kv_cache_tokens,
            "kv_cache_tokens_without_draft": self.kv_cache_tokens_without_draft,
            "baseline": {"by_qps": [b.to_json() for b in self.baseline]},
            "results": [self._with_band(r) for r in self.results],
            "schedule_results": [self._with_band(r) for r in self.schedule_results],
            "decision_metric": self.decision_metric,
            "best_k_by_qps": {qps_key(q): k for q, k in self.best_k_by_qps.items()},
            "best_speedup_by_qps": {
                qps_key(q): self._best_speedup_json(q, s) for q, s in self.best_speedup_by_qps.items()
            },
            "best_speedup_is": BEST_SPEEDUP_IS,
            "crossover_qps": self.crossover_qps,
            "never_pays": self.never_pays,
            "overloaded_qps": list(self.overloaded_qps),
            "capacity_bound_qps": list(self.capacity_bound_qps),
            "sustainable_qps": self.sustainable_qps,
            "capacity_per_s_by_k": {str(k): c for k, c in self.capacity_per_s_by_k.items()},
            "schedule_capacity_per_s": self.schedule_capacity_per_s,
            # only where a capacity is the mean of several runs (one run each: as it always was)
            **(
                {"capacity_runs_by_k": {str(k): n for k, n in self.capacity_runs_by_k.items()}}
                if self.capacity_runs_by_k
                else {}
            ),
            **(
                {"capacity_interval_90_by_k": {str(k): list(iv) for k, iv in self.capacity_interval_by_k.items()}}
                if self.capacity_interval_by_k
                else {}
            ),
            "warnings": list(self.warnings),
            "schema": SCHEMA.id,
            "predictor": predictor_json(self.predictor, self.band, self.band_source, self.band_statistic),
            "best_speedup_band_by_qps": {
                qps_key(q): None if self.speedup_undefined(q) else [s * (1 - self.band), s * (1 + self.band)]
                for q, s in self.best_speedup_by_qps.items()
            },
        }

    def _with_band(self, row: SweepRow) -> dict[str, Any]:
        """A row as JSON with the band of its decision-metric speedup (every prediction carries its error)."""
        out = row.to_json()
        s = row.speedup(self.decision_metric)  # k = 0 is the baseline itself: 1 by definition, no error band
        out["speedup_band"] = None if s is None or row.k == 0 else [s * (1 - self.band), s * (1 + self.band)]
        return out

    @classmethod
    def from_json(cls, data: JsonObject, where: str = "sweep") -> SweepResult:
        SCHEMA.check(data, where, required=False)
        f = Fields(data, where)
        base = f.object("baseline")
        pred = f.object("predictor")
        baseline = tuple(BaselinePoint.from_json(b) for b in base.objects("by_qps")) if base else ()
        by_key = {qps_key(b.qps): b.qps for b in baseline}

        def per_qps(key: str) -> dict[float, float]:
            raw = f.object(key)
            if raw is None:
                return {}
            return {by_key.get(k, float(k)): raw.number(k, 0.0) or 0.0 for k in raw.data}  # null: undefined, 0

        return cls(
            scenario=f.text("scenario", "") or "",
            target=f.text("target", "") or "",
            gpu=f.text("gpu", "") or "",
            tp=f.integer("tp", 1) or 1,
            method=f.text("method", "") or "",
            draft=f.text("draft"),
            kv_cache_tokens=f.integer("kv_cache_tokens", 0) or 0,
            kv_cache_tokens_without_draft=f.integer("kv_cache_tokens_without_draft", 0) or 0,
            baseline=baseline,
            results=tuple(SweepRow.from_json(r) for r in f.objects("results")),
            schedule_results=tuple(SweepRow.from_json(r) for r in f.objects("schedule_results")),
            decision_metric=f.text("decision_metric", "e2e") or "e2e",
            best_k_by_qps={q: int(v) for q, v in per_qps("best_k_by_qps").items()},
            best_speedup_by_qps=per_qps("best_speedup_by_qps"),
            crossover_qps=f.number("crossover_qps"),
            warnings=tuple(str(w) for w in data.get("warnings", [])),
            predictor=(pred.text("name", "") if pred else "") or "roofline",
            band=(pred.number("relative_error_p80", 0.0) if pred else 0.0) or 0.0,
            band_source=(pred.text("source", "") if pred else "") or "",
            band_statistic=(pred.text("statistic") if pred else None) or P80_SPEEDUP_ERROR,
            capacity_per_s_by_k={int(k): v for k, v in per_qps("capacity_per_s_by_k").items()},
            schedule_capacity_per_s=f.number("schedule_capacity_per_s"),
            capacity_bound_qps=tuple(q for q in f.numbers("capacity_bound_qps") if q is not None),
            capacity_runs_by_k={int(k): int(n) for k, n in per_qps("capacity_runs_by_k").items()},
            capacity_interval_by_k=_intervals(f, {int(k): int(n) for k, n in per_qps("capacity_runs_by_k").items()}),
        )


def _intervals(f: Fields, runs_by_k: Mapping[int, int]) -> dict[int, tuple[float, float]]:
    """``capacity_interval_90_by_k``: {k: [low, high]}, finite with low <= high, each for a k whose capacity is the
    mean of 2 or more runs (``capacity_runs_by_k``); {} where the document has none."""
    raw = f.object("capacity_interval_90_by_k")
    if raw is None:
        return {}
    out: dict[int, tuple[float, float]] = {}
    for key in raw.data:
        iv = raw.numbers(key)
        finite = len(iv) == 2 and all(v is not None and math.isfinite(v) for v in iv)
        if not key.isdigit() or not finite or iv[0] is None or iv[1] is None or iv[0] > iv[1]:
            raise raw.fail(key, f"expected a k and finite [low, high], low <= high, got {key!r}: {raw.data[key]!r}")
        if runs_by_k.get(int(key), 0) < 2:
            raise raw.fail(key, f"an interval is of 2 or more saturated runs; capacity_runs_by_k has {runs_by_k}")
        out[int(key)] = (iv[0], iv[1])
    return out


PARTIAL_SCHEMA = Schema("specwise.sweep-partial", 1)


@dataclass(frozen=True)
class PartialSweep:
    """``specwise.sweep-partial/1``: the cells an interrupted sweep finished (Ctrl-C, SIGTERM), so that they are not
    lost. ``results`` are its rows in sweep order, k = 0 included (speedup 1), each speedup against k = 0 at the same
    QPS (a sweep runs k = 0 first at each QPS); ``capacity_per_s_by_k`` holds the saturated runs that finished (they
    run last). No best k, crossover or overload marks: those need every cell. A distinct kind, so that a reader of
    ``specwise.sweep/1`` refuses it rather than take it for a finished sweep."""

    scenario: str
    decision_metric: str
    cells_done: int
    cells_total: int
    results: tuple[SweepRow, ...]
    capacity_per_s_by_k: Mapping[int | None, float] = field(default_factory=dict)  # None: the schedule's
    predictor: str = "roofline"
    band: float = 0.0
    band_source: str = ""
    band_statistic: str = P80_SPEEDUP_ERROR

    def to_json(self) -> dict[str, Any]:
        rows = []
        for r in self.results:
            row = r.to_json()
            del row["overloaded"]  # unknown without its capacity run
            rows.append(row)
        return {
            "schema": PARTIAL_SCHEMA.id,
            "partial": True,
            "scenario": self.scenario,
            "decision_metric": self.decision_metric,
            "cells_done": self.cells_done,
            "cells_total": self.cells_total,
            "results": rows,
            "capacity_per_s_by_k": {
                ("schedule" if k is None else str(k)): c for k, c in self.capacity_per_s_by_k.items()
            },
            "predictor": predictor_json(self.predictor, self.band, self.band_source, self.band_statistic),
        }
