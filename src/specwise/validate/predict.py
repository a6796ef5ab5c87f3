"""Predictions for every evidence record under one set of step-time models, with the acceptance each was made with.

Acceptance per record, in this order: the published per-position rates; the published mean acceptance length at
the record's k (as an i.i.d. rate); else, for a series of the same experiment at several loads, the rate that
makes the predicted speedup equal the published one at the series' lowest load -- that record is the series'
*anchor*, reported apart and never counted as a prediction. A series with one point and no acceptance predicts
nothing.
"""

from __future__ import annotations

import itertools
import re
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from specwise.acceptance.lookup import split_per_step
from specwise.acceptance.model import AcceptanceModel
from specwise.engines.vllm_versions import VllmVersion, speculation_engine
from specwise.evidence.records import SPEEDUP_METRICS, THROUGHPUT_METRICS, EvidenceRecord, Load, stated_release
from specwise.executors import Executor
from specwise.methods import METHODS
from specwise.perfmodel.drafting import DraftCost
from specwise.perfmodel.predictor import StepTimePredictor
from specwise.perfmodel.profiles import EngineProfile, with_async_scheduling
from specwise.perfmodel.roofline import RooflinePredictor
from specwise.perfmodel.v2 import StepModelV2
from specwise.specs.quant import Quantization
from specwise.validate.anchor_grid import ANCHOR_CELLS, FGM_CELLS, cell, grid_root, node
from specwise.validate.replay import Setup, Unreplayable, run, setup_for

STATUSES = ("predicted", "anchor", "unreplayable", "skipped")
# A speculative method at k = 0 (EvidenceRecord.proposes_nothing) is skipped even where it could be replayed: its
# replay is plain decoding (speedup 1), and its published ratio would count as a slowdown of speculation.
K0_REASON = "k = 0: the overhead of an enabled proposer proposing nothing, not a speculation speedup"


@dataclass(frozen=True)
class Prediction:
    record: EvidenceRecord
    status: str
    reason: str = ""
    predicted_value: float | None = None  # the record's metric, simulated
    predicted_speedup: float | None = None
    k: int | None = None
    acceptance: str = ""
    lengths: str = ""
    drafted_with: Acceptance | None = None  # what it was predicted with (a prediction at another load reuses it)

    @property
    def ratio(self) -> float | None:
        """predicted / published, on the speedup for speculative records and on the value for plain decoding."""
        if self.record.speculative:
            pub = self.record.speedup
            return None if pub is None or self.predicted_speedup is None else self.predicted_speedup / pub
        return None if self.predicted_value is None else self.predicted_value / self.record.value

    @property
    def baseline_speed_ratio(self) -> float | None:
        """The replay's plain decoding of a speculative record's own run against the no-speculation arm the source
        published beside it (``baseline_value``), as a ratio of speeds: > 1 the replay's plain decoding is faster
        than measured (a lower latency, a higher throughput). How far the replay's inputs (lengths, hardware, load)
        put plain decoding from what the source measured, apart from anything speculation does. The replay's arm is
        the one :attr:`predicted_speedup` divides. None without a published arm."""
        r, value, speedup = self.record, self.predicted_value, self.predicted_speedup
        if not r.speculative or r.baseline_value is None or r.metric in SPEEDUP_METRICS or r.baseline_value <= 0:
            return None
        if value is None or not speedup or self.status not in ("predicted", "anchor"):
            return None
        if _throughput_like(r.metric):
            return (value / speedup) / r.baseline_value
        return r.baseline_value / (value * speedup)


class Models:
    """Builds the step-time predictors a replay runs on: the published-fit model (``v2``) or the roofline."""

    def __init__(self, kind: str = "v2") -> None:
        if kind not in ("v2", "roofline"):
            raise ValueError(f"unknown step-time model {kind!r}")
        self.kind = kind

    def _predictor(self, model: Any, s: Setup, tp: int, quantization: Quantization | None) -> StepTimePredictor:
        """One pass of ``model`` with the weights and KV cache the record states (as stored where it states none)."""
        if self.kind == "roofline":
            return RooflinePredictor(model, s.gpu, tp=tp, quantization=quantization, kv_dtype=s.kv_dtype)
        return StepModelV2(model, s.gpu, s.profile.gpu, tp=tp, quantization=quantization, kv_dtype=s.kv_dtype)

    def target(self, s: Setup) -> StepTimePredictor:
        return self._predictor(s.target, s, s.record.tp, s.quantization)

    def draft_cost(self, s: Setup) -> DraftCost | None:
        if s.method is None:
            return None
        r = s.record
        branching = (r.tree_branching or 1) if r.verification == "tree" else 1
        draft = self._predictor(s.draft, s, s.draft_tp, s.draft_quantization) if s.draft is not None else None
        return s.method.draft_cost(draft, branching)


