"""``specwise validate`` as a library call: every evidence record replayed under one predictor, summarised per
source family with the fit families and the held-back ones apart, crossover loads compared where a source shows
one, and the issue's acceptance criteria evaluated."""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from specwise.acceptance.leviathan import table4_max_abs_diff
from specwise.advisor.band_rule import DEFAULT_MIN_SPEEDUP
from specwise.errors import SpecwiseError
from specwise.evidence.records import EvidenceRecord, all_records
from specwise.executors import Executor
from specwise.perfmodel.factory import direction_poor
from specwise.perfmodel.profiles import published_fit
from specwise.validate.decisions import DecisionScore, score_decisions
from specwise.validate.predict import Models, Prediction, Predictor, predict_all, speedup_at
from specwise.validate.replay import MAX_NUM_SEQS
from specwise.validate.stats import (
    BaselineCheck,
    ErrorSummary,
    baseline_checks,
    catalog_segment,
    summarize,
    summarize_by_engine,
    summarize_by_engine_and_segment,
)


@dataclass(frozen=True)
class Crossover:
    """A series whose published speedup falls through 1 between two loads, and where the prediction does."""

    series: str
    load_kind: str
    published: float  # interpolated load where the published speedup crosses 1
    predicted: float | None  # the same for the prediction; None: it never crosses in the loads searched
    # Where the prediction does not cross within the series' loads, it is followed beyond them to this load (half
    # or twice the published crossover: what decides "within 2x"); None when the series' loads sufficed.
    searched_to: float | None = None

    @property
    def within_2x(self) -> bool:
        return self.predicted is not None and 0.5 <= self.predicted / self.published <= 2.0


@dataclass(frozen=True)
class FamilyResult:
    family: str
    role: str  # fit | held-back
    summary: ErrorSummary
    anchors: int
    unreplayable: int
    skipped: int


@dataclass(frozen=True)
class Validation:
    predictor: str
    fit_families: tuple[str, ...]
    predictions: tuple[Prediction, ...]
    families: tuple[FamilyResult, ...]
    fit: ErrorSummary
    held_back: ErrorSummary
    crossovers: tuple[Crossover, ...]
    baseline_within_20pct: float | None  # plain-decoding records
    leviathan_max_abs_diff: float
    # each acceptance criterion: met (True), not met (False), or None: no record of the selection can judge it (a
    # ``--family`` subset without fit records, say); ``--check`` fails on False only
    criteria: dict[str, bool | None] = field(default_factory=dict)
    held_back_by_engine: dict[str, ErrorSummary] = field(default_factory=dict)  # the band of each engine's profile
    # by engine, then GPU segment: the bands a prediction carries on a data-centre or a consumer card
    held_back_by_engine_and_segment: dict[str, dict[str, ErrorSummary]] = field(default_factory=dict)
    # the records are a ``--family`` selection: the analytic criterion, which judges no record, says it is the same
    family_selected: bool = False
    # advise's verdict rule at each speculative record's load against what was measured (validate/decisions.py)
    decisions: DecisionScore | None = None
    # per family, the no-speculation arm its sources published beside each speedup, against the replay's
    baselines_in_runs: tuple[BaselineCheck, ...] = ()


def _crossing(points: Sequence[tuple[float, float]]) -> float | None:
    for (l0, s0), (l1, s1) in itertools.pairwise(points):
        if s0 >= 1.0 > s1:
            return l0 + (l1 - l0) * (s0 - 1.0) / (s0 - s1)
    return None


SpeedupAt = Callable[[Prediction, float], float | None]  # a series member's predicted speedup at another load
_STEP = 1.25  # geometric step of the loads a prediction is followed to beyond a series' own


def _loads_beyond(start: float, stop: float, kind: str) -> list[float]:
    """Loads from ``start`` (exclusive) to ``stop`` (inclusive) in steps of x1.25 either way; whole numbers for a
    batch or a concurrency (at least one apart), between 1 and the replay's ``max_num_seqs``."""
    up, whole = stop > start, kind != "qps"
    if whole:
        stop = float(min(max(1, round(stop)), MAX_NUM_SEQS))
    out: list[float] = []
    x = start
    while (x < stop) if up else (x > stop):
        step = x * _STEP if up else x / _STEP
        if whole:
            step = float(max(round(step), x + 1) if up else min(round(step), x - 1))
        x = min(step, stop) if up else max(step, stop)
        out.append(x)
    return out


