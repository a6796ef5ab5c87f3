"""The error summary ``validate`` prints: ties (a published speedup within 1% of 1) are counted apart, in neither
the slowdowns nor the sign agreement (review 14-B #3)."""

from __future__ import annotations

from dataclasses import replace

from specwise.evidence.records import all_records
from specwise.validate.predict import Prediction
from specwise.validate.stats import summarize


def _pred(value: float, predicted: float) -> Prediction:
    base = next(r for r in all_records() if r.id == "sdb-fig1-qwen3-8b-gsm8k-ngram-bs16")
    return Prediction(replace(base, value=value), "predicted", predicted_speedup=predicted)


def test_ties_are_in_neither_count() -> None:
    s = summarize([_pred(0.995, 1.05), _pred(1.005, 0.9), _pred(0.9, 0.95), _pred(1.2, 1.1)])
    assert s.ties == 2
    assert (s.slowdowns, s.slowdowns_predicted) == (1, 1)
    assert s.sign_agreement == 1.0  # the two ties, predicted on the "wrong" side, do not count
    assert s.speedup_records == 4  # their error still does


def test_without_ties_nothing_changes() -> None:
    s = summarize([_pred(0.9, 1.05), _pred(1.2, 1.1)])
    assert (s.ties, s.slowdowns, s.slowdowns_predicted, s.sign_agreement) == (0, 1, 0, 0.5)