def iid_alpha_for(al: float, k: int) -> float:
    """The i.i.d. acceptance a with 1 + a + ... + a^k = AL (vLLM's mean acceptance length at k)."""
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if 1 + sum(mid**i for i in range(1, k + 1)) < al:
            lo = mid
        else:
            hi = mid
    return lo


@dataclass(frozen=True)
class Acceptance:
    """What a replay drafts with: per-proposal acceptance, the share of steps with a proposal, and how it was had.

    With ``blend`` (weight, acceptance) pairs, weights summing to 1, a replay runs each part and blends the speedups
    (:mod:`specwise.validate.anchor_grid`): ``model`` and ``proposal_rate`` then name the point the blend stands
    for, shown to a reader but never run."""

    model: AcceptanceModel
    proposal_rate: float
    how: str
    blend: tuple[tuple[float, Acceptance], ...] = ()

    def parts(self) -> list[tuple[float, Acceptance]]:
        """(weight, acceptance run) pairs, nested blends flattened; ``[(1.0, self)]`` for a plain acceptance."""
        if not self.blend:
            return [(1.0, self)]
        return [(w * v, leaf) for w, part in self.blend for v, leaf in part.parts()]


def blended(point: Acceptance, parts: Sequence[tuple[float, Acceptance]]) -> Acceptance:
    """``point`` (what is shown) replayed as the weighted ``parts``."""
    return replace(point, blend=tuple((w, a) for w, a in parts if w > 0.0))


def _lookup(record: EvidenceRecord) -> bool:
    method = METHODS.get(record.method)
    return method is not None and method.is_lookup


def lookup_acceptance(per_step: tuple[float, ...], first_given_match: float, how: str) -> Acceptance:
    """A lookup's per-step rates (a step without a match counted as a rejection, as traces record it) split into a
    match rate and per-match acceptance (:func:`specwise.acceptance.lookup.split_per_step`)."""
    split = split_per_step(per_step, first_given_match)
    rho = split.proposal_rate
    return Acceptance(split.per_match, rho, f"{how}; a match in {rho:.0%} of steps")


def published_acceptance(record: EvidenceRecord, first_given_match: float) -> Acceptance | None:
    rates: tuple[float, ...] | None = None
    how = ""
    if record.per_position:
        rates, how = record.per_position, "published per-position rates"
    elif record.acceptance_length is not None and record.k:
        depth = record.tree_depth if record.verification == "tree" and record.tree_depth else record.k
        alpha = iid_alpha_for(record.acceptance_length, depth)
        rates = AcceptanceModel.iid(alpha).per_position(depth)
        how = f"published AL {record.acceptance_length:g} at k={depth} (alpha {alpha:.3f})"
    if rates is None:
        return None
    if _lookup(record) and record.match_rate is not None:  # vLLM's counters: per match, and how often one is found
        how += f" per match; a match in {record.match_rate:.0%} of steps (published counts)"
        return Acceptance(AcceptanceModel.from_per_position(rates), record.match_rate, how)
    if _lookup(record):
        return lookup_acceptance(rates, first_given_match, how)
    return Acceptance(AcceptanceModel.from_per_position(rates), 1.0, how)


