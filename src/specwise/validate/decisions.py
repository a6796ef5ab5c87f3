"""What ``advise`` would have decided at each published measurement's load, scored against what was measured.

A band of relative error says how far a predicted speedup can be from the measured one; an operator asks something
else: would the advice have been *right*? Here every speculative record the replay predicts gets advise's rule at its
own load (:func:`~specwise.advisor.band_rule.band_verdict`: enable when the low end of the band clears
``min_speedup``, measure first when the band straddles it, disable when even its high end misses it, and no enable
where the predictor often gets the side of 1 wrong, :func:`~specwise.perfmodel.factory.direction_poor`), and the
verdict is set against the published speedup: a slowdown, short of ``min_speedup``, or paying.

The band and the direction check come from the held-back speculative records of the record's engine -- of its GPU
segment where those are :data:`~specwise.perfmodel.profiles.MIN_SEGMENT_RECORDS` or more, as the shipped bands do
(``perfmodel/profiles.py``) -- **without the record's own source family**: a held-back record's band is then set by
the other held-back sources alone (leave one family out), so its verdict is scored on a measurement its band never
saw. A fit record's band is the shipped one (no fit record sets a band), read from the fit file. It is the verdict
rule at one load, at the published k and on the source's metric (mostly throughput), not a whole ``advise``, which
picks its own k, decides on the end-to-end p50 latency and checks capacity, a schedule and veto rules.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from specwise.advisor.band_rule import BAND_VERDICTS, BandVerdict, band_verdict, direction_guarded
from specwise.perfmodel.factory import direction_poor
from specwise.perfmodel.profiles import MIN_SEGMENT_RECORDS, UNMEASURED_BAND
from specwise.validate.predict import Prediction
from specwise.validate.stats import ErrorSummary, summarize

Outcome = Literal["slowdown", "short", "pays"]
OUTCOMES: tuple[Outcome, ...] = ("slowdown", "short", "pays")
ROLES = ("held-back", "fit")


@dataclass(frozen=True)
class Decision:
    """advise's rule at one record's load, and what was measured there."""

    record_id: str
    family: str
    role: str  # fit | held-back
    published: float  # published speedup
    predicted: float  # replayed speedup
    band: float  # the relative error band the verdict used
    # whose records set it: "<engine> on <segment> GPUs", "<engine>", "every engine" or "no held-back record" (the
    # other held-back families replayed); "shipped": the fit file's, as advise has it (a fit record's)
    band_from: str
    direction_caveat: bool  # those records put too few speedups on the measured side of 1: no enable
    verdict: BandVerdict
    # slowdown: 0.99 or less (below 1 by more than a tie); short: a tie (within 1% of 1) or above 0.99 and under
    # min_speedup; pays: min_speedup or more and not a tie
    outcome: Outcome

    @property
    def harmful(self) -> bool:
        """enable on a published slowdown: the error the band is there to prevent."""
        return self.verdict == "enable" and self.outcome == "slowdown"

    @property
    def missed(self) -> bool:
        """disable where the published speedup clears the minimum: a gain turned down."""
        return self.verdict == "disable" and self.outcome == "pays"


@dataclass(frozen=True)
class DecisionScore:
    min_speedup: float
    decisions: tuple[Decision, ...]

    def count(self, role: str, outcome: str | None = None, verdict: str | None = None) -> int:
        return sum(
            1
            for d in self.decisions
            if d.role == role and outcome in (None, d.outcome) and verdict in (None, d.verdict)
        )

    def harmful(self, role: str) -> tuple[Decision, ...]:
        return tuple(d for d in self.decisions if d.role == role and d.harmful)

    def missed(self, role: str) -> tuple[Decision, ...]:
        return tuple(d for d in self.decisions if d.role == role and d.missed)

    def to_json(self) -> dict[str, object]:
        table = {role: {o: {v: self.count(role, o, v) for v in BAND_VERDICTS} for o in OUTCOMES} for role in ROLES}
        return {
            "min_speedup": self.min_speedup,
            "basis": "a held-back record's band and direction check from the other held-back families replayed (its "
            "own left out) of the band's engine (the record's own; the roofline's is vLLM's for every record); a fit "
            "record's as shipped; at the published k and on the source's metric",
            "by_role_outcome_verdict": table,
            "enable_on_slowdown": {role: [d.record_id for d in self.harmful(role)] for role in table},
            "disable_on_paying": {role: [d.record_id for d in self.missed(role)] for role in table},
            "records": [
                {
                    "id": d.record_id,
                    "role": d.role,
                    "published_speedup": d.published,
                    "predicted_speedup": d.predicted,
                    "band": d.band,
                    "band_from": d.band_from,
                    "direction_caveat": d.direction_caveat,
                    "verdict": d.verdict,
                    "outcome": d.outcome,
                }
                for d in self.decisions
            ],
        }


SegmentOf = Callable[[str], str | None]  # a GPU name -> its catalog segment (None: not in the catalog)


def _scored(p: Prediction) -> bool:
    return (
        p.status == "predicted"
        and p.record.speculative
        and not p.record.proposes_nothing  # k = 0: the overhead of an idle proposer, no verdict to score
        and p.record.speedup is not None
        and p.predicted_speedup is not None
        and p.ratio is not None
        and math.isfinite(p.ratio)
    )


def _band_summary(
    record: Prediction, held: Sequence[Prediction], segment_of: SegmentOf, engine_name: str
) -> tuple[ErrorSummary | None, str]:
    """The held-back records' summary a record's band comes from, as ``PublishedFit.band`` chooses it -- the
    engine's records on the record's GPU segment when they are enough, else the engine's, else every held-back
    record -- with the record's own family left out; and whose records they are."""
    others = [p for p in held if p.record.family != record.record.family]
    engine = [p for p in others if p.record.engine == engine_name]
    segment = segment_of(record.record.gpu)
    on_segment = [p for p in engine if segment is not None and segment_of(p.record.gpu) == segment]
    for pool, who in (
        (on_segment, f"{engine_name} on {segment} GPUs"),
        (engine, engine_name),
        (others, "every engine"),
    ):
        s = summarize(pool)
        enough = s.speedup_records >= MIN_SEGMENT_RECORDS if pool is on_segment else s.speedup_records > 0
        if enough:
            return s, who
    return None, "no held-back record"


