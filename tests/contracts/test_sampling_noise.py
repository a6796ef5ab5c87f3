"""The operating load's replicate seeds as advise documents them (contracts/advice.SamplingNoise): Student's t
table, the mean and its 90% interval, and the JSON that reads back."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from specwise.contracts.advice import MAX_REPLICATES, T95_BY_DF, SamplingNoise
from specwise.contracts.document import DocumentError, Fields


def test_the_t_table_is_students() -> None:
    for df, t in enumerate(T95_BY_DF, start=1):
        assert t == pytest.approx(stats.t.ppf(0.95, df), abs=5e-4), df
    assert MAX_REPLICATES == 31


@given(st.lists(st.floats(0.1, 5.0), min_size=2, max_size=MAX_REPLICATES))
def test_the_interval_is_the_t_interval_of_the_mean(speedups: list[float]) -> None:
    noise = SamplingNoise(4.0, 2, 400, 0, tuple(range(len(speedups))), tuple(speedups))
    n = len(speedups)
    assert noise.mean == pytest.approx(sum(speedups) / n)
    sem = stats.sem(speedups)
    if sem == 0 or not math.isfinite(sem):
        assert noise.half_width == pytest.approx(0.0, abs=1e-12)
        return
    low, high = stats.t.interval(0.90, n - 1, loc=noise.mean, scale=sem)
    # the table rounds to 3 decimals: a relative error of at most 0.0005 / 1.697
    assert noise.half_width == pytest.approx((high - low) / 2, rel=3e-4)
    assert noise.low == pytest.approx(noise.mean - noise.half_width) and noise.high > noise.mean


def test_the_json_reads_back_and_its_summary_is_worked_out_again() -> None:
    noise = SamplingNoise(10.0, 4, 400, 7, (0, 1, 2, 3, 4), (0.833, 0.892, 0.893, 0.961, 0.930))
    doc = json.loads(json.dumps(noise.to_json()))
    assert doc["mean"] == pytest.approx(0.9018) and doc["interval_90"][0] < doc["mean"] < doc["interval_90"][1]
    doc["mean"] = 99.0  # a record of the speedups, not an input
    back = SamplingNoise.from_json(Fields(doc, "advice.json: candidates[0].sampling"))
    assert back == noise and back.mean == pytest.approx(0.9018)
    assert noise.words() == "mean of 5 runs of 400 requests: 90% interval 0.86-0.95x, runs 0.83-0.96x"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"speedups": [1.0]}, "speedups: expected one finite speedup > 0 per replicate"),
        ({"replicates": [0]}, "replicates: expected 2-31 distinct whole numbers >= 0"),
        ({"replicates": [0, 0]}, "replicates: expected 2-31 distinct"),
        ({"replicates": [0.7, 1.9]}, "replicates: expected 2-31 distinct whole numbers"),
        ({"replicates": None}, "replicates: expected"),
        ({"speedups": [1.0, float("inf")]}, "speedups: expected one finite speedup > 0"),
        ({"speedups": [-1.0, 0.0]}, "speedups: expected one finite speedup > 0"),
        ({"k": 0}, "k: 0: must be at least 1"),
        ({"seed": 1.5}, "seed: expected an integer"),
        ({"speedups": [1.0, "x"]}, "speedups: expected a list of numbers"),
    ],
)
def test_a_broken_document_names_the_field(change: dict[str, object], message: str) -> None:
    doc = {"qps": 4.0, "k": 2, "num_requests": 400, "seed": 0, "replicates": [0, 1], "speedups": [1.0, 1.1], **change}
    with pytest.raises(DocumentError, match=message):
        SamplingNoise.from_json(Fields(doc, "advice.json: sampling"))


def test_one_seed_is_not_a_sample() -> None:
    with pytest.raises(ValueError, match="2-31 runs"):
        SamplingNoise(4.0, 2, 400, 0, (0,), (1.0,))