class Predictor:
    """Replays records under ``profiles`` (engine name -> profile) and ``models``; caches setups and baselines."""

    def __init__(self, profiles: Mapping[str, EngineProfile], models: Models, first_given_match: float = 0.6) -> None:
        self.profiles, self.models = profiles, models
        self.first_given_match = first_given_match
        self._setups: dict[str, Setup | Unreplayable] = {}
        self._baselines: dict[tuple[Any, ...], float] = {}

    def fgm_parts(self) -> list[tuple[float, float]]:
        """(weight, first_given_match) on the FGM_CELLS grid around :attr:`first_given_match`: the lookup split's
        constant replayed at the two nodes around it, so that predictions move continuously with it."""
        i, w = cell(self.first_given_match, 0.0, 1.0, FGM_CELLS)
        return [(1.0 - w, node(i, 0.0, 1.0, FGM_CELLS)), (w, node(i + 1, 0.0, 1.0, FGM_CELLS))]

    def published(self, record: EvidenceRecord) -> Acceptance | None:
        """:func:`published_acceptance` at :attr:`first_given_match`, replayed as a blend over its grid nodes where
        the split uses it (a lookup's per-step rates without published match counts)."""
        point = published_acceptance(record, self.first_given_match)
        if point is None or not _lookup(record) or record.match_rate is not None:
            return point
        parts = [(w, published_acceptance(record, g)) for w, g in self.fgm_parts() if g > 0.0]
        return blended(point, [(w, a) for w, a in parts if a is not None])

    def fresh(self) -> Predictor:
        """The same predictor with empty caches (what a batch sent to another process carries)."""
        return Predictor(self.profiles, self.models, self.first_given_match)

    def profile_of(self, record: EvidenceRecord) -> EngineProfile:
        if record.engine == "sglang":
            return self.profiles["sglang"]
        if is_vllm_v0(record.engine_version, record.method, record.release):
            return self.profiles["vllm-v0"]
        return replay_async_scheduling(self.profiles["vllm-v1"], record)

    def setup(self, record: EvidenceRecord) -> Setup:
        if record.id not in self._setups:
            try:
                # the baseline: no speculation (method None)
                baseline_v0 = record.engine == "vllm" and is_vllm_v0(record.engine_version, None, record.release)
                self._setups[record.id] = setup_for(record, self.profile_of(record), baseline_v0)
            except Unreplayable as exc:
                self._setups[record.id] = exc
        got = self._setups[record.id]
        if isinstance(got, Unreplayable):
            raise got
        return got

    def baseline(self, s: Setup) -> float:
        r = s.record
        # the record's workload, and what its baseline ran (its release's overhead, its prefill)
        key: tuple[Any, ...] = (r.target, r.gpu, r.tp, r.engine, r.engine_version, r.load, r.metric, r.statistic)
        key += (s.lengths, s.profile.overhead, s.baseline_chunked_prefill, s.quantization, s.kv_dtype)
        if key not in self._baselines:
            self._baselines[key] = run(s, self.models.target(s), None, 0, None)
        return self._baselines[key]

    def speculative(self, s: Setup, acceptance: Acceptance) -> tuple[float, float, int]:
        """(value, speedup, k) with speculation; the best k when the record leaves k open. A blended acceptance's
        speedup is its parts' best speedups, weighted (each part its own best k, so that a blend of grid nodes is
        the interpolant of what each node predicts); its k is the heaviest part's."""
        base = self.baseline(s)
        target, draft = self.models.target(s), self.models.draft_cost(s)
        throughput = _throughput_like(s.record.metric)
        speedup, heaviest = 0.0, (-1.0, 0)
        for w, a in acceptance.parts():
            best: tuple[float, int] | None = None
            for k in s.k_values:
                value = run(s, target, draft, k, a.model, a.proposal_rate)
                x = value / base if throughput else base / value
                if best is None or x > best[0]:
                    best = (x, k)
            assert best is not None
            speedup += w * best[0]
            heaviest = max(heaviest, (w, best[1]), key=lambda t: t[0])
        return (base * speedup if throughput else base / speedup), speedup, heaviest[1]


def _throughput_like(metric: str) -> bool:
    return metric in THROUGHPUT_METRICS or metric == "throughput_speedup"


def _skip_reason(r: EvidenceRecord) -> str | None:
    if r.kind != "measured":
        return "the source simulated this point; not a measurement"
    if r.proposes_nothing:
        return K0_REASON
    if r.speculative and r.speedup is None:
        return "speculative value without its no-SD twin (its speedup is another record)"
    if r.metric not in (*SPEEDUP_METRICS, *THROUGHPUT_METRICS, "tpot_s", "e2e_latency_s"):
        return f"metric {r.metric} is not replayed"
    return None