def _followed(
    members: Sequence[Prediction], published: float, speedup_at: SpeedupAt
) -> tuple[float | None, float | None]:
    """(crossing, searched to) for a prediction that does not cross 1 within its series' loads: still above 1 at
    the last load, it is followed up to twice the published crossover; already below 1 at the first, down to half.
    The crossing is interpolated as within the series (:func:`_crossing`)."""
    first, last = members[0], members[-1]
    if (last.predicted_speedup or 0.0) >= 1.0:
        start, anchor, stop = last.record.load.value, last, 2.0 * published
    elif (first.predicted_speedup or 0.0) < 1.0:
        start, anchor, stop = first.record.load.value, first, published / 2.0
        if stop >= start:
            return None, start  # below 1 from a load under half the published crossover on
    else:
        return None, None  # it crosses back up and down within the series: nothing beyond it decides that
    points = [(start, anchor.predicted_speedup or 0.0)]
    for load in _loads_beyond(start, stop, anchor.record.load.kind):
        s = speedup_at(anchor, load)
        if s is None:
            break
        points.append((load, s))
        ordered = sorted(points)
        crossing = _crossing(ordered)
        if crossing is not None:
            return crossing, load
    return None, points[-1][0] if len(points) > 1 else None


def crossovers(preds: Sequence[Prediction], speedup_at: SpeedupAt | None = None) -> list[Crossover]:
    """Each series whose published speedup falls through 1 to a slowdown (below 1 by more than a tie,
    :attr:`~specwise.evidence.records.EvidenceRecord.is_tie`), with where the prediction does: within the series'
    loads, else (given ``speedup_at``) beyond them as far as decides whether it is within 2x."""
    series: dict[Any, list[Prediction]] = defaultdict(list)
    for p in preds:
        if p.status in ("predicted", "anchor") and p.record.speedup is not None and p.predicted_speedup is not None:
            series[p.record.series].append(p)
    out = []
    for members in series.values():
        members.sort(key=lambda p: p.record.load.value)
        published = _crossing([(p.record.load.value, p.record.speedup or 0.0) for p in members])
        if published is None or not any(p.record.is_slowdown for p in members):
            continue
        predicted = _crossing([(p.record.load.value, p.predicted_speedup or 0.0) for p in members])
        searched = None
        if predicted is None and speedup_at is not None:
            predicted, searched = _followed(members, published, speedup_at)
        r = members[0].record
        name = f"{r.family}: {r.target} {r.method} k={r.k} {r.dataset} on {r.gpu}"
        name += f" ({r.served_as})" if r.served_as else ""
        out.append(Crossover(name, r.load.kind, published, predicted, searched))
    return out


