"""The error summary ``validate`` prints: ties (a published speedup within 1% of 1) are counted apart, in neither
the slowdowns nor the sign agreement (review 14-B #3)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from specwise.evidence.records import EvidenceRecord, all_records
from specwise.validate.predict import Prediction
from specwise.validate.stats import baseline_checks, summarize


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


def _by_id(record_id: str) -> EvidenceRecord:
    return next(r for r in all_records() if r.id == record_id)


def test_the_in_run_baseline_is_a_speed_ratio_either_way() -> None:
    """The no-speculation arm the replay divides by, against the one published beside the speedup: > 1 faster."""
    latency = _by_id("vllm-blog-2024-llama3-70b-ngram-k4-cnndm-qps1")  # e2e latency: 0.98 s with, 2.75 s without
    p = Prediction(latency, "predicted", predicted_value=1.0, predicted_speedup=2.0)  # the replay's plain: 2.0 s
    assert p.baseline_speed_ratio == pytest.approx(2.75 / 2.0)
    tput = _by_id("adixg-phase4-qwen25-1p5b-draft0p5b-k3-c16")  # output tokens/s: a higher value is faster
    assert tput.metric == "output_tokens_per_s" and tput.baseline_value is not None
    p = Prediction(tput, "anchor", predicted_value=600.0, predicted_speedup=0.5)  # the replay's plain: 1,200 tok/s
    assert p.baseline_speed_ratio == pytest.approx(1200.0 / tput.baseline_value)


def test_no_in_run_baseline_without_a_published_arm() -> None:
    speedup_only = _by_id("sdb-fig1-qwen3-8b-gsm8k-ngram-bs16")  # published as a speedup: no arm to compare
    assert (
        Prediction(speedup_only, "predicted", predicted_value=1.2, predicted_speedup=1.2).baseline_speed_ratio is None
    )
    plain = next(r for r in all_records() if not r.speculative)
    assert Prediction(plain, "predicted", predicted_value=plain.value).baseline_speed_ratio is None
    latency = _by_id("vllm-blog-2024-llama3-70b-ngram-k4-cnndm-qps1")
    assert Prediction(latency, "unreplayable", "why").baseline_speed_ratio is None


def test_baseline_checks_summarise_per_family() -> None:
    latency = _by_id("vllm-blog-2024-llama3-70b-ngram-k4-cnndm-qps1")
    preds = [Prediction(latency, "predicted", predicted_value=1.0, predicted_speedup=s) for s in (2.75, 2.5, 1.0)]
    (check,) = baseline_checks(preds)  # one published arm, three records against it: counted once, the first
    assert (check.family, check.arms, check.records) == ("vllm-blog-2024", 1, 3)
    assert check.median_ratio == pytest.approx(1.0) and check.within_20pct == 1.0
    other = _by_id("vllm-blog-2024-llama3-70b-ngram-k4-cnndm-qps2")  # another load: another arm
    (two,) = baseline_checks([*preds, Prediction(other, "predicted", predicted_value=1.0, predicted_speedup=1.0)])
    assert (two.arms, two.records) == (2, 4) and two.max_ratio == pytest.approx(2.94)