def anchor_acceptance(p: Predictor, s: Setup) -> Acceptance:
    """The acceptance whose predicted speedup at the anchor equals the published one: one number (the i.i.d. rate,
    or for a lookup its match rate at the fitted per-match acceptance), the root of the speedup's linear interpolant
    over ANCHOR_CELLS fixed cells (:func:`specwise.validate.anchor_grid.grid_root`), replayed as the blend of the two
    nodes around it. The anchor record reproduces its published speedup exactly."""
    target = s.record.speedup
    assert target is not None
    lookup = _lookup(s.record)
    what, hi = ("match rate", 1.0) if lookup else ("alpha", 0.995)

    def make(x: float) -> Acceptance:
        if lookup:
            rate = max(x, 1e-3)
            parts = [(w, Acceptance(AcceptanceModel.iid(g), rate, "")) for w, g in p.fgm_parts()]
            return blended(Acceptance(AcceptanceModel.iid(p.first_given_match), rate, ""), parts)
        return Acceptance(AcceptanceModel.iid(x), 1.0, "")

    speedups: dict[int, float] = {}

    def f(i: int) -> float:
        if i not in speedups:
            speedups[i] = p.speculative(s, make(node(i, 0.0, hi, ANCHOR_CELLS)))[1]
        return speedups[i] - target

    i, w, note = grid_root(f, ANCHOR_CELLS)
    a, b = node(i, 0.0, hi, ANCHOR_CELLS), node(i + 1, 0.0, hi, ANCHOR_CELLS)
    x = a + w * (b - a)
    note = f"; {note}" if note else ""
    how = f"anchored at {s.record.id} ({what} {x:.3f}, reproducing its published speedup{note})"
    return blended(replace(make(x), how=how, blend=()), [(1.0 - w, make(a)), (w, make(b))])


def predict_all(
    records: Sequence[EvidenceRecord],
    p: Predictor,
    progress: Callable[[int, int], None] | None = None,
    executor: Executor | None = None,
) -> list[Prediction]:
    """A prediction (or the reason there is none) for every record, in order. With ``executor``, whole series in
    batches on it, each batch with a :meth:`Predictor.fresh` copy of ``p``: the same predictions, since a record's
    depends on its own series alone (its anchor) and the caches only remember."""
    if executor is not None:
        return _predict_batched(records, p, progress, executor)
    anchors = _anchors(records, p)
    out = []
    for i, r in enumerate(records, start=1):
        out.append(_predict(r, p, anchors))
        if progress:
            progress(i, len(records))
    return out


def _anchors(records: Sequence[EvidenceRecord], p: Predictor) -> dict[Any, tuple[Acceptance, str]]:
    """Per series without published acceptance: (acceptance, anchor record id)."""
    series: dict[Any, list[EvidenceRecord]] = defaultdict(list)
    for r in records:
        if r.speculative and _skip_reason(r) is None and p.published(r) is None:
            series[r.series].append(r)
    out = {}
    for key, members in series.items():
        if len(members) < 2:
            continue
        anchor = min(members, key=lambda r: r.load.value)
        try:
            s = p.setup(anchor)
        except Unreplayable:
            continue
        out[key] = (anchor_acceptance(p, s), anchor.id)
    return out


def _predict(r: EvidenceRecord, p: Predictor, anchors: Mapping[Any, tuple[Acceptance, str]]) -> Prediction:
    skip = _skip_reason(r)
    if skip:
        return Prediction(r, "skipped", skip)
    try:
        s = p.setup(r)
    except Unreplayable as exc:
        return Prediction(r, "unreplayable", str(exc))
    if not r.speculative:
        return Prediction(r, "predicted", predicted_value=p.baseline(s), lengths=s.lengths.how)
    given = p.published(r)
    status = "predicted"
    if given is None:
        if r.series not in anchors:
            return Prediction(r, "skipped", "no published acceptance and no other load to anchor it at")
        given, anchor_id = anchors[r.series]
        status = "anchor" if anchor_id == r.id else "predicted"
    value, speedup, k = p.speculative(s, given)
    return Prediction(r, status, "; ".join(s.notes), value, speedup, k, given.how, s.lengths.how, given)


