"""The published measurements nearest a deployment, and how the predictor did on them (``validate --like``).

A band is one number per engine and GPU segment (:mod:`specwise.perfmodel.profiles`); an operator deciding on a
70B with EAGLE on 4 x H100 also wants to see the measurements most like that deployment and the predictor's error
on each. Nearness is a declared score, a judgement written down and not calibrated on anything: each part of the
setup that matches adds points -- the engine (8: another engine schedules speculation otherwise), the GPU segment
(4) and the same card (2 more), the target (6; else up to 3 for a model within 10x of its active parameters,
falling with the log of the ratio), a method the deployment considers (4; else 2 for one with the same kind of
proposer: a head, a draft model, a lookup, MTP layers) and the tensor parallelism (1): 25 in all. So a method
outweighs a model size: a 70B with the same method ranks above an 8B with another.

A record on another engine or another kind of GPU (data-centre or consumer) is never "near": without the engine's
and the segment's points (:data:`FLOOR`) it is not listed, whatever else it shares. The load is not compared (the
sources give QPS, batch sizes or concurrencies, which do not convert without the deployment's own latencies); among
equally near records the heavier load of each kind comes first, where speculation is likeliest to lose. Only
speculative records the replay predicted are candidates (a plain-decoding record has no speedup to err on).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from specwise.catalog import resolve_gpu, resolve_model
from specwise.contracts.advice import NearbyEvidence
from specwise.errors import SpecwiseError
from specwise.evidence.records import all_records
from specwise.methods import METHODS
from specwise.perfmodel.profiles import PublishedFit
from specwise.specs.gpu import GpuSpec
from specwise.specs.model import ModelSpec
from specwise.validate.predict import Prediction
from specwise.validate.stats import ErrorSummary, summarize

ENGINE_POINTS = 8.0
SEGMENT_POINTS = 4.0
SAME_GPU_POINTS = 2.0
SAME_TARGET_POINTS = 6.0
NEAR_TARGET_POINTS = 3.0  # at the same active parameters, none at 10x either way
METHOD_POINTS = 4.0
PROPOSER_POINTS = 2.0
TP_POINTS = 1.0
FULL_SCORE = ENGINE_POINTS + SEGMENT_POINTS + SAME_GPU_POINTS + SAME_TARGET_POINTS + METHOD_POINTS + TP_POINTS
FLOOR = ENGINE_POINTS + SEGMENT_POINTS  # the points of the same engine on the same kind of GPU: required to be listed
DEFAULT_NEAREST = 8  # records of each role


@dataclass(frozen=True)
class Query:
    """The deployment the nearest measurements are sought for (catalog names, as the records resolve)."""

    engine: str
    gpu: str
    segment: str | None
    target: str
    target_active_params: int
    tp: int
    methods: tuple[str, ...]  # the methods it considers (METHODS keys)

    def describe(self) -> str:
        return (
            f"{self.target} on {self.tp} x {self.gpu} ({self.segment or 'no segment'}), {self.engine}, "
            f"{', '.join(self.methods) or 'no speculation'}"
        )


@dataclass(frozen=True)
class Neighbour:
    """A record near the deployment: its prediction, its nearness and what in its setup is not the deployment's."""

    prediction: Prediction
    score: float
    role: str  # fit | held-back
    differs: tuple[str, ...]  # of DIFFERENCES: what is not the deployment's (the load is never compared)


DIFFERENCES = ("card", "target", "method", "TP")


@dataclass(frozen=True)
class Nearest:
    """The nearest records of the held-back families (what says how right the predictor is near the deployment)
    and, apart, of the fit families (fitted on: how closely the fit follows them, not an estimate of the error)."""

    query: Query
    held_back_neighbours: tuple[Neighbour, ...]
    fit_neighbours: tuple[Neighbour, ...]
    held_back: ErrorSummary
    fit: ErrorSummary


def query_for(engine: str, gpu: str | GpuSpec, target: str, tp: int, methods: Sequence[str]) -> Query:
    """A :class:`Query` from a scenario's names, resolved in the catalog (an unknown one is the caller's input
    error: :class:`SpecwiseError`); ``gpu`` may be a card its caller resolved already (advise's, read once)."""
    g = gpu if isinstance(gpu, GpuSpec) else resolve_gpu(gpu)
    return _query(engine, g, resolve_model(target), tp, methods)


