"""How well predictions match the published numbers, per group of records: the error measures ``specwise
validate`` prints and the fit file records (and a prediction's uncertainty band is read from)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

from specwise.validate.predict import Prediction


@dataclass(frozen=True)
class ErrorSummary:
    records: int  # predicted records (anchors and skips excluded)
    median_abs_rel_error: float | None
    p80_abs_rel_error: float | None
    within_25pct: float | None  # share of records with |predicted / published - 1| <= 0.25
    slowdowns: int  # published slowdowns (speedup <= 0.99: ties apart) among the speculative records
    slowdowns_predicted: int  # of those, predicted < 1 as well
    sign_agreement: float | None  # share of speculative records (ties apart) predicted on the published side of 1
    # The same error over the speculative records only, whose ratio is of speedups (a plain-decoding record's is of
    # a TPOT or a throughput): the band a predicted speedup carries.
    speedup_records: int = 0
    speedup_p80_abs_rel_error: float | None = None
    ties: int = 0  # published speedups within 1% of 1 (EvidenceRecord.is_tie): in neither count above

    def to_json(self) -> dict[str, float | int | None]:
        return asdict(self)


def summarize(preds: Sequence[Prediction]) -> ErrorSummary:
    done = [p for p in preds if p.status == "predicted" and p.ratio is not None and math.isfinite(p.ratio)]
    errors = np.array([abs(p.ratio - 1.0) for p in done if p.ratio is not None])
    spec = [p for p in done if p.record.speculative and p.predicted_speedup is not None]
    slow = [p for p in spec if p.record.is_slowdown]
    agree = [((p.predicted_speedup or 0) < 1.0) == p.record.is_slowdown for p in spec if not p.record.is_tie]
    speedup_errors = np.array([abs(p.ratio - 1.0) for p in spec if p.ratio is not None])
    return ErrorSummary(
        records=len(done),
        median_abs_rel_error=float(np.median(errors)) if errors.size else None,
        p80_abs_rel_error=float(np.percentile(errors, 80)) if errors.size else None,
        within_25pct=float(np.mean(errors <= 0.25)) if errors.size else None,
        slowdowns=len(slow),
        slowdowns_predicted=sum(1 for p in slow if (p.predicted_speedup or 0) < 1.0),
        sign_agreement=float(np.mean(agree)) if agree else None,
        speedup_records=int(speedup_errors.size),
        speedup_p80_abs_rel_error=float(np.percentile(speedup_errors, 80)) if speedup_errors.size else None,
        ties=sum(1 for p in spec if p.record.is_tie),
    )


def summarize_by_engine(preds: Sequence[Prediction]) -> dict[str, ErrorSummary]:
    """:func:`summarize` per serving engine of the records (the band of each engine's profile), engines sorted."""
    return {
        engine: summarize([p for p in preds if p.record.engine == engine])
        for engine in sorted({p.record.engine for p in preds})
    }


def summarize_by_engine_and_segment(preds: Sequence[Prediction]) -> dict[str, dict[str, ErrorSummary]]:
    """:func:`summarize` per serving engine and per GPU segment of the records (the catalog's ``segment``: data-centre
    or consumer cards), where a prediction's error band comes from (``perfmodel/profiles.py``); a record on a GPU the
    catalog lacks is in no segment."""
    from specwise.specs.gpu import GPU_SEGMENTS

    out: dict[str, dict[str, ErrorSummary]] = {}
    for engine in sorted({p.record.engine for p in preds}):
        for seg in GPU_SEGMENTS:
            chosen = [p for p in preds if p.record.engine == engine and catalog_segment(p.record.gpu) == seg]
            if chosen:
                out.setdefault(engine, {})[seg] = summarize(chosen)
    return out


def catalog_segment(gpu: str) -> str | None:
    """The catalog's segment of a GPU as an evidence record names it (data-centre or consumer cards, where a
    prediction's error band comes from); None for a GPU the catalog lacks."""
    from specwise.catalog import catalog_gpus

    g = catalog_gpus().get(gpu)
    return g.segment if g is not None else None


@dataclass(frozen=True)
class BaselineCheck:
    """One family's no-speculation arms, published beside its speedups, against the replay's plain decoding of the
    same runs, as speed ratios (:attr:`Prediction.baseline_speed_ratio`; > 1: the replay is faster): a family far
    off here is replayed with other inputs (lengths, hardware, load) than its sources ran, whatever its speedup
    error says. Each published arm counts once, however many speculative records were measured against it."""

    family: str
    arms: int  # distinct published no-speculation results
    records: int  # speculative records measured against them
    median_ratio: float
    min_ratio: float
    max_ratio: float
    within_20pct: float  # share of the arms

    def to_json(self) -> dict[str, float | int | str]:
        return asdict(self)


def _arm(p: Prediction) -> tuple[object, ...]:
    """What identifies one published no-speculation result: the run's setup and load, and its value."""
    r = p.record
    return (r.url, r.engine, r.gpu, r.tp, r.target, r.dataset, r.prompt_tokens, r.output_tokens, r.temperature,
            r.metric, r.load.kind, r.load.value, r.baseline_value)  # fmt: skip


def baseline_checks(preds: Sequence[Prediction]) -> tuple[BaselineCheck, ...]:
    """:class:`BaselineCheck` per family with a published no-speculation arm beside its speedups, families sorted;
    an arm several speculative records share counts once (review s45d: one arm of vLLM issue 20780 was 12 of 12)."""
    arms: dict[str, dict[tuple[object, ...], float]] = {}
    records: dict[str, int] = {}
    for p in preds:
        ratio = p.baseline_speed_ratio
        if ratio is not None and math.isfinite(ratio):
            arms.setdefault(p.record.family, {}).setdefault(_arm(p), ratio)
            records[p.record.family] = records.get(p.record.family, 0) + 1
    out = []
    for family, by_arm in sorted(arms.items()):
        ratios = list(by_arm.values())
        out.append(
            BaselineCheck(
                family,
                len(ratios),
                records[family],
                float(np.median(ratios)),
                min(ratios),
                max(ratios),
                float(np.mean([abs(x - 1.0) <= 0.2 for x in ratios])),
            )
        )
    return tuple(out)
