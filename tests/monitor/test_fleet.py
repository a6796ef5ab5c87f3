"""The monitor's fleet view through Prometheus (issue 15): the PromQL it sends, the parsing of real HTTP API
answers (tests/fixtures/prometheus_api/fleet_answers.json, recorded by scripts/record_prometheus_answers.py from
Debian's prometheus 2.42 scraping two mock servers), the per-model roll-up, and the rules on each instance."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from specwise.acceptance.counts import SpecDecodeCounts
from specwise.cli import main
from specwise.errors import SpecwiseError
from specwise.monitor.fleet import (
    FAMILIES,
    FleetWindow,
    ReplicaWindow,
    family_query,
    matchers,
    parse_answer,
    pooled,
    replica_windows,
    rollup,
    windows_over_time,
)
from specwise.monitor.loop import Target, fleet_findings, observe_fleet
from specwise.monitor.rules import Thresholds

FIXTURE = Path(__file__).parents[1] / "fixtures" / "prometheus_api" / "fleet_answers.json"


def _recorded() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(FIXTURE.read_text())
    return doc


def test_one_query_per_family_grouped_by_model_and_instance() -> None:
    queries = {f.key: family_query(f, 60.0) for f in FAMILIES}
    assert queries["drafts"] == "sum by (model_name, instance) (increase(vllm:spec_decode_num_drafts_total[60s]))"
    assert queries["accepted_per_position"] == (
        "sum by (model_name, instance, position) (increase(vllm:spec_decode_num_accepted_tokens_per_pos_total[60s]))"
    )
    assert queries["running"] == "sum by (model_name, instance) (vllm:num_requests_running)"
    assert family_query(FAMILIES[0], 1.5, matchers(["10.0.0.5:8000", 'a"b'])) == (
        "sum by (model_name, instance) (increase(vllm:spec_decode_num_drafts_total"
        '{instance=~"10\\\\.0\\\\.0\\\\.5:8000|a\\"b"}[1500ms]))'
    )
    recorded = _recorded()["answers"]
    assert {k: v["query"] for k, v in recorded.items()} == {f.key: family_query(f, 20.0) for f in FAMILIES}


def test_recorded_answers_parse_into_replicas_and_rollup() -> None:
    doc = _recorded()
    answers = {k: parse_answer(v["vector"], "prom") for k, v in doc["answers"].items()}
    replicas = replica_windows(answers)
    assert {r.instance for r in replicas} == set(doc["instances"])
    for r in replicas:
        own = doc["instances"][r.instance]
        assert r.model_name == "mock"
        # increase() scales every counter of a replica alike: the ratios are the mock's own
        assert r.acceptance_rate == pytest.approx(own["accepted_tokens"] / own["draft_tokens"], rel=1e-9)
        assert r.mean_acceptance_length == pytest.approx(1 + own["accepted_tokens"] / own["drafts"], rel=1e-9)
        assert r.running is None  # the mock exports no gauge: absent, not zero
    [model] = rollup(replicas)
    assert model.replicas == 2
    assert model.counts.draft_tokens == pytest.approx(sum(r.counts.draft_tokens for r in replicas))
    low = min(replicas, key=lambda r: r.acceptance_rate or 1.0)
    assert model.worst[0] == low
    history = windows_over_time({k: parse_answer(v["matrix"], "prom") for k, v in doc["answers"].items()}, 20.0)
    assert len(history) >= 2 and [w.end_s for w in history] == sorted(w.end_s for w in history)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"status": "error", "errorType": "bad_data", "error": "parse error at char 5"}, "parse error at char 5"),
        ({"status": "success", "data": {"resultType": "scalar", "result": [1, "2"]}}, "got 'scalar'"),
        (
            {"status": "success", "data": {"resultType": "vector", "result": [{"metric": {}, "value": [1]}]}},
            "malformed",
        ),
        ([], "not an API answer"),
    ],
)
def test_bad_answers_are_one_line_errors(body: object, message: str) -> None:
    with pytest.raises(SpecwiseError, match=message):
        parse_answer(body, "http://***@prom:9090")


def test_nan_points_are_dropped() -> None:
    body = {
        "status": "success",
        "data": {"resultType": "vector", "result": [{"metric": {"a": "b"}, "value": [1, "NaN"]}]},
    }
    assert parse_answer(body, "p") == ()


counts = st.builds(
    lambda drafts, k, acc: SpecDecodeCounts(float(drafts), float(drafts * k), float(min(acc, drafts * k)), ()),
    st.integers(0, 10_000),
    st.integers(1, 8),
    st.integers(0, 80_000),
)


@given(st.lists(counts, min_size=1, max_size=12))
def test_pooled_rates_are_ratios_of_sums(rows: list[SpecDecodeCounts]) -> None:
    """vLLM's definitions over the summed counters: never a mean of per-replica rates."""
    replicas = [ReplicaWindow("m", f"10.0.0.{i}:8000", c) for i, c in enumerate(rows)]
    [model] = rollup(replicas)
    accepted, draft_tokens, drafts = (
        sum(getattr(c, f) for c in rows) for f in ("accepted_tokens", "draft_tokens", "drafts")
    )
    if draft_tokens > 0:
        assert model.counts.acceptance_rate == pytest.approx(accepted / draft_tokens)
        assert model.counts.mean_acceptance_length == pytest.approx(1 + accepted / drafts)
    else:
        assert model.counts.acceptance_rate is None
    assert model.counts == pooled(rows)
    rates = [r.acceptance_rate for r in model.worst]
    assert rates == sorted(rates)  # type: ignore[type-var]
    assert len(model.worst) == min(3, sum(1 for c in rows if c.drafts > 0))


def _fleet(end_s: float, low_rate: float) -> FleetWindow:
    def replica(instance: str, rate: float) -> ReplicaWindow:
        return ReplicaWindow("llama", instance, SpecDecodeCounts(100.0, 400.0, 400.0 * rate, (60.0, 40.0)))

    return FleetWindow(end_s, 60.0, (replica("a:8000", low_rate), replica("b:8000", 0.9)))


def test_fleet_windows_are_judged_per_instance_with_hysteresis() -> None:
    targets: dict[str, Target] = {}
    events: list[object] = []
    thresholds = Thresholds()
    observe_fleet(targets, _fleet(100.0, 0.2), thresholds, None, events.append)
    observe_fleet(targets, _fleet(105.0, 0.2), thresholds, None, events.append)  # still open: no new event
    assert [(e.at, e.url, e.rule) for e in events] == [(100.0, "a:8000", "low_acceptance_rate")]  # type: ignore[attr-defined]
    assert targets["a:8000"].model_name == "llama" and targets["b:8000"].instance == "b:8000"
    assert [(i, f.rule) for i, f in fleet_findings(_fleet(0.0, 0.2), thresholds)] == [("a:8000", "low_acceptance_rate")]


def test_cli_flags_need_prometheus(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["monitor", "--url", "http://127.0.0.1:9/metrics", "--lookback", "1h", "--once"]) == 2
    assert "--lookback and --instance need --prometheus" in capsys.readouterr().err
    assert main(["monitor", "--prometheus", "http://127.0.0.1:9", "--lookback", "an hour"]) == 2
    assert "expected a duration such as 90s" in capsys.readouterr().err