def _query(engine: str, g: GpuSpec, m: ModelSpec, tp: int, methods: Sequence[str]) -> Query:
    return Query(engine, g.name, g.segment, m.name, m.active_params, tp, tuple(dict.fromkeys(methods)))


def query_from_scenario(path: Path) -> Query:
    """The :class:`Query` of a scenario file: an advise scenario's deployment and candidates' methods, or a simulate
    scenario's deployment and its ``[speculation]`` method (errors name the file and field)."""
    from specwise.advisor.inputs import load_inputs
    from specwise.scenario.build import named
    from specwise.scenario.toml_loader import load_scenario_spec, read_toml, source_name

    if "candidate" in read_toml(path):
        inputs = load_inputs(path)
        dep, methods = inputs.deployment, [c.method.name for c in inputs.candidates]
    else:
        spec = load_scenario_spec(path, reader="validate --like")
        dep, methods = spec.deployment, [spec.speculation.method.name]
    file = source_name(path)
    gpu = named(file, "[deployment].gpu", lambda: resolve_gpu(dep.gpu))
    target = named(file, "[deployment].target", lambda: resolve_model(dep.target, "[deployment].target"))
    return _query(dep.engine, gpu, target, dep.tp, methods)


def _proposer(method: str) -> str | None:
    known = METHODS.get(method)
    return None if known is None else known.proposer


def score(p: Prediction, q: Query) -> float | None:
    """The nearness of ``p``'s record to ``q`` (module docstring); None where the record's GPU or target does not
    resolve (it could not be replayed either)."""
    found = _scored(p, q)
    return None if found is None else found[0]


def _scored(p: Prediction, q: Query) -> tuple[float, tuple[str, ...], bool] | None:
    """(:func:`score`, what differs, whether it is on the same engine and kind of GPU) of ``p``'s record."""
    r = p.record
    try:
        gpu, target = resolve_gpu(r.gpu), resolve_model(r.target)
    except SpecwiseError:
        return None
    differs = {
        "card": gpu.name != q.gpu,
        "target": target.name != q.target,
        "method": r.method not in q.methods,
        "TP": r.tp != q.tp,
    }
    s = ENGINE_POINTS if r.engine == q.engine else 0.0
    if gpu.segment == q.segment:
        s += SEGMENT_POINTS + (SAME_GPU_POINTS if gpu.name == q.gpu else 0.0)
    if target.name == q.target:
        s += SAME_TARGET_POINTS
    else:
        ratio = abs(math.log(target.active_params / q.target_active_params))
        s += NEAR_TARGET_POINTS * max(0.0, 1.0 - ratio / math.log(10.0))
    if r.method in q.methods:
        s += METHOD_POINTS
    elif _proposer(r.method) in {_proposer(m) for m in q.methods} - {None}:
        s += PROPOSER_POINTS
    if r.tp == q.tp:
        s += TP_POINTS
    listable = r.engine == q.engine and gpu.segment == q.segment
    return s, tuple(d for d in DIFFERENCES if differs[d]), listable


def nearest(
    predictions: Sequence[Prediction], q: Query, fit_families: Sequence[str], n: int = DEFAULT_NEAREST
) -> Nearest:
    """The ``n`` predicted speculative records nearest ``q`` (on its engine and kind of GPU) of the held-back
    families and the ``n`` of the fit families, best first, each with its error summary."""
    if n < 1:
        raise SpecwiseError(f"nearest: at least 1 record, got {n}")
    fits = set(fit_families)
    scored: dict[str, list[tuple[tuple[float, str, float, int], Neighbour]]] = {"held-back": [], "fit": []}
    for i, p in enumerate(predictions):
        if p.status != "predicted" or not p.record.speculative or p.ratio is None:
            continue
        found = _scored(p, q)
        if found is None or not found[2]:
            continue
        role = "fit" if p.record.family in fits else "held-back"
        load = p.record.load
        scored[role].append(((-found[0], load.kind, -load.value, i), Neighbour(p, found[0], role, found[1])))
    chosen = {role: tuple(nb for _, nb in sorted(rows, key=lambda t: t[0])[:n]) for role, rows in scored.items()}
    return Nearest(
        q,
        chosen["held-back"],
        chosen["fit"],
        held_back=summarize([c.prediction for c in chosen["held-back"]]),
        fit=summarize([c.prediction for c in chosen["fit"]]),
    )