def validate(
    predictor: str = "published-fit",
    records: Sequence[EvidenceRecord] | None = None,
    progress: Callable[[int, int], None] | None = None,
    executor: Executor | None = None,
    family_selected: bool = False,
    min_speedup: float = DEFAULT_MIN_SPEEDUP,
) -> Validation:
    """Every record of ``records`` (default: the whole evidence set) replayed, in this process or on
    ``executor``; ``family_selected``: ``records`` are the families ``--family`` selected; ``min_speedup``: the
    minimum advise's verdicts are scored at (:mod:`specwise.validate.decisions`)."""
    fit = published_fit()
    recs = list(records if records is not None else all_records())
    p = Predictor(fit.profiles, Models("roofline" if predictor == "roofline" else "v2"), fit.first_given_match)
    preds = tuple(predict_all(recs, p, progress, executor))
    fam_names = sorted({r.family for r in recs}, key=lambda f: (f not in fit.training_families, f))
    families = tuple(
        FamilyResult(
            name,
            "fit" if name in fit.training_families else "held-back",
            summarize([x for x in preds if x.record.family == name]),
            sum(1 for x in preds if x.record.family == name and x.status == "anchor"),
            sum(1 for x in preds if x.record.family == name and x.status == "unreplayable"),
            sum(1 for x in preds if x.record.family == name and x.status == "skipped"),
        )
        for name in fam_names
    )
    plain = [x for x in preds if x.status == "predicted" and not x.record.speculative and x.ratio is not None]
    cross = tuple(crossovers(preds, lambda pred, load: speedup_at(pred, p, load)))
    v = Validation(
        predictor=predictor,
        fit_families=fit.training_families,
        predictions=preds,
        families=families,
        fit=summarize([x for x in preds if x.record.family in fit.training_families]),
        held_back=summarize([x for x in preds if x.record.family not in fit.training_families]),
        crossovers=cross,
        baseline_within_20pct=(
            sum(1 for x in plain if x.ratio is not None and abs(x.ratio - 1) <= 0.2) / len(plain) if plain else None
        ),
        leviathan_max_abs_diff=table4_max_abs_diff(),  # what `specwise speedup` quotes too
        held_back_by_engine=summarize_by_engine([x for x in preds if x.record.family not in fit.training_families]),
        held_back_by_engine_and_segment=summarize_by_engine_and_segment(
            [x for x in preds if x.record.family not in fit.training_families]
        ),
        family_selected=family_selected,
        decisions=score_with_shipped_bands(preds, predictor, min_speedup),
        baselines_in_runs=baseline_checks(preds),
    )
    return _with_criteria(v)


def score_with_shipped_bands(preds: Sequence[Prediction], predictor: str, minimum: float) -> DecisionScore:
    """advise's verdicts scored (validate/decisions.py) with the bands advise has under ``predictor``: the roofline
    takes vLLM's, its own replay's, whatever the engine (``perfmodel/factory.roofline_models``)."""
    fit, roofline = published_fit(), predictor == "roofline"

    def shipped(engine: str, segment: str | None) -> tuple[float, bool]:
        band = fit.band(engine, segment, roofline=roofline)
        return band, direction_poor(*fit.direction(engine, segment, roofline=roofline))

    return score_decisions(
        preds, fit.training_families, catalog_segment, minimum, shipped, "vllm" if roofline else None
    )


# the one criterion that replays no record: the analytic batch-1 speedup against the paper's table, the same whichever
# families are selected (said so under --family, where the others judge only the selection)
LEVIATHAN = "Leviathan Table 4 within +-0.1 at batch 1"
LEVIATHAN_ANY_FAMILY = " (analytic; independent of --family)"


def _with_criteria(v: Validation) -> Validation:
    both = summarize([x for x in v.predictions])
    fit, held, base = v.fit.within_25pct, v.held_back.within_25pct, v.baseline_within_20pct
    criteria = {
        "every published slowdown predicted < 1.0": (
            both.slowdowns_predicted == both.slowdowns if both.slowdowns else None
        ),
        # judged apart: the fit's own records say how well it was fitted, the held-back ones how well it predicts
        ">= 85% of fit points within +-25%": None if fit is None else fit >= 0.85,
        ">= 85% of held-back points within +-25%": None if held is None else held >= 0.85,
        "crossover within 2x wherever a source shows one": (
            all(c.within_2x for c in v.crossovers) if v.crossovers else None
        ),
        "baseline (no speculation: TPOT or throughput) within +-20%": None if base is None else base >= 1.0,
        LEVIATHAN + (LEVIATHAN_ANY_FAMILY if v.family_selected else ""): v.leviathan_max_abs_diff <= 0.1 + 1e-9,
    }
    return dataclasses.replace(v, criteria=criteria)


def check_fails(v: Validation) -> bool:
    """Whether ``--check`` exits 1: some criterion is not met (one with no record to judge it does not count)."""
    return any(ok is False for ok in v.criteria.values())


