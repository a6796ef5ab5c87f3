"""The operating load's replicate seeds as advise documents them (contracts/advice.SamplingNoise): Student's t
table, the mean and its 90% interval, and the JSON that reads back."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from specwise.contracts.advice import SamplingNoise
from specwise.contracts.document import DocumentError, Fields
from specwise.stats import MAX_REPLICATES, T95_BY_DF


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


def test_a_schedule_check_of_runs_carries_their_mean_and_interval_and_reads_back() -> None:
    """ScheduleCheck.of_runs: one run is the run (no interval, the JSON as it always was); several are their mean
    and the same 90% interval as SamplingNoise's; the JSON holds runs and interval_90 and reads back; a bad interval
    is refused naming the field."""
    import pytest

    from specwise.contracts.advice import ScheduleCheck
    from specwise.contracts.document import Fields
    from specwise.errors import SpecwiseError
    from specwise.stats import mean_half_width

    one = ScheduleCheck.of_runs(8.0, [0.97])
    assert one == ScheduleCheck(8.0, 0.97) and one.to_json() == {"qps": 8.0, "speedup_e2e": 0.97}
    assert ScheduleCheck.of_runs(8.0, []).speedup_e2e is None
    runs = [0.99, 1.0, 0.995, 0.985, 1.003]
    five = ScheduleCheck.of_runs(8.0, runs)
    noise = SamplingNoise(8.0, 4, 400, 0, (0, 1, 2, 3, 4), tuple(runs))
    assert five.runs == 5 and five.speedup_e2e == pytest.approx(noise.mean)
    assert five.interval_90 == pytest.approx((noise.low, noise.high))
    assert mean_half_width(runs) == pytest.approx((noise.mean, noise.half_width))
    doc = five.to_json()
    assert doc["runs"] == 5 and doc["interval_90"] == list(five.interval_90 or ())
    from specwise.contracts.advice import CandidateAdvice

    base = CandidateAdvice.from_json(Fields({"candidate": "c", "verdict": "enable", "schedule_results": [doc]}, "t"))
    assert base.schedule_results == (five,)
    bad = {"candidate": "c", "verdict": "enable", "schedule_results": [{**doc, "interval_90": [1.0, 0.9]}]}
    with pytest.raises(SpecwiseError, match="interval_90"):
        CandidateAdvice.from_json(Fields(bad, "t"))
    one_run = {"candidate": "c", "verdict": "enable", "schedule_results": [{**doc, "runs": 1}]}
    with pytest.raises(SpecwiseError, match="runs"):  # review s58: it would print "mean of 1 runs"
        CandidateAdvice.from_json(Fields(one_run, "t"))
    no_runs = {
        "candidate": "c",
        "verdict": "enable",
        "schedule_results": [{"qps": 8.0, "speedup_e2e": 0.99, "interval_90": [0.98, 1.0]}],
    }
    with pytest.raises(SpecwiseError, match="runs"):
        CandidateAdvice.from_json(Fields(no_runs, "t"))


def test_a_schedule_check_loses_only_past_a_tie_and_its_runs_noise() -> None:
    """below_one: under 1 by more than EVEN_WITHIN (validate's tie for a published speedup), and where run more than
    once, the interval's high end too; about_one: under 1 but not losing (even with no speculation)."""
    from specwise.contracts.advice import EVEN_WITHIN, ScheduleCheck
    from specwise.evidence.records import TIE_WITHIN

    assert EVEN_WITHIN == TIE_WITHIN
    assert ScheduleCheck(8.0, 0.97).below_one and not ScheduleCheck(8.0, 0.97).about_one
    assert not ScheduleCheck(8.0, 0.995).below_one and ScheduleCheck(8.0, 0.995).about_one  # within 1%
    assert not ScheduleCheck(8.0, 1.02).below_one and not ScheduleCheck(8.0, 1.02).about_one
    assert not ScheduleCheck(8.0, None).below_one and not ScheduleCheck(8.0, None).about_one
    noisy = ScheduleCheck.of_runs(8.0, [0.95, 1.03, 0.96, 1.02, 0.97])  # mean 0.986, interval reaches past 1
    assert noisy.speedup_e2e is not None and noisy.speedup_e2e < 1 - EVEN_WITHIN
    assert not noisy.below_one and noisy.about_one
    tight = ScheduleCheck.of_runs(8.0, [0.95, 0.96, 0.955, 0.962, 0.951])
    assert tight.below_one and not tight.about_one
    # a tie is within 1% (validate: 0.99 or less is a slowdown); one draw at 0.99 or 0.985 loses
    assert ScheduleCheck(8.0, 0.99).below_one and ScheduleCheck(8.0, 0.985).below_one
    assert not ScheduleCheck(8.0, 0.9901).below_one
    # review s58 B1: 2.2% slow with its whole interval below 1 loses; the tie and the interval are not added
    slow = ScheduleCheck.of_runs(8.0, [0.96, 0.99, 0.97, 0.995, 0.975])
    assert slow.interval_90 is not None and slow.interval_90[1] < 1.0 and slow.below_one and not slow.about_one
    # within the tie though its interval lies below 1 (schedule-llama31-70b-1b at seed 0: 0.993, 0.986-0.999)
    tie = ScheduleCheck(8.0, 0.993, 5, (0.986, 0.999))
    assert not tie.below_one and tie.about_one
    assert tie.even_words() == "8 QPS 0.7% slower, within the 1% counted as even"
    assert noisy.even_words() == f"8 QPS {1 - noisy.speedup_e2e:.1%} slower, but its runs' 90% interval reaches 1x"


def test_edge_runs_are_written_only_where_there_are_some_and_read_back() -> None:
    from specwise.contracts.advice import CandidateAdvice
    from specwise.contracts.document import Fields

    edge = SamplingNoise(4.0, 4, 400, 0, (0, 1, 2), (1.2, 1.25, 1.22))
    doc = {"candidate": "c", "verdict": "enable_below", "edge_sampling": [edge.to_json()]}
    read = CandidateAdvice.from_json(Fields(doc, "t"))
    assert read.edge_sampling == (edge,) and read.to_json()["edge_sampling"] == [edge.to_json()]
    plain = CandidateAdvice.from_json(Fields({"candidate": "c", "verdict": "enable"}, "t"))
    assert plain.edge_sampling == () and "edge_sampling" not in plain.to_json()


def test_a_schedule_check_above_the_schedules_capacity_is_its_bound() -> None:
    """Review s60: a schedule that serves 9.3 req/s was credited with a finite run's 1.40x at 10 QPS. Above its
    capacity a check is the bound capacity / load, below 1, and says so; it survives the JSON round trip, and a
    check that is no bound keeps the document it always had."""
    from specwise.contracts.advice import CandidateAdvice, ScheduleCheck

    bound = ScheduleCheck.bound(10.0, 9.3)
    assert bound.overloaded and bound.speedup_e2e == pytest.approx(0.93) and bound.below_one
    assert bound.words() == "10 QPS at most 0.93x (the schedule serves 9.3 req/s)"
    doc = bound.to_json()
    assert doc == {"qps": 10.0, "speedup_e2e": pytest.approx(0.93), "runs": 0, "capacity_per_s": 9.3}
    advice = CandidateAdvice.from_json(Fields({"candidate": "c", "verdict": "enable", "schedule_results": [doc]}, "t"))
    assert advice.schedule_results == (bound,)
    assert not ScheduleCheck(8.0, 1.2).overloaded and "capacity_per_s" not in ScheduleCheck(8.0, 1.2).to_json()
    # a bound just under 1 is still a loss (its queue grows), never a tie (review s60)
    near = ScheduleCheck.bound(10.0, 9.95)
    assert near.below_one and not near.about_one
    # a bound is runs 0 with a positive capacity and no interval; anything else is refused on reading
    from specwise.errors import SpecwiseError

    for bad in (
        {"qps": 10.0, "speedup_e2e": 0.9, "runs": 0},
        {**doc, "capacity_per_s": -1.0},
        {**doc, "runs": 1},
        {**doc, "interval_90": [0.9, 0.95]},
    ):
        with pytest.raises(SpecwiseError, match="capacity_per_s: a bound check has runs = 0"):
            CandidateAdvice.from_json(Fields({"candidate": "c", "verdict": "enable", "schedule_results": [bad]}, "t"))
