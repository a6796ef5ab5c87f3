"""The monitor's fleet view through Prometheus (issue 15): the PromQL it sends, the parsing of real HTTP API
answers (tests/fixtures/prometheus_api/fleet_answers.json, recorded by scripts/record_prometheus_answers.py from
Debian's prometheus 2.42 scraping two mock servers), the per-model roll-up, and the rules on each instance."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from hypothesis import given
from hypothesis import strategies as st

from specwise.acceptance.counts import SpecDecodeCounts
from specwise.cli import main
from specwise.errors import SpecwiseError
from specwise.metrics.spec_decode import V0_NOTE
from specwise.monitor.events import TargetFault
from specwise.monitor.fleet import (
    FAMILIES,
    LEFT_OUT,
    FleetWindow,
    ReplicaWindow,
    family_query,
    matchers,
    parse_answer,
    pooled,
    replica_windows,
    rollup,
    usable_counts,
    windows_over_time,
)
from specwise.monitor.loop import Target, fleet_findings, observe_fleet
from specwise.monitor.rules import Thresholds
from tests.monitor.pages import Pages, serve_pages

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
    assert queries["emitted_v0"] == (
        "sum by (model_name, instance) (increase(vllm:spec_decode_num_emitted_tokens_total[60s]))"
    )
    recorded = _recorded()["answers"]  # recorded before the V0 family was queried (its fleet is V1: no answer)
    want = {f.key: family_query(f, 20.0) for f in FAMILIES if f.key != "emitted_v0"}
    assert {k: v["query"] for k, v in recorded.items()} == want


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
    assert model.replicas == 2 and all(r.counts is not None for r in replicas)
    assert model.counts.draft_tokens == pytest.approx(sum(c.draft_tokens for c in usable_counts(replicas)))
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


def test_non_finite_points_are_kept_for_the_replica_to_report() -> None:
    """A NaN answer is kept (review 17-B #3): dropping it made its replica vanish from the fleet view."""
    body = {
        "status": "success",
        "data": {"resultType": "vector", "result": [{"metric": {"a": "b"}, "value": [1, "NaN"]}]},
    }
    [point] = parse_answer(body, "p")
    assert math.isnan(point.value)


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


# -- answers no live server can produce (review 17-B #2, #3): the rules --url applies, the replica kept and named --

# (instance, drafts, draft tokens, accepted) as Prometheus answers them; a:1 accepts 0.42 (a low-acceptance alert)
Row = tuple[str, str, str, str]
HEALTHY: tuple[Row, ...] = (("a:1", "300", "1200", "500"), ("b:1", "100", "400", "350"))


def _answers(rows: tuple[Row, ...]) -> dict[str, list[Any]]:
    """One instant answer per family key (as parse_answer gives them), model ``m``, 4 running per replica."""

    def body(values: list[tuple[str, str]]) -> dict[str, Any]:
        result = [{"metric": {"model_name": "m", "instance": i}, "value": [100.0, v]} for i, v in values]
        return {"status": "success", "data": {"resultType": "vector", "result": result}}

    columns = {"drafts": 1, "draft_tokens": 2, "accepted_tokens": 3}
    out = {key: list(parse_answer(body([(r[0], r[c]) for r in rows]), "p")) for key, c in columns.items()}
    out["running"] = list(parse_answer(body([(r[0], "4") for r in rows]), "p"))
    return out


def _with(instance: str, column: int, value: str) -> tuple[Row, ...]:
    """:data:`HEALTHY` with one answer of ``instance`` replaced (column 1: drafts, 2: draft tokens, 3: accepted)."""

    def edit(row: Row) -> Row:
        cells = [value if row[0] == instance and i == column else x for i, x in enumerate(row)]
        return cells[0], cells[1], cells[2], cells[3]

    return tuple(edit(r) for r in HEALTHY)


@pytest.mark.parametrize(
    ("rows", "kind", "detail"),
    [
        (_with("b:1", 3, "900"), "impossible_counter", "900 tokens accepted of 400 drafted (acceptance rate > 1)"),
        (_with("b:1", 3, "+Inf"), "non_finite_sample", "vllm:spec_decode_num_accepted_tokens_total{"),
        (_with("b:1", 1, "-5"), "impossible_counter", "vllm:spec_decode_num_drafts_total{"),
    ],
)
def test_impossible_or_non_finite_replica_is_a_fault_left_out_of_the_rollup(
    rows: tuple[Row, ...], kind: str, detail: str
) -> None:
    """--url's rules on each replica: its fault is named, it shows no acceptance, and the roll-up is the others'."""
    fleet = FleetWindow(100.0, 60.0, replica_windows(_answers(rows)))
    a, b = fleet.replicas
    assert b.instance == "b:1" and b.counts is None and b.acceptance_rate is None and b.running == 4.0
    [(fault, text)] = b.faults
    assert fault == kind and detail in text and "left out of the roll-up" in text
    assert a.faults == () and a.acceptance_rate == pytest.approx(500 / 1200)
    [model] = fleet.models
    assert (model.replicas, model.left_out, model.worst) == (1, ("b:1",), (a,))
    assert model.counts == a.counts  # never polluted: no 2.25, no inf
    assert [(i, f.rule) for i, f in fleet_findings(fleet, Thresholds())] == [
        ("a:1", "low_acceptance_rate"),
        ("b:1", kind),
    ]
    doc = json.loads(json.dumps(fleet.to_json(), allow_nan=False))  # strict JSON: no NaN or Infinity
    assert doc["replicas"][1]["faults"][0][0] == kind and doc["models"][0]["left_out"] == ["b:1"]


def test_replica_with_a_nan_family_stays_listed_and_its_fault_is_an_alert() -> None:
    """Replica a:1's draft tokens are NaN: it stays in the fleet (it used to vanish, with its alert)."""
    fleet = FleetWindow(100.0, 60.0, replica_windows(_answers(_with("a:1", 2, "NaN"))))
    assert [r.instance for r in fleet.replicas] == ["a:1", "b:1"]
    a = fleet.replicas[0]
    assert a.counts is None and [k for k, _ in a.faults] == ["non_finite_sample"]
    assert "vllm:spec_decode_num_draft_tokens_total" in a.faults[0][1] and "= nan" in a.faults[0][1]
    assert fleet.models[0].left_out == ("a:1",)
    assert [(i, f.rule) for i, f in fleet_findings(fleet, Thresholds())] == [("a:1", "non_finite_sample")]


def test_replica_missing_a_spec_family_is_listed_with_a_note() -> None:
    answers = _answers(HEALTHY)
    answers["draft_tokens"] = [p for p in answers["draft_tokens"] if p.label("instance") != "a:1"]
    a, _ = replica_windows(answers)
    assert a.instance == "a:1" and a.counts is None and a.faults == ()
    assert a.notes == (
        "no vllm:spec_decode_num_draft_tokens_total series over the window: acceptance not computed; left out of "
        "the roll-up",
    )
    assert rollup(replica_windows(answers))[0].left_out == ("a:1",)


def test_loop_reports_a_replica_fault_once_as_a_scraped_server_fault() -> None:
    """Loop mode: the fault is a TargetFault event (the loop exits 1 on a fault still reported, as with --url)."""
    targets: dict[str, Target] = {}
    events: list[object] = []
    bad = FleetWindow(100.0, 60.0, replica_windows(_answers(_with("b:1", 3, "900"))))
    observe_fleet(targets, bad, Thresholds(), None, events.append)
    observe_fleet(targets, _ending_at(bad, 105.0), Thresholds(), None, events.append)
    faults = [e for e in events if isinstance(e, TargetFault)]
    assert [(e.at, e.url, e.fault) for e in faults] == [(100.0, "b:1", "impossible_counter")]
    assert set(targets["b:1"].faults.active) == {"impossible_counter"}
    assert targets["b:1"].last is not None and targets["b:1"].last.acceptance_rate is None


def _ending_at(fleet: FleetWindow, end_s: float) -> FleetWindow:
    return FleetWindow(end_s, fleet.window_s, fleet.replicas)


# -- the same through the CLI, against a loopback Prometheus HTTP API ------------------------------------------------


class _Prometheus(Pages):
    """``GET /api/v1/query``: each family's answer for the replicas in ``rows`` (model ``m``)."""

    rows: tuple[Row, ...] = HEALTHY

    def do_GET(self) -> None:
        query = parse_qs(urlsplit(self.path).query)["query"][0]
        keys = [f.key for f in FAMILIES if f"({f.metric}[" in query or f"({f.metric})" in query]
        answers = _answers(self.rows)
        result = [{"metric": dict(p.labels), "value": [p.at_s, str(p.value)]} for k in keys for p in answers.get(k, [])]
        body = {"status": "success", "data": {"resultType": "vector", "result": result}}
        self.send_body(json.dumps(body).encode(), "application/json")


@pytest.fixture()
def prometheus() -> Iterator[Any]:
    yield from serve_pages(_Prometheus)


@pytest.mark.parametrize(
    ("rows", "instance", "kind"),
    [
        (_with("b:1", 3, "900"), "b:1", "impossible_counter"),
        (_with("b:1", 3, "+Inf"), "b:1", "non_finite_sample"),
        (_with("a:1", 2, "NaN"), "a:1", "non_finite_sample"),
    ],
)
def test_cli_once_names_the_faulty_replica_and_exits_1(
    prometheus: Any,
    rows: tuple[Row, ...],
    instance: str,
    kind: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _Prometheus.rows = rows
    argv = ["monitor", "--prometheus", prometheus.base, "--once", "--scrape-timeout", "5"]
    assert main([*argv, "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert [r["instance"] for r in doc["replicas"]] == ["a:1", "b:1"]
    assert {(a["instance"], a["rule"]) for a in doc["alerts"]} >= {(instance, kind)}
    [model] = doc["models"]
    assert model["left_out"] == [instance] and model["replicas"] == 1
    assert model["acceptance_rate"] is not None and model["acceptance_rate"] <= 1
    assert main([*argv, "--wide"]) == 1
    out = capsys.readouterr().out
    assert "1 (+1 left out)" in out and kind.replace("_", " ") in out
    assert "(inf)" not in out and "2.25" not in out  # the old roll-up's worst replica and acceptance


# -- replicas with draft and accepted token counters but no drafts counter (vLLM V1 before 0.8.5), and vLLM V0 ones ----


def _v0(answers: dict[str, list[Any]], *instances: str) -> dict[str, list[Any]]:
    """``answers`` with the drafts counter of ``instances`` gone, as vLLM V1 before 0.8.5 exports none."""
    return {**answers, "drafts": [p for p in answers["drafts"] if p.label("instance") not in instances]}


def test_a_v0_fleet_is_judged_on_its_acceptance_rate() -> None:
    """It used to be 'missing series' on every replica, nothing judged: a:1's 500 of 1200 (0.42) passed unseen."""
    fleet = FleetWindow(100.0, 60.0, replica_windows(_v0(_answers(HEALTHY), "a:1", "b:1")))
    a, b = fleet.replicas
    assert a.acceptance_rate == pytest.approx(500 / 1200) and a.mean_acceptance_length is None
    assert not a.drafts_counted and not a.missing_series and a.faults == () and len(a.notes) == 1
    assert "before 0.8.5" in a.notes[0]
    [model] = fleet.models
    assert (model.replicas, model.left_out, model.worst) == (2, (), (a, b))
    assert model.counts.acceptance_rate == pytest.approx(850 / 1600) and model.counts.mean_acceptance_length is None
    doc = fleet.to_json()
    assert doc["models"][0]["drafts"] is None and doc["replicas"][0]["drafts"] is None
    findings = [(i, f.rule, f.message) for i, f in fleet_findings(fleet, Thresholds())]
    assert [(i, rule) for i, rule, _ in findings] == [("a:1", "low_acceptance_rate")]
    assert "over 1200 draft tokens" in findings[0][2]


def test_a_v0_replica_beside_v1_ones_pools_no_drafts_count() -> None:
    """Summing the other replica's drafts alone would give the pool a wrong AL: drafts are unknown once one has no
    drafts counter."""
    [model] = rollup(replica_windows(_v0(_answers(HEALTHY), "a:1")))
    assert not model.drafts_counted and model.counts.drafts == 0 and model.counts.per_position_rates == ()
    assert model.counts.acceptance_rate == pytest.approx(850 / 1600)


def test_a_vllm_v0_replica_is_left_out_with_why_never_judged_on_its_counters() -> None:
    """vLLM V0 (told by its emitted-tokens counter, which only V0 exports) adds lifetime totals to its token
    counters at every log interval (vllm/engine/metrics.py), so their increase is no count: a:1's "500 of 1200" is
    no acceptance (review s47a F1). It is kept, named, with no counts, and left out of its model's roll-up."""
    answers = _v0(_answers(HEALTHY), "a:1")
    answers["emitted_v0"] = [p for p in answers["draft_tokens"] if p.label("instance") == "a:1"]
    fleet = FleetWindow(100.0, 60.0, replica_windows(answers))
    a, b = fleet.replicas
    assert a.counts is None and a.acceptance_rate is None and not a.missing_series and a.faults == ()
    assert a.notes == (f"{V0_NOTE}: {LEFT_OUT}",)
    assert b.acceptance_rate == pytest.approx(350 / 400) and b.drafts_counted
    [model] = fleet.models
    assert (model.replicas, model.left_out, model.worst) == (1, ("a:1",), (b,))
    assert model.drafts_counted and model.counts.drafts == 100
    assert not fleet_findings(fleet, Thresholds())
