"""Crossover loads: where a published series falls through 1, and where its prediction does -- followed beyond
the series' own loads when it does not cross within them (as far as decides "within 2x")."""

from __future__ import annotations

from dataclasses import replace

import pytest

from specwise.evidence.records import EvidenceRecord, Load, all_records
from specwise.validate.predict import Prediction
from specwise.validate.run import _loads_beyond, crossovers


def _series(published: list[float], predicted: list[float], loads: list[float]) -> list[Prediction]:
    base = next(r for r in all_records() if r.id == "sdb-fig1-qwen3-8b-gsm8k-ngram-bs1")
    return [
        Prediction(replace(base, id=f"x{i}", load=Load("batch", q), value=pub), "predicted", predicted_speedup=pred)
        for i, (q, pub, pred) in enumerate(zip(loads, published, predicted, strict=True))
    ]


def test_a_prediction_that_crosses_within_the_series_is_not_followed() -> None:
    asked: list[float] = []
    preds = _series([1.2, 1.1, 0.9], [1.3, 1.05, 0.95], [1, 16, 64])

    def at(p: Prediction, load: float) -> float:
        asked.append(load)
        return 0.5

    (c,) = crossovers(preds, at)
    assert c.published == pytest.approx(16 + 48 * 0.1 / 0.2)
    assert c.predicted == pytest.approx(16 + 48 * 0.05 / 0.1)
    assert c.searched_to is None and asked == []


def test_a_prediction_still_above_1_is_followed_up_to_twice_the_published_crossover() -> None:
    preds = _series([1.2, 1.1, 0.95], [1.3, 1.2, 1.1], [1, 16, 64])  # published crosses at 48
    falls = {80.0: 1.04, 96.0: 0.96}  # the model beyond 64 (x1.25 steps, to 2 x 48): through 1 at 88
    (c,) = crossovers(preds, lambda p, load: falls.get(load, 1.08))
    assert c.predicted == pytest.approx(88.0) and c.searched_to == 96.0 and c.within_2x
    (c,) = crossovers(preds, lambda p, load: 1.08)  # never through 1 up to 2 x 48
    assert c.predicted is None and c.searched_to == 96.0 and not c.within_2x
    (c,) = crossovers(preds)  # without a way to predict other loads: "never", as before
    assert c.predicted is None and c.searched_to is None


def test_a_prediction_already_below_1_is_followed_down_to_half() -> None:
    preds = _series([1.2, 1.05, 0.8], [0.98, 0.9, 0.8], [40, 64, 128])  # published crosses at 76.8
    (c,) = crossovers(preds, lambda p, load: {38.0: 1.02}.get(load, 0.9))  # down to 38 (half of 76.8, whole)
    assert c.predicted == pytest.approx(39.0) and c.searched_to == 38.0 and c.within_2x
    low = _series([1.4, 1.1, 0.9], [0.98, 0.9, 0.8], [8, 16, 64])  # below 1 from 8, under half of 40
    (c,) = crossovers(low, lambda p, load: 1.5)
    assert c.predicted is None and c.searched_to == 8 and not c.within_2x


def test_loads_beyond_are_whole_for_a_batch_and_within_max_num_seqs() -> None:
    assert _loads_beyond(128, 254, "batch") == [160, 200, 250, 254]
    assert _loads_beyond(250, 600, "batch") == [256]
    assert _loads_beyond(2, 1, "batch") == [1]
    assert _loads_beyond(1, 0.5, "concurrency") == []
    assert _loads_beyond(4, 2, "qps") == pytest.approx([3.2, 2.56, 2.048, 2])


def _speculative(r: EvidenceRecord) -> bool:
    return r.speculative and r.speedup is not None


def test_thinking_mode_records_are_not_one_series_with_the_same_dataset_without_it() -> None:
    """SpecDecode-Bench's Figure 3 ran Qwen3-8B in thinking mode on the datasets Figure 1 ran it on without; one
    series would anchor the thinking runs' acceptance on the other runs (and mix both into one crossover)."""
    recs = {r.id: r for r in all_records()}
    plain, thinking = recs["sdb-fig1-qwen3-8b-gsm8k-ngram-bs1"], recs["sdb-fig3-qwen3-8b-thinking-gsm8k-ngram-bs1"]
    assert thinking.reasoning and not plain.reasoning
    lengths = {"prompt_tokens": plain.prompt_tokens, "output_tokens": plain.output_tokens}
    assert replace(thinking, reasoning=False, **lengths).series == plain.series  # type: ignore[arg-type]
    assert thinking.series != plain.series


def test_a_series_that_only_ties_below_1_shows_no_crossover() -> None:
    """A published 0.995x (SpecDecode-Bench's Qwen3-8B n-gram at batch 128, read to +-0.5%) is a tie, not a
    slowdown: a series that goes no lower has no crossover to miss (review 14-B #3)."""
    ties = _series([1.11, 1.05, 0.995], [1.11, 1.07, 1.05], [1, 64, 128])
    assert crossovers(ties, lambda p, load: 1.04) == []
    falls = _series([1.11, 1.05, 0.97], [1.11, 1.07, 1.05], [1, 64, 128])
    (c,) = crossovers(falls, lambda p, load: 1.04)
    assert c.published == pytest.approx(64 + 64 * 0.05 / 0.08) and not c.within_2x
