"""A closed loop of stated length (``Load.requests``: ``vllm bench serve --num-prompts``, a list given to vLLM's
offline ``LLM.generate``) is replayed as that many requests and scored over the whole run, its ramp-down included,
as the source's tool scored it; a run without one is a long run's steady state."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from specwise.acceptance.model import AcceptanceModel
from specwise.contracts.document import DocumentError
from specwise.evidence.records import EvidenceRecord, Load, all_records
from specwise.perfmodel.profiles import published_fit
from specwise.sim.drafting import WeylUniforms
from specwise.sim.engine import simulate
from specwise.sim.workload import WorkloadClass
from specwise.traffic import LengthDist
from specwise.validate.predict import Models, Prediction, Predictor, predict_all, speedup_at
from specwise.validate.replay import Setup, _measured, _table, engine_config, measure


def _record(load: dict[str, object]) -> EvidenceRecord:
    data = {"id": "x", "target": "Qwen/Qwen3-32B", "method": "none", "metric": "output_tokens_per_s", "value": 1.0}
    return EvidenceRecord.from_json({**data, "load": load}, "fam", "https://example.org", "f.json: records[0]")


def test_a_run_length_parses_and_is_checked() -> None:
    assert _record({"kind": "concurrency", "value": 64, "requests": 80}).load == Load("concurrency", 64.0, requests=80)
    assert _record({"kind": "concurrency", "value": 8}).load.requests is None
    bad = [
        ({"kind": "qps", "value": 4, "requests": 100}, "only a concurrency load"),
        ({"kind": "batch", "value": 4, "requests": 4}, "only a concurrency load"),
        ({"kind": "concurrency", "value": 32, "requests": 20}, "never keep 32 in flight"),
        ({"kind": "concurrency", "value": 8, "requests": 80.5}, "expected an integer"),
        ({"kind": "concurrency", "value": 8, "requests": 1e9}, "a run that long is a steady state"),
    ]
    for load, message in bad:
        with pytest.raises(DocumentError, match=message):
            _record(load)


def _by_id(record_id: str) -> EvidenceRecord:
    return next(r for r in all_records() if r.id == record_id)


def test_the_sources_that_state_their_run_length_carry_it() -> None:
    """P-EAGLE's commands: ``--num-prompts 80`` (MT-Bench), 164 (HumanEval); its SPEED-Bench command is not shown.
    adixg's sweep: 48 requests through ``LLM.generate``. vLLM #12101: 100 requests at concurrency 1."""
    peagle = [r for r in all_records() if r.family == "vllm-blog-p-eagle-2026"]
    assert {(r.dataset, r.load.requests) for r in peagle} == {
        ("mt_bench", 80),
        ("humaneval", 164),
        ("speed_bench_code", None),
    }
    adixg = [r for r in all_records() if r.family == "adixg-specdecode-cost-model"]
    assert adixg and {r.load.requests for r in adixg} == {48}
    assert _by_id("vllm-12101-llama33-70b-4xh100-tp4-c1").load.requests == 100


def _replayed(r: EvidenceRecord) -> tuple[float, np.ndarray, np.ndarray]:
    """(the record's metric, the requests' finish times, their output tokens) of the plain-decoding replay."""
    fit = published_fit()
    p = Predictor(fit.profiles, Models("v2"), fit.first_given_match)
    s = p.setup(r)
    lengths = LengthDist("fixed", 1.0)
    cls = WorkloadClass("replay", 1.0, lengths, lengths, AcceptanceModel.iid(0.0))
    result = simulate(_table(s), [cls], engine_config(s, False), p.models.target(s), None, WeylUniforms())
    assert measure(s, result) == pytest.approx(p.baseline(s), rel=1e-12)
    return measure(s, result), result.finish_s, result.requests.output_tokens


def test_a_stated_run_is_that_many_requests_scored_from_the_first_send_to_the_last_completion() -> None:
    """adixg at concurrency 32: 48 requests run as a wave of 32, then one of 16 on a batch half as full; the whole
    run's rate is below the steady state's, which keeps 32 in flight."""
    r = _by_id("adixg-phase4-qwen25-1p5b-nospec-c32")
    whole, finish, tokens = _replayed(r)
    assert len(finish) == 48
    assert whole == pytest.approx(tokens.sum() / finish.max(), rel=1e-12)  # everyone sent at 0
    fit = published_fit()
    s = Predictor(fit.profiles, Models("v2"), fit.first_given_match).setup(r)
    assert _measured(s) == slice(None)
    steady, _, _ = _replayed(replace(r, id="steady", load=Load("concurrency", 32.0)))
    assert whole < 0.95 * steady


def test_a_long_stated_run_approaches_the_steady_state() -> None:
    """Twenty waves of 8: the ramp-down is one wave in twenty, so the whole run is within a few percent of the
    steady state (and never above it)."""
    r = _by_id("adixg-phase4-qwen25-1p5b-nospec-c8")
    long_run, _, _ = _replayed(replace(r, id="long", load=Load("concurrency", 8.0, requests=160)))
    steady, _, _ = _replayed(replace(r, id="steady", load=Load("concurrency", 8.0)))
    assert 0.95 * steady < long_run <= steady * (1 + 1e-9)


def test_a_crossover_search_keeps_the_run_length_or_as_many_as_the_load_needs() -> None:
    fit = published_fit()
    p = Predictor(fit.profiles, Models("v2"), fit.first_given_match)
    r = _by_id("adixg-phase4-qwen25-1p5b-draft0p5b-k3-c32")
    pred = _prediction(p, r)
    seen: list[Load] = []
    setup = p.setup

    def spy(record: EvidenceRecord) -> Setup:
        seen.append(record.load)
        return setup(record)

    p.setup = spy  # type: ignore[method-assign]
    assert speedup_at(pred, p, 40.0) is not None and speedup_at(pred, p, 64.0) is not None
    assert [(x.value, x.requests) for x in seen] == [(40.0, 48), (64.0, 64)]
    # a fractional load runs as many users as the replay's closed loop has (int), never one request more (s50a F2)
    seen.clear()
    assert speedup_at(pred, p, 55.9) is not None
    assert [(x.value, x.requests) for x in seen] == [(55.9, 55)]


def test_validate_json_reports_the_run_length() -> None:
    assert Load("concurrency", 64.0, requests=80).to_json() == {"kind": "concurrency", "value": 64.0, "requests": 80}
    assert Load("qps", 8.0).to_json() == {"kind": "qps", "value": 8.0}


def _prediction(p: Predictor, r: EvidenceRecord) -> Prediction:
    """``r`` predicted within its series (a record without published acceptance is anchored at its lowest load)."""
    series = [x for x in all_records() if x.series == r.series]
    return next(q for q in predict_all(series, p) if q.record.id == r.id)