class StaleFit(SpecwiseError):
    """The fit file's stored replay names a record the evidence set no longer has."""


def stored_predictions(fit: PublishedFit) -> tuple[Prediction, ...]:
    """The held-back speculative records as ``fit``'s last evaluation predicted them (``held_back_predictions``,
    written by ``scripts/fit_published.py``): what a replay gives, without replaying. A stored id the evidence set
    no longer has means the file predates it: :class:`StaleFit`. Records of the training families are never held
    back, whatever the file says."""
    by_id = {r.id: r for r in all_records()}
    missing = sorted(set(fit.held_back_predictions) - set(by_id))
    if missing:
        raise StaleFit(
            f"the published fit's stored replay names {len(missing)} record(s) the evidence set lacks "
            f"({', '.join(missing[:3])}): rerun python scripts/fit_published.py --evaluate"
        )
    return tuple(
        Prediction(by_id[rid], "predicted", predicted_speedup=speedup, k=k)
        for rid, (speedup, k) in fit.held_back_predictions.items()
        if by_id[rid].family not in fit.training_families
    )


def nearby_evidence(q: Query, fit: PublishedFit, command: str, n: int = DEFAULT_NEAREST) -> NearbyEvidence:
    """The ``n`` held-back records nearest ``q`` and the published fit's error on them (``records`` 0: none ran on
    this engine and kind of GPU)."""
    near = nearest(stored_predictions(fit), q, fit.training_families, n)
    s, rows = near.held_back, near.held_back_neighbours
    return NearbyEvidence(
        records=s.records,
        median_abs_rel_error=s.median_abs_rel_error,
        p80_abs_rel_error=s.p80_abs_rel_error,
        within_25pct=s.within_25pct,
        slowdowns=s.slowdowns,
        slowdowns_predicted=s.slowdowns_predicted,
        record_ids=tuple(nb.prediction.record.id for nb in rows),
        command=command,
        nearness=(min(nb.score for nb in rows), max(nb.score for nb in rows)) if rows else None,
        nearness_of=FULL_SCORE,
        differs=tuple(d for d in DIFFERENCES if any(d in nb.differs for nb in rows)),
    )


def _value(x: float | None) -> float | None:
    return None if x is None else round(x, 4)


def setup_words(nb: Neighbour) -> str:
    """The record's method as it ran: a tree's size and depth, a chain's k, or the k the replay assumed."""
    r, p = nb.prediction.record, nb.prediction
    if r.verification == "tree":
        return f"{r.method} tree of {r.k} (depth {r.tree_depth})" if r.k is not None else f"{r.method} tree"
    if r.k is not None:
        return f"{r.method} k={r.k}"
    return f"{r.method} k={p.k} (not published; the replay's)" if p.k is not None else r.method


def neighbour_to_json(nb: Neighbour) -> dict[str, object]:
    """One listed record: its setup, load, published and predicted speedup, nearness and where it is from."""
    r, p = nb.prediction.record, nb.prediction
    return {
        "id": r.id,
        "family": r.family,
        "score": _value(nb.score),
        "differs": list(nb.differs),
        "engine": r.engine,
        "gpu": r.gpu,
        "tp": r.tp,
        "target": r.target,
        "method": r.method,
        "verification": r.verification,
        "k": r.k,
        "replayed_k": p.k,
        "load": r.load.to_json(),
        "published_speedup": _value(r.speedup),
        "predicted_speedup": _value(p.predicted_speedup),
        "ratio": _value(p.ratio),
        "url": r.url,
        "where": r.where,
    }


def to_json(n: Nearest, predictor: str) -> dict[str, object]:
    """``validate --like --json``: the query, the listed records of each role and their error summaries."""
    q = n.query
    return {
        "predictor": predictor,
        "nearness": {"of": FULL_SCORE, "floor": FLOOR, "load_compared": False},
        "query": {
            "engine": q.engine,
            "gpu": q.gpu,
            "segment": q.segment,
            "target": q.target,
            "tp": q.tp,
            "methods": list(q.methods),
        },
        "held_back_neighbours": [neighbour_to_json(nb) for nb in n.held_back_neighbours],
        "fit_neighbours": [neighbour_to_json(nb) for nb in n.fit_neighbours],
        "held_back": n.held_back.to_json(),
        "fit": n.fit.to_json(),
    }
