"""The published measurements nearest a deployment, and how the predictor did on them (``validate --like``).

A band is one number per engine and GPU segment (:mod:`specwise.perfmodel.profiles`); an operator deciding on a
70B with EAGLE on 4 x H100 also wants to see the measurements most like that deployment and the predictor's error
on each. Nearness is a declared score, not a fit: each part of the setup that matches adds points -- the engine
(8: another engine schedules speculation otherwise), the GPU segment (4) and the same card (2 more), the target
(6; else up to 3 for a model within 10x of its active parameters, falling with the log of the ratio), a method
the deployment considers (4; else 2 for one with the same kind of proposer: a head, a draft model, a lookup,
MTP layers) and the tensor parallelism (1). Only speculative records the replay predicted are candidates (a
plain-decoding record has no speedup to err on); among equally near ones the heavier load comes first (where
speculation is likeliest to lose, and the predictor to be wrong), then the evidence set's order.
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
    prediction: Prediction
    score: float
    role: str  # fit | held-back


@dataclass(frozen=True)
class Nearest:
    """The nearest records of the held-back families (what says how right the predictor is near the deployment)
    and, apart, of the fit families (fitted on: how closely the fit follows them, not an estimate of the error)."""

    query: Query
    held_back_neighbours: tuple[Neighbour, ...]
    fit_neighbours: tuple[Neighbour, ...]
    held_back: ErrorSummary
    fit: ErrorSummary


def query_for(engine: str, gpu: str, target: str, tp: int, methods: Sequence[str]) -> Query:
    """A :class:`Query` from a scenario's names, resolved in the catalog (an unknown one is the caller's input
    error: :class:`SpecwiseError`)."""
    g, m = resolve_gpu(gpu), resolve_model(target)
    return Query(engine, g.name, g.segment, m.name, m.active_params, tp, tuple(dict.fromkeys(methods)))


def query_from_scenario(path: Path) -> Query:
    """The :class:`Query` of a scenario file: an advise scenario's deployment and candidates' methods, or a simulate
    scenario's deployment and its ``[speculation]`` method (parse errors name the file and field)."""
    from specwise.advisor.inputs import load_inputs
    from specwise.scenario.toml_loader import load_scenario_spec, read_toml

    if "candidate" in read_toml(path):
        inputs = load_inputs(path)
        dep, methods = inputs.deployment, [c.method.name for c in inputs.candidates]
    else:
        spec = load_scenario_spec(path, reader="validate --like")
        dep, methods = spec.deployment, [spec.speculation.method.name]
    return query_for(dep.engine, dep.gpu, dep.target, dep.tp, methods)


def _proposer(method: str) -> str | None:
    known = METHODS.get(method)
    return None if known is None else known.proposer


def score(p: Prediction, q: Query) -> float | None:
    """The nearness of ``p``'s record to ``q`` (module docstring); None where the record's GPU or target does not
    resolve (it could not be replayed either)."""
    r = p.record
    try:
        gpu, target = resolve_gpu(r.gpu), resolve_model(r.target)
    except SpecwiseError:
        return None
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
    elif _proposer(r.method) in {_proposer(m) for m in q.methods}:
        s += PROPOSER_POINTS
    if r.tp == q.tp:
        s += TP_POINTS
    return s


def nearest(
    predictions: Sequence[Prediction], q: Query, fit_families: Sequence[str], n: int = DEFAULT_NEAREST
) -> Nearest:
    """The ``n`` predicted speculative records nearest ``q`` of the held-back families and the ``n`` of the fit
    families, best first, each with its error summary."""
    if n < 1:
        raise SpecwiseError(f"--nearest: at least 1 record, got {n}")
    fits = set(fit_families)
    scored: dict[str, list[tuple[float, float, int, Prediction]]] = {"held-back": [], "fit": []}
    for i, p in enumerate(predictions):
        if p.status != "predicted" or not p.record.speculative or p.ratio is None:
            continue
        s = score(p, q)
        if s is not None:
            scored["fit" if p.record.family in fits else "held-back"].append((-s, -p.record.load.value, i, p))
    chosen = {
        role: tuple(Neighbour(p, -neg, role) for neg, _, _, p in sorted(rows, key=lambda t: t[:3])[:n])
        for role, rows in scored.items()
    }
    return Nearest(
        q,
        chosen["held-back"],
        chosen["fit"],
        held_back=summarize([c.prediction for c in chosen["held-back"]]),
        fit=summarize([c.prediction for c in chosen["fit"]]),
    )


def stored_predictions(fit: PublishedFit) -> tuple[Prediction, ...]:
    """The held-back speculative records as ``fit``'s last evaluation predicted them (``held_back_predictions``,
    written by ``scripts/fit_published.py``): what a replay gives, without replaying."""
    by_id = {r.id: r for r in all_records()}
    return tuple(
        Prediction(by_id[rid], "predicted", predicted_speedup=speedup, k=k)
        for rid, (speedup, k) in fit.held_back_predictions.items()
        if rid in by_id
    )


def nearby_evidence(q: Query, fit: PublishedFit, command: str, n: int = DEFAULT_NEAREST) -> NearbyEvidence | None:
    """The ``n`` held-back records nearest ``q`` and the published fit's error on them (None: none stored)."""
    near = nearest(stored_predictions(fit), q, (), n)
    s = near.held_back
    if not s.records:
        return None
    return NearbyEvidence(
        records=s.records,
        median_abs_rel_error=s.median_abs_rel_error,
        within_25pct=s.within_25pct,
        slowdowns=s.slowdowns,
        slowdowns_predicted=s.slowdowns_predicted,
        record_ids=tuple(nb.prediction.record.id for nb in near.held_back_neighbours),
        command=command,
    )


def _value(x: float | None) -> float | None:
    return None if x is None else round(x, 4)


def neighbour_to_json(nb: Neighbour) -> dict[str, object]:
    r, p = nb.prediction.record, nb.prediction
    return {
        "id": r.id,
        "family": r.family,
        "score": nb.score,
        "engine": r.engine,
        "gpu": r.gpu,
        "tp": r.tp,
        "target": r.target,
        "method": r.method,
        "k": p.k,
        "load": {"kind": r.load.kind, "value": r.load.value},
        "published_speedup": _value(r.speedup),
        "predicted_speedup": _value(p.predicted_speedup),
        "ratio": _value(p.ratio),
        "url": r.url,
        "where": r.where,
    }


def to_json(n: Nearest, predictor: str) -> dict[str, object]:
    q = n.query
    return {
        "predictor": predictor,
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