def _outcome(p: Prediction, minimum: float) -> Outcome:
    """A tie (:attr:`~specwise.evidence.records.EvidenceRecord.is_tie`) is neither faster nor slower in substance, so
    it never pays, whatever ``minimum`` (at 1.0, a published 1.005 would otherwise count a disable as a gain missed)."""
    if p.record.is_slowdown:
        return "slowdown"
    if p.record.is_tie:
        return "short"
    return "pays" if (p.record.speedup or 0.0) >= minimum else "short"


ShippedBand = Callable[[str, str | None], tuple[float, bool]]
"""(engine, GPU segment) -> (band, direction caveat) as ``advise`` has them from the fit file."""


def score_decisions(
    preds: Sequence[Prediction],
    fit_families: Sequence[str],
    segment_of: SegmentOf,
    minimum: float,
    shipped: ShippedBand,
    band_engine: str | None = None,
) -> DecisionScore:
    """advise's verdict rule at every predicted speculative record's load, against its published speedup. A fit
    record takes the ``shipped`` band and direction check; a held-back record, those of the other held-back families
    replayed. ``band_engine``: the engine whose band every record takes, whatever it ran on (the roofline's is
    vLLM's, ``perfmodel/factory.roofline_models``); None: the record's own."""
    held = [p for p in preds if p.record.family not in fit_families]
    out = []
    for p in (x for x in preds if _scored(x)):
        engine = band_engine or p.record.engine
        if p.record.family in fit_families:
            band, caveat = shipped(engine, segment_of(p.record.gpu))
            who = "shipped"
        else:
            band, caveat, who = _left_out_band(p, held, segment_of, engine)
        speedup = p.predicted_speedup or 0.0
        verdict = direction_guarded(band_verdict(speedup, band, minimum), caveat)
        role = "fit" if p.record.family in fit_families else "held-back"
        out.append(
            Decision(
                p.record.id,
                p.record.family,
                role,
                p.record.speedup or 0.0,
                speedup,
                band,
                who,
                caveat,
                verdict,
                _outcome(p, minimum),
            )
        )
    return DecisionScore(minimum, tuple(out))


def _left_out_band(
    p: Prediction, held: Sequence[Prediction], segment_of: SegmentOf, engine: str
) -> tuple[float, bool, str]:
    """(band, direction caveat, whose records) for a held-back record, its own family left out."""
    summary, who = _band_summary(p, held, segment_of, engine)
    if summary is None or summary.speedup_p80_abs_rel_error is None:
        return UNMEASURED_BAND, False, who
    caveat = direction_poor(summary.sign_agreement, summary.slowdowns_predicted, summary.slowdowns)
    return summary.speedup_p80_abs_rel_error, caveat, who
