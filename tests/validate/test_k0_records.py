"""A speculative method run with k = 0 (vLLM issue #49548: dynamic SD enabled, forced to propose nothing) measures
the overhead of an enabled proposer, not speculation: it is skipped with that reason even where its model is known,
and its published ratio is neither a slowdown nor a tie of speculation (review: it would have been scored as a
published slowdown of MTP once replayable)."""

from __future__ import annotations

from dataclasses import replace

from specwise.evidence.records import EvidenceRecord, all_records
from specwise.perfmodel.profiles import published_fit
from specwise.validate.predict import K0_REASON, Models, Predictor, predict_all


def _k0() -> list[EvidenceRecord]:
    return [r for r in all_records() if r.id.startswith("vllm-49548-gemma4-31b-dsd-k0-")]


def test_k0_records_are_neither_slowdowns_nor_ties() -> None:
    k0 = _k0()
    assert len(k0) == 2
    for r in k0:
        assert r.speculative and r.k == 0 and r.proposes_nothing
        assert r.speedup is not None and r.speedup < 0.99  # the published ratio (a tax) stays as published
        assert not r.is_slowdown and not r.is_tie
        assert "guess" in r.notes and "validate skips it" in r.notes


def test_a_replayable_k0_record_is_skipped_not_predicted() -> None:
    fit = published_fit()
    p = Predictor(fit.profiles, Models("v2"), fit.first_given_match)
    known = next(r for r in all_records() if r.method == "mtp" and r.target == "zai-org/GLM-4.5-Air")
    k0 = [replace(r, target=known.target, gpu=known.gpu, tp=known.tp) for r in _k0()]
    # the same records with k = 1 replay (so the skip is not some other unreplayability)
    k1 = predict_all([replace(r, id=r.id + "-k1", k=1) for r in k0], p)
    assert {x.status for x in k1} <= {"predicted", "anchor"}, [(x.status, x.reason) for x in k1]
    got = predict_all(k0, p)
    assert [(x.status, x.reason) for x in got] == [("skipped", K0_REASON)] * 2