def speedup_at(pred: Prediction, p: Predictor, load: float) -> float | None:
    """The predicted speedup of ``pred``'s experiment at another ``load`` of the same kind, with the acceptance it
    was predicted with (where a predicted curve crosses 1 beyond the loads a source measured)."""
    r = pred.record
    if pred.drafted_with is None:
        return None
    # the same arrivals at the new rate; a ladder's other stages are not the source's, so the load stands alone; a run
    # of stated length stays that long, or as long as the new load needs to be in flight at all
    moved_load = Load(r.load.kind, load, r.load.arrivals)
    if r.load.requests is not None:
        moved_load = replace(moved_load, requests=max(r.load.requests, moved_load.users))
    moved = replace(r, id=f"{r.id}@{load:g}", load=moved_load)
    try:
        return p.speculative(p.setup(moved), pred.drafted_with)[1]
    except Unreplayable:
        return None


@dataclass(frozen=True)
class _Batch:
    records: tuple[EvidenceRecord, ...]
    predictor: Predictor


def _predict_batch(batch: _Batch) -> list[Prediction]:
    return predict_all(batch.records, batch.predictor)


def series_batches(records: Sequence[EvidenceRecord], n: int) -> list[list[int]]:
    """The records' indices in at most ``n`` batches of whole series, each in record order; the largest series go
    first, each into the batch with the fewest records so far (deterministic)."""
    by_series: dict[Any, list[int]] = defaultdict(list)
    for i, r in enumerate(records):
        by_series[r.series].append(i)
    batches: list[list[int]] = [[] for _ in range(max(1, min(n, len(by_series))))]
    for group in sorted(by_series.values(), key=lambda g: (-len(g), g[0])):
        min(batches, key=len).extend(group)
    return sorted((sorted(b) for b in batches if b), key=lambda b: -len(b))


def _predict_batched(
    records: Sequence[EvidenceRecord], p: Predictor, progress: Callable[[int, int], None] | None, executor: Executor
) -> list[Prediction]:
    batches = series_batches(records, 4 * executor.workers)  # a few per worker: the last ones finish together
    done = [0, *itertools.accumulate(len(b) for b in batches)]

    def tick(finished: int, total: int) -> None:
        if progress:
            progress(done[finished], len(records))

    jobs = [_Batch(tuple(records[i] for i in b), p.fresh()) for b in batches]
    out: list[Prediction | None] = [None] * len(records)
    for batch, preds in zip(batches, executor.map(_predict_batch, jobs, tick), strict=True):
        for i, pred in zip(batch, preds, strict=True):
            out[i] = pred
    return [pred for pred in out if pred is not None]


_ENGINE_TOKEN = re.compile(r"\bv([01])\b(?!\.)", re.IGNORECASE)  # "V0 engine", "V1 runner"; not "v0.15.1"


def is_vllm_v0(engine_version: str, method: str | None = None, release: str | None = None) -> bool:
    """Whether a record's vLLM ran the V0 engine: "V0"/"V1" where the record names the engine, else a ``release``
    before 0.8 (V1 became the default in 0.8; default: the release ``engine_version`` states,
    :func:`~specwise.evidence.records.stated_release`, as :attr:`EvidenceRecord.release
    <specwise.evidence.records.EvidenceRecord.release>` reads it); "0.15.1 (image vllm/vllm-openai:v0.15.1)" is V1.
    Every speculative method on 0.8, and a separate draft model on 0.9, fell back to V0
    (:func:`~specwise.engines.vllm_versions.speculation_engine`), as :func:`specwise.perfmodel.profiles.profile_for`
    prices it for users; a record of 0.8 run with ``VLLM_USE_V1=1`` says "V1" to be replayed on V1."""
    named = _ENGINE_TOKEN.search(engine_version)
    if named:
        return named.group(1) == "0"
    release = release or stated_release(engine_version)
    if release is None:
        return False
    return speculation_engine(VllmVersion.parse(release), method) == "v0"  # 0.8.2 runs a --speculative-config on V1


def replay_async_scheduling(profile: EngineProfile, record: EvidenceRecord) -> EngineProfile:
    """vLLM V1's ``profile`` with the async scheduling the record's release ran by default
    (:func:`~specwise.perfmodel.profiles.with_async_scheduling`); a record whose release is not stated as a number
    ("not stated (vLLM main, ~2026-03)") and whose family declares none
    (:attr:`~specwise.evidence.records.EvidenceRecord.release`) is replayed without it."""
    release = record.release
    if release is None:
        return profile
    return with_async_scheduling(profile, VllmVersion.parse(release), record.method)
