"""A QPS ladder replayed as the source ran it (llm-d's inference-perf: constant-rate 120-s stages back to back):
the queue an overloaded stage leaves carries into the next, and a record is the p50 of its own stage's requests."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from specwise.contracts.document import DocumentError
from specwise.evidence.records import EvidenceRecord, Ladder, Load, all_records
from specwise.perfmodel.profiles import published_fit
from specwise.validate.predict import Models, Predictor
from specwise.validate.replay import _ladder_run, _measured, _table, setup_for


def _record(load: dict[str, object], **extra: object) -> EvidenceRecord:
    data = {"id": "x", "target": "Qwen/Qwen3-32B", "method": "none", "metric": "tpot_s", "value": 0.1, "load": load}
    return EvidenceRecord.from_json({**data, **extra}, "fam", "https://example.org", "f.json: records[0]")


def test_a_ladder_parses_and_is_checked() -> None:
    r = _record({"kind": "qps", "value": 8, "arrivals": "constant", "ladder": {"rates_per_s": [1, 8], "stage_s": 60}})
    assert r.load == Load("qps", 8.0, "constant", Ladder((1.0, 8.0), 60.0)) and r.statistic == "mean"
    assert _record({"kind": "qps", "value": 1}, statistic="p50").statistic == "p50"
    bad = [
        ({"kind": "qps", "value": 4, "ladder": {"rates_per_s": [1, 8], "stage_s": 60}}, {}, "exactly one of"),
        ({"kind": "qps", "value": 8, "ladder": {"rates_per_s": [1, 8], "stage_s": 0}}, {}, "must be positive"),
        ({"kind": "batch", "value": 8, "arrivals": "constant"}, {}, "only a qps load"),
        ({"kind": "qps", "value": 8, "arrivals": "bursty"}, {}, "expected one of poisson, constant"),
        ({"kind": "qps", "value": 8}, {"statistic": "p99"}, "expected one of mean, p50"),
    ]
    for load, extra, message in bad:
        with pytest.raises(DocumentError, match=message):
            _record(load, **extra)


def _llmd(rate: int) -> EvidenceRecord:
    return next(r for r in all_records() if r.id == f"llmd-2074-qwen3-32b-h200-tp2-nospec-qps{rate}")


def test_the_run_holds_the_stages_up_to_the_next_and_measures_its_own() -> None:
    fit = published_fit()
    r = _llmd(4)
    s = setup_for(r, fit.profiles["vllm-v1"])
    assert r.load.ladder is not None and r.load.ladder.rates_per_s == (1, 2, 4, 8, 16)
    assert _ladder_run(r.load) == (1, 2, 4, 8)  # the 8-QPS stage shares the server with 4-QPS requests still running
    arrivals = _table(s).arrival_s
    assert len(arrivals) == 120 * (1 + 2 + 4 + 8)
    stage = arrivals[_measured(s)]
    assert len(stage) == 480 and stage[0] == pytest.approx(240.0) and stage[-1] < 360.0
    assert np.allclose(np.diff(stage), 0.25)  # constant rate: evenly spaced, as inference-perf sends
    assert _ladder_run(_llmd(16).load) == (1, 2, 4, 8, 16)


def test_a_queue_left_by_an_overloaded_stage_is_what_the_next_stage_sees() -> None:
    """At 8 QPS the deployment is past its capacity: replayed alone (300 Poisson arrivals from an idle server) the
    queue never grows to what 120 s of it builds, so TPOT stays near the unloaded batch's; in the ladder it is the
    saturated step (full batch, prefill chunks in every step), as the source measured (210 ms p50)."""
    fit = published_fit()
    p = Predictor(fit.profiles, Models("v2"), fit.first_given_match)
    r = _llmd(8)
    ladder = p.baseline(p.setup(r))
    alone = p.baseline(p.setup(replace(r, id="alone", load=Load("qps", 8.0), statistic="mean")))
    assert ladder > 1.5 * alone


def test_a_baseline_of_another_statistic_is_not_the_cached_one() -> None:
    """The no-speculation run is cached per experiment; a p50 record and a mean record of the same experiment
    measure different numbers of it (the cache key once left the statistic out)."""
    fit = published_fit()
    p = Predictor(fit.profiles, Models("v2"), fit.first_given_match)
    r = _llmd(16)
    p50 = p.baseline(p.setup(r))
    mean = p.baseline(p.setup(replace(r, id="mean", statistic="mean")))
    fresh = Predictor(fit.profiles, Models("v2"), fit.first_given_match)
    assert mean == fresh.baseline(fresh.setup(replace(r, id="mean", statistic="mean")))
    assert mean != p50