def select_families(records: Sequence[EvidenceRecord], names: Iterable[str]) -> tuple[EvidenceRecord, ...]:
    """The records of the source families ``names`` (each a name or a comma list of names, as ``--family`` takes
    them); all of them when ``names`` is empty."""
    given = list(names)
    if not given:
        return tuple(records)
    wanted = [n.strip() for arg in given for n in arg.split(",") if n.strip()]
    known = sorted({r.family for r in records})
    if not wanted:
        raise SpecwiseError(f"--family {given[0]!r}: names no family (known: {', '.join(known)})")
    unknown = [f for f in wanted if f not in known]
    if unknown:
        raise SpecwiseError(f"--family {unknown[0]!r}: unknown (known: {', '.join(known)})")
    return tuple(r for r in records if r.family in wanted)


@dataclass(frozen=True)
class NotReplayed:
    """Records left out of the error summaries for one reason: skipped (not a measurement the replay can judge) or
    unreplayable (the replay cannot set it up)."""

    status: str  # skipped | unreplayable
    reason: str
    by_family: tuple[tuple[str, int], ...]  # (family, records), most first

    @property
    def records(self) -> int:
        return sum(n for _, n in self.by_family)


def not_replayed(preds: Sequence[Prediction]) -> list[NotReplayed]:
    """The skipped and unreplayable records grouped by reason, the commonest reason first."""
    groups: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    for p in preds:
        if p.status in ("skipped", "unreplayable"):
            groups[(p.status, p.reason)][p.record.family] += 1
    out = [NotReplayed(st, why, tuple(c.most_common())) for (st, why), c in groups.items()]
    return sorted(out, key=lambda g: (g.status != "skipped", -g.records, g.reason))


def to_json(v: Validation, records: bool = True) -> dict[str, Any]:
    """The ``specwise validate --json`` document (``specwise.validation/1``). ``criteria`` maps each acceptance
    criterion to true (met), false (not met) or null (no record of the selection can judge it)."""

    def rec(p: Prediction) -> dict[str, Any]:
        r = p.record
        return {
            "id": r.id,
            "family": r.family,
            "status": p.status,
            "reason": p.reason,
            "load": r.load.to_json(),
            "metric": r.metric,
            "published_value": r.value,
            "published_speedup": r.speedup,
            "predicted_value": p.predicted_value,
            "predicted_speedup": p.predicted_speedup,
            "ratio": p.ratio,
            "baseline_speed_ratio": p.baseline_speed_ratio,
            "k": p.k,
            "acceptance": p.acceptance,
            "lengths": p.lengths,
            "where": r.where,
            "url": r.url,
        }

    out: dict[str, Any] = {
        "schema": "specwise.validation/1",
        "predictor": v.predictor,
        "fit_families": list(v.fit_families),
        "families": [
            {"family": f.family, "role": f.role, **f.summary.to_json(), "anchors": f.anchors}
            | {"unreplayable": f.unreplayable, "skipped": f.skipped}
            for f in v.families
        ],
        "fit": v.fit.to_json(),
        "held_back": v.held_back.to_json(),
        "held_back_by_engine": {engine: e.to_json() for engine, e in v.held_back_by_engine.items()},
        "held_back_by_engine_and_gpu_segment": {
            engine: {seg: e.to_json() for seg, e in by_seg.items()}
            for engine, by_seg in v.held_back_by_engine_and_segment.items()
        },
        "crossovers": [
            {"series": c.series, "load_kind": c.load_kind, "published": c.published, "predicted": c.predicted}
            | {"searched_to": c.searched_to, "within_2x": c.within_2x}
            for c in v.crossovers
        ],
        "baseline_within_20pct": v.baseline_within_20pct,
        "baseline_speed_in_speculative_runs": [b.to_json() for b in v.baselines_in_runs],
        "leviathan_table4_max_abs_diff": v.leviathan_max_abs_diff,
        "criteria": dict(v.criteria),
        "decisions": v.decisions.to_json() if v.decisions is not None else None,
    }
    if records:
        out["records"] = [rec(p) for p in v.predictions]
    return out


def finite(x: float | None) -> bool:
    return x is not None and math.isfinite(x)
